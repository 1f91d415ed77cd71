"""Polars lazy scans of indexed datasets, with predicate pushdown (``arrowidx.polars``).

    import polars as pl
    from arrowidx import polars as apl

    apl.scan("lake/").filter(pl.col("user_id") == 42).select("amount").collect()

:func:`scan` registers an IO source with ``polars.io.plugins.register_io_source``. When a
query runs, Polars hands the source the projection, a row limit and the predicate it pushed
down (a ``pl.Expr``). The source

1. translates the predicate into a ``pyarrow.compute.Expression`` (:func:`translate`) that
   is TRUE on a superset of the rows where the Polars predicate is TRUE, and lets the
   dataset's indexes rule out files and row groups with it (``IndexedDataset.plan_file``);
2. reads what is left with Polars' own Parquet reader (local files; any other ``pyarrow``
   filesystem is read with pyarrow), dropping the rows of the deletion vectors;
3. always applies the **complete Polars predicate** to what it yields, so the translation
   only decides what is *read*, never what is *returned*: Polars does not filter again
   after a source that accepted the predicate.

The result equals ``pl.scan_parquet(<the same files>)`` with the same query, minus deleted
rows, in the same order (files in path order, rows in file order).

Reading the ``pl.Expr``
-----------------------
The expression tree is read through public, documented ``Expr.meta`` calls only:
``meta.pop()`` gives a node's inputs, ``meta.is_column()``/``meta.is_literal()`` recognise
leaves, and a node's operator is identified by rebuilding candidates from its inputs with
the public builders (``a > b``, ``a.is_in(b)``, ``a.is_between(lo, hi, closed=...)``, ...)
and comparing them with ``meta.eq`` (structural equality; on Polars 1.x, whose ``meta.eq``
misses some equal function nodes, byte-equal serialisations also count, compared and never
read). Literal values are evaluated with ``pl.select``. Nothing parses Polars'
serialisation formats (``meta.serialize`` JSON changes between releases) or the display
strings of ``meta.tree_format``, so a Polars release that renames internals still matches;
a node this code does not recognise simply gives no pruning. Tested with Polars 1.30.0,
1.44.2, 2.0.0 and 2.1.0 (:data:`TESTED_POLARS`).
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import reduce
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..lake.layout import join
from ..lake.scan import Explain, FilePlan, IndexedDataset
from ..lake.scan import dataset as _open_dataset
from ..predicate import bind, cast_literal, cast_literal_array

__all__ = ["ScanReport", "Translation", "explain", "scan", "to_arrow_expression", "translate"]

log = logging.getLogger(__name__)

#: The Polars releases this module is tested with (also pinned in ``pyproject.toml``).
TESTED_POLARS = ">=1.30,<2.2"

_POLARS_MAJOR = int(pl.__version__.split(".")[0])
_ROW_INDEX = "__arrowidx_row"
_NULL = pc.scalar(pa.scalar(None, pa.bool_()))

# ======================================================================================
# Translation: pl.Expr -> pyarrow.compute.Expression
# ======================================================================================


@dataclass
class Translation:
    """A Polars predicate translated for pruning.

    ``expression`` is TRUE wherever the Polars predicate is TRUE (a superset; ``None`` when
    nothing could be translated, i.e. no pruning). ``exact`` says it has exactly the Polars
    predicate's three-valued semantics, row for row; ``dropped`` lists the parts that could
    not be translated and were left out (an AND loses a conjunct; an OR or NOT that holds
    such a part is left out whole).
    """

    polars: str
    expression: pc.Expression | None
    exact: bool
    dropped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = "no pruning" if self.expression is None else str(self.expression)
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


def translate(expr: pl.Expr | None, schema: pa.Schema) -> Translation:
    """Translate ``expr`` and say how exactly (see :class:`Translation`)."""
    if expr is None:
        return Translation("None", None, True)
    t = _Translator(schema)
    try:
        out = t.predicate(expr.meta.undo_aliases(), "sup")
    except Exception as e:  # noqa: BLE001 - an unexpected tree gives no pruning, never an error
        log.debug("translation of %s failed: %s", expr, e)
        return Translation(str(expr), None, False, [f"{expr} ({type(e).__name__}: {e})"])
    return Translation(str(expr), out, not t.dropped, t.dropped)


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
            return pc.scalar(pa.scalar(s[0], pa.bool_()))
        if kind == "cmp":
            return self.compare(opt, args[0], args[1])
        if kind == "between":
            lo_op, hi_op = _CLOSED[opt]
            lo = self.compare(lo_op, args[0], args[1])
            hi = self.compare(hi_op, args[0], args[2])
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
            return _fits_decimal(real, cast) and 10 ** (cast.precision - cast.scale) > max(
                -info.min, info.max
            )
        return False
    if pa.types.is_decimal(col_type):
        return (
            isinstance(cast, pl.Decimal) and _fits_decimal(real, cast) and cast.scale >= col_type.scale
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
    if pa.types.is_integer(t):
        return pa.scalar(k, t)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(k).scaleb(-t.scale), t)
    storage = pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t) else pa.int64()
    return pa.scalar(k, storage).cast(t)


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
            return f <= pc.scalar(pa.scalar(float(down), kind))
        return ~(f < pc.scalar(pa.scalar(float(up), kind)))  # column >= up, NaN included
    lit = pc.scalar(pa.scalar(c, kind))
    if op == "gt":
        return ~(f <= lit)  # TRUE for NaN too, as in Polars
    if op == "ge":
        return ~(f < lit)
    return _PC_OPS[op](f, lit)


# ======================================================================================
# The scan
# ======================================================================================


@dataclass
class ScanReport:
    """What one execution of a scan (or :func:`explain`) decided: the pushed predicate, its
    translation, the projection and row limit, and per file what the indexes did."""

    root: str
    predicate: str | None
    translation: Translation
    plans: list[FilePlan]
    with_columns: list[str] | None = None
    n_rows: int | None = None
    files_read: int = 0
    row_groups_read: int = 0
    rows_read: int = 0
    rows_returned: int | None = None
    seconds: float | None = None

    @property
    def files_total(self) -> int:
        return len(self.plans)

    @property
    def files_skipped(self) -> int:
        return sum(p.skipped for p in self.plans)

    @property
    def rows_total(self) -> int:
        return sum(p.rows for p in self.plans)

    @property
    def rows_kept(self) -> int:
        """Rows in the row groups the indexes kept (before a row limit)."""
        return self.explain.rows_read

    @property
    def explain(self) -> Explain:
        """The per-file table of ``IndexedDataset.explain`` for the translated predicate."""
        return Explain(str(self.translation.expression), self.plans)

    def summary(self) -> str:
        text = (
            f"arrowidx.polars scan of {self.root}: predicate {self.predicate} -> {self.translation}; "
            f"indexes skipped {self.files_skipped}/{self.files_total} files and kept "
            f"{self.rows_kept:,}/{self.rows_total:,} rows"
        )
        if self.seconds is not None:
            text += (
                f"; read {self.rows_read:,} rows in {self.row_groups_read} row groups of {self.files_read} files,"
                f" returned {self.rows_returned:,} rows in {self.seconds * 1000:.1f} ms"
            )
        return text

    def __str__(self) -> str:
        return f"{self.summary()}\n{self.explain}"


_DATASETS: OrderedDict[tuple, IndexedDataset] = OrderedDict()
_DATASETS_LOCK = threading.Lock()
_DATASETS_MAX = 16


def _dataset(source: Any, filesystem: pafs.FileSystem | None, on_corrupt: str) -> IndexedDataset:
    """An opened dataset, shared between scans of the same path so that opened indexes,
    footers and deletion vectors stay cached (each cache entry is keyed by the data file's
    size and modification time, and each execution re-reads the manifest)."""
    if filesystem is not None or not isinstance(source, (str, os.PathLike)):
        return _open_dataset(source, filesystem=filesystem, on_corrupt=on_corrupt)
    path = os.fspath(source)
    key = (os.path.abspath(path) if "://" not in path else path, on_corrupt)
    with _DATASETS_LOCK:
        data = _DATASETS.get(key)
        if data is not None:
            _DATASETS.move_to_end(key)
            return data
    data = _open_dataset(source, on_corrupt=on_corrupt)
    with _DATASETS_LOCK:
        data = _DATASETS.setdefault(key, data)
        while len(_DATASETS) > _DATASETS_MAX:
            _DATASETS.popitem(last=False)
    return data


def explain(
    source: Any, predicate: pl.Expr | None = None, *, filesystem: pafs.FileSystem | None = None
) -> ScanReport:
    """What a scan of ``source`` would prune for the Polars ``predicate``, without reading
    data: the translation and, per file, which index skipped it or how many row groups stay.

    ``source`` is a path (or anything ``arrowidx.dataset`` takes) or an ``IndexedDataset``.
    """
    data = source if isinstance(source, IndexedDataset) else _dataset(source, filesystem, "raise")
    translation, plans, _ = _plan(data, predicate)
    return ScanReport(data.root, None if predicate is None else str(predicate), translation, plans)


_SCHEMAS: weakref.WeakKeyDictionary[IndexedDataset, tuple] = weakref.WeakKeyDictionary()


def _polars_schema(data: IndexedDataset, native: bool) -> dict[str, pl.DataType]:
    """The schema the scan declares: what Polars' reader makes of the first file (cached
    while that file is unchanged), or Polars' view of the Arrow schema for pyarrow reads."""
    if not native:
        return dict(pl.from_arrow(data.schema.empty_table()).schema)
    path = join(data.root, data.files[0])
    info = data.fs.get_file_info(path)
    key = (path, info.size, info.mtime_ns)
    cached = _SCHEMAS.get(data)
    if cached is not None and cached[0] == key:
        return cached[1]
    schema = dict(pl.scan_parquet(path, glob=False, hive_partitioning=False).collect_schema())
    _SCHEMAS[data] = (key, schema)
    return schema


