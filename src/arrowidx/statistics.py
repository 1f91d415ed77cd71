"""What row-group and manifest statistics may judge: the one rule, written once.

A filter's answer is its meaning on the data in memory (``Table.filter(expr)``).
Statistics (Parquet row-group min/max/null counts, read by pyarrow's
``ParquetFileFragment.subset(filter=...)`` and by its dataset scanner) only ever see an
interval and a null count per column, so they can rule out a row group only for
predicates whose truth on a value is decided by where the value lies in that interval.
pyarrow hands them the whole filter, and that drops rows the kernel selects (NaN rows,
``-0.0``, literals of another type: issue 38). arrowidx hands them instead the part of the
filter this rule keeps.

**The rule.** The filter is bound to the schema it is read with
(:func:`arrowidx.predicate.bind`: literals cast exactly to the column type, anything else
left as an opaque part), then each part is kept or replaced by TRUE (read the row group):

1. *Same types.* A comparison or IN list is kept only with its literals cast exactly to the
   column's own type (both ways, as the index binder casts them). A literal that does not
   survive the cast (``date32 IN timestamp values`` that carry a time of day, which
   pyarrow's kernel truncates and its statistics do not) makes the part TRUE.
2. *What the interval covers.* Statistics cover every non-null value except NaN (Parquet
   writers leave NaN out of min/max), in IEEE order where ``-0.0 == 0.0``. So a kept part
   must be FALSE or NULL for NaN and must not tell ``-0.0`` from ``0.0``. On a floating-point
   column: ``<``, ``<=``, ``==``, ``>=``, ``>`` with a non-NaN literal are kept; ``!=``, a
   NOT over a comparison, a NaN literal, and ``is_nan`` are TRUE; an IN list becomes the
   range ``min <= x <= max`` of its values (IN tells ``-0.0`` from ``0.0``; pyarrow's
   statistics then drop a ``0.0`` row for ``x IN (0.0)``), or TRUE if it holds NaN.
3. *Null counts are exact.* ``IS NULL`` / ``IS NOT NULL`` are kept (NaN is not NULL).
4. *Three-valued logic.* AND keeps its kept parts (a dropped part widens it); OR is kept
   with its parts widened; NOT is pushed down through AND/OR (De Morgan holds in Kleene
   logic) onto comparisons of non-float columns (NOT x < 1 is x >= 1 there, NULL for NULL
   either way) and IS NULL; a NOT over an IN list is TRUE (it is TRUE for NULL rows under
   pyarrow's default null matching); anything else (functions, arithmetic, nested fields)
   is TRUE.

What is kept is a filter every matching row satisfies, so a row group it rules out holds
no matching row. When nothing was widened (:attr:`StatisticsFilter.exact`), the kept filter
means exactly what the whole filter means, and pyarrow's scanner may filter with it (the
"hand-over" of a scan the indexes cannot prune); otherwise the scan filters every row
read with the whole filter, by the kernel.

Cost: one bind per query (remembered for the last filters asked, by
``Expression.equals``); nothing per row group.

Paimon's manifest statistics (:func:`arrowidx.paimon.stats.may_match`) judge the same
bound tree, and follow the same rule (NaN and ``-0.0`` are kept out of their intervals
there too).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import facts
from .predicate import And, Compare, Const, IsIn, IsNull, Node, Not, Opaque, Or, Visitor, bind

_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
_OPS = {
    "eq": lambda f, v: f == v, "lt": lambda f, v: f < v, "le": lambda f, v: f <= v,
    "gt": lambda f, v: f > v, "ge": lambda f, v: f >= v,
}  # fmt: skip


@dataclass(frozen=True)
class StatisticsFilter:
    """The part of a filter statistics may judge (None: nothing; read every row group),
    and whether it means exactly what the filter means (then a scan may filter with it;
    None then means the filter is TRUE)."""

    expression: pc.Expression | None
    exact: bool


_NOTHING = StatisticsFilter(None, False)


def statistics_filter(expr, schema: pa.Schema) -> StatisticsFilter:
    """The part of ``expr`` (a ``pc.Expression``) that statistics may judge under ``schema``
    (see the module docstring). A filter of None is ``StatisticsFilter(None, True)``."""
    if expr is None:
        return StatisticsFilter(None, True)
    if not isinstance(expr, pc.Expression):
        return _NOTHING
    found = facts.STATISTICS_FILTERS.find(
        lambda key: (key[0] is expr or key[0].equals(expr)) and (key[1] is schema or key[1].equals(schema))
    )  # (remembered for the last filters: a query asks it per file)
    if found is None:
        node, exact = sound_node(bind(expr, schema), schema)
        found = StatisticsFilter(to_expression(node, schema), exact)
        facts.STATISTICS_FILTERS.add((expr, schema), found)
    return found


def _is_float(schema: pa.Schema, column: str) -> bool:
    t = schema.field(column).type
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_floating(t)


_TRUE = Const(True)


def sound_node(node: Node, schema: pa.Schema) -> tuple[Node, bool]:
    """``node`` reduced to what statistics may judge (a superset of its TRUE rows), and
    whether nothing was widened."""
    return _Sound(schema).visit(node)


class _Sound(Visitor[tuple[Node, bool]]):
    """What statistics may judge of a node: itself, or a wider node (``TRUE`` at the widest)."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema

    def default(self, node: Node) -> tuple[Node, bool]:
        return _TRUE, False  # Opaque: functions, arithmetic, bare columns, nested fields

    def constant(self, node: Const) -> tuple[Node, bool]:
        return node, True

    def compare(self, node: Compare) -> tuple[Node, bool]:
        if _is_float(self.schema, node.column) and _is_nan(node.literal):
            return _TRUE, False
        return node, True

    def is_null(self, node: IsNull) -> tuple[Node, bool]:
        return node, True

    def is_in(self, node: IsIn) -> tuple[Node, bool]:
        widen = node.null_in_set and node.null_match == "MATCH"  # NULL rows are TRUE
        if _is_float(self.schema, node.column):
            values = node.values
            if len(values) and pc.any(pc.is_nan(values)).as_py():
                return _TRUE, False
            if not len(values):
                part: Node = Const(False)
            else:
                bounds = pc.min_max(values)
                part = And((Compare("ge", node.column, bounds["min"]), Compare("le", node.column, bounds["max"])))
            return (Or((part, IsNull(node.column))) if widen else part), False
        if node.null_in_set or node.null_match not in ("MATCH", "SKIP"):
            plain = IsIn(node.column, node.values, False, "SKIP")  # (the same TRUE rows without NULLs)
            return (Or((plain, IsNull(node.column))) if widen else plain), False
        return node, True

    def negation(self, node: Not) -> tuple[Node, bool]:
        return _SoundNot(self).visit(node.child)

    def conjunction(self, node: And) -> tuple[Node, bool]:
        parts = [self.visit(c) for c in node.children]
        kept = [n for n, _ in parts if n != _TRUE]
        exact = all(e for _, e in parts)
        if not kept:
            return _TRUE, exact
        return (kept[0] if len(kept) == 1 else And(tuple(kept), node.kleene if exact else True)), exact

    def disjunction(self, node: Or) -> tuple[Node, bool]:
        parts = [self.visit(c) for c in node.children]
        if any(n == _TRUE for n, _ in parts):
            return _TRUE, False
        exact = all(e for _, e in parts)
        return Or(tuple(n for n, _ in parts), node.kleene if exact else True), exact


