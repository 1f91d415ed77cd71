"""SQL ``WHERE`` text -> a filter with SQL's meaning, exactly: the one place SQL becomes a filter.

:func:`compile_where` parses the text with sqlglot (a DuckDB / Spark SQL dialect for one
table), binds it to the schema (column names, types, literals coerced to the column type as
SQL engines coerce them, type errors refused with a caret under the offending token) and
splits its top-level ``AND`` into

* the **pushdown**: a ``pyarrow.compute.Expression`` holding every conjunct pyarrow
  expresses exactly, written with SQL's meaning (column versus literal comparisons, ``IN``,
  ``BETWEEN``, ``IS [NOT] NULL``, ``LIKE``/``ILIKE``, ``IS [NOT] DISTINCT FROM`` a literal,
  and AND/OR/NOT of those): the indexes and Parquet statistics prune with it;
* the **residual** (:class:`Residual`): the other conjuncts (arithmetic, functions, CAST of a
  column, CASE, COALESCE, ...), evaluated exactly by Polars expressions on the rows the
  pushdown reads.

Where SQL and Arrow differ, the translation spells out the SQL meaning (DuckDB's and
Spark's, which agree on these):

* NaN is the largest floating-point value and equals itself: ``amount > 300`` becomes
  ``(amount > 300) | is_nan(amount)``; ``amount = 'NaN'`` becomes ``is_nan(amount)``.
* ``NOT`` is pushed down to the comparisons (``NOT (x > 1)`` -> ``x <= 1``), so a NULL is
  never selected by a negation: ``x NOT IN (1, 2)`` becomes ``~isin(x, [1, 2]) & is_valid(x)``;
  ``x NOT IN (1, NULL)`` and ``x = NULL`` are never TRUE.
* Literals are coerced to the column's type as SQL engines coerce untyped literals
  (``ts > '2024-06-01'``, ``qty = '5'``, ``amount = 'NaN'``); a typed literal (``DATE '..'``,
  ``TIMESTAMP '..'``, ``X'0102'``, ``CAST('1.5' AS DECIMAL(4,2))``) keeps its type. A naive
  timestamp literal on a column with a time zone is read in that time zone.

Where DuckDB and Spark differ, DuckDB's meaning is taken (``CAST(2.5 AS INT)`` is 3,
``7 // 2`` truncates, ``'a' || NULL`` is NULL, ``concat`` skips NULLs). Integer arithmetic is
exact in 64 bits (DuckDB raises on an overflow of the column type instead).
"""

from __future__ import annotations

import datetime as _dt
import difflib
import functools
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ArrowIdxError

__all__ = ["Residual", "Where", "WhereError", "compile_where", "parse_where"]


class WhereError(ArrowIdxError, ValueError):
    """SQL ``WHERE`` text that is not valid SQL for the schema (a syntax error, an unknown
    column or function, a type error). The first line of the message is the whole reason;
    the next two show the text with a caret under the offending token."""


# ----------------------------------------------------------------------------------------
# parsing: sqlglot with a dialect for one table (DuckDB, plus Spark's spellings)
# ----------------------------------------------------------------------------------------


@functools.cache
def _dialect():
    from sqlglot.dialects.duckdb import DuckDB
    from sqlglot.tokens import TokenType

    class WhereDialect(DuckDB):
        """DuckDB's SQL plus Spark's spellings: backquoted identifiers, ``X'..'`` binary
        literals, ``TIMESTAMP_NTZ`` / ``TIMESTAMP_LTZ`` and ``DIV``."""

        class Tokenizer(DuckDB.Tokenizer):
            IDENTIFIERS = ['"', "`"]
            HEX_STRINGS = [("x'", "'"), ("X'", "'")]
            KEYWORDS = {
                **DuckDB.Tokenizer.KEYWORDS,
                "TIMESTAMP_NTZ": TokenType.TIMESTAMPNTZ,
                "TIMESTAMP_LTZ": TokenType.TIMESTAMPLTZ,
                "DIV": TokenType.DIV,
            }

    return WhereDialect()


# A long list of plain literals after IN is read here, not by sqlglot (which takes ~18 ms
# per 1,000 values): the 10,000-value IN list must parse in well under 50 ms.
_LONG_LIST = 64
_SCAN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|\bIN\s*\(", re.IGNORECASE | re.DOTALL)
_ITEM = r"\s*(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|'(?:[^']|'')*'|NULL)\s*"
_LIST = re.compile(rf"(?:{_ITEM},){{{_LONG_LIST - 1},}}{_ITEM}\)", re.IGNORECASE)
_QUOTED = re.compile(r"('(?:[^']|'')*')|(NULL)|([^,\s]+)", re.IGNORECASE)
_MARKER = "__arrowidx_in_list_{}__"


def _lift_long_lists(text: str) -> tuple[str, list[tuple[pa.Array, int]], list[tuple[int, int]]]:
    """``text`` with each long IN list of plain literals replaced by one marker string, the
    lists (their values as an Arrow array: strings, or numbers' texts, and the number of
    NULLs), and the shifts that map a position back."""
    if len(text) < 4 * _LONG_LIST:
        return text, [], []
    out, lists, shifts = [], [], []
    pos = 0
    for m in _SCAN.finditer(text):
        if m.start() < pos or not m.group(0)[:2].upper() == "IN":
            continue
        body = _LIST.match(text, m.end())
        if body is None:
            continue
        inner = text[m.end() : body.end() - 1]
        if "'" in inner:
            found = _QUOTED.findall(inner)
            if any(other for _, _, other in found):
                continue  # numbers mixed with strings: sqlglot reads the list
            nulls = sum(1 for _, n, _ in found if n)
            values = pa.array([q[1:-1].replace("''", "'") for q, n, _ in found if not n], pa.string())
            lists.append((values, nulls, "str"))
        else:
            items = [x.strip() for x in inner.split(",")]
            nulls = sum(1 for x in items if x.upper() == "NULL")
            values = pa.array([x.lstrip("+") for x in items if x.upper() != "NULL"], pa.string())
            lists.append((values, nulls, "num"))
        marker = "'" + _MARKER.format(len(lists) - 1) + "')"
        out.append(text[pos : m.end()])
        out.append(marker)
        shifts.append((sum(len(p) for p in out), body.end() - m.end() - len(marker)))
        pos = body.end()
    if not lists:
        return text, [], []
    out.append(text[pos:])
    return "".join(out), lists, shifts


# ----------------------------------------------------------------------------------------
# the bound tree: typed nodes over the schema
# ----------------------------------------------------------------------------------------


class Node:
    type: pa.DataType
    pos: int = -1  # where in the text (for carets)


@dataclass(eq=False)
class Col(Node):
    name: str
    type: pa.DataType
    pos: int = -1


@dataclass(eq=False)
class Lit(Node):
    """A literal: ``kind`` is int / num (a decimal literal) / float / str (untyped) / bool /
    null, or typed (``value`` is then a ``pa.Scalar`` of ``type``)."""

    kind: str
    value: Any
    type: pa.DataType
    pos: int = -1
    text: str = ""


@dataclass(eq=False)
class Call(Node):
    """Any operation: ``op`` names it (cmp ops, and, or, not, is_null, in, like, distinct,
    arithmetic, cast, case, coalesce, string and date functions); ``extra`` its constants."""

    op: str
    args: tuple
    type: pa.DataType
    extra: Any = None
    pos: int = -1


_BOOL = pa.bool_()
_CMP = {"EQ": "=", "NEQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _base(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t)


def _is_int(t: pa.DataType) -> bool:
    return pa.types.is_integer(t)


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def _category(t: pa.DataType) -> str:
    if pa.types.is_null(t):
        return "null"
    if _is_numeric(t):
        return "number"
    if _is_string(t):
        return "string"
    if _is_binary(t):
        return "binary"
    if pa.types.is_boolean(t):
        return "boolean"
    if _is_temporal(t):
        return "temporal"
    if pa.types.is_time(t):
        return "time"
    return str(t)


def _sql_type_name(t: pa.DataType) -> str:
    t = _base(t)
    names = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT", "float": "FLOAT",
             "double": "DOUBLE", "bool": "BOOLEAN", "date32[day]": "DATE", "null": "NULL"}  # fmt: skip
    if str(t) in names:
        return names[str(t)]
    if _is_string(t):
        return "VARCHAR"
    if _is_binary(t):
        return "BLOB"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP WITH TIME ZONE" if t.tz else "TIMESTAMP"
    if pa.types.is_time(t):
        return "TIME"
    return str(t).upper()


# ----------------------------------------------------------------------------------------
# binding: sqlglot AST -> bound nodes (names resolved, types checked, literals folded)
# ----------------------------------------------------------------------------------------

_TYPES = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
    "UTINYINT": pa.uint8(), "USMALLINT": pa.uint16(), "UINT": pa.uint32(), "UBIGINT": pa.uint64(),
    "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "TEXT": pa.string(),
    "VARCHAR": pa.string(), "CHAR": pa.string(), "NCHAR": pa.string(), "NVARCHAR": pa.string(),
    "DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us"), "TIMESTAMPNTZ": pa.timestamp("us"),
    "DATETIME": pa.timestamp("us"), "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPLTZ": pa.timestamp("us", tz="UTC"), "TIMESTAMP_S": pa.timestamp("s"),
    "TIMESTAMP_MS": pa.timestamp("ms"), "TIMESTAMP_NS": pa.timestamp("ns"), "VARBINARY": pa.binary(),
    "BINARY": pa.binary(), "BLOB": pa.binary(), "TIME": pa.time64("us"), "HUGEINT": pa.int64(),
}  # fmt: skip

