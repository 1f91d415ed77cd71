"""Polars predicate (``pl.Expr``) -> ``pyarrow.compute.Expression``, read through public
``Expr.meta`` calls only (see the package docstring)."""

from __future__ import annotations

import itertools
import logging
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import reduce
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from .. import facts
from ..expression import expression_text
from ..literals import scalar
from ..predicate import cast_literal, cast_literal_array

log = logging.getLogger("arrowidx.polars")
_POLARS_MAJOR = int(pl.__version__.split(".")[0])
_NULL = pc.scalar(pa.nulls(1, pa.bool_())[0])  # (pa.scalar(None) would import pandas)

# ======================================================================================
# Translation: pl.Expr -> pyarrow.compute.Expression
# ======================================================================================


@dataclass(frozen=True)
class Translation:
    """A Polars predicate translated for pruning (immutable: :func:`translate` hands the
    same one out again for an equal predicate).

    ``expression`` is TRUE wherever the Polars predicate is TRUE (a superset; ``None`` when
    nothing could be translated, i.e. no pruning). ``exact`` says it has exactly the Polars
    predicate's three-valued semantics, row for row; ``dropped`` lists the parts that could
    not be translated and were left out (an AND loses a conjunct; an OR or NOT that holds
    such a part is left out whole).
    """

    polars: str
    expression: pc.Expression | None
    exact: bool
    dropped: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = "no pruning" if self.expression is None else expression_text(self.expression)
        how = "exact" if self.exact else f"superset; not translated: {'; '.join(self.dropped)}"
        return f"{text} ({how})"


def to_arrow_expression(expr: pl.Expr, schema: pa.Schema) -> pc.Expression | None:
    """The pyarrow Expression equivalent to the Polars predicate ``expr`` over ``schema``.

    Exact (same TRUE/FALSE/NULL for every row, including Polars' float rules: NaN equals NaN
    and is larger than every number, -0.0 == 0.0) when :func:`translate` says ``exact``;
    otherwise a superset: an untranslatable conjunct of an AND is dropped, an OR or NOT
    holding one becomes "no pruning". ``None`` means nothing could be translated.
    """
    return translate(expr, schema).expression


#: The latest translations (the latest first): a query run again hands Polars' reader an
#: equal predicate, and translating one costs 0.3-1 ms (each node is recognised by
#: rebuilding candidates, :class:`_Translator`); an entry is found again only for the same
#: serialised predicate and an equal schema.


def translate(expr: pl.Expr | None, schema: pa.Schema) -> Translation:
    """Translate ``expr`` and say how exactly (see :class:`Translation`)."""
    if expr is None:
        return Translation("None", None, True)
    key = _serialized(expr)
    if key is not None:
        found = facts.POLARS_TRANSLATIONS.find(lambda k: k[0] == key and (k[1] is schema or k[1].equals(schema)))
        if found is not None:
            return found
    out = _translate(expr, schema)
    if key is not None:
        facts.POLARS_TRANSLATIONS.add((key, schema), out)
    return out