_LOCKS: weakref.WeakKeyDictionary[IndexedDataset, threading.Lock] = weakref.WeakKeyDictionary()


def _plan(data: IndexedDataset, predicate):
    """Translate, refresh the manifest and plan every file; one manifest version per call."""
    with _DATASETS_LOCK:
        lock = _LOCKS.setdefault(data, threading.Lock())
    with lock:
        data.refresh()
        translation = translate(predicate, data.schema)
        expr = _prebind(data, translation.expression)
        # plan_file per file, in this thread: once the indexes are cached this takes well
        # under a millisecond for 20 files, less than starting plan()'s thread pool.
        plans = [data.plan_file(rel, expr) for rel in data.files]
        vectors = {p.path: data.deletion_vector(p.path) for p in plans}
    return translation, plans, vectors


def scan(
    source: Any,
    *,
    filesystem: pafs.FileSystem | None = None,
    on_corrupt: str = "raise",
    reader: str = "auto",
    on_scan: Callable[[ScanReport], None] | None = None,
) -> pl.LazyFrame:
    """A ``pl.LazyFrame`` over an indexed Parquet dataset (see the module docstring).

    ``reader``: ``"polars"`` reads the kept row groups with Polars' Parquet reader (local
    files only), ``"pyarrow"`` with pyarrow (any ``pyarrow.fs`` filesystem), ``"auto"``
    picks Polars for local files. ``on_scan`` is called with a :class:`ScanReport` after each
    execution; every execution also logs its summary at INFO on ``arrowidx.polars``.
    """
    data = (
        source if isinstance(source, IndexedDataset) else _dataset(source, filesystem, on_corrupt)
    )
    if reader not in ("auto", "polars", "pyarrow"):
        raise ValueError("reader must be 'auto', 'polars' or 'pyarrow'")
    local = isinstance(data.fs, pafs.LocalFileSystem)
    if reader == "polars" and not local:
        raise ValueError(
            "reader='polars' reads local files only; use reader='pyarrow' for other filesystems"
        )
    src = _Source(data, native=local and reader != "pyarrow", on_scan=on_scan)
    kwargs: dict[str, Any] = {"schema": src.schema, "validate_schema": False}
    params = inspect.signature(pl.io.plugins.register_io_source).parameters
    if "is_pure" in params:  # one read per query plan; repeated scans may share it
        kwargs["is_pure"] = True
    if "explain_name" in params:
        kwargs["explain_name"] = "arrowidx"
        kwargs["explain_detail"] = data.root
    return pl.io.plugins.register_io_source(src, **kwargs)


