"""Predicates: a ``pyarrow.compute.Expression`` bound to a schema, and its evaluation by indexes.

Three steps, each a small function:

1. :func:`arrowidx.expression.parse` reads the expression tree from pyarrow's own
   serialisation (no string parsing).
2. :func:`bind` turns it into a :class:`Node` tree against the data file's schema: literals
   are cast to the column type (a literal that does not survive the cast exactly, a function
   we do not know, a field not in the schema: all become :class:`Opaque`).
3. :func:`evaluate` walks the tree with SQL three-valued logic, exactly as ``pyarrow.compute``
   filters. Every node yields an :class:`Answer`: a superset of the rows where it is TRUE
   and a superset of the rows where it is FALSE. ``~`` swaps the two, so a complement is
   computed from the FALSE side and never drops a NULL row that pyarrow keeps
   (``~x.isin([1])`` keeps NULLs, ``~(x == 1)`` does not). Leaves are lowered to *key-space*
   predicates in Java's semantics (:class:`KLeaf`), which the index readers answer.

Floats: the answer keeps every row that either IEEE (pyarrow: -0.0 == 0.0, NaN matches
nothing) or Java/Spark ordering (``Double.compare``: -0.0 < 0.0, NaN == NaN and largest)
selects, by OR-ing both lowerings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from .errors import ArrowIdxError
from .expression import Call, Field, Literal, parse
from .result import REMAIN, SKIP, IndexResult
from .types import PaimonType, literal_keys, paimon_type

# --------------------------------------------------------------------------------------
# The bound predicate model
# --------------------------------------------------------------------------------------


class Node:
    """A bound predicate node."""

    def columns(self) -> set[str]:
        return set()


@dataclass(frozen=True)
class Compare(Node):
    """``column <op> literal`` with op in eq, lt, le, gt, ge; literal cast to the column type."""

    op: str
    column: str
    literal: pa.Scalar

    def columns(self) -> set[str]:
        return {self.column}


@dataclass(frozen=True)
class IsIn(Node):
    """``column`` in ``values`` (non-null, cast); ``null_match`` is pyarrow's null behaviour."""

    column: str
    values: pa.Array
    null_in_set: bool
    null_match: str  # MATCH, SKIP, EMIT_NULL or INCONCLUSIVE

    def columns(self) -> set[str]:
        return {self.column}


@dataclass(frozen=True)
class IsNull(Node):
    column: str

    def columns(self) -> set[str]:
        return {self.column}


@dataclass(frozen=True)
class Not(Node):
    child: Node

    def columns(self) -> set[str]:
        return self.child.columns()


@dataclass(frozen=True)
class And(Node):
    """Kleene AND (``and_kleene``); ``kleene=False`` is pyarrow's plain ``and``, NULL as
    soon as a child is NULL. Both select the same TRUE rows; the FALSE rows of the plain
    one are a subset, so the Kleene answer is a superset and never exact for it."""

    children: tuple[Node, ...]
    kleene: bool = True

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))


@dataclass(frozen=True)
class Or(Node):
    """Kleene OR (``or_kleene``); ``kleene=False`` is pyarrow's plain ``or``, NULL as soon as
    a child is NULL (its TRUE rows are a subset of the Kleene ones: never exact)."""

    children: tuple[Node, ...]
    kleene: bool = True

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))


@dataclass(frozen=True)
class Const(Node):
    """A constant: True, False, or None (SQL NULL, e.g. a comparison with a null literal)."""

    value: bool | None


@dataclass(frozen=True)
class Opaque(Node):
    """Something no index can answer; it is REMAIN for both TRUE and FALSE. ``call``: for a
    function of one column, ``(function name, column)`` (a translator may still spell it)."""

    reason: str
    call: tuple[str, str] | None = None


# --------------------------------------------------------------------------------------
# One question asked of a bound predicate: a visitor
# --------------------------------------------------------------------------------------

R = TypeVar("R")