def _serialized(expr: pl.Expr) -> bytes | None:
    """``expr`` in Polars' binary serialisation (None when it has none, e.g. a Python UDF)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return expr.meta.serialize(format="binary")
    except Exception:  # noqa: BLE001 - then it is translated every time
        return None


def _translate(expr: pl.Expr, schema: pa.Schema) -> Translation:
    t = _Translator(schema)
    try:
        out = t.predicate(expr.meta.undo_aliases(), "sup")
    except Exception as e:  # noqa: BLE001 - an unexpected tree gives no pruning, never an error
        log.debug("translation of %s failed: %s", expr, e)
        return Translation(str(expr), None, False, (f"{expr} ({type(e).__name__}: {e})",))
    return Translation(str(expr), out, not t.dropped, tuple(t.dropped))


_FLIP = {"sup": "sub", "sub": "sup", "exact": "exact"}
_SWAP = {
    "eq": "eq",
    "ne": "ne",
    "lt": "gt",
    "le": "ge",
    "gt": "lt",
    "ge": "le",
    "eq_missing": "eq_missing",
    "ne_missing": "ne_missing",
}
_PC_OPS = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}  # fmt: skip
_UNITS = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_CLOSED = {"both": ("ge", "le"), "left": ("ge", "lt"), "right": ("gt", "le"), "none": ("gt", "lt")}

# Candidate rebuilders by arity: (kind, options, builder). A node is the candidate whose
# rebuild from the node's own inputs is structurally equal (``meta.eq``) to it.
_BINARY = [
    ("cmp", "eq", lambda a, b: a == b), ("cmp", "ne", lambda a, b: a != b),
    ("cmp", "lt", lambda a, b: a < b), ("cmp", "le", lambda a, b: a <= b),
    ("cmp", "gt", lambda a, b: a > b), ("cmp", "ge", lambda a, b: a >= b),
    ("cmp", "eq_missing", lambda a, b: a.eq_missing(b)), ("cmp", "ne_missing", lambda a, b: a.ne_missing(b)),
    ("and", None, lambda a, b: a & b), ("or", None, lambda a, b: a | b),
    ("is_in", False, lambda a, b: a.is_in(b)), ("is_in", True, lambda a, b: a.is_in(b, nulls_equal=True)),
]  # fmt: skip
_UNARY = [
    ("not", None, lambda a: a.not_()), ("is_null", None, lambda a: a.is_null()),
    ("is_not_null", None, lambda a: a.is_not_null()), ("is_nan", None, lambda a: a.is_nan()),
    ("is_not_nan", None, lambda a: a.is_not_nan()),
]  # fmt: skip


def _between(closed: str) -> Callable:
    return lambda a, lo, hi: a.is_between(lo, hi, closed=closed)


_TERNARY = [("between", c, _between(c)) for c in _CLOSED]


def _builders(n: int):
    if n == 1:
        yield from _UNARY
    elif n == 2:
        yield from _BINARY
    elif n == 3:
        yield from _TERNARY
    if n >= 1:
        yield ("and", None, lambda *a: pl.all_horizontal(*a))
        yield ("or", None, lambda *a: pl.any_horizontal(*a))


def _true_unless_null(f: pc.Expression) -> pc.Expression:
    return f.is_valid() | _NULL  # TRUE for a value, NULL for a NULL


def _false_unless_null(f: pc.Expression) -> pc.Expression:
    return f.is_null() & _NULL  # FALSE for a value, NULL for a NULL


class _Translator:
    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.dropped: list[str] = []
        self._empty: pl.LazyFrame | None = None

    # -- reading the tree ---------------------------------------------------------------------
    def match(self, e: pl.Expr) -> tuple[str, Any, list[pl.Expr]] | None:
        """``(kind, options, inputs)`` of node ``e``, or None if not recognised."""
        if e.meta.is_column():
            return "col", e.meta.output_name(), []
        if _is_literal(e):
            return "lit", None, []
        inputs = e.meta.pop()
        if not inputs:
            return None
        orders = [inputs[::-1], inputs] if len(inputs) > 1 else [inputs]
        for args in orders:
            for kind, opt, build in _builders(len(args)):
                if _same(build, args, e):
                    return kind, opt, args
        if len(inputs) == 3:
            for a, b, c in itertools.permutations(inputs):
                if _same(lambda a, b, c: pl.when(a).then(b).otherwise(c), (a, b, c), e):
                    return "when", None, [a, b, c]
        if len(inputs) == 1:
            dtype = self.dtype(e)
            if dtype is not None:
                for strict in (False, True):
                    if _same(lambda a, s=strict: a.cast(dtype, strict=s), inputs, e):
                        return "cast", dtype, inputs
        return None

    def dtype(self, e: pl.Expr) -> pl.DataType | None:
        """The Polars dtype ``e`` evaluates to over this schema (None if it does not resolve)."""
        if self._empty is None:
            self._empty = pl.LazyFrame(pl.from_arrow(self.schema.empty_table()))
        try:
            return self._empty.select(e.alias("__t")).collect_schema()["__t"]
        except Exception:  # noqa: BLE001
            return None

    def literal(self, e: pl.Expr) -> pl.Series | None:
        """The values of a constant, evaluated by Polars; else None.

        A constant is a literal, a cast of one, or any expression without columns that
        evaluates the same over frames of one and of two rows (``pl.lit(t).dt.cast_time_unit``
        qualifies; ``pl.len()`` does not)."""
        node = e
        while True:
            m = self.match(node)
            if m is None or m[0] not in ("lit", "cast"):
                break
            if m[0] == "lit":
                try:
                    return pl.select(e.alias("literal")).to_series()
                except Exception:  # noqa: BLE001
                    return None
            node = m[2][0]
        try:
            if e.meta.root_names():
                return None
            frame = pl.DataFrame(schema=self.frame_schema())
            one = frame.clear(1).select(e.alias("literal")).to_series()
            two = frame.clear(2).select(e.alias("literal")).to_series()
        except Exception:  # noqa: BLE001
            return None
        return one if one.equals(two) else None

    def frame_schema(self) -> pl.Schema:
        if self._empty is None:
            self._empty = pl.LazyFrame(pl.from_arrow(self.schema.empty_table()))
        return self._empty.collect_schema()

    def column(self, e: pl.Expr) -> tuple[str, pl.DataType | None] | None:
        """``(name, cast dtype or None)`` for ``col`` or ``col.cast(dtype)``; else None."""
        m = self.match(e)
        if m is None:
            return None
        if m[0] == "col" and self.schema.get_field_index(m[1]) >= 0:
            return m[1], None
        if m[0] == "cast":
            inner = self.match(m[2][0])
            if (
                inner is not None
                and inner[0] == "col"
                and self.schema.get_field_index(inner[1]) >= 0
            ):
                return inner[1], m[1]
        return None

    # -- predicates -------------------------------------------------------------------------------
    def predicate(self, e: pl.Expr, mode: str) -> pc.Expression | None:
        """``mode`` "sup": TRUE(result) >= TRUE(e); "sub": FALSE(result) >= FALSE(e);
        "exact": both, exactly. None: nothing usable (recorded in ``dropped``)."""
        m = self.match(e)
        out = None if m is None else self._predicate(e, m, mode)
        if out is None and m is not None and m[0] == "and":
            return None  # the children recorded what they dropped
        if out is None:
            self.dropped.append(str(e))
        return out

    def _predicate(self, e: pl.Expr, m, mode: str) -> pc.Expression | None:
        kind, opt, args = m
        if kind in ("and", "or"):
            parts = [self.predicate(a, mode) for a in args]
            missing = any(p is None for p in parts)
            # Dropping a part widens an AND's TRUE side and an OR's FALSE side.
            droppable = (kind == "and" and mode == "sup") or (kind == "or" and mode == "sub")
            if missing and not droppable:
                return None
            parts = [p for p in parts if p is not None]
            if not parts:
                return None
            return reduce((lambda a, b: a & b) if kind == "and" else (lambda a, b: a | b), parts)
        if kind == "not":
            inner = self.predicate(args[0], _FLIP[mode])
            return None if inner is None else ~inner
        if kind == "col":
            if pa.types.is_boolean(self.schema.field(opt).type):
                return pc.field(opt) == True  # noqa: E712 - an Expression, not a Python bool
            return None
        if kind == "lit":
            s = self.literal(e)
            if s is None or len(s) != 1 or s.dtype not in (pl.Boolean, pl.Null):
                return None
            return pc.scalar(scalar(s[0], pa.bool_()))
        if kind == "cmp":
            return self.compare(opt, args[0], args[1])
        if kind == "between":
            bounds = [self.literal(a) for a in args[1:]]
            if any(b is not None and len(b) == 1 and b.null_count() for b in bounds):
                return None  # a NULL bound: Polars does not evaluate it as lo <= x AND x <= hi
            lo_op, hi_op = _CLOSED[opt]
            bound_args = list(args[1:])
            if any(b is not None and b.dtype.is_float() for b in bounds):
                # Polars evaluates is_between in the supertype of the column and both bounds:
                # one float bound makes the other compare in Float64 too (2**53 + 1 <= 2**53).
                bound_args = [
                    a if b is not None and b.dtype.is_float() else a.cast(pl.Float64)
                    for a, b in zip(bound_args, bounds)
                ]
            lo = self.compare(lo_op, args[0], bound_args[0])
            hi = self.compare(hi_op, args[0], bound_args[1])
            if lo is not None and hi is not None:
                return lo & hi
            if mode == "sup" and (lo is not None or hi is not None):
                self.dropped.append(f"{'upper' if hi is None else 'lower'} bound of {e}")
                return lo if lo is not None else hi
            return None
        if kind == "is_in":
            return self.is_in(args[0], args[1], nulls_equal=opt)
        if kind in ("is_null", "is_not_null", "is_nan", "is_not_nan"):
            col = self.column(args[0])
            if col is None or col[1] is not None:
                return None
            f = pc.field(col[0])
            if kind == "is_null":
                return f.is_null()
            if kind == "is_not_null":
                return f.is_valid()
            if not pa.types.is_floating(self.schema.field(col[0]).type):
                return None
            return pc.is_nan(f) if kind == "is_nan" else ~pc.is_nan(f)
        if kind == "when":
            # when(c).then(t).otherwise(f) with a condition that is never NULL (is_null /
            # is_not_null of a column, as Polars writes for out-of-range literals).
            cond, then, other = args
            cm = self.match(cond)
            if cm is None or cm[0] not in ("is_null", "is_not_null"):
                return None
            c = self.predicate(cond, "exact")
            t = self.predicate(then, "exact")
            f = self.predicate(other, "exact")
            if c is None or t is None or f is None:
                return None
            return (c & t) | (~c & f)
        return None

    # -- leaves ---------------------------------------------------------------------------------------
    def compare(self, op: str, left: pl.Expr, right: pl.Expr) -> pc.Expression | None:
        col, lit = self.column(left), None
        if col is not None:
            lit = self.literal(right)
        if col is None or lit is None:
            col, lit, op = self.column(right), self.literal(left), _SWAP[op]
        if col is None or lit is None or len(lit) != 1:
            return None
        name, cast = col
        f = pc.field(name)
        value = lit.to_arrow()[0]
        if not value.is_valid:  # comparing with NULL
            if op == "eq_missing":
                return f.is_null()
            if op == "ne_missing":
                return f.is_valid()
            return _NULL
        base = {"eq_missing": "eq", "ne_missing": "ne"}.get(op, op)
        out = self._compare_value(base, name, cast, value)
        if out is None:
            return None
        if op == "eq_missing":
            return out & f.is_valid()
        if op == "ne_missing":
            return out | f.is_null()
        return out

    def _compare_value(self, op: str, name: str, cast, value: pa.Scalar) -> pc.Expression | None:
        col_type = self.schema.field(name).type
        if _integral_domain(col_type) is not None:
            return _integral_compare(op, name, col_type, cast, value)
        if pa.types.is_floating(col_type):
            return _float_compare(op, name, col_type, cast, value)
        if cast is not None:
            return None
        if (
            _is_string(col_type)
            and _is_string(value.type)
            or _is_binary(col_type)
            and _is_binary(value.type)
            or (pa.types.is_boolean(col_type) and pa.types.is_boolean(value.type))
        ):
            lit = cast_literal(value, col_type)
            return None if lit is None else _PC_OPS[op](pc.field(name), pc.scalar(lit))
        return None

    def is_in(self, left: pl.Expr, right: pl.Expr, *, nulls_equal: bool) -> pc.Expression | None:
        col = self.column(left)
        values = self.literal(right)
        if col is None or col[1] is not None or values is None:
            return None
        name = col[0]
        if isinstance(values.dtype, (pl.List, pl.Array)):
            if len(values) != 1 or values[0] is None:
                return None
            values = values[0]
        arrow = values.to_arrow()
        if isinstance(arrow, pa.ChunkedArray):
            arrow = arrow.combine_chunks()
        col_type = self.schema.field(name).type
        has_null = arrow.null_count > 0
        arrow = arrow.drop_null()
        if pa.types.is_null(arrow.type) or len(arrow) == 0:
            arrow = pa.array([], type=col_type)
        f = pc.field(name)
        extra = None
        if pa.types.is_floating(col_type) and (
            pa.types.is_integer(arrow.type) or pa.types.is_decimal(arrow.type)
        ):
            arrow = cast_literal_array(arrow, pa.float64())  # exactly, or not at all
            if arrow is None:
                return None
        if pa.types.is_floating(col_type) and pa.types.is_floating(arrow.type):
            nan = pc.is_nan(arrow)
            if pc.any(nan).as_py():
                arrow = arrow.filter(pc.invert(nan))
                extra = pc.is_nan(f) & f.is_valid()  # NaN in the set matches NaN; NULL stays out
            if pc.any(pc.equal(arrow, 0.0)).as_py():  # Polars: -0.0 == 0.0; pyarrow hashes bits
                arrow = pa.concat_arrays([arrow, pa.array([0.0, -0.0], arrow.type)])
        elif not _same_kind(col_type, arrow.type):
            return None
        cast = cast_literal_array(arrow, col_type)
        if cast is None:
            return None
        if nulls_equal:
            if has_null:
                cast = pa.concat_arrays([cast, pa.array([None], col_type)])
            out = f.isin(cast)  # NULL rows: TRUE iff NULL is in the set
        else:
            out = (f.is_null() & _NULL) | f.isin(cast)  # NULL rows: NULL
        return out if extra is None else out | extra


def _same(build: Callable, args, e: pl.Expr) -> bool:
    """Whether ``build(*args)`` is structurally the node ``e``."""
    try:
        candidate = build(*args)
        if candidate.meta.eq(e):
            return True
        # Polars 1.x's meta.eq says False for some equal function nodes (is_in, is_between
        # of a deserialised predicate) and for NaN literals; equal serialisations (compared,
        # never read) are equal trees.
        return _POLARS_MAJOR < 2 and candidate.meta.serialize() == e.meta.serialize()
    except Exception:  # noqa: BLE001 - a builder this Polars version does not have
        return False


def _is_literal(e: pl.Expr) -> bool:
    try:
        return e.meta.is_literal(allow_aliasing=False)
    except TypeError:  # older signature
        return e.meta.is_literal()


def _is_string(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or getattr(pa.types, "is_string_view", lambda _: False)(t)
    )


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether is_in values of type ``b`` compare with a column of type ``a`` as values."""
    kinds = [
        lambda t: pa.types.is_integer(t) or pa.types.is_decimal(t),
        _is_string, _is_binary, pa.types.is_boolean, pa.types.is_date32,
        pa.types.is_timestamp, pa.types.is_duration, pa.types.is_time,
    ]  # fmt: skip
    return any(k(a) and k(b) for k in kinds) and (
        not pa.types.is_timestamp(a) or (a.tz is None) == (b.tz is None)
    )