@dataclass
class _Read:
    """One file to read: row ranges ``[a, b)`` and the deleted positions to drop in them."""

    plan: FilePlan
    runs: list[tuple[int, int]]
    deleted: np.ndarray  # sorted positions (int64) within the runs

    @property
    def rows(self) -> int:
        return sum(b - a for a, b in self.runs)

    @property
    def whole(self) -> bool:
        return self.runs == [(0, self.plan.rows)] and not self.deleted.size


_FEW_ROWS = 8  # bitmaps this small are read row by row rather than by row group


class _Source:
    """The IO source Polars calls: ``(with_columns, predicate, n_rows, batch_size)``."""

    WAVE_ROWS = 32_000_000  # rows read per parallel wave (bounds memory with the streaming engine)

    def __init__(self, data: IndexedDataset, *, native: bool, on_scan):
        self.data = data
        self.native = native
        self.on_scan = on_scan
        self.arrow_schema = data.schema
        self.schema = _polars_schema(data, native)

    def __call__(self, with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
        return self._run(with_columns, predicate, n_rows, batch_size)

    # -- planning --------------------------------------------------------------------------------
    def _plan(self, predicate):
        return _plan(self.data, predicate)

    def _reads(self, plans, vectors, n_rows, predicate) -> list[_Read]:
        """The row ranges to read per file, cut at the first ``n_rows`` live rows."""
        remaining = n_rows
        reads = []
        for plan in plans:
            if remaining is not None and remaining <= 0:
                break
            dv = vectors.get(plan.path)
            deleted = (
                dv.positions().astype(np.int64)
                if dv is not None and dv.cardinality
                else np.zeros(0, np.int64)
            )
            cutoff = plan.rows
            if remaining is not None:
                live = plan.rows - deleted.size
                if live > remaining:  # the row limit ends inside this file
                    gaps = deleted - np.arange(deleted.size)  # live rows before each deleted one
                    cutoff = remaining + int(np.searchsorted(gaps, remaining - 1, side="right"))
                    remaining = 0
                else:
                    remaining -= live
            if plan.skipped or not plan.row_groups:
                continue
            offsets = plan.row_group_offsets
            runs: list[tuple[int, int]] = []
            if plan.result.kind == "bitmap" and len(plan.result.bitmap) <= _FEW_ROWS:
                # A handful of rows: slice just them (Polars then decodes less than a row group).
                for row in plan.result.bitmap:
                    if row >= cutoff:
                        break
                    if runs and runs[-1][1] == row:
                        runs[-1] = (runs[-1][0], row + 1)
                    else:
                        runs.append((row, row + 1))
                plan_groups: list[int] = []
            else:
                plan_groups = plan.row_groups
            for g in plan_groups:
                a, b = int(offsets[g]), min(int(offsets[g + 1]), cutoff)
                if a >= b:
                    continue
                if runs and runs[-1][1] == a:
                    runs[-1] = (runs[-1][0], b)
                else:
                    runs.append((a, b))
            if not runs:
                continue
            if deleted.size:
                inside = np.zeros(deleted.size, dtype=bool)
                for a, b in runs:
                    inside |= (deleted >= a) & (deleted < b)
                deleted = deleted[inside]
            reads.append(_Read(plan, runs, deleted))
        return reads

    # -- running ---------------------------------------------------------------------------------
    def _run(self, with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
        start = time.perf_counter()
        translation, plans, vectors = self._plan(predicate)
        reads = self._reads(plans, vectors, n_rows, predicate)
        columns = list(self.schema) if with_columns is None else list(with_columns)
        needed = list(
            dict.fromkeys(columns + [c for c in _root_names(predicate) if c in self.schema])
        )
        if not needed:  # e.g. pl.len(): read one column for the row count
            needed = [next(iter(self.schema))]
        report = ScanReport(
            self.data.root, None if predicate is None else str(predicate), translation, plans,
            with_columns=with_columns, n_rows=n_rows, files_read=len(reads),
            row_groups_read=sum(_groups(r) for r in reads),
            rows_read=sum(r.rows - r.deleted.size for r in reads),
        )  # fmt: skip
        returned = 0
        frames = (
            self._native(reads, predicate, needed)
            if self.native
            else self._pyarrow(reads, predicate, needed)
        )
        for df in frames:
            df = df.select(columns) if columns else df.drop(df.columns)
            if df.dtypes != [self.schema[c] for c in columns]:
                df = df.cast({c: self.schema[c] for c in columns})
            if not df.height:
                continue
            returned += df.height
            yield from _batches(df, batch_size)
        if not returned:
            yield pl.DataFrame(schema={c: self.schema[c] for c in columns})
        report.rows_returned = returned
        report.seconds = time.perf_counter() - start
        if log.isEnabledFor(logging.INFO):
            log.info("%s", report.summary())
        if self.on_scan is not None:
            self.on_scan(report)

    def _waves(self, reads: list[_Read]) -> Iterator[list[_Read]]:
        wave, rows = [], 0
        for r in reads:
            if wave and rows + r.rows > self.WAVE_ROWS:
                yield wave
                wave, rows = [], 0
            wave.append(r)
            rows += r.rows
        if wave:
            yield wave

    def _native(self, reads: list[_Read], predicate, needed: list[str]) -> Iterator[pl.DataFrame]:
        """Kept row ranges read by Polars (its own row-group statistics and late
        materialisation apply), deleted rows dropped by row position, predicate applied."""
        for wave in self._waves(reads):
            queries: list[pl.LazyFrame] = []
            whole: list[str] = []  # consecutive files read in full: one Polars scan
            for r in wave:
                path = join(self.data.root, r.plan.path)
                if r.whole:
                    whole.append(path)
                    continue
                if whole:
                    queries.append(_scan_whole(whole, predicate, needed))
                    whole = []
                parts = [self._run_query(path, a, b, r, predicate, needed) for a, b in r.runs]
                queries.append(parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical"))
            if whole:
                queries.append(_scan_whole(whole, predicate, needed))
            yield from (pl.collect_all(queries) if len(queries) > 1 else [queries[0].collect()])

    def _run_query(self, path: str, a: int, b: int, r: _Read, predicate, needed) -> pl.LazyFrame:
        deleted = r.deleted[(r.deleted >= a) & (r.deleted < b)]
        if not deleted.size:
            lf = pl.scan_parquet(path, glob=False, hive_partitioning=False)
            if (a, b) != (0, r.plan.rows):
                lf = lf.slice(a, b - a)
            return _finish(lf, predicate, needed)
        lf = pl.scan_parquet(path, glob=False, hive_partitioning=False, row_index_name=_ROW_INDEX)
        if (a, b) != (0, r.plan.rows):
            lf = lf.slice(a, b - a)
        row = pl.col(_ROW_INDEX).cast(pl.Int64)
        if deleted.size * 2 <= b - a:
            keep = ~row.is_in(_collection(deleted))
        else:
            alive = np.setdiff1d(np.arange(a, b, dtype=np.int64), deleted, assume_unique=True)
            keep = row.is_in(_collection(alive))
        return _finish(lf, keep if predicate is None else keep & predicate, needed)

    def _pyarrow(self, reads: list[_Read], predicate, needed: list[str]) -> Iterator[pl.DataFrame]:
        """Kept row groups read by pyarrow (any filesystem), deleted rows dropped, predicate applied."""
        fields = [c for c in needed if self.arrow_schema.get_field_index(c) >= 0]

        def read(r: _Read) -> pl.DataFrame:
            plan = r.plan
            offsets = plan.row_group_offsets
            groups = [
                g
                for g in plan.row_groups
                if any(a < offsets[g + 1] and offsets[g] < b for a, b in r.runs)
            ]
            with self.data.fs.open_input_file(join(self.data.root, plan.path)) as f:
                table = pq.ParquetFile(f, metadata=self.data.footer(plan.path)).read_row_groups(
                    groups, columns=fields
                )
            positions = np.concatenate(
                [np.arange(offsets[g], offsets[g + 1], dtype=np.int64) for g in groups]
            )
            keep = np.zeros(positions.size, dtype=bool)
            for a, b in r.runs:
                keep |= (positions >= a) & (positions < b)
            if r.deleted.size:
                keep &= ~np.isin(positions, r.deleted, assume_unique=True)
            if not keep.all():
                table = table.filter(pa.array(keep))
            df = pl.from_arrow(table)
            df = df.cast({c: self.schema[c] for c in df.columns if df.schema[c] != self.schema[c]})
            return df if predicate is None else df.filter(predicate)

        for wave in self._waves(reads):
            futures = [_pool().submit(read, r) for r in wave]
            try:
                for future in futures:
                    yield future.result()
            finally:  # Polars may stop early (a row limit): drop what was not started
                for future in futures:
                    future.cancel()


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    """Threads for the pyarrow reader (pyarrow releases the GIL while it decodes)."""
    global _POOL
    if _POOL is None:
        with _DATASETS_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(
                    max_workers=min(4, os.cpu_count() or 2), thread_name_prefix="arrowidx-polars"
                )
    return _POOL


def _prebind(data: IndexedDataset, expr: pc.Expression | None):
    """``expr`` bound once to the dataset schema, when every file's index reads the bound
    columns with the same types (``bind`` accepts a bound node); else ``expr`` itself.

    ``IndexedDataset.plan`` binds the Expression again for every file, and each bind
    re-reads pyarrow's serialisation of it: for a needle that is most of the planning time.
    """
    if expr is None:
        return None
    node = bind(expr, data.schema)
    columns = node.columns()
    try:
        for rel in data.files:
            entry = data.manifest.files.get(rel)
            index = (
                data.file_index(entry) if entry is not None and entry.index is not None else None
            )
            if index is None:
                continue
            for c in columns:
                i = index.schema.get_field_index(c)
                if i >= 0 and index.schema.field(i).type != data.schema.field(c).type:
                    return expr
    except Exception:  # noqa: BLE001 - let plan() meet (and report) a damaged index itself
        return expr
    return node


def _batches(df: pl.DataFrame, size: int | None) -> Iterator[pl.DataFrame]:
    """``df`` in slices of at most ``size`` rows (Polars' batch size hint), cut where its
    chunks end, so Polars does not get more (smaller) chunks than the reader made."""
    if not size or df.height <= size:
        yield df
        return
    lengths = df.to_series(0).chunk_lengths() if df.width else [df.height]
    if df.width and any(df.to_series(i).chunk_lengths() != lengths for i in range(1, df.width)):
        lengths = [df.height]
    start = length = 0
    for n in lengths:
        if length and length + n > size:
            yield from df.slice(start, length).iter_slices(size)
            start, length = start + length, 0
        length += n
    if length:
        yield from df.slice(start, length).iter_slices(size)


def _scan_whole(paths: list[str], predicate, needed: list[str]) -> pl.LazyFrame:
    return _finish(pl.scan_parquet(paths, glob=False, hive_partitioning=False), predicate, needed)


def _finish(lf: pl.LazyFrame, predicate, needed: list[str]) -> pl.LazyFrame:
    if predicate is not None:
        lf = lf.filter(predicate)
    return lf.select(needed)


def _collection(values: np.ndarray) -> Any:
    return pl.Series(values, dtype=pl.Int64).implode()  # one list: the set to look in


def _root_names(predicate) -> list[str]:
    if predicate is None:
        return []
    try:
        return predicate.meta.root_names()
    except Exception:  # noqa: BLE001
        return []


def _groups(r: _Read) -> int:
    offsets = r.plan.row_group_offsets
    return sum(
        1
        for g in r.plan.row_groups
        if any(a < offsets[g + 1] and offsets[g] < b for a, b in r.runs)
    )
from .paimon import scan_paimon  # noqa: E402,F401
