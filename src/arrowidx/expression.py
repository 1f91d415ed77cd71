"""A ``pyarrow.compute.Expression`` as a raw tree, read from pyarrow's own serialisation.

:func:`parse` reads the bytes ``Expression.__reduce__`` pickles (an Arrow IPC file whose
schema metadata lists the tree in prefix order and whose columns hold the literals): no
string parsing. The tree is :class:`Call`, :class:`Field`, :class:`Literal` and
:class:`Unknown` nodes; :mod:`arrowidx.predicate` binds it to a schema. Here too: the
columns an expression names (:func:`expression_columns`, :func:`columns_named`), whether
pyarrow accepts it on a schema (:func:`check_expression`, the same error whether or not an
index decides every file) and its text for reports (:func:`expression_text`).
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from . import facts
from .errors import UnknownColumnError


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    options: pa.Scalar | None


@dataclass(frozen=True)
class Field:
    name: str


@dataclass(frozen=True)
class Literal:
    value: pa.Scalar


@dataclass(frozen=True)
class Unknown:
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


def parse(expr: pc.Expression):
    """The raw call tree of a pyarrow Expression (``Call``/``Field``/``Literal``/``Unknown``).

    The last expression's tree is remembered: one query asks for its filter's tree several
    times (to bind it, for the columns it reads, for its Polars form). Safe: an Expression
    object never changes, the tree is immutable, and the object is held, so ``is`` cannot
    match another expression (:data:`arrowidx.facts.PARSED`)."""
    tree = facts.PARSED.find(lambda e: e is expr)
    if tree is None:
        tree = _parse(expr)
        facts.PARSED.add(expr, tree)
    return tree


def columns_named(expr: pc.Expression | None, schema: pa.Schema) -> set[str]:
    """The columns of ``schema`` that ``expr`` reads: every field it names, or all of the
    schema's when that cannot be told (a field the schema lacks, a tree not read)."""
    if expr is None:
        return set()
    try:
        out = expression_columns(expr)
    except Exception:  # noqa: BLE001 (an Expression the parser does not know)
        out = None
    if out is None or any(schema.get_field_index(name) < 0 for name in out):
        return set(schema.names)
    return out


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
            return Literal(column(value))
        if key == "field_ref":
            return Field(value)
        if key == "nested_field_ref":
            pos += int(value)
            return Unknown("nested field reference")
        if key == "call":
            args, options = [], None
            while tokens[pos][0] != "end":
                if tokens[pos][0] == "options":
                    options = column(tokens[pos][1])
                    pos += 1
                else:
                    args.append(node())
            pos += 1  # "end"
            return Call(value, tuple(args), options)
        return Unknown(f"serialised token {key!r}")

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
        if isinstance(t, Field):
            out.add(t.name)
        elif isinstance(t, Call):
            stack.extend(t.args)
        elif isinstance(t, Unknown):
            return None
    return out


# --------------------------------------------------------------------------------------
# Names: a field a filter or a projection names must be a column
# --------------------------------------------------------------------------------------


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
    if facts.VALID_FILTERS.find(lambda known: _same(known, expr, schema)):
        return
    try:
        shape = _shape(parse(expr))
    except Exception:  # noqa: BLE001 - an expression we cannot read: checked by pyarrow each time
        shape = None
    if shape is not None and facts.VALID_SHAPES.find(lambda known: known[0] == shape and _same_schema(known[1], schema)):
        facts.VALID_FILTERS.add((expr, schema), True)
        return
    try:
        row = pa.Table.from_arrays([pa.nulls(1, f.type) for f in schema], schema=schema)
    except (pa.ArrowException, TypeError, ValueError):
        row = schema.empty_table()
    row.filter(expr)
    facts.VALID_FILTERS.add((expr, schema), True)
    if shape is not None:
        facts.VALID_SHAPES.add((shape, schema), True)


def _same_schema(a: pa.Schema, b: pa.Schema) -> bool:
    return a is b or a.equals(b)


def _same(known: tuple, expr: pc.Expression, schema: pa.Schema) -> bool:
    """``known`` is ``(expr, schema)`` (an equal expression on an equal schema)."""
    return (known[0] is expr or known[0].equals(expr)) and _same_schema(known[1], schema)


def _shape(t) -> object:
    """What decides whether pyarrow accepts a parsed expression: calls with their options,
    fields, and literal types (an IN list by its value type), not the literal values."""
    if isinstance(t, Field):
        return ("f", t.name)
    if isinstance(t, Literal):
        return ("l", str(t.value.type), t.value.is_valid)
    if isinstance(t, Call):
        options = t.options
        if options is not None and t.name == "is_in":
            opts = {k: options[k] for k in options.type.names if k != "value_set"} if hasattr(options.type, "names") else {}
            value_set = options["value_set"] if hasattr(options.type, "names") and "value_set" in options.type.names else None
            key = (str(getattr(value_set, "type", None)), repr(sorted((k, repr(v)) for k, v in opts.items())))
        else:
            key = None if options is None else repr(options)
        return ("c", t.name, key, tuple(_shape(a) for a in t.args))
    return ("u", repr(t))




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
    if isinstance(t, Field):
        return t.name
    if isinstance(t, Literal):
        return _short(t.value.as_py())
    if isinstance(t, Call):
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