# -- numbers, decimals and times as integers ---------------------------------------------------------


def _integral_domain(t: pa.DataType) -> tuple[str, Fraction, int, int, Any] | None:
    """``(domain, scale, lo, hi, tz)``: a value ``a`` of type ``t`` stands for ``a * scale``
    (numbers, or seconds for times), ``lo <= a <= hi``. None for other types."""
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return "num", Fraction(1), int(info.min), int(info.max), None
    if pa.types.is_decimal(t):
        top = 10**t.precision - 1
        return "num", Fraction(1, 10**t.scale), -top, top, None
    if pa.types.is_date32(t):
        return "instant", Fraction(86400), -(2**31), 2**31 - 1, None
    if pa.types.is_timestamp(t):
        return "instant", Fraction(1, _UNITS[t.unit]), -(2**63), 2**63 - 1, t.tz
    if pa.types.is_duration(t):
        return "duration", Fraction(1, _UNITS[t.unit]), -(2**63), 2**63 - 1, None
    if pa.types.is_time32(t):
        return "time", Fraction(1, _UNITS[t.unit]), -(2**31), 2**31 - 1, None
    if pa.types.is_time64(t):
        return "time", Fraction(1, _UNITS[t.unit]), -(2**63), 2**63 - 1, None
    return None


def _literal_real(v: pa.Scalar) -> tuple[str, Fraction | float, str | None, Any] | None:
    """``(domain, value, unit or None, tz)`` of a literal; the value is a Fraction, or a
    non-finite float. None for literals of other kinds."""
    t = v.type
    if pa.types.is_integer(t):
        return "num", Fraction(v.as_py()), None, None
    if pa.types.is_decimal(t):
        return "num", Fraction(Decimal(v.as_py())), None, None
    if pa.types.is_floating(t):
        x = float(v.as_py())
        return "num", (Fraction(x) if math.isfinite(x) else x), "float", None
    raw = v.cast(pa.int64()).as_py() if not pa.types.is_date32(t) else v.cast(pa.int32()).as_py()
    if pa.types.is_date32(t):
        return "instant", Fraction(raw * 86400), "date", None
    if pa.types.is_timestamp(t):
        return "instant", Fraction(raw, _UNITS[t.unit]), t.unit, t.tz
    if pa.types.is_duration(t):
        return "duration", Fraction(raw, _UNITS[t.unit]), t.unit, None
    if pa.types.is_time(t):
        return "time", Fraction(raw, _UNITS[t.unit]), t.unit, None
    return None