class _SoundNot(Visitor[tuple[Node, bool]]):
    """``NOT child`` reduced to what statistics may judge (visiting the child)."""

    def __init__(self, sound: _Sound):
        self.sound = sound

    def default(self, child: Node) -> tuple[Node, bool]:
        return _TRUE, False  # NOT IN (TRUE for NULL rows), NOT of functions

    def constant(self, child: Const) -> tuple[Node, bool]:
        return Const(None if child.value is None else not child.value), True

    def negation(self, child: Not) -> tuple[Node, bool]:
        return self.sound.visit(child.child)

    def is_null(self, child: IsNull) -> tuple[Node, bool]:
        return Not(child), True

    def compare(self, child: Compare) -> tuple[Node, bool]:
        if _is_float(self.sound.schema, child.column):
            return _TRUE, False  # TRUE for NaN, which no interval covers
        return Not(child), True

    def conjunction(self, child: And) -> tuple[Node, bool]:  # NOT (a AND b) = NOT a OR NOT b, in Kleene and plain logic alike
        return self.sound.visit(Or(tuple(Not(c) for c in child.children), child.kleene))

    def disjunction(self, child: Or) -> tuple[Node, bool]:
        return self.sound.visit(And(tuple(Not(c) for c in child.children), child.kleene))


def _is_nan(value: pa.Scalar) -> bool:
    v = value.as_py() if value.is_valid else None
    return isinstance(v, float) and v != v