_STRING_FUNCS = {"Lower": "lower", "Upper": "upper", "Length": "length", "Reverse": "reverse"}
_EXTRACT_PARTS = {"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "QUARTER", "DOW", "DOY", "WEEK", "EPOCH"}


class _Binder:
    def __init__(self, text: str, schema: pa.Schema, interface: str, lists, shifts, time_zone: str | None = None):
        self.time_zone = time_zone  # the session's zone: naive times on zoned columns (None: the column's)
        self.text = text
        self.schema = schema
        self.interface = interface
        self.lists = lists
        self.shifts = shifts

    # -- errors ------------------------------------------------------------------------------
    def original(self, pos: int) -> int:
        for at, shift in self.shifts:
            if pos >= at:
                pos += shift
        return pos

    def error(self, message: str, pos: int = -1) -> WhereError:
        return where_error(self.interface, message, self.text, self.original(pos) if pos >= 0 else -1)

    @staticmethod
    def position(e) -> int:
        """Where a sqlglot node starts in the (lifted) text, or -1."""
        from sqlglot import exp

        best = -1
        for n in e.walk() if isinstance(e, exp.Expr) else ():
            start = n.meta.get("start") if n.meta else None
            if start is not None and (best < 0 or start < best):
                best = start
        return best

    # -- entry -------------------------------------------------------------------------------
    def condition(self, e) -> Node:
        node = self.bind(e)
        return self.as_condition(node, e)

    def as_condition(self, node: Node, e) -> Node:
        t = node.type
        if pa.types.is_boolean(t) or pa.types.is_null(t):
            return node
        if isinstance(node, Lit) and node.kind == "str":
            value = node.value.strip().lower()
            if value in ("true", "t", "yes", "y", "1", "false", "f", "no", "n", "0"):
                return Lit("bool", value in ("true", "t", "yes", "y", "1"), _BOOL, node.pos)
        if _is_numeric(t) or _is_string(t):  # as DuckDB: a number (or a string) cast to BOOLEAN
            if _is_string(t):
                return Call("cast", (node,), _BOOL, (_BOOL, False), node.pos)
            return Call("!=", (node, Lit("int", 0, pa.int64(), node.pos)), _BOOL, pos=node.pos)
        raise self.error(f"a condition must be a boolean, not {_sql_type_name(t)}: compare it, e.g. ... = ...", self.position(e))

    # -- nodes -------------------------------------------------------------------------------
    def bind(self, e) -> Node:
        from sqlglot import exp

        name = type(e).__name__
        pos = self.position(e)
        if isinstance(e, (exp.Subquery, exp.Select, exp.Exists)):
            raise self.error("subqueries (SELECT ...) are not supported in a filter: write the value itself", pos)
        if isinstance(e, exp.Paren):
            return self.bind(e.this)
        if isinstance(e, exp.Column):
            if e.table:
                raise self.error(f"a filter reads one table: write the column {e.name!r} without {e.table}.", pos)
            return self.column(e.this, pos)
        if isinstance(e, exp.Identifier):
            return self.column(e, pos)
        if isinstance(e, exp.Literal):
            if e.is_string:
                return Lit("str", e.this, pa.string(), pos, e.sql())
            return self.number(e.this, pos)
        if isinstance(e, exp.Boolean):
            return Lit("bool", bool(e.this), _BOOL, pos)
        if isinstance(e, exp.Null):
            return Lit("null", None, pa.null(), pos)
        if isinstance(e, exp.HexString):
            try:
                value = bytes.fromhex(e.this if len(e.this) % 2 == 0 else "0" + e.this)
            except ValueError:
                raise self.error(f"X'{e.this}' is not a hexadecimal binary literal", pos) from None
            return Lit("typed", pa.scalar(value, pa.binary()), pa.binary(), pos)
        if isinstance(e, (exp.And, exp.Or)):
            op = "and" if isinstance(e, exp.And) else "or"
            return Call(op, (self.condition(e.this), self.condition(e.expression)), _BOOL, pos=pos)
        if isinstance(e, exp.Not):
            return Call("not", (self.condition(e.this),), _BOOL, pos=pos)
        if name in _CMP:
            return self.compare(_CMP[name], self.bind(e.this), self.bind(e.expression), e)
        if isinstance(e, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            left, right = self.comparable(self.bind(e.this), self.bind(e.expression), e)
            return Call("distinct", (left, right), _BOOL, isinstance(e, exp.NullSafeNEQ), pos)
        if isinstance(e, exp.Is):
            arg = self.bind(e.this)
            target = e.expression
            if isinstance(target, exp.Null):
                return Call("is_null", (arg,), _BOOL, pos=pos)
            if isinstance(target, exp.Boolean):  # x IS TRUE: x = TRUE, never NULL
                cond = self.as_condition(arg, e.this)
                return Call("distinct", (cond, Lit("bool", bool(target.this), _BOOL, pos)), _BOOL, False, pos)
            raise self.error("IS must be followed by NULL, TRUE, FALSE or [NOT] DISTINCT FROM", pos)
        if isinstance(e, exp.In):
            return self.in_list(e, pos)
        if isinstance(e, exp.Between):
            arg = self.bind(e.this)
            lo = self.compare(">=", arg, self.bind(e.args["low"]), e)
            hi = self.compare("<=", arg, self.bind(e.args["high"]), e)
            return Call("and", (lo, hi), _BOOL, pos=pos)
        if isinstance(e, exp.Escape):
            like = e.this
            escape = self.bind(e.expression)
            if not (isinstance(escape, Lit) and escape.kind == "str" and len(escape.value) == 1):
                raise self.error("ESCAPE takes one character in quotes, e.g. ESCAPE '!'", pos)
            return self.like(like, escape.value)
        if isinstance(e, (exp.Like, exp.ILike)):
            return self.like(e, None)
        if isinstance(e, exp.RegexpLike):
            arg, pattern = self.string_arg(e.this, e), self.bind(e.expression)
            if not (isinstance(pattern, Lit) and pattern.kind == "str"):
                raise self.error("a regular expression must be a quoted literal", self.position(e.expression))
            try:
                re.compile(pattern.value)
            except re.error as err:
                raise self.error(f"invalid regular expression {pattern.value!r}: {err}", pattern.pos) from None
            return Call("regexp", (arg,), _BOOL, pattern.value, pos)
        if isinstance(e, exp.Neg):
            arg = self.bind(e.this)
            if isinstance(arg, Lit) and arg.kind in ("int", "num", "float"):
                return Lit(arg.kind, -arg.value, arg.type, pos)
            if isinstance(arg, Lit) and arg.kind == "typed" and _is_numeric(arg.type):
                return Lit("typed", pc.negate(arg.value), arg.type, pos)
            if not _is_numeric(arg.type):
                raise self.error(f"cannot negate a {_sql_type_name(arg.type)}", pos)
            return Call("neg", (arg,), _arith_type("-", arg.type, arg.type), pos=pos)
        if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)):
            op = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "IntDiv": "//", "Mod": "%"}[name]
            return self.arith(op, self.bind(e.this), self.bind(e.expression), e)
        if isinstance(e, exp.DPipe):
            return self.concat([e.this, e.expression], e, skip_nulls=False)
        if isinstance(e, exp.Concat):
            return self.concat(list(e.expressions), e, skip_nulls=True)
        if isinstance(e, (exp.Cast, exp.TryCast)):
            return self.cast(e, isinstance(e, exp.TryCast) or bool(e.args.get("safe")))
        if isinstance(e, exp.Case):
            return self.case(e)
        if isinstance(e, exp.If):
            cond = self.condition(e.this)
            then = self.bind(e.args["true"])
            other = self.bind(e.args["false"]) if e.args.get("false") is not None else Lit("null", None, pa.null(), pos)
            return self.make_case([(cond, then)], other, e)
        if isinstance(e, exp.Coalesce):
            args = [self.bind(a) for a in [e.this, *e.expressions]]
            return self.coalesce(args, e)
        if isinstance(e, exp.Nullif):
            a, b = self.comparable(self.bind(e.this), self.bind(e.expression), e)
            return self.make_case([(self.compare("=", a, b, e), Lit("null", None, pa.null(), pos))], a, e)
        if isinstance(e, exp.CurrentDate):
            today = _dt.date.today()
            return Lit("typed", pa.scalar(today, pa.date32()), pa.date32(), pos)
        if isinstance(e, exp.CurrentTimestamp) or (isinstance(e, exp.Anonymous) and str(e.this).upper() == "NOW"):
            now = _dt.datetime.now(_dt.timezone.utc)
            t = pa.timestamp("us", tz="UTC")
            return Lit("typed", pa.scalar(now, t), t, pos)
        return self.function(e, pos)

    def column(self, ident, pos: int) -> Col:
        name = ident.this if hasattr(ident, "this") else str(ident)
        names = self.schema.names
        if name in names:
            return Col(name, _base(self.schema.field(name).type), pos)
        folded = [n for n in names if n.lower() == name.lower()]
        if len(folded) == 1:
            return Col(folded[0], _base(self.schema.field(folded[0]).type), pos)
        close = difflib.get_close_matches(name, names, n=1) or [n for n in names if n.lower() == name.lower()][:1]
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise self.error(f"unknown column {name!r}; {hint}(columns: {', '.join(names)})", pos)

    def number(self, text: str, pos: int) -> Lit:
        if re.fullmatch(r"\d+", text):
            value = int(text)
            return Lit("int", value, pa.int64() if value < 2**63 else pa.float64(), pos, text)
        if "e" in text.lower():
            return Lit("float", float(text), pa.float64(), pos, text)
        number = Decimal(text)
        digits = len(number.as_tuple().digits)
        scale = max(0, -number.as_tuple().exponent)
        return Lit("num", number, pa.decimal128(max(digits, scale, 1), scale), pos, text)

    # -- types -------------------------------------------------------------------------------
    def comparable(self, left: Node, right: Node, e) -> tuple[Node, Node]:
        """``left`` and ``right`` with untyped literals coerced to the other side's type;
        a WhereError when SQL cannot compare them."""
        if isinstance(left, Lit) and left.kind in ("str", "int", "num", "float", "bool") and not (isinstance(right, Lit) and right.kind != "typed"):
            left = self.coerce(left, right.type, right, e)
        elif isinstance(right, Lit) and right.kind in ("str", "int", "num", "float", "bool"):
            right = self.coerce(right, left.type, left, e)
        left, right = self.zoned(left, right), self.zoned(right, left)
        a, b = _category(left.type), _category(right.type)
        if a == b or "null" in (a, b) or any(isinstance(x, Lit) and x.kind == "str" for x in (left, right)):
            return left, right
        if {a, b} == {"number", "boolean"}:
            return left, right
        bad = right if isinstance(right, Lit) else left
        other = left if bad is right else right
        hint = ""
        if isinstance(bad, Lit) and bad.kind in ("int", "num", "float") and _category(other.type) in ("string", "binary"):
            hint = f"; quote the value: {_describe(other)} = '{bad.text or bad.value}'"
        elif isinstance(bad, Lit) and _category(other.type) == "temporal":
            example = "'2024-06-01'" if pa.types.is_date(other.type) else "'2024-06-01 12:30:00'"
            hint = f"; write a quoted date or a typed literal: {_describe(other)} > {example}"
        raise self.error(
            f"cannot compare {_describe(other)} ({_sql_type_name(other.type)}) with {_describe(bad)} ({_sql_type_name(bad.type)}){hint}",
            bad.pos if bad.pos >= 0 else self.position(e),
        )

    def zoned(self, node: Node, other: Node) -> Node:
        """A naive time literal (typed, or a string) next to a zoned timestamp: the instant
        it names in the session's zone (or, without one, in the other side's zone)."""
        t = _base(other.type)
        if not (isinstance(node, Lit) and pa.types.is_timestamp(t) and t.tz is not None):
            return node
        zone = self.time_zone or t.tz
        if node.kind == "str":
            stamp = _temporal_text(node.value, pa.timestamp(t.unit, tz=zone), lambda msg: ValueError(msg))
            return Lit("typed", stamp, stamp.type, node.pos, node.text)
        if node.kind == "typed" and node.value.is_valid and (pa.types.is_date(node.type) or (pa.types.is_timestamp(node.type) and node.type.tz is None)):
            naive = pa.array([node.value]).cast(pa.timestamp("ns"))
            local = pc.assume_timezone(naive, timezone=zone)
            return Lit("typed", local[0], local.type, node.pos, node.text)
        return node

    def in_zone(self, node: Node) -> Node:
        """A zoned timestamp seen in the session's zone (its date, hour, ... there)."""
        t = _base(node.type)
        if self.time_zone and pa.types.is_timestamp(t) and t.tz is not None and t.tz != self.time_zone:
            return Call("convert_tz", (node,), pa.timestamp(t.unit, tz=self.time_zone), self.time_zone, node.pos)
        return node

    def coerce(self, lit: Lit, t: pa.DataType, other: Node, e) -> Lit:
        """An untyped literal next to a value of type ``t``: still a literal, checked to
        convert (a string that is not a valid value of ``t`` is an error, as in DuckDB)."""
        t = _base(t)
        if lit.kind == "str" and not (_is_string(t) or pa.types.is_null(t)):
            if _is_numeric(t):
                if pa.types.is_floating(t):
                    try:
                        float(lit.value.strip())
                        return lit
                    except ValueError:
                        pass
                else:
                    try:
                        Decimal(lit.value.strip())
                        return lit
                    except InvalidOperation:
                        pass
                raise self.error(f"{lit.text} is not a number ({_describe(other)} is {_sql_type_name(t)})", lit.pos)
            if pa.types.is_boolean(t):
                if lit.value.strip().lower() in ("true", "false", "t", "f", "1", "0", "yes", "no", "y", "n"):
                    return lit
                raise self.error(f"{lit.text} is not a boolean ({_describe(other)} is BOOLEAN): write TRUE or FALSE", lit.pos)
            if _is_temporal(t):
                _temporal_text(lit.value, t, lambda msg: self.error(f"{lit.text} is not a valid {msg} ({_describe(other)} is {_sql_type_name(t)})", lit.pos))
                return lit
            if _is_binary(t):
                return lit
            if pa.types.is_time(t):
                return lit
        if lit.kind in ("int", "num", "float") and pa.types.is_boolean(t) and lit.kind == "int" and lit.value in (0, 1):
            return Lit("bool", bool(lit.value), _BOOL, lit.pos, lit.text)
        if lit.kind == "bool" and _is_numeric(t):
            return Lit("int", int(lit.value), pa.int64(), lit.pos, lit.text)
        return lit

    def compare(self, op: str, left: Node, right: Node, e) -> Node:
        left, right = self.comparable(left, right, e)
        return Call(op, (left, right), _BOOL, pos=self.position(e))

    def in_list(self, e, pos: int) -> Node:
        from sqlglot import exp

        arg = self.bind(e.this)
        if e.args.get("query") is not None or any(isinstance(x, (exp.Select, exp.Subquery)) for x in e.expressions):
            raise self.error("subqueries (SELECT ...) are not supported in a filter: list the values, x IN (1, 2)", pos)
        items = e.expressions
        if len(items) == 1 and isinstance(items[0], exp.Literal) and items[0].is_string:
            m = re.fullmatch(_MARKER.format(r"(\d+)"), items[0].this)
            if m:
                raw = self.lists[int(m.group(1))]
                return self.long_list(arg, raw, pos)
        values = [self.bind(x) for x in items]
        checked = []
        for v in values:
            a, b = self.comparable(arg, v, e)
            checked.append(b)
            arg = a
        return Call("in", (arg, *checked), _BOOL, pos=pos)

    def long_list(self, arg: Node, raw: tuple[pa.Array, int, str], pos: int) -> Node:
        """A long IN list of plain literals (:func:`_lift_long_lists`), converted in bulk to
        the column's type when it is a number or string column (else value by value)."""
        values, nulls, kind = raw
        t = arg.type
        extra = (Lit("null", None, pa.null(), pos),) if nulls else ()
        try:
            if kind == "str" and _is_string(t):
                return Call("in", (arg, Lit("array", values, t, pos), *extra), _BOOL, pos=pos)
            if kind == "num" and _is_string(t):
                raise self.error(f"cannot compare {_describe(arg)} (VARCHAR) with numbers; quote the values: IN ('1', '2')", pos)
            if kind == "num" and _is_int(t) and pc.all(pc.match_substring_regex(values, r"^-?\d+$")).as_py():
                return Call("in", (arg, Lit("array", pc.cast(values, pa.int64()), pa.int64(), pos), *extra), _BOOL, pos=pos)
            if kind == "num" and pa.types.is_floating(t):
                return Call("in", (arg, Lit("array", pc.cast(values, pa.float64()), pa.float64(), pos), *extra), _BOOL, pos=pos)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        lits = []
        for value in values.to_pylist():
            if kind == "str":
                lits.append(Lit("str", value, pa.string(), pos, "'" + value.replace("'", "''") + "'"))
            else:
                negative = value.startswith("-")
                lit = self.number(value.lstrip("-"), pos)
                lits.append(Lit(lit.kind, -lit.value, lit.type, pos, value) if negative else lit)
        lits.extend(extra)
        checked = []
        for v in lits:
            arg, v = self.comparable(arg, v, None)
            checked.append(v)
        return Call("in", (arg, *checked), _BOOL, pos=pos)

    def like(self, e, escape: str | None) -> Node:
        from sqlglot import exp

        negated = False
        arg = self.string_arg(e.this, e)
        pattern = self.bind(e.expression)
        if not (isinstance(pattern, Lit) and pattern.kind in ("str", "null")):
            if _is_string(pattern.type):
                raise self.error("LIKE takes a quoted pattern (a pattern computed from columns is not supported)", self.position(e.expression))
            raise self.error("LIKE takes a quoted pattern, e.g. status LIKE 'a%'", self.position(e.expression))
        if pattern.kind == "null":
            return Lit("null", None, pa.null(), pattern.pos)
        node = Call("like", (arg,), _BOOL, (pattern.value, isinstance(e, exp.ILike), escape, negated), self.position(e))
        return Call("not", (node,), _BOOL, pos=node.pos) if e.args.get("negate") else node

    def string_arg(self, e, parent) -> Node:
        node = self.bind(e)
        if isinstance(node, Lit) and node.kind == "str":
            return Lit("typed", pa.scalar(node.value, pa.string()), pa.string(), node.pos)
        if not (_is_string(node.type) or pa.types.is_null(node.type)):
            raise self.error(f"{_describe(node)} is {_sql_type_name(node.type)}, not a string: CAST it, e.g. CAST(x AS VARCHAR)", node.pos if node.pos >= 0 else self.position(parent))
        return node

    def arith(self, op: str, left: Node, right: Node, e) -> Node:
        # date/timestamp +/- INTERVAL
        from sqlglot import exp

        if isinstance(e.expression, exp.Interval) or isinstance(e.this, exp.Interval):
            raise self.error("INTERVAL arithmetic is not supported in a filter yet: write the timestamp itself", self.position(e))
        for side in (left, right):
            if isinstance(side, Lit) and side.kind == "str":
                other = right if side is left else left
                if _is_numeric(other.type):
                    self.coerce(side, other.type, other, e)
                    continue
            if not (_is_numeric(side.type) or pa.types.is_null(side.type) or (isinstance(side, Lit) and side.kind == "str")):
                raise self.error(f"cannot compute {op} on {_describe(side)} ({_sql_type_name(side.type)}): a number is needed", side.pos if side.pos >= 0 else self.position(e))
        lt = _lit_type(left, right)
        rt = _lit_type(right, left)
        t = _arith_type(op, lt, rt)
        if isinstance(left, Lit) and isinstance(right, Lit) and left.kind in ("int", "num", "float") and right.kind in ("int", "num", "float"):
            folded = _fold(op, left, right)
            if folded is not None:
                return folded
        return Call(op, (left, right), t, pos=self.position(e))

    def concat(self, parts, e, *, skip_nulls: bool) -> Node:
        args = []
        for p in parts:
            node = self.bind(p)
            if isinstance(node, Lit) and node.kind in ("str", "int", "num", "float", "bool"):
                text = node.value if node.kind == "str" else ("true" if node.value is True else "false" if node.value is False else str(node.value))
                node = Lit("typed", pa.scalar(text, pa.string()), pa.string(), node.pos)
            elif not _is_string(node.type) and not pa.types.is_null(node.type):
                node = Call("cast", (node,), pa.string(), (pa.string(), False), node.pos)
            args.append(node)
        return Call("concat", tuple(args), pa.string(), skip_nulls, self.position(e))

    def cast(self, e, safe: bool) -> Node:
        target = self.data_type(e.args["to"], e)
        arg = self.bind(e.this)
        if isinstance(arg, Lit):
            folded = self.fold_cast(arg, target, safe, e)
            if folded is not None:
                return folded
        a, b = _category(arg.type), _category(target)
        allowed = a == b or a in ("null", "string") or b == "string" or {a, b} <= {"number", "boolean"} or (a == "temporal" and b == "time")
        if not allowed:
            raise self.error(f"cannot CAST {_describe(arg)} ({_sql_type_name(arg.type)}) AS {_sql_type_name(target)}", self.position(e))
        if pa.types.is_date(target) or _is_string(target):
            arg = self.in_zone(arg)
        return Call("cast", (arg,), target, (target, safe), self.position(e))

    def data_type(self, dt, e) -> pa.DataType:
        from sqlglot import exp

        kind = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
        if kind == "DECIMAL":
            params = [int(p.this.this if hasattr(p.this, "this") else p.this) for p in dt.expressions] if dt.expressions else []
            precision = params[0] if params else 18
            scale = params[1] if len(params) > 1 else (3 if not params else 0)
            return pa.decimal128(precision, scale)
        if kind in _TYPES:
            return _TYPES[kind]
        raise self.error(f"unknown or unsupported type {dt.sql() if isinstance(dt, exp.Expr) else dt}", self.position(e))

    def fold_cast(self, lit: Lit, target: pa.DataType, safe: bool, e) -> Lit | None:
        """A CAST of a literal, computed now (DuckDB's CAST rules for the common cases)."""
        if lit.kind == "null":
            return Lit("typed", pa.scalar(None, target), target, lit.pos)
        try:
            if lit.kind == "str":
                text = lit.value
                if _is_temporal(target):
                    if pa.types.is_timestamp(target) and target.tz is None and len(text.strip()) > 10 and _OFFSET.search(text.strip()):
                        target = pa.timestamp(target.unit, tz="UTC")  # an offset makes it an instant
                    return Lit("typed", _temporal_text(text, target, lambda msg: ValueError(msg)), target, lit.pos)
                if _is_binary(target):
                    return Lit("typed", pa.scalar(text.encode(), target), target, lit.pos)
                if pa.types.is_boolean(target):
                    v = text.strip().lower()
                    if v in ("true", "t", "1", "yes", "y", "false", "f", "0", "no", "n"):
                        return Lit("typed", pa.scalar(v in ("true", "t", "1", "yes", "y")), target, lit.pos)
                    raise ValueError(text)
                if pa.types.is_floating(target):
                    return Lit("typed", pa.scalar(float(text.strip()), target), target, lit.pos)
                if _is_int(target):
                    number = Decimal(text.strip())
                    return Lit("typed", pa.scalar(int(number.to_integral_value(rounding="ROUND_HALF_UP")), target), target, lit.pos)
                if pa.types.is_decimal(target):
                    number = Decimal(text.strip()).quantize(Decimal(1).scaleb(-target.scale), rounding="ROUND_HALF_UP")
                    return Lit("typed", pa.scalar(number, target), target, lit.pos)
                if _is_string(target):
                    return Lit("typed", pa.scalar(text, target), target, lit.pos)
            if lit.kind in ("int", "num", "float", "bool"):
                if _is_int(target):
                    if lit.kind == "float":
                        return Lit("typed", pa.scalar(int(np.rint(lit.value)), target), target, lit.pos)
                    return Lit("typed", pa.scalar(int(Decimal(lit.value).to_integral_value(rounding="ROUND_HALF_UP")), target), target, lit.pos)
                if pa.types.is_floating(target):
                    return Lit("typed", pa.scalar(float(lit.value), target), target, lit.pos)
                if pa.types.is_decimal(target):
                    number = Decimal(str(lit.value)).quantize(Decimal(1).scaleb(-target.scale), rounding="ROUND_HALF_UP")
                    return Lit("typed", pa.scalar(number, target), target, lit.pos)
                if pa.types.is_boolean(target):
                    return Lit("typed", pa.scalar(bool(lit.value)), target, lit.pos)
                if _is_string(target) and lit.kind != "float":
                    text = ("true" if lit.value else "false") if lit.kind == "bool" else str(lit.value)
                    return Lit("typed", pa.scalar(text, target), target, lit.pos)
            if lit.kind == "typed":
                return Lit("typed", pc.cast(lit.value, target, safe=True), target, lit.pos)
        except (ValueError, InvalidOperation, OverflowError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            if safe:
                return Lit("typed", pa.scalar(None, target), target, lit.pos)
            if isinstance(err, pa.ArrowNotImplementedError):
                raise self.error(f"cannot CAST {_describe(lit)} AS {_sql_type_name(target)}", lit.pos) from None
            raise self.error(f"could not convert {_describe(lit)} to {_sql_type_name(target)}", lit.pos) from None
        return None

    def case(self, e) -> Node:
        operand = self.bind(e.this) if e.this is not None else None
        whens = []
        for w in e.args.get("ifs") or []:
            if operand is not None:
                cond = self.compare("=", operand, self.bind(w.this), w)
            else:
                cond = self.condition(w.this)
            whens.append((cond, self.bind(w.args["true"])))
        default = e.args.get("default")
        other = self.bind(default) if default is not None else Lit("null", None, pa.null(), self.position(e))
        return self.make_case(whens, other, e)

    def make_case(self, whens: list[tuple[Node, Node]], other: Node, e) -> Node:
        values = [v for _, v in whens] + [other]
        t = self.common_type(values, e)
        values = [self.to_type(v, t, e) for v in values]
        conds = tuple(c for c, _ in whens)
        return Call("case", (*conds, *values), t, len(conds), self.position(e))

    def coalesce(self, args: list[Node], e) -> Node:
        t = self.common_type(args, e)
        return Call("coalesce", tuple(self.to_type(a, t, e) for a in args), t, pos=self.position(e))

    def common_type(self, values: list[Node], e) -> pa.DataType:
        typed = [v for v in values if not (isinstance(v, Lit) and v.kind in ("str", "int", "num", "float", "null", "bool"))]
        if typed:
            t = typed[0].type
            for v in typed[1:]:
                t = _common(t, v.type) or self.incompatible(typed[0], v, e)
            for v in values:
                if isinstance(v, Lit) and v.kind != "null":
                    t = _common(t, _lit_default(v), literal=v) or self.incompatible(typed[0], v, e)
            return t
        lits = [v for v in values if v.kind != "null"]
        if not lits:
            return pa.null()
        t = _lit_default(lits[0])
        for v in lits[1:]:
            t = _common(t, _lit_default(v)) or self.incompatible(lits[0], v, e)
        return t

    def incompatible(self, a: Node, b: Node, e):
        raise self.error(f"{_describe(a)} ({_sql_type_name(a.type)}) and {_describe(b)} ({_sql_type_name(b.type)}) have no common type", b.pos if b.pos >= 0 else self.position(e))

    def to_type(self, node: Node, t: pa.DataType, e) -> Node:
        if node.type == t or pa.types.is_null(t):
            return node
        if isinstance(node, Lit):
            folded = self.fold_cast(node, t, False, e)
            if folded is not None:
                return folded
        return Call("cast", (node,), t, (t, False), node.pos)

    def function(self, e, pos: int) -> Node:
        from sqlglot import exp

        name = type(e).__name__
        if name in _STRING_FUNCS:
            arg = self.string_arg(e.this, e)
            fn = _STRING_FUNCS[name]
            return Call(fn, (arg,), pa.int64() if fn == "length" else pa.string(), pos=pos)
        if isinstance(e, exp.Substring):
            arg = self.string_arg(e.this, e)
            start = self.int_arg(e.args.get("start"), e)
            length = self.int_arg(e.args.get("length"), e) if e.args.get("length") is not None else None
            return Call("substring", (arg, start) + ((length,) if length is not None else ()), pa.string(), pos=pos)
        if isinstance(e, (exp.Left, exp.Right)):
            arg = self.string_arg(e.this, e)
            n = self.int_arg(e.expression, e)
            return Call(name.lower(), (arg, n), pa.string(), pos=pos)
        if isinstance(e, exp.Trim):
            arg = self.string_arg(e.this, e)
            chars = self.bind(e.expression) if e.expression is not None else None
            if chars is not None and not (isinstance(chars, Lit) and chars.kind == "str"):
                raise self.error("TRIM characters must be a quoted literal", pos)
            where = (e.args.get("position") or "BOTH").upper()
            return Call("trim", (arg,), pa.string(), (where, chars.value if chars is not None else " "), pos)
        if isinstance(e, exp.StartsWith) or isinstance(e, exp.EndsWith) or isinstance(e, exp.Contains):
            arg = self.string_arg(e.this, e)
            needle = self.string_arg(e.expression, e)
            return Call({"StartsWith": "starts_with", "EndsWith": "ends_with", "Contains": "contains"}[name], (arg, needle), _BOOL, pos=pos)
        if isinstance(e, exp.StrPosition):
            arg = self.string_arg(e.this, e)
            needle = self.string_arg(e.args["substr"], e)
            return Call("strpos", (arg, needle), pa.int64(), pos=pos)
        if isinstance(e, exp.Replace) or (isinstance(e, exp.Anonymous) and str(e.this).upper() == "REPLACE"):
            args = [e.this, e.expression, e.args.get("replacement")] if isinstance(e, exp.Replace) else list(e.expressions)
            arg, old, new = (self.string_arg(a, e) for a in args)
            return Call("replace", (arg, old, new), pa.string(), pos=pos)
        if isinstance(e, exp.Abs):
            arg = self.numeric_arg(e.this, e)
            return Call("abs", (arg,), _arith_type("+", arg.type, arg.type) if _is_int(arg.type) else arg.type, pos=pos)
        if isinstance(e, (exp.Floor, exp.Ceil)):
            arg = self.numeric_arg(e.this, e)
            t = arg.type if not pa.types.is_decimal(arg.type) else pa.decimal128(arg.type.precision, 0)
            return Call(name.lower(), (arg,), t, pos=pos)
        if isinstance(e, exp.Round):
            arg = self.numeric_arg(e.this, e)
            digits = self.bind(e.args["decimals"]) if e.args.get("decimals") is not None else Lit("int", 0, pa.int64())
            if not (isinstance(digits, Lit) and digits.kind == "int"):
                raise self.error("ROUND's digits must be an integer literal", pos)
            t = arg.type
            if pa.types.is_decimal(t):
                t = pa.decimal128(t.precision, max(0, min(t.scale, digits.value)))
            return Call("round", (arg,), t, digits.value, pos)
        if name in ("Year", "Month", "Day", "Hour", "Minute", "Second", "Quarter", "DayOfWeek", "DayOfYear", "Week") or (isinstance(e, exp.Anonymous) and str(e.this).upper() in ("HOUR", "MINUTE", "SECOND", "QUARTER", "DAYOFWEEK", "DAYOFYEAR")):
            part = name.upper() if not isinstance(e, exp.Anonymous) else str(e.this).upper()
            part = {"DAYOFWEEK": "DOW", "DAYOFYEAR": "DOY"}.get(part, part)
            arg_e = e.this if not isinstance(e, exp.Anonymous) else e.expressions[0]
            return self.extract(part, arg_e, e, pos)
        if isinstance(e, exp.Extract):
            part = e.this.name.upper()
            return self.extract(part, e.expression, e, pos)
        if isinstance(e, (exp.DateTrunc, exp.TimestampTrunc)):
            unit = e.args.get("unit")
            unit_name = (unit.name if unit is not None else "").upper()
            arg = self.bind(e.this)
            if not _is_temporal(arg.type):
                raise self.error(f"date_trunc needs a date or timestamp, not {_sql_type_name(arg.type)}", pos)
            if unit_name not in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"):
                raise self.error(f"date_trunc unit {unit_name!r} is not supported (year, quarter, month, week, day, hour, minute, second)", pos)
            arg = self.in_zone(arg)
            t = arg.type if pa.types.is_timestamp(arg.type) else pa.timestamp("us")
            return Call("date_trunc", (arg,), t, unit_name, pos)
        if isinstance(e, exp.Anonymous) and str(e.this).upper() in _CAST_FUNCTIONS and len(e.expressions) == 1:
            target = _CAST_FUNCTIONS[str(e.this).upper()]  # Spark's double('NaN'), int(x), ...
            arg = self.bind(e.expressions[0])
            if isinstance(arg, Lit):
                folded = self.fold_cast(arg, target, False, e)
                if folded is not None:
                    return folded
            return Call("cast", (arg,), target, (target, False), pos)
        if isinstance(e, exp.Anonymous) and str(e.this).upper() in ("IFNULL", "NVL"):
            args = [self.bind(a) for a in e.expressions]
            return self.coalesce(args, e)
        fname = str(e.this).lower() if isinstance(e, exp.Anonymous) else e.sql_name().lower() if hasattr(e, "sql_name") else name.lower()
        raise self.error(f"function {fname}() is not supported in a filter (supported: {_SUPPORTED})", pos)

    def extract(self, part: str, arg_e, e, pos: int) -> Node:
        if part not in _EXTRACT_PARTS:
            raise self.error(f"EXTRACT({part}) is not supported ({', '.join(sorted(_EXTRACT_PARTS))})", pos)
        arg = self.bind(arg_e)
        if isinstance(arg, Lit) and arg.kind == "str":
            arg = self.fold_cast(arg, pa.timestamp("us"), False, e)
        if not _is_temporal(arg.type):
            raise self.error(f"{part.lower()}() needs a date or timestamp, not {_sql_type_name(arg.type)}", pos)
        return Call("extract", (self.in_zone(arg) if part != "EPOCH" else arg,), pa.float64() if part == "EPOCH" else pa.int64(), part, pos)

    def int_arg(self, e, parent) -> Node:
        node = self.bind(e)
        if isinstance(node, Lit) and node.kind == "str":
            node = self.fold_cast(node, pa.int64(), False, parent)
        if not _is_int(node.type) and not pa.types.is_null(node.type):
            raise self.error(f"an integer is needed, not {_sql_type_name(node.type)}", node.pos)
        return node

    def numeric_arg(self, e, parent) -> Node:
        node = self.bind(e)
        if isinstance(node, Lit) and node.kind == "str":
            node = self.fold_cast(node, pa.float64(), False, parent)
        if not _is_numeric(node.type) and not pa.types.is_null(node.type):
            raise self.error(f"a number is needed, not {_sql_type_name(node.type)}", node.pos)
        return node


_CAST_FUNCTIONS = {
    "DOUBLE": pa.float64(), "FLOAT": pa.float32(), "INT": pa.int32(), "BIGINT": pa.int64(), "SMALLINT": pa.int16(),
    "TINYINT": pa.int8(), "STRING": pa.string(), "BOOLEAN": pa.bool_(), "BINARY": pa.binary(),
}  # fmt: skip
_SUPPORTED = (
    "lower, upper, length, substring/substr, left, right, trim/ltrim/rtrim, concat, ||, replace, reverse, "
    "starts_with, ends_with, contains, strpos, regexp_matches/rlike, abs, round, floor, ceil, year, month, day, hour, "
    "minute, second, extract, date_trunc, coalesce, ifnull/nvl, nullif, if, CASE, CAST, TRY_CAST, current_date, now"
)


def _describe(node: Node) -> str:
    if isinstance(node, Col):
        return node.name
    if isinstance(node, Lit):
        if node.text:
            return node.text
        if node.kind == "typed":
            return f"{_sql_type_name(node.type)} {node.value}"
        return "NULL" if node.kind == "null" else repr(node.value)
    return "the expression"


def _lit_default(lit: Lit) -> pa.DataType:
    if lit.kind == "int":
        return pa.int32() if -(2**31) <= lit.value < 2**31 else pa.int64()
    if lit.kind == "str":
        return pa.string()
    return lit.type


def _lit_type(node: Node, other: Node) -> pa.DataType:
    """The type an arithmetic operand counts as (an untyped literal takes the other side's)."""
    if isinstance(node, Lit) and node.kind == "str":
        return other.type if _is_numeric(other.type) else pa.float64()
    if isinstance(node, Lit) and node.kind == "int":
        return pa.int64()
    if isinstance(node, Lit) and node.kind == "num" and pa.types.is_floating(other.type):
        return other.type  # a decimal literal next to a FLOAT/DOUBLE takes its type
    return node.type


def _arith_type(op: str, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if pa.types.is_null(a):
        a = b
    if pa.types.is_null(b):
        b = a
    if pa.types.is_null(a):
        return pa.int64()
    if pa.types.is_float32(a) and (pa.types.is_float32(b) or _is_int(b)) or pa.types.is_float32(b) and _is_int(a):
        return pa.float32()  # FLOAT with FLOAT or an integer stays FLOAT (DuckDB)
    if op == "/":
        return pa.float64()
    if pa.types.is_floating(a) or pa.types.is_floating(b):
        return pa.float64()
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        da = a if pa.types.is_decimal(a) else pa.decimal128(19, 0)
        db = b if pa.types.is_decimal(b) else pa.decimal128(19, 0)
        scale = da.scale + db.scale if op == "*" else max(da.scale, db.scale)
        return pa.decimal128(38, min(scale, 38))
    return pa.int64()


def _common(a: pa.DataType, b: pa.DataType, literal: Lit | None = None) -> pa.DataType | None:
    """The type two CASE/COALESCE branches share (None: none)."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    ca, cb = _category(a), _category(b)
    if literal is not None and literal.kind == "str" and ca != "string":
        return a if ca in ("temporal", "number", "boolean", "binary") else None
    if ca == cb == "number":
        if pa.types.is_floating(a) or pa.types.is_floating(b):
            return pa.float64()
        if pa.types.is_decimal(a) or pa.types.is_decimal(b):
            return pa.decimal128(38, max(getattr(a, "scale", 0), getattr(b, "scale", 0)))
        return pa.int64()
    if ca == cb == "string":
        return pa.string()
    if ca == cb == "temporal":
        if pa.types.is_timestamp(a):
            return a
        return b
    if ca == cb:
        return a
    return None


def _fold(op: str, left: Lit, right: Lit) -> Lit | None:
    """Arithmetic on two number literals, computed now (None: leave it to the engine)."""
    try:
        if left.kind == "float" or right.kind == "float" or op == "/":
            a, b = float(left.value), float(right.value)
            if op == "/" and b == 0:
                return None
            value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}.get(op)
            return None if value is None else Lit("float", value, pa.float64(), left.pos)
        a, b = Decimal(left.value), Decimal(right.value)
        value = {"+": a + b, "-": a - b, "*": a * b}.get(op)
        if value is None:
            return None
        if left.kind == right.kind == "int":
            return Lit("int", int(value), pa.int64(), left.pos)
        return Lit("num", value, pa.decimal128(38, max(0, -value.as_tuple().exponent)), left.pos)
    except (InvalidOperation, OverflowError):
        return None


# ----------------------------------------------------------------------------------------
# literals as Arrow values of a column's type
# ----------------------------------------------------------------------------------------

_OFFSET = re.compile(r"(Z|[+-]\d\d(?::?\d\d)?)$")


def _temporal_text(text: str, t: pa.DataType, fail) -> pa.Scalar:
    """'2024-06-01' or '2024-06-01 12:00:00[.fff][+02:00]' as a date/timestamp of type ``t``
    (a date of a timestamp text is its day, as DuckDB's CAST)."""
    raw = text.strip()
    what = "date" if pa.types.is_date(t) else "timestamp"
    offset = _OFFSET.search(raw) if len(raw) > 10 else None
    naive = raw[: offset.start()].strip() if offset else raw
    try:
        if not re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?", naive):
            raise ValueError
        date_part, _, time_part = naive.replace("T", " ").partition(" ")
        y, mo, d = (int(x) for x in date_part.split("-"))
        day = np.datetime64(f"{y:04d}-{mo:02d}-{d:02d}", "D")
        if str(day) != f"{y:04d}-{mo:02d}-{d:02d}":
            raise ValueError
        if pa.types.is_date(t):
            if offset is not None:
                raise ValueError
            return pa.scalar(day.astype(object), t)
        stamp = np.datetime64(f"{y:04d}-{mo:02d}-{d:02d}T{_pad_time(time_part)}" if time_part else str(day), "ns")
    except (ValueError, TypeError, OverflowError):
        raise fail(what) from None
    nanos = int(stamp.astype(np.int64))
    if offset:
        if t.tz is None:
            raise fail(f"{what} without a time zone (write it without the offset)")
        text_off = offset.group(1)
        sign = 0 if text_off == "Z" else (1 if text_off[0] == "+" else -1)
        digits = text_off.replace(":", "")[1:] if sign else "0000"
        digits = digits.ljust(4, "0")
        nanos -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60) * 10**9
        localized = pa.array([nanos], pa.timestamp("ns")).cast(pa.timestamp("ns", tz="UTC"))
    else:
        local = pa.array([nanos], pa.timestamp("ns"))
        localized = pc.assume_timezone(local, timezone=t.tz) if t.tz is not None else local
    try:
        return localized.cast(pa.timestamp(t.unit, tz=t.tz))[0]
    except pa.ArrowInvalid:
        # more precise than the column's unit: kept in ns (compared in the residual)
        return localized.cast(pa.timestamp("ns", tz=t.tz))[0]


def _pad_time(text: str) -> str:
    parts = text.split(":")
    h = parts[0].zfill(2)
    rest = ":".join(parts[1:])
    return f"{h}:{rest}" if len(parts) > 2 else f"{h}:{rest}:00"


class _NoArrow(Exception):
    """This part has no exact pyarrow Expression: it goes to the residual."""


def _literal_scalar(lit: Lit, t: pa.DataType) -> pa.Scalar:
    """``lit`` as an exact value of type ``t`` (or _NoArrow)."""
    t = _base(t)
    if lit.kind == "typed":
        if lit.value.type == t:
            return lit.value
        if pa.types.is_timestamp(lit.value.type) and pa.types.is_timestamp(t) and lit.value.type.tz is None and t.tz is not None:
            # a naive literal on a zoned column is read in the column's zone (as the residual does)
            local = pc.assume_timezone(pa.array([lit.value]).cast(pa.timestamp("ns")), timezone=t.tz)
            try:
                return local.cast(t, safe=True)[0]
            except pa.ArrowInvalid:
                raise _NoArrow from None
        if pa.types.is_timestamp(lit.value.type) and pa.types.is_timestamp(t) and (lit.value.type.tz is None) != (t.tz is None):
            raise _NoArrow  # a zoned literal on a naive column: the residual compares them
        try:
            cast = pc.cast(pa.array([lit.value]), t, safe=True)
            back = pc.cast(cast, lit.value.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise _NoArrow from None
        if not back.equals(pa.array([lit.value])):
            raise _NoArrow
        return cast[0]
    if lit.kind == "str":
        if _is_string(t):
            return pa.scalar(lit.value, t)
        if _is_temporal(t):
            scalar = _temporal_text(lit.value, t, lambda msg: _NoArrow())
            if scalar.type != t:
                raise _NoArrow
            return scalar
        if pa.types.is_boolean(t):
            return pa.scalar(lit.value.strip().lower() in ("true", "t", "1", "yes", "y"))
        if _is_binary(t):
            return pa.scalar(lit.value.encode(), t)
        if pa.types.is_decimal(t):
            try:
                return pa.scalar(Decimal(lit.value.strip()), t)
            except (pa.ArrowInvalid, InvalidOperation, ValueError):
                raise _NoArrow from None
        raise _NoArrow
    if lit.kind == "bool" and pa.types.is_boolean(t):
        return pa.scalar(lit.value)
    if lit.kind in ("int", "num") and pa.types.is_decimal(t):
        try:
            return pa.scalar(Decimal(lit.value), t)
        except (pa.ArrowInvalid, ValueError):
            raise _NoArrow from None
    raise _NoArrow


# ----------------------------------------------------------------------------------------
# bound tree -> pyarrow Expression (exact, SQL meaning), for the parts that have one
# ----------------------------------------------------------------------------------------


def _arrow(node: Node, neg: bool) -> pc.Expression:
    """``node`` (negated if ``neg``) as an Expression TRUE exactly where SQL is TRUE, or
    _NoArrow. Negations are pushed to the leaves, so only AND/OR combine leaves and a row is
    selected iff the leaves say TRUE."""
    if isinstance(node, Lit):
        if node.kind in ("bool", "null") or (node.kind == "typed" and pa.types.is_boolean(node.type)):
            value = node.value.as_py() if node.kind == "typed" else node.value
            return pc.scalar(False if value is None else bool(value) != neg)
        raise _NoArrow
    if isinstance(node, Col):
        if pa.types.is_boolean(node.type):
            return pc.field(node.name) == pc.scalar(not neg)
        raise _NoArrow
    if not isinstance(node, Call):
        raise _NoArrow
    op, args = node.op, node.args
    if op == "not":
        return _arrow(args[0], not neg)
    if op in ("and", "or"):
        left, right = _arrow(args[0], neg), _arrow(args[1], neg)
        return (left & right) if (op == "and") != neg else (left | right)
    if op in _FLIP:
        left, right = args
        if isinstance(left, Lit) and isinstance(right, Col):
            left, right, op = right, left, _FLIP[op]
        if isinstance(left, Col) and isinstance(right, Lit):
            return _compare(_NEGATE[op] if neg else op, left, right)
        if isinstance(left, Col) and isinstance(right, Col):
            return _compare_columns(_NEGATE[op] if neg else op, left, right)
        raise _NoArrow
    if op == "is_null":
        (arg,) = args
        if not isinstance(arg, Col):
            raise _NoArrow
        return pc.field(arg.name).is_valid() if neg else pc.field(arg.name).is_null()
    if op == "in":
        arg, values = args[0], args[1:]
        if not isinstance(arg, Col) or not all(isinstance(v, Lit) for v in values):
            raise _NoArrow
        return _in(arg, list(values), neg)
    if op == "like":
        (arg,) = args
        pattern, ignore_case, escape, _ = node.extra
        if not isinstance(arg, Col):
            raise _NoArrow
        match = pc.match_like(pc.field(arg.name), _arrow_like_pattern(pattern, escape), ignore_case=ignore_case)
        return (~match) if neg else match
    if op == "distinct":
        left, right = args
        if isinstance(left, Lit) and isinstance(right, Col):
            left, right = right, left
        if not (isinstance(left, Col) and isinstance(right, Lit)):
            raise _NoArrow
        distinct = node.extra != neg  # IS DISTINCT FROM (TRUE) or IS NOT DISTINCT FROM
        field = pc.field(left.name)
        if right.kind == "null" or (right.kind == "typed" and not right.value.is_valid):
            return field.is_valid() if distinct else field.is_null()
        if distinct:
            return _compare("!=", left, right) | field.is_null()
        return _compare("=", left, right)
    raise _NoArrow


def _arrow_like_pattern(pattern: str, escape: str | None) -> str:
    """A SQL LIKE pattern (no escape character unless ``ESCAPE``) in pyarrow's spelling,
    whose escape character is always a backslash."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
            i += 2
            continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


def _compare(op: str, col: Col, lit: Lit) -> pc.Expression:
    """``column op literal`` (op already negated if needed) with SQL's meaning."""
    t = col.type
    field = pc.field(col.name)
    if lit.kind == "null" or (lit.kind == "typed" and not lit.value.is_valid):
        return pc.scalar(False)  # x = NULL is NULL: never TRUE
    if pa.types.is_floating(t):
        number = _float_value(lit)
        if pa.types.is_float32(t) and lit.kind == "typed" and not pa.types.is_float32(lit.type) and not math.isnan(number):
            if float(np.float32(number)) != number:
                raise _NoArrow  # a DOUBLE next to a FLOAT compares in DOUBLE: the residual does
        if math.isnan(number):  # SQL: NaN is the largest value and equals itself
            return {
                "=": pc.is_nan(field), "!=": ~pc.is_nan(field), "<": ~pc.is_nan(field),
                "<=": field.is_valid(), ">": pc.scalar(False), ">=": pc.is_nan(field),
            }[op]  # fmt: skip
        expr = _op(op, field, pa.scalar(number, t))
        if op in (">", ">=", "!="):  # SQL puts NaN above every number; Arrow says NaN > x is false
            expr = expr | pc.is_nan(field) if op != "!=" else expr
        return expr
    if _is_int(t):
        if lit.kind in ("int", "num") or (lit.kind == "str"):
            try:
                number = Decimal(str(lit.value).strip())
            except InvalidOperation:
                raise _NoArrow from None
        elif lit.kind == "bool":
            number = Decimal(int(lit.value))
        elif lit.kind == "typed" and (_is_int(lit.type) or pa.types.is_decimal(lit.type)):
            number = Decimal(str(lit.value.as_py()))
        else:
            raise _NoArrow
        if not number.is_finite():
            raise _NoArrow
        if number != number.to_integral_value():  # x > 2.5 on integers: x >= 3, exactly
            lo, hi = math.floor(number), math.ceil(number)
            if op == "=":
                return pc.scalar(False)
            if op == "!=":
                return field.is_valid()
            op, number = {"<": ("<=", lo), "<=": ("<=", lo), ">": (">=", hi), ">=": (">=", hi)}[op]
        value = int(number)
        low, high = _int_range(t)
        if not low <= value <= high:  # beyond every value of the column: decided by the side
            above = value > high
            true_for_values = op == "!=" or (op in ("<", "<=") if above else op in (">", ">="))
            return field.is_valid() if true_for_values else pc.scalar(False)
        return _op(op, field, pa.scalar(value, t))
    if pa.types.is_decimal(t) and lit.kind in ("int", "num", "str", "typed"):
        if lit.kind == "typed" and not (pa.types.is_decimal(lit.type) or _is_int(lit.type)):
            raise _NoArrow
        try:
            number = Decimal(str(lit.value.as_py() if lit.kind == "typed" else lit.value).strip())
            scalar = pa.scalar(number, t)
        except (pa.ArrowInvalid, InvalidOperation, ValueError):
            raise _NoArrow from None
        if Decimal(scalar.as_py()) != number:
            raise _NoArrow
        return _op(op, field, scalar)
    if pa.types.is_date(t) and lit.kind == "typed" and pa.types.is_timestamp(lit.type):
        raise _NoArrow
    return _op(op, field, _literal_scalar(lit, t))


def _int_range(t: pa.DataType) -> tuple[int, int]:
    """The smallest and largest value of the integer type ``t``."""
    bits = t.bit_width
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(t) else (0, (1 << bits) - 1)


def _float_value(lit: Lit) -> float:
    if lit.kind in ("int", "num", "float"):
        return float(lit.value)
    if lit.kind == "str":
        try:
            return float(lit.value.strip())
        except ValueError:
            raise _NoArrow from None
    if lit.kind == "bool":
        return float(lit.value)
    if lit.kind == "typed" and _is_numeric(lit.type):
        return float(lit.value.as_py())
    raise _NoArrow


def _op(op: str, field: pc.Expression, scalar) -> pc.Expression:
    return {
        "=": lambda: field == scalar, "!=": lambda: field != scalar, "<": lambda: field < scalar,
        "<=": lambda: field <= scalar, ">": lambda: field > scalar, ">=": lambda: field >= scalar,
    }[op]()  # fmt: skip


def _in(col: Col, values: list[Lit], negated: bool) -> pc.Expression:
    """``column [NOT] IN (values)``: TRUE as in SQL (NaN matches NaN, NULL never matches)."""
    t = col.type
    field = pc.field(col.name)
    has_null = any(v.kind == "null" or (v.kind == "typed" and not v.value.is_valid) for v in values)
    present = [v for v in values if not (v.kind == "null" or (v.kind == "typed" and not v.value.is_valid))]
    if negated and has_null:
        return pc.scalar(False)  # x NOT IN (..., NULL): x <> NULL is NULL, never TRUE
    if not present:
        return pc.scalar(False)
    arrays = [v for v in present if v.kind == "array"]
    if arrays:  # a long list, converted in bulk (Binder.long_list)
        if len(arrays) != len(present):
            raise _NoArrow
        (values,) = (v.value for v in arrays)
        if pa.types.is_floating(t):
            floats = values.cast(pa.float64())
            has_nan = pc.any(pc.is_nan(floats)).as_py()
            numbers = floats.filter(pc.invert(pc.is_nan(floats)))
            if pc.any(pc.equal(numbers, 0.0)).as_py():
                numbers = pa.concat_arrays([numbers, pa.array([0.0, -0.0])])
            matched = field.isin(numbers.cast(t))
            if has_nan:
                matched = matched | pc.is_nan(field)
            return (~matched & field.is_valid()) if negated else matched
        if _is_int(t):
            info = np.iinfo(t.to_pandas_dtype())
            inside = values.filter(pc.and_(pc.greater_equal(values, int(info.min)), pc.less_equal(values, int(info.max))))
            if not len(inside):
                return field.is_valid() if negated else pc.scalar(False)
            value_set = inside.cast(t)
        else:
            value_set = values.cast(t)
        isin = field.isin(value_set)
        return (~isin & field.is_valid()) if negated else isin
    if pa.types.is_floating(t):
        # SQL: -0.0 = 0.0 and NaN = NaN; pyarrow's is_in compares bit patterns (-0.0 is not
        # 0.0 there, nor one NaN payload another), so zeros go in with both signs and NaN
        # becomes is_nan.
        floats = [_float_value(v) for v in present]
        numbers = [f for f in floats if not math.isnan(f)]
        has_nan = len(numbers) < len(floats)
        if any(f == 0.0 for f in numbers):
            numbers += [0.0, -0.0]
        parts = [field.isin(pa.array(numbers, t))] if numbers else []
        if has_nan:
            parts.append(pc.is_nan(field))
        matched = parts[0] if len(parts) == 1 else parts[0] | parts[1]
        return (~matched & field.is_valid()) if negated else matched
    if _is_int(t):
        numbers = []
        for v in present:
            if v.kind in ("int", "num", "str"):
                try:
                    numbers.append(Decimal(str(v.value).strip()))
                except InvalidOperation:
                    raise _NoArrow from None
            elif v.kind == "typed" and (_is_int(v.type) or pa.types.is_decimal(v.type)):
                numbers.append(Decimal(str(v.value.as_py())))
            elif v.kind == "bool":
                numbers.append(Decimal(int(v.value)))
            else:
                raise _NoArrow
        scalars = [int(n) for n in numbers if n.is_finite() and n == n.to_integral_value()]
        if not scalars:
            return field.is_valid() if negated else pc.scalar(False)
        try:
            value_set = pa.array(scalars, t)
        except (pa.ArrowInvalid, OverflowError):
            inside = [s for s in scalars if _fits(s, t)]
            if not inside:
                return field.is_valid() if negated else pc.scalar(False)
            value_set = pa.array(inside, t)
    elif _is_string(t) and all(v.kind == "str" for v in present):
        value_set = pa.array([v.value for v in present], t)
    else:
        value_set = pa.array([_literal_scalar(v, t).as_py() for v in present], t)
    isin = field.isin(value_set)
    return (~isin & field.is_valid()) if negated else isin


def _fits(value: int, t: pa.DataType) -> bool:
    info = np.iinfo(t.to_pandas_dtype())
    return int(info.min) <= value <= int(info.max)


def _compare_columns(op: str, a: Col, b: Col) -> pc.Expression:
    ta, tb = a.type, b.type
    if pa.types.is_floating(ta) or pa.types.is_floating(tb):
        raise _NoArrow  # NaN orders differently in Arrow: the residual compares them
    if not (ta == tb or (_is_int(ta) and _is_int(tb)) or (_is_string(ta) and _is_string(tb))):
        raise _NoArrow
    return _op(op, pc.field(a.name), pc.field(b.name))


# ----------------------------------------------------------------------------------------
# bound tree -> Polars expression (exact, SQL meaning): the residual
# ----------------------------------------------------------------------------------------


def _pl_dtype(t: pa.DataType):
    import polars as pl

    if pa.types.is_null(t):
        return pl.Null
    return pl.from_arrow(pa.array([], _base(t))).dtype


def _pl_lit(lit: Lit, t: pa.DataType | None = None):
    """A literal as a Polars expression of type ``t`` (its own type if None)."""
    import polars as pl

    if lit.kind == "null" or (lit.kind == "typed" and not lit.value.is_valid):
        return pl.lit(None, dtype=_pl_dtype(t)) if t is not None and not pa.types.is_null(t) else pl.lit(None)
    if lit.kind == "typed":
        scalar = lit.value
    elif lit.kind == "int":
        scalar = pa.scalar(lit.value, pa.int64()) if -(2**63) <= lit.value < 2**63 else pa.scalar(float(lit.value))
    elif lit.kind == "num":
        scalar = pa.scalar(lit.value, lit.type)
    elif lit.kind == "float":
        scalar = pa.scalar(lit.value, pa.float64())
    elif lit.kind == "bool":
        scalar = pa.scalar(lit.value)
    else:  # an untyped string next to a value of type t
        if t is None or _is_string(t) or pa.types.is_null(t):
            scalar = pa.scalar(lit.value, pa.string())
        elif _is_temporal(t):
            scalar = _temporal_text(lit.value, t, lambda msg: WhereError(msg))
        elif pa.types.is_boolean(t):
            scalar = pa.scalar(lit.value.strip().lower() in ("true", "t", "1", "yes", "y"))
        elif _is_binary(t):
            scalar = pa.scalar(lit.value.encode(), pa.binary())
        elif pa.types.is_floating(t):
            scalar = pa.scalar(float(lit.value.strip()))
        elif pa.types.is_decimal(t) or _is_int(t):
            number = Decimal(lit.value.strip())
            if number == number.to_integral_value() and abs(number) < 2**63:
                scalar = pa.scalar(int(number))
            else:
                scalar = pa.scalar(number, pa.decimal128(38, max(0, -number.as_tuple().exponent)))
        else:
            scalar = pa.scalar(lit.value, pa.string())
    return pl.lit(pl.from_arrow(pa.array([scalar], scalar.type))).first()


def _pl(node: Node, hint: pa.DataType | None = None):
    """``node`` as a Polars expression with SQL's value (NULL where SQL is NULL)."""
    import polars as pl

    if isinstance(node, Col):
        return pl.col(node.name)
    if isinstance(node, Lit):
        return _pl_lit(node, hint)
    op, args = node.op, node.args
    if op == "and":
        return _pl_bool(args[0]) & _pl_bool(args[1])
    if op == "or":
        return _pl_bool(args[0]) | _pl_bool(args[1])
    if op == "not":
        return ~_pl_bool(args[0])
    if op in _FLIP:
        left, right = _pl_pair(args[0], args[1])
        return {"=": left.__eq__, "!=": left.__ne__, "<": left.__lt__, "<=": left.__le__, ">": left.__gt__, ">=": left.__ge__}[op](right)
    if op == "distinct":
        left, right = _pl_pair(args[0], args[1])
        return left.ne_missing(right) if node.extra else left.eq_missing(right)
    if op == "is_null":
        return _pl(args[0]).is_null()
    if op == "in":
        arg, values = args[0], args[1:]
        present = [v for v in values if not (isinstance(v, Lit) and (v.kind == "null" or (v.kind == "typed" and not v.value.is_valid)))]
        has_null = len(present) < len(values)
        if not present:
            return pl.when(_pl(arg).is_null()).then(None).otherwise(pl.lit(None, dtype=pl.Boolean)).cast(pl.Boolean) if has_null else pl.when(_pl(arg).is_null()).then(None).otherwise(False).cast(pl.Boolean)
        out = None
        for v in present:
            if isinstance(v, Lit) and v.kind == "array":
                values = pl.from_arrow(v.value.cast(pa.float64()) if pa.types.is_floating(arg.type) else v.value)
                x = _pl(arg).cast(pl.Float64) if pa.types.is_floating(arg.type) else _pl(arg)
                eq = pl.when(x.is_null()).then(None).otherwise(x.is_in(values.implode()))
            else:
                left, right = _pl_pair(arg, v)
                eq = left == right
            out = eq if out is None else out | eq
        if has_null:  # no match is NULL, not FALSE
            out = pl.when(out).then(True).otherwise(None).cast(pl.Boolean)
        return out
    if op == "like":
        pattern, ignore_case, escape, _ = node.extra
        regex = _like_regex(pattern, escape)
        return _pl(args[0]).str.contains(("(?is)" if ignore_case else "(?s)") + regex)
    if op == "like_expr":
        raise WhereError("LIKE with a pattern that is not a literal is not supported")
    if op == "regexp":
        return _pl(args[0]).str.contains(node.extra)
    if op in ("+", "-", "*", "/", "//", "%"):
        return _pl_arith(op, args[0], args[1], node.type)
    if op == "neg":
        return -_pl_num(args[0], node.type)
    if op == "concat":
        parts = [_pl(a, pa.string()) for a in args]
        return pl.concat_str(parts, ignore_nulls=bool(node.extra))
    if op == "cast":
        return _pl_cast(args[0], node.extra[0], node.extra[1])
    if op == "case":
        n = node.extra
        conds, values = args[:n], args[n:]
        if not conds:
            return _pl(values[-1], node.type)
        expr = pl.when(_pl(conds[0])).then(_pl_typed(values[0], node.type))
        for c, v in zip(conds[1:], values[1:-1]):
            expr = expr.when(_pl(c)).then(_pl_typed(v, node.type))
        return expr.otherwise(_pl_typed(values[-1], node.type))
    if op == "coalesce":
        return pl.coalesce([_pl_typed(a, node.type) for a in args])
    if op == "lower":
        return _pl(args[0]).str.to_lowercase()
    if op == "upper":
        return _pl(args[0]).str.to_uppercase()
    if op == "length":
        return _pl(args[0]).str.len_chars().cast(pl.Int64)
    if op == "reverse":
        return _pl(args[0]).str.reverse()
    if op == "substring":
        return _pl_substring(node)
    if op in ("left", "right"):
        s, n = _pl(args[0]), _pl(args[1]).cast(pl.Int64)
        length = s.str.len_chars().cast(pl.Int64)
        if op == "left":  # left(s, -k): all but the last k
            count = pl.when(n >= 0).then(n).otherwise(pl.max_horizontal(length + n, pl.lit(0)))
            return s.str.slice(0, count)
        count = pl.when(n >= 0).then(pl.min_horizontal(n, length)).otherwise(pl.max_horizontal(length + n, pl.lit(0)))
        return s.str.slice(length - count, count)
    if op == "trim":
        where, chars = node.extra
        s = _pl(args[0])
        return {"BOTH": s.str.strip_chars, "LEADING": s.str.strip_chars_start, "TRAILING": s.str.strip_chars_end}[where](chars)
    if op == "starts_with":
        return _pl(args[0]).str.starts_with(_pl(args[1]))
    if op == "ends_with":
        return _pl(args[0]).str.ends_with(_pl(args[1]))
    if op == "contains":
        return _pl(args[0]).str.contains(_pl(args[1]), literal=True)
    if op == "strpos":  # 1-based character position, 0 when absent
        s, needle = _pl(args[0]), _pl(args[1])
        found = s.str.contains(needle, literal=True)
        return pl.when(found).then(s.str.split(needle).list.first().str.len_chars() + 1).otherwise(
            pl.when(found.is_null()).then(None).otherwise(0)
        ).cast(pl.Int64)
    if op == "replace":
        return _pl(args[0]).str.replace_all(_pl(args[1]), _pl(args[2]), literal=True)
    if op == "abs":
        return _pl_num(args[0], node.type).abs()
    if op in ("floor", "ceil"):
        arg = args[0]
        if _is_int(arg.type):
            return _pl(arg)
        if pa.types.is_decimal(arg.type):
            x = _pl(arg).cast(pl.Float64)
            return (x.floor() if op == "floor" else x.ceil()).cast(_pl_dtype(node.type))
        return _pl(arg).floor() if op == "floor" else _pl(arg).ceil()
    if op == "round":
        arg = args[0]
        if _is_int(arg.type):
            return _pl(arg)
        digits = node.extra
        return _pl(arg).round(max(digits, 0), mode="half_away_from_zero")
    if op == "extract":
        return _pl_extract(node)
    if op == "convert_tz":
        return _pl(args[0]).dt.convert_time_zone(node.extra)
    if op == "date_trunc":
        unit = {"YEAR": "1y", "QUARTER": "1q", "MONTH": "1mo", "WEEK": "1w", "DAY": "1d", "HOUR": "1h", "MINUTE": "1m", "SECOND": "1s"}[node.extra]
        arg = args[0]
        x = _pl(arg)
        if pa.types.is_date(arg.type):
            x = x.cast(_pl_dtype(node.type))
        return x.dt.truncate(unit)
    raise WhereError(f"internal: no Polars translation for {op}")  # pragma: no cover


def _pl_bool(node: Node):
    import polars as pl

    expr = _pl(node)
    return expr.cast(pl.Boolean) if pa.types.is_null(node.type) else expr


def _pl_typed(node: Node, t: pa.DataType):
    import polars as pl

    expr = _pl(node, t)
    if pa.types.is_null(t):
        return expr
    dtype = _pl_dtype(t)
    if isinstance(node, Lit) and node.kind == "null":
        return pl.lit(None, dtype=dtype)
    return expr.cast(dtype) if node.type != t else expr


def _pl_num(node: Node, t: pa.DataType):
    """A numeric operand in the arithmetic type ``t``."""
    import polars as pl

    expr = _pl(node, t)
    if isinstance(node, Lit) and node.kind == "str":
        expr = _pl_lit(node, t)
    if _is_int(t):
        return expr.cast(pl.Int64)
    if pa.types.is_floating(t):
        return expr.cast(pl.Float32 if pa.types.is_float32(t) else pl.Float64)
    return expr.cast(_pl_dtype(t)) if pa.types.is_decimal(t) else expr


def _pl_arith(op: str, a: Node, b: Node, t: pa.DataType):
    import polars as pl

    if op == "/":  # in DOUBLE, rounded once to FLOAT for FLOATs (a correctly rounded FLOAT division)
        x, y = _pl_num(a, pa.float64()), _pl_num(b, pa.float64())
        return (x / y).cast(pl.Float32) if pa.types.is_float32(t) else x / y
    x, y = _pl_num(a, t), _pl_num(b, t)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if pa.types.is_floating(t):
        if op == "//":
            q = x / y
            return pl.when(q >= 0).then(q.floor()).otherwise(q.ceil())
        r = x % y  # floored (sign of y); SQL's has the sign of x
        return pl.when((r != 0) & ((r < 0) != (x < 0))).then(r - y).otherwise(r)
    if pa.types.is_decimal(t):
        x, y = x.cast(pl.Float64), y.cast(pl.Float64)
    zero = y == 0
    if op == "//":
        q = x // y  # floored; SQL truncates toward zero
        fixed = pl.when(((x % y) != 0) & ((x < 0) != (y < 0))).then(q + 1).otherwise(q)
        return pl.when(zero).then(None).otherwise(fixed)
    r = x % y
    fixed = pl.when((r != 0) & ((r < 0) != (x < 0))).then(r - y).otherwise(r)
    return pl.when(zero).then(None).otherwise(fixed)


def _pl_pair(a: Node, b: Node):
    """Two comparable operands as Polars expressions of one type."""
    import polars as pl

    ta, tb = _base(a.type), _base(b.type)
    if isinstance(b, Lit) and b.kind in ("str", "int", "num", "float", "bool"):
        return _pl_operand(a, ta), _pl_literal_for(b, ta)
    if isinstance(a, Lit) and a.kind in ("str", "int", "num", "float", "bool"):
        return _pl_literal_for(a, tb), _pl_operand(b, tb)
    x, y = _pl(a), _pl(b)
    if _is_temporal(ta) and _is_temporal(tb) and ta != tb:
        t = _temporal_common(ta, tb)
        return _pl_to_temporal(x, ta, t), _pl_to_temporal(y, tb, t)
    if _is_numeric(ta) and _is_numeric(tb) and ta != tb:
        if pa.types.is_floating(ta) or pa.types.is_floating(tb) or pa.types.is_decimal(ta) != pa.types.is_decimal(tb):
            if pa.types.is_decimal(ta) or pa.types.is_decimal(tb):
                if not (pa.types.is_floating(ta) or pa.types.is_floating(tb)):
                    t = pl.Decimal(38, max(getattr(ta, "scale", 0), getattr(tb, "scale", 0)))
                    return x.cast(t), y.cast(t)
            return x.cast(pl.Float64), y.cast(pl.Float64)
    if pa.types.is_boolean(ta) != pa.types.is_boolean(tb) and not (pa.types.is_null(ta) or pa.types.is_null(tb)):
        return x.cast(pl.Int64), y.cast(pl.Int64)
    return x, y


def _pl_operand(node: Node, t: pa.DataType):
    return _pl(node, t)


def _pl_literal_for(lit: Lit, t: pa.DataType):
    """An untyped literal next to a value of type ``t`` (as DuckDB coerces it)."""
    import polars as pl

    if lit.kind == "str":
        return _pl_lit(lit, t)
    if lit.kind in ("int", "num", "float") and _is_numeric(t):
        if pa.types.is_float32(t):  # an untyped number next to a FLOAT is a FLOAT (DuckDB)
            return pl.lit(float(lit.value), dtype=pl.Float32)
        if pa.types.is_floating(t) or lit.kind == "float":
            return pl.lit(float(lit.value), dtype=pl.Float64)
        if lit.kind == "int":
            return pl.lit(lit.value, dtype=pl.Int64) if -(2**63) <= lit.value < 2**63 else pl.lit(float(lit.value))
        scale = max(0, -Decimal(lit.value).as_tuple().exponent, getattr(t, "scale", 0))
        return pl.lit(Decimal(lit.value), dtype=pl.Decimal(38, scale))
    if lit.kind == "int" and pa.types.is_boolean(t):
        return pl.lit(bool(lit.value))
    if lit.kind == "bool" and _is_numeric(t):
        return pl.lit(int(lit.value), dtype=pl.Int64)
    return _pl_lit(lit, t)


def _temporal_common(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    stamps = [t for t in (a, b) if pa.types.is_timestamp(t)]
    if not stamps:
        return a
    units = ["s", "ms", "us", "ns"]
    unit = max((t.unit for t in stamps), key=units.index)
    tz = next((t.tz for t in stamps if t.tz), None)
    return pa.timestamp(unit, tz=tz)


def _pl_to_temporal(expr, t: pa.DataType, target: pa.DataType):
    if t == target:
        return expr
    if pa.types.is_date(t):
        naive = expr.cast(_pl_dtype(pa.timestamp(target.unit)))
        return naive.dt.replace_time_zone(target.tz) if target.tz else naive
    if t.tz is None and target.tz is not None:
        return expr.cast(_pl_dtype(pa.timestamp(target.unit))).dt.replace_time_zone(target.tz)
    return expr.cast(_pl_dtype(target))


def _pl_cast(node: Node, target: pa.DataType, safe: bool):
    import polars as pl

    src = _base(node.type)
    expr = _pl(node)
    dtype = _pl_dtype(target)
    strict = not safe
    if _is_int(target) and pa.types.is_floating(src):
        expr = expr.round(0, mode="half_to_even")  # DuckDB: a DOUBLE rounds to even (nearbyint)
    elif _is_int(target) and pa.types.is_decimal(src):
        expr = expr.cast(pl.Float64).round(0, mode="half_away_from_zero") if src.precision <= 15 else expr
    elif _is_int(target) and _is_string(src):
        expr = expr.str.strip_chars(" ").cast(pl.Float64, strict=strict).round(0, mode="half_away_from_zero")
    elif pa.types.is_date(target) and _is_string(src):
        return expr.str.strip_chars(" ").str.slice(0, 10).str.to_date("%Y-%m-%d", strict=strict)
    elif pa.types.is_timestamp(target) and _is_string(src):
        parsed = expr.str.strip_chars(" ").str.to_datetime(time_unit=target.unit, strict=strict)
        return parsed.dt.replace_time_zone(target.tz) if target.tz else parsed
    elif pa.types.is_date(target) and pa.types.is_timestamp(src):
        return expr.dt.date()
    elif pa.types.is_timestamp(target) and (pa.types.is_date(src) or pa.types.is_timestamp(src)):
        return _pl_to_temporal(expr, src, target)
    elif pa.types.is_boolean(target) and _is_string(src):
        low = expr.str.strip_chars(" ").str.to_lowercase()
        true = low.is_in(["true", "t", "1", "yes", "y"])
        false = low.is_in(["false", "f", "0", "no", "n"])
        out = pl.when(true).then(True).when(false).then(False).otherwise(None)
        if strict:
            out = pl.when(expr.is_null() | true | false).then(out).otherwise(pl.lit("x").cast(pl.Boolean))
        return out.cast(pl.Boolean)
    elif _is_string(target) and pa.types.is_boolean(src):
        return pl.when(expr).then(pl.lit("true")).otherwise(pl.when(expr.is_null()).then(None).otherwise(pl.lit("false")))
    elif _is_string(target) and pa.types.is_floating(src):
        return expr.cast(pl.String)
    return expr.cast(dtype, strict=strict)


def _pl_substring(node: Node):
    """SQL's 1-based substring (DuckDB): the window starts at ``start - 1`` (0-based), or
    ``length + start`` for a negative start, and is cut to the string."""
    import polars as pl

    s = _pl(node.args[0])
    start = _pl(node.args[1]).cast(pl.Int64)
    n = s.str.len_chars().cast(pl.Int64)
    begin = pl.when(start > 0).then(start - 1).when(start < 0).then(n + start).otherwise(-1)
    first = pl.max_horizontal(begin, pl.lit(0))
    if len(node.args) == 2:
        return s.str.slice(first)
    end = pl.min_horizontal(pl.max_horizontal(begin + _pl(node.args[2]).cast(pl.Int64), pl.lit(0)), n)
    return s.str.slice(first, pl.max_horizontal(end - first, pl.lit(0)))


def _pl_extract(node: Node):
    import polars as pl

    part = node.extra
    x = _pl(node.args[0])
    dt = x.dt
    out = {
        "YEAR": dt.year, "MONTH": dt.month, "DAY": dt.day, "HOUR": dt.hour, "MINUTE": dt.minute,
        "SECOND": dt.second, "QUARTER": dt.quarter, "DOY": dt.ordinal_day, "WEEK": dt.week,
    }.get(part)  # fmt: skip
    if out is not None:
        return out().cast(pl.Int64)
    if part == "DOW":  # Sunday 0 .. Saturday 6
        return (dt.weekday() % 7).cast(pl.Int64)
    return dt.epoch("us").cast(pl.Float64) / 1e6


def _like_regex(pattern: str, escape: str | None) -> str:
    out = ["^"]
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    out.append("$")
    return "".join(out)


# ----------------------------------------------------------------------------------------
# the public surface
# ----------------------------------------------------------------------------------------


class Residual:
    """The part of a WHERE clause evaluated on the rows read (Polars expressions, SQL's
    meaning): :meth:`mask` of a batch holding :attr:`columns`."""

    def __init__(self, nodes: list[Node], text: str):
        self.nodes = nodes
        self.text = text
        self.columns = sorted({c for n in nodes for c in _columns(n)})
        self._expr = None

    def expression(self):
        """The Polars expression (built on first use)."""
        if self._expr is None:
            try:
                import polars  # noqa: F401
            except ImportError:
                raise WhereError(f"evaluating {self.text!r} needs Polars (pip install polars)") from None
            out = None
            for n in self.nodes:
                e = _pl_bool(n)
                out = e if out is None else out & e
            self._expr = out
        return self._expr

    def mask(self, batch: pa.RecordBatch | pa.Table) -> pa.BooleanArray:
        """TRUE where the residual is TRUE (NULL and FALSE are not selected)."""
        import polars as pl

        if not batch.num_rows:
            return pa.array([], pa.bool_())
        frame = pl.from_arrow(batch.select(self.columns)) if self.columns else pl.DataFrame({"_": pl.zeros(batch.num_rows, eager=True)})
        if not isinstance(frame, pl.DataFrame):
            frame = frame.to_frame()
        try:
            result = frame.select(self.expression().alias("_keep")).to_series()
        except pl.exceptions.PolarsError as e:
            raise WhereError(f"{self.text}: {str(e).splitlines()[0]}") from None
        if result.len() != batch.num_rows:  # a constant: one value for every row
            result = pl.repeat(result[0], batch.num_rows, eager=True, dtype=pl.Boolean)
        return pc.fill_null(result.to_arrow().cast(pa.bool_()), False)

    def __repr__(self) -> str:
        return f"Residual({self.text!r})"


@dataclass
class Where:
    """A WHERE clause split: ``pushdown`` (a pc.Expression or None: every row) prunes and is
    read; ``residual`` (or None) is then applied to the rows read."""

    pushdown: pc.Expression | None
    residual: Residual | None
    text: str


def _columns(node: Node) -> set[str]:
    if isinstance(node, Col):
        return {node.name}
    if isinstance(node, Call):
        return set().union(*(_columns(a) for a in node.args)) if node.args else set()
    return set()


def where_error(interface: str, message: str, text: str, pos: int = -1) -> WhereError:
    """An error naming ``interface`` (``--where``, ``filter=``, ``where``) with a caret under
    position ``pos`` of ``text`` (its line) when known."""
    head = f"{interface}: {message}"
    if pos < 0 or not text:
        return WhereError(head)
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    return WhereError(f"{head}\n  {line}\n  {' ' * (pos - line_start)}^")


def compile_where(
    text: str, schema: pa.Schema, *, interface: str = "WHERE", pushdown: bool = True, time_zone: str | None = None
) -> Where:
    """Parse, bind and split a SQL ``WHERE`` clause (see the module docstring).

    Raises :class:`WhereError` for text that is not valid SQL for ``schema``: a syntax
    error, an unknown column or function, a type error (the message names ``interface``,
    says what to write, and shows a caret under the offending token).
    ``pushdown=False`` puts every conjunct in the residual (tests check both evaluators).
    ``time_zone``: the session's zone, as Spark's and DuckDB's sessions have one: a naive
    time literal on a column with a zone names that wall time there, and dates, hours, ...
    of zoned values are taken there (None: the column's own zone).
    """
    if not isinstance(text, str) or not text.strip():
        raise WhereError(f"{interface}: the condition is empty; write one, e.g. \"status = 'paid'\"")
    if pushdown:
        simple = _simple_where(text, schema)
        if simple is not None:
            return Where(simple, None, text)
    from sqlglot.errors import ParseError, TokenError

    lifted, lists, shifts = _lift_long_lists(text)
    binder = _Binder(text, schema, interface, lists, shifts, time_zone)
    try:
        trees = _dialect().parse(lifted)
    except ParseError as e:
        info = e.errors[0] if e.errors else {}
        start = info.get("start_context", "")
        pos = len(start) if start or info.get("highlight") else -1
        what = re.sub(r" for <class '[^']*'>", "", str(info.get("description") or "syntax error"))
        what = what.replace("Required keyword: 'expression' missing", "a value or column is missing").replace("Invalid expression / Unexpected token", "unexpected token")
        highlight = info.get("highlight") or ""
        raise binder.error(f"syntax error at {highlight!r}: {what}" if highlight else f"syntax error: {what}", pos) from None
    except TokenError as e:
        quote = _unclosed_quote(lifted)
        if quote is not None:
            raise binder.error(f"the quote {lifted[quote]} is never closed", quote) from None
        raise binder.error(f"cannot read the text: {e}") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise binder.error("one condition expected (no ';')")
    from sqlglot import exp

    tree = trees[0]
    if isinstance(tree, (exp.Select, exp.Query, exp.Command, exp.DDL, exp.DML)) if hasattr(exp, "DDL") else isinstance(tree, (exp.Select, exp.Query)):
        raise binder.error("a filter is one condition, not a statement: write only what follows WHERE", 0)
    parts: list = []
    _flatten_sql(tree, parts)
    pushed, residual, texts = [], [], []
    for part in parts:
        node = binder.condition(part)
        conjuncts: list[Node] = []
        _flatten(node, conjuncts)
        for c in conjuncts:
            try:
                if pushdown:
                    pushed.append(_arrow(c, False))
                    continue
            except (_NoArrow, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                pass
            residual.append(c)
            if not texts or texts[-1] is not part:
                texts.append(part)
    expr = None
    for p in pushed:
        expr = p if expr is None else expr & p
    residual_text = " AND ".join(_sql_text(t, lifted, lists) for t in texts)
    rest = Residual(residual, residual_text) if residual else None
    return Where(expr, rest, text)


# The commonest clauses, read without sqlglot (whose import costs ~0.25 s, most of a CLI
# command's start): comparisons of an integer or string column, named exactly, with a plain
# literal of its type, joined by AND. The Expression is the one the full front end makes for
# the same text (tests/test_sql.py compares them); anything else goes to sqlglot.
_SIMPLE_PART = re.compile(
    r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|<>|!=|<=|>=|<|>)\s*(-?[0-9]{1,19}|'[^'\\]*')\s*"
)
_SIMPLE_AND = re.compile(r"(?i)\s+AND\s+")
_SIMPLE_OPS = {"=": "equal", "<>": "not_equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_SQL_WORDS = {"true", "false", "null", "not", "and", "or", "is", "in", "like", "between", "current_date"}


def _simple_where(text: str, schema: pa.Schema) -> pc.Expression | None:
    """``text`` as its pushdown Expression when it is only simple comparisons (see above)."""
    if len(text) > 2000 or "--" in text or "/*" in text:
        return None
    expr = None
    for part in _SIMPLE_AND.split(text.strip()):
        m = _SIMPLE_PART.fullmatch(part)
        if m is None:
            return None
        name, op, literal = m.groups()
        if name.lower() in _SQL_WORDS or schema.get_field_index(name) < 0:
            return None
        t = schema.field(name).type
        if literal.startswith("'"):
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                return None
            value = pa.scalar(literal[1:-1], t)
        else:
            if not pa.types.is_integer(t):
                return None
            number = int(literal)
            info = np.iinfo(t.to_pandas_dtype())
            if not info.min <= number <= info.max:
                return None
            value = pa.scalar(number, t)
        part_expr = pc.Expression._call(_SIMPLE_OPS[op], [pc.field(name), pc.scalar(value)])
        expr = part_expr if expr is None else expr & part_expr
    return expr


def _unclosed_quote(text: str) -> int | None:
    """Where a quote that is never closed opens, if one does."""
    pos = 0
    while pos < len(text):
        m = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|['\"`]", re.DOTALL).search(text, pos)
        if m is None:
            return None
        if len(m.group(0)) == 1:
            return m.start()
        pos = m.end()
    return None


def _flatten_sql(e, out: list) -> None:
    """The conjuncts of a sqlglot tree's top-level AND (through parentheses)."""
    from sqlglot import exp

    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.And):
        _flatten_sql(e.this, out)
        _flatten_sql(e.expression, out)
    else:
        out.append(e)


def _sql_text(e, lifted: str, lists) -> str:
    """A conjunct's text for messages and explain (the user's own spelling where known)."""
    text = re.sub(r"'__arrowidx_in_list_\d+__'", "...", e.sql(dialect=_dialect()))
    return text if len(text) <= 200 else text[:197] + "..."


def _flatten(node: Node, out: list[Node]) -> None:
    if isinstance(node, Call) and node.op == "and":
        for a in node.args:
            _flatten(a, out)
    else:
        out.append(node)


def parse_where(text: str, schema: pa.Schema, *, interface: str = "WHERE") -> pc.Expression:
    """The ``pc.Expression`` selecting exactly the rows SQL selects for ``WHERE text``.

    For clauses with a part pyarrow cannot express exactly (a function, arithmetic, ...),
    raises :class:`WhereError`: pass the SQL text itself as ``filter=`` instead (arrowidx then
    evaluates that part on the rows read, see :func:`compile_where`).
    """
    where = compile_where(text, schema, interface=interface)
    if where.residual is not None:
        raise WhereError(
            f"{interface}: {text!r} has no pyarrow Expression with SQL's meaning (it uses functions, arithmetic"
            " or casts of columns); pass the text itself as filter=\"...\", which evaluates that part on the rows read"
        )
    return where.pushdown if where.pushdown is not None else pc.scalar(True)