def _exact_cast(col_type: pa.DataType, cast: pl.DataType, lit: tuple) -> bool:
    """Whether comparing Polars' ``col.cast(cast)`` with the literal ``lit`` (from
    :func:`_literal_real`) compares the column's own values with the literal's exact value:
    the cast loses nothing and the literal is exactly a value of the cast type."""
    _, real, unit, _ = lit
    finite = isinstance(real, Fraction)
    if pa.types.is_integer(col_type):
        info = np.iinfo(col_type.to_pandas_dtype())
        if cast.is_integer():
            target = np.iinfo(_np_int(cast))
            fits = finite and real.denominator == 1 and target.min <= real <= target.max
            return fits and target.min <= info.min and info.max <= target.max
        if cast in (pl.Float64, pl.Float32):
            mantissa = 53 if cast == pl.Float64 else 24
            if not finite:
                return True  # NaN, +-inf
            if _to_float(real, cast == pl.Float32) != real:
                return False  # Polars would round the literal into the float type first
            # Rounding int -> float is monotone and exact below 2**mantissa, so for
            # |literal| < 2**mantissa every comparison comes out as on the integers.
            return info.bits <= mantissa or abs(real) < 2**mantissa
        if isinstance(cast, pl.Decimal):
            if unit == "float" and cast.precision > 15:
                return False  # compared in Float64: decimals of more digits round together
            return _fits_decimal(real, cast) and 10 ** (cast.precision - cast.scale) > max(
                -info.min, info.max
            )
        return False
    if pa.types.is_decimal(col_type):
        return (
            isinstance(cast, pl.Decimal) and _fits_decimal(real, cast) and cast.scale >= col_type.scale
            and (unit != "float" or cast.precision <= 15)
            and cast.precision - cast.scale >= col_type.precision - col_type.scale
        )  # fmt: skip
    if pa.types.is_date32(col_type):
        return (
            isinstance(cast, pl.Datetime)
            and cast.time_zone is None
            and unit in (cast.time_unit, "date")
        )
    if pa.types.is_timestamp(col_type):
        return (
            isinstance(cast, pl.Datetime) and (cast.time_zone is None) == (col_type.tz is None)
            and _UNITS[cast.time_unit] >= _UNITS[col_type.unit] and unit == cast.time_unit
        )  # fmt: skip
    if pa.types.is_duration(col_type):
        return (
            isinstance(cast, pl.Duration)
            and _UNITS[cast.time_unit] >= _UNITS[col_type.unit]
            and unit == cast.time_unit
        )
    return False


