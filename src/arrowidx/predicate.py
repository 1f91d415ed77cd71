"""Predicates: a ``pyarrow.compute.Expression`` bound to a schema, and its evaluation by indexes.

Three steps, each a small function:

1. :func:`parse` reads the expression tree from pyarrow's own serialisation (the bytes
   ``Expression.__reduce__`` pickles: an Arrow IPC file whose schema metadata lists the tree
   in prefix order and whose columns hold the literals). No string parsing.
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

import ctypes
import difflib
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from .errors import ArrowIdxError
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
# 1. parse: pyarrow's serialised expression -> a raw tree
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    name: str
    args: tuple
    options: pa.Scalar | None


@dataclass(frozen=True)
class _Field:
    name: str


@dataclass(frozen=True)
class _Literal:
    value: pa.Scalar


@dataclass(frozen=True)
class _Unknown:
    what: str


class _ArrowSchema(ctypes.Structure):
    pass


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))),
    ("private_data", ctypes.c_void_p),
]


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """Schema metadata as an ordered list with duplicate keys kept.

    ``Schema.metadata`` is a dict (duplicates collapse), so read the key/value list through
    the Arrow C data interface, whose metadata encoding is specified and stable.
    """
    c_schema = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c_schema))
    try:
        ptr = c_schema.metadata
        if not ptr:
            return []
        (count,) = struct.unpack("<i", ctypes.string_at(ptr, 4))
        pos, out = 4, []
        for _ in range(count):
            (klen,) = struct.unpack("<i", ctypes.string_at(ptr + pos, 4))
            key = ctypes.string_at(ptr + pos + 4, klen)
            pos += 4 + klen
            (vlen,) = struct.unpack("<i", ctypes.string_at(ptr + pos, 4))
            value = ctypes.string_at(ptr + pos + 4, vlen)
            pos += 4 + vlen
            out.append((key.decode(), value.decode()))
        return out
    finally:
        c_schema.release(ctypes.byref(c_schema))


_LAST_PARSE: tuple = (None, None)  # (expression, its tree)


def parse(expr: pc.Expression):
    """The raw call tree of a pyarrow Expression (``_Call``/``_Field``/``_Literal``/``_Unknown``).

    The last expression's tree is remembered: one query asks for its filter's tree several
    times (to bind it, for the columns it reads, for its Polars form). Safe: an Expression
    object never changes, the tree is immutable, and the object is held, so ``is`` cannot
    match another expression."""
    global _LAST_PARSE
    last = _LAST_PARSE
    if last[0] is expr:
        return last[1]
    tree = _parse(expr)
    _LAST_PARSE = (expr, tree)
    return tree


def _parse(expr: pc.Expression):
    reduced = expr.__reduce__()
    buf = reduced[1][0]
    reader = ipc.open_file(buf)
    batch = reader.get_batch(0) if reader.num_record_batches else None
    tokens = _metadata_pairs(reader.schema)
    pos = 0

    def column(index: str) -> pa.Scalar:
        return batch.column(int(index))[0]

    def node():
        nonlocal pos
        key, value = tokens[pos]
        pos += 1
        if key == "literal":
            return _Literal(column(value))
        if key == "field_ref":
            return _Field(value)
        if key == "nested_field_ref":
            pos += int(value)
            return _Unknown("nested field reference")
        if key == "call":
            args, options = [], None
            while tokens[pos][0] != "end":
                if tokens[pos][0] == "options":
                    options = column(tokens[pos][1])
                    pos += 1
                else:
                    args.append(node())
            pos += 1  # "end"
            return _Call(value, tuple(args), options)
        return _Unknown(f"serialised token {key!r}")

    tree = node()
    return tree


def expression_columns(expr: pc.Expression | None) -> set[str] | None:
    """The top-level column names a pyarrow Expression reads anywhere in it (also inside
    calls no index answers); None when it holds a part this cannot read (a nested field
    reference): then every column is needed."""
    if expr is None:
        return set()
    out: set[str] = set()
    stack = [parse(expr)]
    while stack:
        t = stack.pop()
        if isinstance(t, _Field):
            out.add(t.name)
        elif isinstance(t, _Call):
            stack.extend(t.args)
        elif isinstance(t, _Unknown):
            return None
    return out


# --------------------------------------------------------------------------------------
# Names: a field a filter or a projection names must be a column
# --------------------------------------------------------------------------------------


class UnknownColumnError(ArrowIdxError, pa.ArrowInvalid):
    """A name (in a filter, or in ``columns=``) that is not a column of the schema.

    Also a ``pyarrow.ArrowInvalid`` (so a ``ValueError``): the class pyarrow raises for the
    same call, so ``except pa.ArrowInvalid`` clauses keep working. ``column`` is the name,
    ``columns`` the schema's columns; the message names both, with the closest column.
    """

    def __init__(self, message: str, *, column: str | None = None, columns: Sequence[str] = ()):
        self.column = column
        self.columns = list(columns)
        super().__init__(message)

    @classmethod
    def naming(cls, column: str, columns: Sequence[str], where: str, argument: str = "filter=") -> UnknownColumnError:
        """The error for ``column`` named by ``argument`` (``filter=``, ``columns=``) of a
        call on ``where`` (a dataset root, a table path), whose columns are ``columns``."""
        columns = list(columns)
        close = difflib.get_close_matches(column, columns, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return cls(f"{where}: no column {column!r} in {argument}{hint}; the columns are: {', '.join(columns)}",
                   column=column, columns=columns)  # fmt: skip


def check_fields(expr, schema: pa.Schema, where: str, argument: str = "filter=") -> None:
    """:class:`UnknownColumnError` for the first name ``expr`` references that is not a
    column of ``schema`` (nothing for other expressions)."""
    if not isinstance(expr, pc.Expression):
        return
    columns = schema.names
    try:
        names = expression_columns(expr)
    except Exception:  # noqa: BLE001 - an Expression the parser does not know: pyarrow decides
        return
    for name in sorted(names or ()):
        if name not in columns:
            raise UnknownColumnError.naming(name, columns, where, argument)


_CHECKED: list[tuple[object, pa.Schema]] = []  # the shapes of the last filters found valid


def check_expression(expr, schema: pa.Schema, *, rows: bool = True, where: str = "dataset") -> None:
    """Raise what pyarrow raises when ``Table.filter(expr)`` runs on data of ``schema``
    (an unknown column, a comparison without a kernel, a timestamp with a time zone against
    one without, a filter that is not boolean), whether or not any row is ever read. An
    unknown column is :class:`UnknownColumnError` (an ``ArrowInvalid``, as pyarrow's own)
    naming it, the closest column and the columns, for a call on ``where``.

    Indexes and statistics can decide every file without running pyarrow's kernels; the
    same query must still fail the same way as when they do not (issue 38). The filter is
    run on one row of NULLs of ``schema``: pyarrow checks types when it binds the
    expression and when the kernel runs, which NULLs do not change. Errors that depend on
    values (a cast of ``'abc'`` to int, an int beyond float32's exact range compared with a
    float32) are raised only by the rows that hold them.

    Whether a filter is valid depends on its shape (functions, columns, the types of its
    literals), not on the literals' values: the shapes of the last filters found valid are
    remembered (a new needle each query costs a walk of its tree, ~0.01 ms; a new shape one
    filter of a row, ~0.4 ms).

    ``rows=False``: the data has no row at all; pyarrow then runs no kernel (a filter on
    zero rows raises only what binding raises), and so is the filter checked."""
    if expr is None or not isinstance(expr, pc.Expression):
        return
    try:
        _check_expression(expr, schema, rows)
    except pa.ArrowInvalid as e:
        if "No match for FieldRef" in str(e):
            try:
                check_fields(expr, schema, where)  # names the unknown column (else pyarrow's error stands)
            except UnknownColumnError as unknown:
                raise unknown from None
        raise


def _check_expression(expr: pc.Expression, schema: pa.Schema, rows: bool) -> None:
    if not rows:
        schema.empty_table().filter(expr)
        return
    for e, s in _VALID:
        if (e is expr or e.equals(expr)) and (s is schema or s.equals(schema)):
            return
    try:
        shape = _shape(parse(expr))
    except Exception:  # noqa: BLE001 - an expression we cannot read: checked by pyarrow each time
        shape = None
    if shape is not None:
        for known, s in _CHECKED:
            if known == shape and (s is schema or s.equals(schema)):
                _remember_valid(expr, schema)
                return
    try:
        row = pa.Table.from_arrays([pa.nulls(1, f.type) for f in schema], schema=schema)
    except (pa.ArrowException, TypeError, ValueError):
        row = schema.empty_table()
    row.filter(expr)
    _remember_valid(expr, schema)
    if shape is not None:
        _CHECKED.insert(0, (shape, schema))
        del _CHECKED[32:]


_VALID: list[tuple[pc.Expression, pa.Schema]] = []  # the last filters found valid


def _remember_valid(expr: pc.Expression, schema: pa.Schema) -> None:
    _VALID.insert(0, (expr, schema))
    del _VALID[8:]


def _shape(t) -> object:
    """What decides whether pyarrow accepts a parsed expression: calls with their options,
    fields, and literal types (an IN list by its value type), not the literal values."""
    if isinstance(t, _Field):
        return ("f", t.name)
    if isinstance(t, _Literal):
        return ("l", str(t.value.type), t.value.is_valid)
    if isinstance(t, _Call):
        options = t.options
        if options is not None and t.name == "is_in":
            opts = {k: options[k] for k in options.type.names if k != "value_set"} if hasattr(options.type, "names") else {}
            value_set = options["value_set"] if hasattr(options.type, "names") and "value_set" in options.type.names else None
            key = (str(getattr(value_set, "type", None)), repr(sorted((k, repr(v)) for k, v in opts.items())))
        else:
            key = None if options is None else repr(options)
        return ("c", t.name, key, tuple(_shape(a) for a in t.args))
    return ("u", repr(t))


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
    if isinstance(t, _Literal):
        if pa.types.is_boolean(t.value.type):
            return Const(t.value.as_py())
        return Opaque(f"non-boolean literal {t.value}")
    if not isinstance(t, _Call):
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
    return isinstance(t, _Field) and schema.get_field_index(t.name) >= 0


def _bind_comparison(name: str, args: tuple, schema: pa.Schema) -> Node:
    if len(args) != 2:
        return Opaque(f"{name} with {len(args)} arguments")
    left, right = args
    op = "eq" if name == "not_equal" else _COMPARISONS[name]
    if _is_column(left, schema) and isinstance(right, _Literal):
        column, literal = left.name, right.value
    elif _is_column(right, schema) and isinstance(left, _Literal):
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
        values = pa.array([], type=schema.field(column).type)
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
        seen = pc.cast(pa.array([literal], literal.type), common, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    cast = cast_literal_array(seen, column)
    return None if cast is None else cast[0]


def cast_literal(literal: pa.Scalar, to_type: pa.DataType) -> pa.Scalar | None:
    """``literal`` cast to ``to_type``, or None when the cast is not exact both ways."""
    arr = cast_literal_array(pa.array([literal], type=literal.type), to_type)
    return None if arr is None else arr[0]


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
        (key,) = literal_keys(pa.array([node.literal], type=arrow_type), ptype)
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
    if isinstance(node, Const):
        return _CONST[node.value]
    if isinstance(node, Opaque):
        return UNKNOWN
    if isinstance(node, Not):
        inner = evaluate(node.child, schema, readers)
        return Answer(lambda: inner.f, lambda: inner.t)
    if isinstance(node, (And, Or)):
        children = [_memo(lambda c=c: evaluate(c, schema, readers)) for c in node.children]
        return _and(children) if isinstance(node, And) else _or(children)
    column = node.column  # a leaf: Compare, IsIn or IsNull
    column_readers = readers(column)
    if not column_readers:
        return UNKNOWN
    lowered = _lowered(node, schema, column)
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
    if not (isinstance(node, Compare) and node.op == "eq") and not isinstance(node, IsIn):
        return []
    if schema.get_field_index(node.column) < 0:
        return []
    lowered = _lowered(node, schema, node.column)
    t = lowered[0] if lowered is not None else None
    if isinstance(t, KLeaf):  # (an IN matching NULL, or a float equality, is an OR of lookups)
        return [(node.column, t.keys)]
    return []


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
    if isinstance(node, Const):
        return True
    if isinstance(node, Opaque):
        return False
    if isinstance(node, Not):
        return is_exact(node.child, schema, readers)
    if isinstance(node, (And, Or)):
        return node.kleene and all(is_exact(c, schema, readers) for c in node.children)
    column = next(iter(node.columns()))
    if schema.get_field_index(column) < 0:
        return False  # bound to another schema: not answerable here
    try:
        ptype = paimon_type(schema.field(column).type)
    except ArrowIdxError:
        return False
    if ptype.lossy:
        return False
    needed = {"is_null"} if isinstance(node, IsNull) else {"in", "is_null"} if isinstance(node, IsIn) else {node.op, "is_null"}
    exact = [r for r in readers(column) if needed <= getattr(r, "exact_ops", frozenset())]
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


_INFIX = {
    "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
    "greater_equal": ">=", "and_kleene": "and", "or_kleene": "or",
}  # fmt: skip


def expression_text(expr) -> str:
    """``str(expr)`` on one line, never raising: pyarrow's ``Expression.__str__`` cuts long
    values inside a UTF-8 sequence and then fails to decode; such an expression is written
    from its parsed tree instead."""
    if expr is None:
        return "None"
    try:
        return " ".join(str(expr).split())
    except (UnicodeDecodeError, ValueError):
        pass
    try:
        return _tree_text(parse(expr))
    except Exception:  # noqa: BLE001 - text for a report only
        return "<expression>"


def _tree_text(t) -> str:
    if isinstance(t, _Field):
        return t.name
    if isinstance(t, _Literal):
        return _short(t.value.as_py())
    if isinstance(t, _Call):
        args = [_tree_text(a) for a in t.args]
        if t.name in _INFIX and len(args) == 2:
            return f"({args[0]} {_INFIX[t.name]} {args[1]})"
        if t.name == "invert" and len(args) == 1:
            return f"invert({args[0]})"
        if t.options is not None and t.name == "is_in":
            values = t.options["value_set"].values if hasattr(t.options.type, "names") else None
            shown = [] if values is None else [_short(v) for v in values.to_pylist()[:5]]
            more = ", ..." if values is not None and len(values) > 5 else ""
            args.append(f"value_set=[{', '.join(shown)}{more}]")
        return f"{t.name}({', '.join(args)})"
    return str(getattr(t, "what", t))


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."