def to_expression(node: Node, schema: pa.Schema) -> pc.Expression | None:
    """A ``pc.Expression`` meaning exactly ``node`` (None for TRUE). Literals keep the
    column's type (a dictionary column compares with its value type)."""
    return _ToExpression().visit(node)


class _ToExpression(Visitor["pc.Expression | None"]):
    """A node as the ``pc.Expression`` of the same meaning (None: TRUE)."""

    def default(self, node: Node) -> pc.Expression | None:
        raise TypeError(f"not a bound predicate node: {node!r}")

    def opaque(self, node: Opaque) -> pc.Expression | None:
        raise TypeError("an opaque part has no expression")

    def constant(self, node: Const) -> pc.Expression | None:
        return None if node.value is True else pc.scalar(pa.scalar(node.value, pa.bool_()))

    def compare(self, node: Compare) -> pc.Expression | None:
        return _OPS[node.op](pc.field(node.column), pc.scalar(_plain(node.literal)))

    def is_null(self, node: IsNull) -> pc.Expression | None:
        return pc.field(node.column).is_null()

    def is_in(self, node: IsIn) -> pc.Expression | None:
        values = node.values
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if node.null_in_set:
            values = pa.concat_arrays([values, pa.nulls(1, values.type)])
        if node.null_match not in ("MATCH", "SKIP"):
            raise TypeError(f"is_in null matching {node.null_match} has no pyarrow option")
        options = pc.SetLookupOptions(values, skip_nulls=node.null_match == "SKIP")
        return pc.Expression._call("is_in", [pc.field(node.column)], options)

    def negation(self, node: Not) -> pc.Expression | None:
        inner = self.visit(node.child)
        return pc.scalar(pa.scalar(False)) if inner is None else ~inner

    def conjunction(self, node: And) -> pc.Expression | None:
        parts = [p for p in (self.visit(c) for c in node.children) if p is not None]
        if not parts:
            return None
        name = "and_kleene" if node.kleene else "and"
        return reduce(lambda a, b: pc.Expression._call(name, [a, b]), parts)

    def disjunction(self, node: Or) -> pc.Expression | None:
        parts = [self.visit(c) for c in node.children]
        if any(p is None for p in parts):
            return None
        name = "or_kleene" if node.kleene else "or"
        return reduce(lambda a, b: pc.Expression._call(name, [a, b]), parts)


def _plain(literal: pa.Scalar) -> pa.Scalar:
    """A dictionary-typed literal as its value (pyarrow compares a dictionary column with it)."""
    if pa.types.is_dictionary(literal.type):
        return literal.value if literal.is_valid else pa.scalar(None, literal.type.value_type)
    return literal


# ------------------------------------------------------------------------------------------
# Polars' own statistics: arrowidx.polars hands its predicate to Polars' Parquet reader
# ------------------------------------------------------------------------------------------
#
# The same rule, in Polars' semantics (NaN is the largest value, and equal to itself). Polars'
# reader keeps NaN out of its own min/max decisions (it never skips a row group for a float
# ``>``, ``>=`` or ``!=``, whose NaN rows min/max cannot see: pola-rs/polars#26805, #27673), and
# its strict types refuse literals of another type before a file is read. So a conjunct of
# the predicate goes to Polars' reader (its row-group statistics and late materialisation)
# when it compares a column with a non-null, non-NaN literal of that column's own type (a
# dynamic int or float literal within the column's values, a typed literal of exactly the
# column's dtype), or is ``is_null`` / ``is_not_null`` of a column. Everything else (NOT, OR,
# ``is_between``, ``is_in``, functions, null literals) is applied by Polars to the rows read,
# in memory, where no statistics are involved. (The one wrong Polars answer the differential
# suite met, ``x == v & ~x.is_between(v, None, closed="none")``, is its lazy engine's, before
# any file is read: see tests/test_differential_polars.py.)

_POLARS_SWAP = {"Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq", "Eq": "Eq", "NotEq": "NotEq"}
_INT_RANGES = {
    "Int8": (-(2**7), 2**7 - 1), "Int16": (-(2**15), 2**15 - 1), "Int32": (-(2**31), 2**31 - 1),
    "Int64": (-(2**63), 2**63 - 1), "UInt8": (0, 2**8 - 1), "UInt16": (0, 2**16 - 1), "UInt32": (0, 2**32 - 1),
    "UInt64": (0, 2**64 - 1),
}  # fmt: skip