def _float_compares_exactly(col_type: pa.DataType, lit_type: pa.DataType, real) -> bool:
    """Whether Polars' float comparison of an integer or decimal column with a float literal
    equals the comparison of the exact values: the column's values map one to one into
    Float64 (ints below 2**53 in magnitude, decimals of at most 15 digits) or the literal
    lies where they do (|literal| < 2**53, 2**24 for a Float32 literal)."""
    mantissa = 24 if pa.types.is_float32(lit_type) or pa.types.is_float16(lit_type) else 53
    if pa.types.is_decimal(col_type):
        return col_type.precision <= 15 and (not isinstance(real, Fraction) or abs(real) < 2**mantissa)
    if pa.types.is_integer(col_type):
        return col_type.bit_width < mantissa or not isinstance(real, Fraction) or abs(real) < 2**mantissa
    return True


def _fits_decimal(real, dtype: pl.DataType) -> bool:
    if not isinstance(real, Fraction) or dtype.precision is None:
        return False
    scaled = real * 10**dtype.scale
    return scaled.denominator == 1 and abs(scaled.numerator) < 10**dtype.precision


def _to_float(real: Fraction, single: bool) -> Fraction | None:
    with np.errstate(over="ignore"):
        x = float(np.float32(float(real))) if single else float(real)
    return Fraction(x) if math.isfinite(x) else None