class Visitor(Generic[R]):
    """One question asked of a bound predicate, one visitor class per question (pyiceberg's
    ``visit(expr, visitor)``): :meth:`visit` dispatches on the node's kind to
    :meth:`compare`, :meth:`is_in`, :meth:`is_null` (the three fall back to :meth:`leaf`: a
    condition on one column), :meth:`negation`, :meth:`conjunction`, :meth:`disjunction`,
    :meth:`constant` and :meth:`opaque`. What a visitor does not answer goes to
    :meth:`default`, which says what an unknown node means for that question (a visitor
    that prunes answers conservatively there: a new kind of node can never cause a wrong
    skip). Every walk of the bound tree derives from it: the indexes' answer
    (:func:`evaluate`), exactness (:func:`is_exact`), what statistics may judge
    (:mod:`arrowidx.statistics`), Paimon's manifest statistics (:mod:`arrowidx.paimon.stats`),
    Spark SQL text (:mod:`arrowidx.spark.sparksql`)."""

    def visit(self, node: Node) -> R:
        method = _KINDS.get(type(node))
        return self.default(node) if method is None else getattr(self, method)(node)

    def default(self, node: Node) -> R:
        raise NotImplementedError(f"{type(self).__name__} has no answer for {type(node).__name__}")

    def leaf(self, node: Compare | IsIn | IsNull) -> R:
        return self.default(node)

    def compare(self, node: Compare) -> R:
        return self.leaf(node)

    def is_in(self, node: IsIn) -> R:
        return self.leaf(node)

    def is_null(self, node: IsNull) -> R:
        return self.leaf(node)

    def negation(self, node: Not) -> R:
        return self.default(node)

    def conjunction(self, node: And) -> R:
        return self.default(node)

    def disjunction(self, node: Or) -> R:
        return self.default(node)

    def constant(self, node: Const) -> R:
        return self.default(node)

    def opaque(self, node: Opaque) -> R:
        return self.default(node)


_KINDS = {
    Compare: "compare", IsIn: "is_in", IsNull: "is_null", Not: "negation", And: "conjunction", Or: "disjunction",
    Const: "constant", Opaque: "opaque",
}  # fmt: skip


class Rewriter(Visitor[Node]):
    """A visitor that rebuilds the tree: NOT, AND and OR of their rewritten children (AND and
    OR keep their logic), every other node as it is unless a method says otherwise."""

    def default(self, node: Node) -> Node:
        return node

    def negation(self, node: Not) -> Node:
        return Not(self.visit(node.child))

    def conjunction(self, node: And) -> Node:
        return And(tuple(self.visit(c) for c in node.children), node.kleene)

    def disjunction(self, node: Or) -> Node:
        return Or(tuple(self.visit(c) for c in node.children), node.kleene)


# --------------------------------------------------------------------------------------
# 2. bind: raw tree + schema -> Node
# --------------------------------------------------------------------------------------