def polars_parts(predicate, schema) -> tuple[Any, Any]:
    """``(what Polars' own Parquet statistics may judge, the rest)`` of a Polars predicate,
    each a Polars expression or None (see above): a scan filters with the first, pushed
    into Polars' reader, then with the second on the rows read, where Polars cannot push it
    (:func:`opaque_polars`). ``schema``: ``{column: Polars dtype}``."""
    import io
    import json

    import polars as pl

    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # noqa: BLE001 - an expression Polars cannot serialise: all of it read in memory
        return None, predicate
    conjuncts: list = []
    _polars_conjuncts(tree, conjuncts)
    safe = [c for c in conjuncts if _polars_safe(c, schema)]
    if len(safe) == len(conjuncts):
        return predicate, None
    if not safe:
        return None, predicate

    def expr(nodes: list):
        return reduce(operator.and_, [pl.Expr.deserialize(io.StringIO(json.dumps(n)), format="json") for n in nodes])

    try:
        return expr(safe), expr([c for c in conjuncts if not _polars_safe(c, schema)])
    except Exception:  # noqa: BLE001 - a part JSON cannot carry back (a NaN literal): all of it in memory
        return None, predicate


def opaque_polars(predicate):
    """``predicate`` in a form Polars evaluates on the rows and never pushes into a reader
    (an identity Python function over its result: Polars cannot look through it)."""
    import polars as pl

    return predicate.map_batches(lambda s: s, return_dtype=pl.Boolean)


def _polars_conjuncts(node: dict, out: list) -> None:
    binary = node.get("BinaryExpr") if isinstance(node, dict) else None
    if binary is not None and binary.get("op") in ("And", "LogicalAnd"):
        _polars_conjuncts(binary["left"], out)
        _polars_conjuncts(binary["right"], out)
    else:
        out.append(node)


def _polars_safe(node: dict, schema) -> bool:
    function = node.get("Function") if isinstance(node, dict) else None
    if function is not None:
        inputs = function.get("input") or []
        kind = (function.get("function") or {}).get("Boolean") if isinstance(function.get("function"), dict) else None
        return kind in ("IsNull", "IsNotNull") and len(inputs) == 1 and _polars_column(inputs[0], schema) is not None
    binary = node.get("BinaryExpr") if isinstance(node, dict) else None
    if binary is None or binary.get("op") not in _POLARS_SWAP:
        return False
    op, left, right = binary["op"], binary["left"], binary["right"]
    if _polars_column(left, schema) is None:
        left, right, op = right, left, _POLARS_SWAP[op]
    dtype = _polars_column(left, schema)
    literal = right.get("Literal") if isinstance(right, dict) else None
    if dtype is None or not isinstance(literal, dict):
        return False
    return _polars_literal_fits(literal, dtype, _dtype_name(dtype))


def _polars_column(node, schema):
    column = node.get("Column") if isinstance(node, dict) else None
    return schema.get(column) if isinstance(column, str) else None


def _dtype_name(dtype) -> str:
    return type(dtype).__name__ if not isinstance(dtype, type) else dtype.__name__


def _polars_literal_fits(literal: dict, dtype, name: str) -> bool:
    """A non-null, non-NaN literal of the column's own type (a dynamic number within it)."""
    if "Dyn" in literal:
        (kind, value), = literal["Dyn"].items()
        if value is None:
            return False  # a NaN float serialises as null
        if kind == "Int":
            if name in _INT_RANGES:
                low, high = _INT_RANGES[name]
                return low <= value <= high
            return name in ("Float32", "Float64") and abs(value) <= 2**24
        if kind == "Float":
            return name in ("Float32", "Float64") and value == value
        return kind == "Str" and name in ("String", "Utf8")
    scalar = literal.get("Scalar")
    if not isinstance(scalar, dict) or len(scalar) != 1:
        return False
    (kind, value), = scalar.items()
    if kind in ("Null",) or value is None:
        return False
    if kind == "Datetime":
        return name == "Datetime" and [dtype.time_unit, dtype.time_zone] == [_UNITS.get(value[1]), value[2]]
    if kind in ("Float32", "Float64") and value != value:
        return False
    return kind == name


_UNITS = {"Milliseconds": "ms", "Microseconds": "us", "Nanoseconds": "ns"}