def _np_int(dtype: pl.DataType):
    return {
        pl.Int8: np.int8, pl.Int16: np.int16, pl.Int32: np.int32, pl.Int64: np.int64,
        pl.UInt8: np.uint8, pl.UInt16: np.uint16, pl.UInt32: np.uint32, pl.UInt64: np.uint64,
    }.get(dtype, np.int64)  # fmt: skip


def _integral_scalar(k: int, t: pa.DataType) -> pa.Scalar:
    if pa.types.is_integer(t) or pa.types.is_temporal(t):
        return scalar(k, t)  # (built from its buffer: pa.scalar would import pandas)
    if pa.types.is_decimal(t):
        return scalar(Decimal(k).scaleb(-t.scale), t)
    storage = pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t) else pa.int64()
    return scalar(k, storage).cast(t)


def _integral_compare(
    op: str, name: str, col_type: pa.DataType, cast, value: pa.Scalar
) -> pc.Expression | None:
    """``column <op> value`` for columns holding integers (ints, decimals, dates, times,
    durations), as a comparison with an exact integer of the column's own type."""
    domain, scale, lo, hi, tz = _integral_domain(col_type)
    lit = _literal_real(value)
    if lit is None or lit[0] != domain:
        return None
    _, real, unit, lit_tz = lit
    f = pc.field(name)
    if cast is not None and not _exact_cast(col_type, cast, lit):
        return None
    if cast is None and unit == "float" and not _float_compares_exactly(col_type, value.type, real):
        return None  # Polars compares in Float64, where distinct column values may round together
    if cast is None and not (
        isinstance(real, Fraction) and (real / scale).denominator == 1 and lo <= real / scale <= hi
    ):
        # Not a value of the column's type: Polars casts one side, and which (and how it
        # rounds) has changed between releases. Polars 2 writes the cast into the pushed
        # predicate (handled above); without one, do not guess.
        return None
    if domain != "num":
        if (tz is None) != (lit_tz is None):
            return None  # naive against zoned: not a comparison of instants
        col_unit = "date" if pa.types.is_date32(col_type) else col_type.unit
        if cast is None and unit != col_unit and not (col_unit == "date" or unit == "date"):
            return None  # Polars compares mixed units in the coarser unit, truncating
        if unit == "date" and col_unit != "date" and tz is not None:
            return None
    if not isinstance(real, Fraction):  # NaN or +-inf, against a column of integers
        if math.isnan(real):
            real_op = {"lt": True, "le": True, "ne": True, "eq": False, "gt": False, "ge": False}[
                op
            ]
        else:
            below = real < 0  # -inf: every value is above it
            real_op = {
                "lt": not below,
                "le": not below,
                "gt": below,
                "ge": below,
                "eq": False,
                "ne": True,
            }[op]
        return _true_unless_null(f) if real_op else _false_unless_null(f)
    t = real / scale
    if op in ("eq", "ne"):
        if t.denominator != 1 or not lo <= t.numerator <= hi:
            return _false_unless_null(f) if op == "eq" else _true_unless_null(f)
        return _PC_OPS[op](f, pc.scalar(_integral_scalar(t.numerator, col_type)))
    floor, ceil = math.floor(t), math.ceil(t)
    if op in ("gt", "ge"):
        k = floor + 1 if op == "gt" else ceil  # column >= k
        if k <= lo:
            return _true_unless_null(f)
        if k > hi:
            return _false_unless_null(f)
        if op == "gt" and t.denominator == 1:
            return f > pc.scalar(_integral_scalar(t.numerator, col_type))
        return f >= pc.scalar(_integral_scalar(k, col_type))
    k = ceil - 1 if op == "lt" else floor  # column <= k
    if k >= hi:
        return _true_unless_null(f)
    if k < lo:
        return _false_unless_null(f)
    if op == "lt" and t.denominator == 1:
        return f < pc.scalar(_integral_scalar(t.numerator, col_type))
    return f <= pc.scalar(_integral_scalar(k, col_type))