_COMPARISONS = {"equal": "eq", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge"}
_SWAPPED = {"eq": "eq", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_NULL_MATCHING = {0: "MATCH", 1: "SKIP", 2: "EMIT_NULL", 3: "INCONCLUSIVE"}


def bind(expr: pc.Expression | Node | None, schema: pa.Schema) -> Node:
    """Bind an Expression to ``schema``. Never raises for an expression it cannot use."""
    if expr is None:
        return Const(True)
    if isinstance(expr, Node):
        return expr
    if not isinstance(expr, pc.Expression):
        raise TypeError(f"expected a pyarrow.compute.Expression, got {type(expr).__name__}")
    try:
        tree = parse(expr)
    except Exception as e:  # an expression pyarrow itself cannot serialise: answer REMAIN
        return Opaque(f"cannot read expression ({e})")
    return _bind(tree, schema)


def _bind(t, schema: pa.Schema) -> Node:
    if isinstance(t, Literal):
        if pa.types.is_boolean(t.value.type):
            return Const(t.value.as_py())
        return Opaque(f"non-boolean literal {t.value}")
    if not isinstance(t, Call):
        return Opaque(f"{t}")
    name, args = t.name, t.args
    if name in ("and_kleene", "and"):
        return And(tuple(_bind(a, schema) for a in args), kleene=name == "and_kleene")
    if name in ("or_kleene", "or"):
        return Or(tuple(_bind(a, schema) for a in args), kleene=name == "or_kleene")
    if name == "invert" and len(args) == 1:
        return Not(_bind(args[0], schema))
    if name in _COMPARISONS or name == "not_equal":
        return _bind_comparison(name, args, schema)
    if name == "is_in" and len(args) == 1 and _is_column(args[0], schema):
        return _bind_is_in(args[0].name, t.options, schema)
    if name == "is_null" and len(args) == 1 and _is_column(args[0], schema):
        nan_is_null = bool(t.options and t.options.get("nan_is_null") and t.options["nan_is_null"].as_py())
        if nan_is_null and pa.types.is_floating(schema.field(args[0].name).type):
            return Opaque("is_null(nan_is_null=True) on a float column")
        return IsNull(args[0].name)
    if name == "is_valid" and len(args) == 1 and _is_column(args[0], schema):
        return Not(IsNull(args[0].name))
    if len(args) == 1 and _is_column(args[0], schema) and t.options is None:
        return Opaque(f"function {name}", (name, args[0].name))
    return Opaque(f"function {name}")


def _is_column(t, schema: pa.Schema) -> bool:
    return isinstance(t, Field) and schema.get_field_index(t.name) >= 0


def _bind_comparison(name: str, args: tuple, schema: pa.Schema) -> Node:
    if len(args) != 2:
        return Opaque(f"{name} with {len(args)} arguments")
    left, right = args
    op = "eq" if name == "not_equal" else _COMPARISONS[name]
    if _is_column(left, schema) and isinstance(right, Literal):
        column, literal = left.name, right.value
    elif _is_column(right, schema) and isinstance(left, Literal):
        column, literal, op = right.name, left.value, _SWAPPED[op]
    else:
        return Opaque(f"{name} is not between a column and a literal")
    if not literal.is_valid:
        return Const(None)
    cast = comparison_literal(literal, schema.field(column).type)
    if cast is None:
        return Opaque(f"literal {literal} does not convert exactly to {schema.field(column).type}")
    node = Compare(op, column, cast)
    return Not(node) if name == "not_equal" else node


def _bind_is_in(column: str, options: pa.Scalar | None, schema: pa.Schema) -> Node:
    if options is None:
        return Opaque("is_in without options")
    opts = {k: options[k] for k in options.type.names if k != "_type_name"} if hasattr(options.type, "names") else {}
    value_set = opts.get("value_set")
    if value_set is None:
        return Opaque("is_in without a value_set")
    if "null_matching_behavior" in opts:
        null_match = _NULL_MATCHING.get(opts["null_matching_behavior"].as_py(), "INCONCLUSIVE")
    else:
        null_match = "SKIP" if opts.get("skip_nulls") and opts["skip_nulls"].as_py() else "MATCH"
    values = value_set.values if isinstance(value_set, pa.ListScalar) else value_set
    if values is None:
        values = pa.nulls(0, schema.field(column).type)
    null_in_set = values.null_count > 0
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.string())  # pyarrow 26 has no filter kernel for string_view (drop_null needs one)
    values = values.drop_null()
    col_type = schema.field(column).type
    casted = cast_literal_array(values, col_type)
    if casted is None:
        return Opaque(f"is_in values do not convert exactly to {col_type}")
    return IsIn(column, casted, null_in_set, null_match)


def _comparison_type(column: pa.DataType, literal: pa.DataType) -> pa.DataType | None:
    """The type pyarrow compares ``column`` and ``literal`` in when a float is involved
    (its implicit casts: decimal with float -> float64; int with float -> that float, a
    checked cast), else None (the literal is cast to the column type)."""
    if not (pa.types.is_floating(column) or pa.types.is_floating(literal)):
        return None
    if pa.types.is_decimal(column) or pa.types.is_decimal(literal):
        return pa.float64()
    floats = [t for t in (column, literal) if pa.types.is_floating(t)]
    if len(floats) == 2:
        return column if column.bit_width >= literal.bit_width else literal
    other = literal if pa.types.is_floating(column) else column
    return floats[0] if pa.types.is_integer(other) else None


def comparison_literal(literal: pa.Scalar, column: pa.DataType) -> pa.Scalar | None:
    """``literal`` in the column's type such that ``column <op> result`` selects exactly the
    rows pyarrow's ``column <op> literal`` selects, or None when no such value is provable.

    pyarrow compares a float with a decimal in float64 and an int with a float in that
    float (int values out of its exact range raise there): the literal is taken as pyarrow
    sees it in that type, and accepted only if it is exactly a value of the column type and
    the column's values map one to one, in order, into that type (decimal -> float64 only
    up to 15 digits).
    """
    common = _comparison_type(column, literal.type)
    if common is None or literal.type == column:
        return cast_literal(literal, column)
    if pa.types.is_decimal(column) and not 0 <= column.scale <= column.precision <= 15:
        return None
    if pa.types.is_integer(column) and not pa.types.is_floating(common):
        return None
    try:
        seen = pc.cast(_one(literal), common, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    cast = cast_literal_array(seen, column)
    return None if cast is None else cast[0]


def cast_literal(literal: pa.Scalar, to_type: pa.DataType) -> pa.Scalar | None:
    """``literal`` cast to ``to_type``, or None when the cast is not exact both ways."""
    arr = cast_literal_array(_one(literal), to_type)
    return None if arr is None else arr[0]


def _one(literal: pa.Scalar, to_type: pa.DataType | None = None) -> pa.Array:
    """A one-value array of a Scalar (``pa.repeat``: ``pa.array([literal])`` would import
    pandas, to see whether the list holds pandas objects)."""
    if to_type is None or literal.type == to_type:
        return pa.repeat(literal, 1)
    return pa.array([literal], type=to_type)


def cast_literal_array(values: pa.Array, to_type: pa.DataType) -> pa.Array | None:
    """``values`` cast to ``to_type``, or None if any value changes on the way there and back."""
    if values.type == to_type:
        return values
    try:
        cast = pc.cast(values, to_type, safe=True)
        back = pc.cast(cast, values.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    if pa.types.is_floating(values.type):
        same = pc.or_(pc.equal(back, values), pc.and_(pc.is_nan(back), pc.is_nan(values)))
    else:
        same = pc.equal(back, values)
    if not pc.all(same).as_py() and len(values):
        return None
    return cast


# --------------------------------------------------------------------------------------
# 3. key space: what index readers answer (Java semantics, SQL NULLs)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KLeaf:
    """A predicate on index keys, Java semantics; a NULL row is neither TRUE nor FALSE.

    ``op``: eq, in, lt, le, gt, ge (``keys`` holds the key(s)) or is_null.
    """

    op: str
    keys: tuple = ()


@dataclass(frozen=True)
class KNot:
    child: object


@dataclass(frozen=True)
class KAnd:
    children: tuple


@dataclass(frozen=True)
class KOr:
    children: tuple


@dataclass(frozen=True)
class KConst:
    value: bool | None


class Answer:
    """Supersets of the rows where a predicate is TRUE (``t``) and where it is FALSE (``f``).

    Either side may be given as a zero-argument function; it is computed on first use, so
    the FALSE side of a leaf costs nothing unless a ``~`` above it asks for it.
    """

    __slots__ = ("_t", "_f")

    def __init__(self, t, f):
        self._t, self._f = t, f

    @property
    def t(self) -> IndexResult:
        if not isinstance(self._t, IndexResult):
            self._t = self._t()
        return self._t

    @property
    def f(self) -> IndexResult:
        if not isinstance(self._f, IndexResult):
            self._f = self._f()
        return self._f


UNKNOWN = Answer(REMAIN, REMAIN)
_CONST = {True: Answer(REMAIN, SKIP), False: Answer(SKIP, REMAIN), None: Answer(SKIP, SKIP)}


def _kand(*children) -> KAnd:
    return KAnd(tuple(children))


def _kor(*children) -> KOr:
    return KOr(tuple(children))


def lower(node: Node, ptype: PaimonType, arrow_type: pa.DataType) -> tuple[object, object]:
    """Key-space predicates (T, F) whose TRUE sides bound the rows where ``node`` is TRUE / FALSE."""
    if isinstance(node, IsNull):
        leaf = KLeaf("is_null")
        return leaf, KNot(leaf)
    if isinstance(node, Compare):
        (key,) = literal_keys(_one(node.literal, arrow_type), ptype)
        if ptype.lossy:
            return _lower_lossy(node.op, key)
        if ptype.is_float:
            java = KLeaf(node.op, (key,))
            ieee = _ieee(node.op, key)
            f_ieee = KNot(KLeaf("is_null")) if ieee == KConst(False) else KNot(ieee)
            return _kor(ieee, java), _kor(f_ieee, KNot(java))
        leaf = KLeaf(node.op, (key,))
        return leaf, KNot(leaf)
    if isinstance(node, IsIn):
        keys = tuple(literal_keys(node.values, ptype))
        if ptype.lossy:
            t = KLeaf("in", keys)
            return (_kor(t, KLeaf("is_null")) if node.null_in_set and node.null_match == "MATCH" else t), KConst(True)
        # pyarrow's is_in tells -0.0 from 0.0 like Java, but matches NaN only with the same
        # bit pattern, where Java's keys hold one canonical NaN: a NaN row may be FALSE.
        t = KLeaf("in", keys)
        f = KNot(KLeaf("in", tuple(k for k in keys if k == k))) if ptype.is_float else KNot(t)
        if node.null_match == "MATCH" and node.null_in_set:
            t = _kor(t, KLeaf("is_null"))
        elif node.null_match == "SKIP" or (node.null_match == "MATCH" and not node.null_in_set):
            f = _kor(f, KLeaf("is_null"))
        elif node.null_match == "INCONCLUSIVE" and node.null_in_set:
            f = KConst(False)
        return t, f
    raise TypeError(f"not a leaf: {node!r}")


def _ieee(op: str, v: float):
    """``x <op> v`` under IEEE comparison, as Java-semantics key predicates."""
    if math.isnan(v):
        return KConst(False)
    nan = float("nan")
    if v == 0.0:
        if op == "eq":
            return KLeaf("in", (0.0, -0.0))
        v = {"lt": -0.0, "le": 0.0, "gt": 0.0, "ge": -0.0}[op]
    if op in ("gt", "ge"):
        return _kand(KLeaf(op, (v,)), KLeaf("lt", (nan,)))
    return KLeaf(op, (v,))


def _lower_lossy(op: str, key) -> tuple[object, object]:
    """Keys that only bound a value (ns timestamps keyed on micros): one-sided bounds."""
    if op == "eq":
        return KLeaf("eq", (key,)), KConst(True)
    if op in ("lt", "le"):
        return KLeaf("le", (key,)), KLeaf("ge", (key,))
    return KLeaf("ge", (key,)), KLeaf("le", (key,))


# --------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------

ReaderLookup = Callable[[str], Sequence[object]]


def evaluate(node: Node, schema: pa.Schema, readers: ReaderLookup) -> Answer:
    """Answer ``node`` with the index readers ``readers(column)`` gives for each column."""
    return _Evaluate(schema, readers).visit(node)


class _Evaluate(Visitor[Answer]):
    """The indexes' answer: for every node a superset of its TRUE rows and of its FALSE rows."""

    def __init__(self, schema: pa.Schema, readers: ReaderLookup):
        self.schema, self.readers = schema, readers

    def default(self, node: Node) -> Answer:
        return UNKNOWN  # (Opaque, and any node this does not know: every row may match)

    def constant(self, node: Const) -> Answer:
        return _CONST[node.value]

    def negation(self, node: Not) -> Answer:
        inner = self.visit(node.child)
        return Answer(lambda: inner.f, lambda: inner.t)

    def conjunction(self, node: And) -> Answer:
        return _and([_memo(lambda c=c: self.visit(c)) for c in node.children])

    def disjunction(self, node: Or) -> Answer:
        return _or([_memo(lambda c=c: self.visit(c)) for c in node.children])

    def leaf(self, node: Compare | IsIn | IsNull) -> Answer:
        column = node.column
        column_readers = self.readers(column)
        if not column_readers:
            return UNKNOWN
        lowered = _lowered(node, self.schema, column)
        if lowered is None:  # e.g. a DECIMAL(38) literal beyond a long: no index can answer it
            return UNKNOWN
        t_expr, f_expr = lowered
        if len(column_readers) == 1:  # one index type on the column: its answer as it is
            (reader,) = column_readers
            return Answer(lambda: evaluate_keys(t_expr, reader).t, lambda: evaluate_keys(f_expr, reader).t)

        def side(expr) -> IndexResult:
            # Several index types on one column: AND their answers, stopping at the first
            # that rules every row out (Java's FileIndexPredicate does the same).
            result = REMAIN
            for reader in column_readers:
                result = result & evaluate_keys(expr, reader).t
                if not result.remain:
                    break
            return result

        return Answer(lambda: side(t_expr), lambda: side(f_expr))


def needles(node: Node, schema: pa.Schema) -> list[tuple[str, tuple]]:
    """``(column, keys)`` for each conjunct of ``node`` (itself, or a child of top-level
    ANDs) whose TRUE side is one exact lookup of ``keys``: ``column == v`` or ``column IN
    (...)`` lowered to a single ``eq`` / ``in`` key leaf (not floats, whose IEEE and Java
    sides differ; not an IN that matches NULL). No row can satisfy ``node`` in a file whose
    exact index on ``column`` holds none of ``keys``: a key directory skips such files
    without asking their indexes one by one."""
    if isinstance(node, And):
        return [found for child in node.children for found in needles(child, schema)]
    if isinstance(node, Or):  # an OR whose other sides are never TRUE (Polars' IN: ``(x IS NULL AND NULL) OR x IN (...)``)
        live = [child for child in node.children if not _never_true(child)]
        return needles(live[0], schema) if len(live) == 1 else []
    if not (isinstance(node, Compare) and node.op == "eq") and not isinstance(node, IsIn):
        return []
    if schema.get_field_index(node.column) < 0:
        return []
    lowered = _lowered(node, schema, node.column)
    t = lowered[0] if lowered is not None else None
    if isinstance(t, KLeaf):  # (an IN matching NULL, or a float equality, is an OR of lookups)
        return [(node.column, t.keys)]
    return []


def _never_true(node: Node) -> bool:
    """A constant that is not TRUE, or an AND with such a child: no row makes it TRUE."""
    if isinstance(node, Const):
        return node.value is not True
    return isinstance(node, And) and any(map(_never_true, node.children))


def _lowered(node: Node, schema: pa.Schema, column: str) -> tuple[object, object] | None:
    """:func:`lower` for ``column`` of ``schema`` (None: no index can answer), computed once
    per leaf and column type: a scan evaluates one bound predicate against every file's
    index. The files of a lake share one schema object, so the answer is also remembered
    per schema: most files then cost one dict lookup (the schema is held, so its ``id``
    stays its own)."""
    caches = node.__dict__.get("_lowered")
    if caches is None:
        caches = ({}, {})
        object.__setattr__(node, "_lowered", caches)  # frozen dataclass: a private cache only
    by_type, by_schema = caches
    seen = by_schema.get(id(schema))
    if seen is not None and seen[0] is schema:
        return seen[1]
    arrow_type = schema.field(column).type
    if arrow_type not in by_type:
        try:
            by_type[arrow_type] = lower(node, paimon_type(arrow_type), arrow_type)
        except (ArrowIdxError, pa.ArrowException):  # e.g. a literal bound to another column type
            by_type[arrow_type] = None
    by_schema[id(schema)] = (schema, by_type[arrow_type])
    return by_type[arrow_type]


def _memo(thunk: Callable[[], Answer]) -> Callable[[], Answer]:
    cache: list[Answer] = []

    def get() -> Answer:
        if not cache:
            cache.append(thunk())
        return cache[0]

    return get


def _and(children: list[Callable[[], Answer]]) -> Answer:
    """TRUE: intersection, stopping once no row can be TRUE (Paimon's SKIP short-circuit).
    FALSE: union of the children's FALSE sides."""

    def t() -> IndexResult:
        result = REMAIN
        for child in children:
            result = result & child().t
            if not result.remain:
                break
        return result

    def f() -> IndexResult:
        result = SKIP
        for child in children:
            result = result | child().f
            if result.kind == "remain":
                break
        return result

    return Answer(t, f)


def _or(children: list[Callable[[], Answer]]) -> Answer:
    """The mirror of :func:`_and`."""
    inverted = _and([_memo(lambda c=c: Answer(lambda: c().f, lambda: c().t)) for c in children])
    return Answer(lambda: inverted.f, lambda: inverted.t)


def evaluate_keys(expr, reader) -> Answer:
    """Evaluate a key-space predicate against one index reader."""
    if isinstance(expr, KLeaf):
        return reader.answer(expr.op, expr.keys)
    if isinstance(expr, KConst):
        return _CONST[expr.value]
    if isinstance(expr, KNot):
        inner = evaluate_keys(expr.child, reader)
        return Answer(lambda: inner.f, lambda: inner.t)
    if isinstance(expr, (KAnd, KOr)):
        children = [_memo(lambda c=c: evaluate_keys(c, reader)) for c in expr.children]
        return _and(children) if isinstance(expr, KAnd) else _or(children)
    raise TypeError(f"not a key predicate: {expr!r}")


def _nan_or_negative_zero(v) -> bool:
    return v is not None and (math.isnan(v) or (v == 0.0 and math.copysign(1.0, v) < 0))


def is_exact(node: Node, schema: pa.Schema, readers: ReaderLookup) -> bool:
    """True when :func:`evaluate` answers ``node`` exactly (TRUE side == pyarrow's selection).

    Every leaf must be answered exactly by some index (``exact_ops`` of its reader) on a
    column whose keys identify values (no lossy keys; floats only in a file without NaN and
    -0.0, where IEEE and Java ordering, whose union we answer, agree). TopN relies on it: picking the top rows among a superset of the
    matching rows could drop a matching row.
    """
    return _Exact(schema, readers).visit(node)


class _Exact(Visitor[bool]):
    """Whether :func:`evaluate`'s TRUE side is exactly pyarrow's selection."""

    def __init__(self, schema: pa.Schema, readers: ReaderLookup):
        self.schema, self.readers = schema, readers

    def default(self, node: Node) -> bool:
        return False  # (Opaque: no index answers it exactly)

    def constant(self, node: Const) -> bool:
        return True

    def negation(self, node: Not) -> bool:
        return self.visit(node.child)

    def conjunction(self, node: And | Or) -> bool:
        return node.kleene and all(self.visit(c) for c in node.children)

    def disjunction(self, node: Or) -> bool:
        return self.conjunction(node)

    def compare(self, node: Compare) -> bool:
        return self.answered_exactly(node, {node.op, "is_null"})

    def is_in(self, node: IsIn) -> bool:
        return self.answered_exactly(node, {"in", "is_null"})

    def is_null(self, node: IsNull) -> bool:
        return self.answered_exactly(node, {"is_null"})

    def answered_exactly(self, node: Compare | IsIn | IsNull, needed: set[str]) -> bool:
        """Some index on the leaf's column answers the operations ``needed`` exactly."""
        column = node.column
        if self.schema.get_field_index(column) < 0:
            return False  # bound to another schema: not answerable here
        try:
            ptype = paimon_type(self.schema.field(column).type)
        except ArrowIdxError:
            return False
        if ptype.lossy:
            return False
        exact = [r for r in self.readers(column) if needed <= getattr(r, "exact_ops", frozenset())]
        if not exact:
            return False
        if ptype.is_float:
            # IEEE and Java ordering disagree only on NaN and -0.0, in the rows or in the
            # literal (``x > -0.0``: IEEE drops 0.0, Java keeps it; ``x < NaN``: IEEE selects
            # nothing, Java every number): exact only if neither holds one.
            if isinstance(node, Compare) and _nan_or_negative_zero(node.literal.as_py()):
                return False
            reader = exact[0]
            if not {"eq"} <= reader.exact_ops:
                return False
            return not reader.answer("eq", (math.nan,)).t.remain and not reader.answer("eq", (-0.0,)).t.remain
        return True