def _float_compare(
    op: str, name: str, col_type: pa.DataType, cast, value: pa.Scalar
) -> pc.Expression | None:
    """``column <op> value`` on a float column with Polars' rules (NaN == NaN, NaN above
    every number, -0.0 == 0.0), written with IEEE comparisons pyarrow and the indexes know."""
    if not (
        pa.types.is_floating(value.type)
        or pa.types.is_integer(value.type)
        or pa.types.is_decimal(value.type)
    ):
        return None
    is32 = pa.types.is_float32(col_type)
    widened = False  # float32 column cast to float64: compared as exact reals
    if cast is not None:
        if is32 and cast == pl.Float64:
            widened = True
        elif cast != (pl.Float32 if is32 else pl.Float64):
            return None
    py = value.as_py()
    c = float(py)
    if not pa.types.is_floating(value.type) and (
        not math.isfinite(c) or Fraction(c) != Fraction(py)
    ):
        return None  # an integer or decimal no float64 holds: Polars rounds it first
    f = pc.field(name)
    if math.isnan(c):
        isnan = pc.is_nan(f)
        return {
            "eq": isnan, "ge": isnan, "ne": ~isnan, "lt": ~isnan,
            "le": _true_unless_null(f), "gt": _false_unless_null(f),
        }[op]  # fmt: skip
    kind = pa.float32() if is32 else pa.float64()
    with np.errstate(over="ignore"):
        c32 = np.float32(c)
    if is32 and not math.isinf(c) and float(c32) != c:
        if not widened:
            return None  # Polars may round the literal to float32 first (a dynamic literal)
        # c lies strictly between two float32 values: compare with those neighbours.
        down = c32 if float(c32) < c else np.nextafter(c32, np.float32(-np.inf))
        up = np.nextafter(down, np.float32(np.inf))
        if op == "eq":
            return _false_unless_null(f)
        if op == "ne":
            return _true_unless_null(f)
        if op in ("lt", "le"):
            return f <= pc.scalar(scalar(float(down), kind))
        return ~(f < pc.scalar(scalar(float(up), kind)))  # column >= up, NaN included
    lit = pc.scalar(scalar(c, kind))
    if op == "gt":
        return ~(f <= lit)  # TRUE for NaN too, as in Polars
    if op == "ge":
        return ~(f < lit)
    return _PC_OPS[op](f, lit)
