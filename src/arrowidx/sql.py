"""SQL ``WHERE`` text -> ``pyarrow.compute.Expression``, with SQL's meaning, exactly.

The CLI's ``--where`` goes through :func:`parse_where`. The result is an ordinary
``pc.Expression`` (the one contract of the Python API): it selects exactly the rows a SQL
engine (Spark, PostgreSQL, DuckDB) selects for the same text, or parsing fails with a
:class:`WhereError` that says what to write instead.

Supported: ``=  !=  <>  <  <=  >  >=`` between a column and a literal (or two non-float
columns), ``AND``/``OR``/``NOT``, parentheses, ``[NOT] IN (...)``, ``IS [NOT] NULL``,
``[NOT] BETWEEN a AND b``, ``[NOT] LIKE 'pattern'`` and bare boolean columns.

Where SQL and Arrow differ, the translation spells out the SQL meaning:

* NaN is the largest floating-point value and equals itself (Spark, PostgreSQL):
  ``amount > 300`` becomes ``(amount > 300) | is_nan(amount)``; ``amount = 'NaN'``
  becomes ``is_nan(amount)``.
* ``NOT`` is pushed down to the comparisons (``NOT (x > 1)`` -> ``x <= 1``), so a NULL is
  never selected by a negation (in SQL ``NOT NULL`` is NULL; Arrow's ``is_in`` is FALSE for
  NULL, so ``~isin`` would select NULL rows): ``x NOT IN (1, 2)`` becomes
  ``~isin(x, [1, 2]) & is_valid(x)``.
* ``x NOT IN (1, NULL)`` and ``x = NULL`` are never TRUE in SQL: refused, with the
  ``IS NULL`` form to write instead.

Literals are coerced to the column's type as SQL engines do with untyped literals:
``ts > '2024-06-01'`` on a timestamp or date column, ``qty = '5'`` on an integer column
(an unparseable string is an error), ``amount = 'NaN'``. A number compared with a string,
date or timestamp column is an error (``status = 5``: write ``status = '5'``). A naive
timestamp literal on a column with a time zone is read in that time zone.
"""

from __future__ import annotations

import difflib
import math
import re
from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import ArrowIdxError

__all__ = ["WhereError", "parse_where"]


class WhereError(ArrowIdxError, ValueError):
    """SQL ``WHERE`` text arrowidx cannot translate exactly; the message says what to write."""


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
    | (?P<str>'(?:[^']|'')*')
    | (?P<qid>"(?:[^"]|"")*"|`[^`]*`)
    | (?P<id>[A-Za-z_][A-Za-z_0-9$.]*)
    | (?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,|-|\+)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE", "SELECT", "ILIKE"}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_HOW = "supported: comparisons, AND/OR/NOT, IN, IS [NOT] NULL, BETWEEN, LIKE, parentheses"


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].strip()
            if rest[:1] in ("'", '"', "`"):
                raise WhereError(f"cannot parse --where at {rest[:20]!r}: the quote {rest[:1]} is never closed")
            raise WhereError(f"cannot parse --where at {rest[:20]!r}: unexpected character {rest[:1]!r} ({_HOW})")
        kind = m.lastgroup
        value, start = m.group(kind), m.start(kind)
        if kind == "id" and value.upper() in _KEYWORDS:
            kind, value = "kw", value.upper()
        elif kind == "op" and value == "==":
            value = "="
        elif kind == "op" and value == "<>":
            value = "!="
        out.append((kind, value, start))
        pos = m.end()
    out.append(("end", "", len(text)))
    return out


class _Parser:
    """Recursive descent over the tokens; builds a small tuple AST."""

    def __init__(self, text: str, schema: pa.Schema):
        self.text = text
        self.schema = schema
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, offset: int = 0) -> tuple[str, str, int]:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def take(self) -> tuple[str, str, int]:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, kind: str, value: str | None = None) -> bool:
        k, v, _ = self.peek()
        if k == kind and (value is None or v == value):
            self.i += 1
            return True
        return False

    def fail(self, what: str) -> WhereError:
        kind, value, pos = self.peek()
        where = "the end" if kind == "end" else repr(self.text[pos : pos + 20])
        return WhereError(f"cannot parse --where {self.text!r}: expected {what} at {where} ({_HOW})")

    def expect(self, kind: str, value: str, what: str) -> None:
        if not self.accept(kind, value):
            raise self.fail(what)

    def parse(self):
        node = self.or_()
        if self.peek()[0] != "end":
            raise self.fail("AND, OR or the end of the condition")
        return node

    def or_(self):
        parts = [self.and_()]
        while self.accept("kw", "OR"):
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else ("or", parts)

    def and_(self):
        parts = [self.not_()]
        while self.accept("kw", "AND"):
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else ("and", parts)

    def not_(self):
        if self.accept("kw", "NOT"):
            return ("not", self.not_())
        return self.predicate()

    def predicate(self):
        if self.peek()[:2] == ("op", "("):
            if self.peek(1)[:2] == ("kw", "SELECT"):
                raise WhereError("subqueries (SELECT ...) are not supported in --where: write the value itself")
            self.take()
            node = self.or_()
            self.expect("op", ")", "')'")
            return node
        left = self.operand()
        kind, value, _ = self.peek()
        if kind == "op" and value in _FLIP:
            self.take()
            right = self.operand()
            return self.comparison(value, left, right)
        negated = self.accept("kw", "NOT")
        if self.accept("kw", "IS"):
            if negated:
                raise self.fail("IN, BETWEEN or LIKE after NOT")
            negated = self.accept("kw", "NOT")
            self.expect("kw", "NULL", "NULL after IS [NOT]")
            return ("null", self.column_of(left, "IS NULL"), negated)
        if self.accept("kw", "IN"):
            self.expect("op", "(", "'(' after IN")
            if self.peek()[:2] == ("kw", "SELECT"):
                raise WhereError("subqueries (SELECT ...) are not supported in --where: list the values, x IN (1, 2)")
            values = [self.literal("a value in the IN list")]
            while self.accept("op", ","):
                values.append(self.literal("a value in the IN list"))
            self.expect("op", ")", "')' closing the IN list")
            return ("in", self.column_of(left, "IN"), values, negated)
        if self.accept("kw", "BETWEEN"):
            lo = self.literal("the lower bound of BETWEEN")
            self.expect("kw", "AND", "AND in BETWEEN low AND high")
            hi = self.literal("the upper bound of BETWEEN")
            return ("between", self.column_of(left, "BETWEEN"), lo, hi, negated)
        if self.accept("kw", "LIKE"):
            pattern = self.literal("a quoted pattern after LIKE")
            return ("like", self.column_of(left, "LIKE"), pattern, negated)
        if self.peek()[:2] == ("kw", "ILIKE"):
            raise WhereError("ILIKE is not supported in --where: use LIKE (case-sensitive)")
        if negated:
            raise self.fail("IN, BETWEEN or LIKE after NOT")
        if left[0] == "col":
            return ("bool", left[1])
        if left[0] == "lit" and left[1] == "bool":
            return ("const", left[2])
        raise self.fail("a comparison")

    def operand(self):
        kind, value, _ = self.peek()
        if kind in ("id", "qid"):
            self.take()
            if self.peek()[:2] == ("op", "("):
                raise WhereError(f"functions ({value}(...)) are not supported in --where; {_HOW}")
            name = value if kind == "id" else value[1:-1].replace('""', '"')
            return ("col", self.column(name, quoted=kind == "qid"))
        if kind == "op" and value == "(" and self.peek(1)[:2] == ("kw", "SELECT"):
            raise WhereError("subqueries (SELECT ...) are not supported in --where: write the value itself")
        return ("lit", *self.literal_parts("a column name or a value"))

    def literal(self, what: str):
        if self.peek()[0] in ("id", "qid"):
            raise WhereError(f"{what} must be a literal value, not the column {self.peek()[1]}")
        if self.peek()[:2] == ("op", "(") and self.peek(1)[:2] == ("kw", "SELECT"):
            raise WhereError("subqueries (SELECT ...) are not supported in --where: write the value itself")
        return self.literal_parts(what)

    def literal_parts(self, what: str) -> tuple[str, object]:
        kind, value, _ = self.peek()
        if kind == "op" and value in ("-", "+") and self.peek(1)[0] == "num":
            self.take()
            _, number, _ = self.take()
            return ("num", ("-" if value == "-" else "") + number)
        if kind == "num":
            self.take()
            return ("num", value)
        if kind == "str":
            self.take()
            return ("str", value[1:-1].replace("''", "'"))
        if kind == "kw" and value in ("TRUE", "FALSE"):
            self.take()
            return ("bool", value == "TRUE")
        if kind == "kw" and value == "NULL":
            self.take()
            return ("null", None)
        raise self.fail(what)

    def column(self, name: str, quoted: bool) -> str:
        names = self.schema.names
        if name in names:
            return name
        if not quoted:
            folded = [n for n in names if n.lower() == name.lower()]
            if len(folded) == 1:
                return folded[0]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise WhereError(f"--where names unknown column {name!r}; {hint}(columns: {', '.join(names)})")

    @staticmethod
    def column_of(node, what: str) -> str:
        if node[0] != "col":
            raise WhereError(f"{what} needs a column on its left, got the value {node[2]!r}")
        return node[1]

    def comparison(self, op: str, left, right):
        if left[0] == "lit" and right[0] == "col":
            left, right, op = right, left, _FLIP[op]
        if left[0] == "col" and right[0] == "col":
            return ("colcmp", op, left[1], right[1])
        if left[0] != "col":
            raise WhereError(f"compare a column with a value, e.g. x {op} {left[2]!r}; got two values")
        return ("cmp", op, left[1], right[1:])


# -- translation ----------------------------------------------------------------------------


def parse_where(text: str, schema: pa.Schema) -> pc.Expression:
    """The ``pc.Expression`` selecting exactly the rows SQL selects for ``WHERE text``.

    Raises :class:`WhereError` (naming the column, type or value and what to write instead)
    for text that does not parse, names an unknown column, or has no exact translation.
    """
    if not text or not text.strip():
        raise WhereError("--where is empty; write a condition, e.g. \"status = 'paid'\"")
    tree = _Parser(text, schema).parse()
    return _translate(tree, False, schema)


def _translate(node, neg: bool, schema: pa.Schema) -> pc.Expression:
    """``node`` (negated if ``neg``) as an Expression that is TRUE exactly where SQL is TRUE.

    Negations are pushed to the leaves, so only AND/OR combine leaves, and a row is selected
    iff the leaves say TRUE: NULL versus FALSE never matters above a leaf.
    """
    tag = node[0]
    if tag == "not":
        return _translate(node[1], not neg, schema)
    if tag in ("and", "or"):
        parts = [_translate(n, neg, schema) for n in node[1]]
        conj = (tag == "and") != neg
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if conj else (out | p)
        return out
    if tag == "const":
        return pc.scalar(bool(node[1]) != neg)
    if tag == "bool":
        column = node[1]
        if not pa.types.is_boolean(_type(schema, column)):
            raise WhereError(f"{column} is a {_type(schema, column)} column, not a condition; compare it: {column} = ...")
        return pc.field(column) == pc.scalar(not neg)
    if tag == "null":
        _, column, negated = node
        return pc.field(column).is_valid() if negated != neg else pc.field(column).is_null()
    if tag == "cmp":
        _, op, column, literal = node
        return _compare(_NEGATE[op] if neg else op, column, literal, schema)
    if tag == "colcmp":
        _, op, a, b = node
        return _compare_columns(_NEGATE[op] if neg else op, a, b, schema)
    if tag == "between":
        _, column, lo, hi, negated = node
        if negated != neg:  # NOT BETWEEN: below or above
            return _compare("<", column, lo, schema) | _compare(">", column, hi, schema)
        return _compare(">=", column, lo, schema) & _compare("<=", column, hi, schema)
    if tag == "in":
        return _in(node[1], node[2], node[3] != neg, schema)
    if tag == "like":
        _, column, (kind, pattern), negated = node
        if kind != "str" or not _is_string(_type(schema, column)):
            raise WhereError(f"LIKE needs a string column and a quoted pattern: {column} LIKE 'a%'")
        match = pc.match_like(pc.field(column), pattern)
        return ~match if negated != neg else match
    raise WhereError(f"cannot translate {node!r}")  # pragma: no cover


def _type(schema: pa.Schema, column: str) -> pa.DataType:
    t = schema.field(column).type
    return t.value_type if pa.types.is_dictionary(t) else t


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t)


def _compare(op: str, column: str, literal: tuple[str, object], schema: pa.Schema) -> pc.Expression:
    """``column op literal`` (op already negated if needed) with SQL's meaning."""
    kind, value = literal
    t = _type(schema, column)
    field = pc.field(column)
    if kind == "null":
        form = "IS NULL" if op == "=" else "IS NOT NULL"
        raise WhereError(f"{column} {op} NULL is never true in SQL; write {column} {form}")
    if pa.types.is_floating(t):
        number = _float(column, t, kind, value)
        if math.isnan(number):  # SQL: NaN is the largest value and equals itself
            return {
                "=": pc.is_nan(field), "!=": ~pc.is_nan(field), "<": ~pc.is_nan(field),
                "<=": field.is_valid(), ">": pc.scalar(False), ">=": pc.is_nan(field),
            }[op]  # fmt: skip
        expr = _op(op, field, pa.scalar(number, t))
        if op in (">", ">="):  # SQL puts NaN above every number; Arrow says NaN > x is false
            expr = expr | pc.is_nan(field)
        return expr
    if pa.types.is_integer(t):
        number = _number(column, t, kind, value)
        if number != number.to_integral_value():  # x > 2.5 on integers: x >= 3, exactly
            lo, hi = math.floor(number), math.ceil(number)
            if op == "=":
                return pc.scalar(False)
            if op == "!=":
                return field.is_valid()
            op, number = {"<": ("<=", lo), "<=": ("<=", lo), ">": (">=", hi), ">=": (">=", hi)}[op]
        low, high = _int_range(t)
        if not low <= int(number) <= high:  # beyond every value of the column: decided by the side
            above = int(number) > high
            true_for_values = op == "!=" or (op in ("<", "<=") if above else op in (">", ">="))
            return field.is_valid() if true_for_values else pc.scalar(False)
        return _op(op, field, pa.scalar(int(number), t))
    return _op(op, field, _coerce(column, t, kind, value))


def _int_range(t: pa.DataType) -> tuple[int, int]:
    """The smallest and largest value of the integer type ``t``."""
    bits = t.bit_width
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(t) else (0, (1 << bits) - 1)


def _op(op: str, field: pc.Expression, scalar) -> pc.Expression:
    return {
        "=": lambda: field == scalar, "!=": lambda: field != scalar, "<": lambda: field < scalar,
        "<=": lambda: field <= scalar, ">": lambda: field > scalar, ">=": lambda: field >= scalar,
    }[op]()  # fmt: skip


def _number(column: str, t: pa.DataType, kind: str, value) -> Decimal:
    if kind in ("num", "str"):
        try:
            number = Decimal(str(value).strip())
            if number.is_finite():
                return number
        except InvalidOperation:
            pass
    raise WhereError(f"{column} is a column of type {t}; {_show(kind, value)} is not a number (write e.g. {column} = 5)")


def _float(column: str, t: pa.DataType, kind: str, value) -> float:
    if kind in ("num", "str"):
        try:
            return float(str(value).strip())
        except ValueError:
            pass
    raise WhereError(f"{column} is a column of type {t}; {_show(kind, value)} is not a number (write e.g. {column} > 1.5 or {column} = 'NaN')")


def _show(kind: str, value) -> str:
    return f"'{value}'" if kind == "str" else str(value).upper() if kind == "bool" else str(value)


_OFFSET = re.compile(r"(Z|[+-]\d\d:?\d\d)$")


def _coerce(column: str, t: pa.DataType, kind: str, value):
    """A literal as a scalar of the column's type, as SQL coerces untyped literals."""
    if _is_string(t):
        if kind != "str":
            raise WhereError(f"{column} is a string column; quote the value: {column} = '{value if kind != 'bool' else str(value).lower()}'")
        return pa.scalar(value, t)
    if pa.types.is_boolean(t):
        if kind == "bool":
            return pa.scalar(value)
        if kind == "str" and value.strip().lower() in ("true", "false"):
            return pa.scalar(value.strip().lower() == "true")
        raise WhereError(f"{column} is a boolean column; write {column} = TRUE or {column} = FALSE")
    if pa.types.is_decimal(t):
        number = _number(column, t, kind, value)
        try:
            return pa.scalar(number, t)
        except (pa.ArrowInvalid, ValueError) as e:
            raise WhereError(f"{column} is a column of type {t}; {value} does not fit it exactly ({e})") from None
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        if kind != "str":
            raise WhereError(f"{column} is a column of type {t}; write the value as a quoted date: {column} > '2024-06-01'")
        return _temporal(column, t, value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        if kind != "str":
            raise WhereError(f"{column} is a binary column; write the value quoted: {column} = 'abc'")
        return pa.scalar(value.encode(), t)
    raise WhereError(f"{column} has type {t}, which --where cannot compare; filter it in Python instead")


def _temporal(column: str, t: pa.DataType, text: str):
    """'2024-06-01' or '2024-06-01 12:00:00[.fff][+02:00]' as a date/timestamp of type ``t``."""
    raw = text.strip()
    example = "'2024-06-01'" if pa.types.is_date(t) else "'2024-06-01' or '2024-06-01 12:30:00'"
    bad = WhereError(f"{column} is a column of type {t}; '{text}' is not a valid {'date' if pa.types.is_date(t) else 'timestamp'} (write e.g. {column} > {example})")
    offset = _OFFSET.search(raw)
    naive = raw[: offset.start()].strip() if offset else raw
    try:
        if pa.types.is_date(t):
            if offset or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", naive):
                raise bad
            return pa.scalar(np.datetime64(naive, "D").astype("datetime64[D]").item(), t)
        stamp = np.datetime64(naive.replace(" ", "T"), "ns")
    except (ValueError, TypeError, OverflowError):
        raise bad from None
    if np.isnat(stamp):
        raise bad
    nanos = int(stamp.astype(np.int64))
    if offset:
        if t.tz is None:
            raise WhereError(f"{column} is a column of type {t} without a time zone; write the time without an offset: '{naive}'")
        sign = 0 if offset.group(1) == "Z" else (1 if offset.group(1)[0] == "+" else -1)
        digits = offset.group(1).replace(":", "")[1:] if sign else "0000"
        nanos -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60) * 10**9
        naive_utc = pa.array([nanos], pa.timestamp("ns"))
        localized = naive_utc.cast(pa.timestamp("ns", tz="UTC"))
    else:
        local = pa.array([nanos], pa.timestamp("ns"))
        localized = pc.assume_timezone(local, timezone=t.tz) if t.tz is not None else local
    try:
        return localized.cast(pa.timestamp(t.unit, tz=t.tz))[0]
    except pa.ArrowInvalid:
        raise WhereError(f"{column} is a column of type {t}; '{text}' is more precise than the column's unit ({t.unit})") from None


def _in(column: str, values: list[tuple[str, object]], negated: bool, schema: pa.Schema) -> pc.Expression:
    """``column [NOT] IN (values)``: TRUE as in SQL (NaN matches NaN, NULL never matches)."""
    t = _type(schema, column)
    field = pc.field(column)
    has_null = any(kind == "null" for kind, _ in values)
    present = [v for v in values if v[0] != "null"]
    if negated and has_null:
        rest = ", ".join(_show(k, v) for k, v in present)
        raise WhereError(
            f"{column} NOT IN (..., NULL) is never true in SQL (x <> NULL is NULL); drop NULL and write "
            f"{column} NOT IN ({rest}) AND {column} IS NOT NULL, or {column} IS NULL for the NULL rows"
        )
    if not present:
        return pc.scalar(False)
    if pa.types.is_floating(t):
        # SQL: -0.0 = 0.0 and NaN = NaN; pyarrow's is_in compares bit patterns (-0.0 is not
        # 0.0 there, nor one NaN payload another), so zeros go in with both signs and NaN
        # becomes is_nan.
        floats = [float(_float(column, t, k, v)) for k, v in present]
        numbers = [f for f in floats if not math.isnan(f)]
        if any(f == 0.0 for f in numbers):
            numbers += [0.0, -0.0]
        parts = [field.isin(pa.array(numbers, t))] if numbers else []
        if len(numbers) < len(floats):
            parts.append(pc.is_nan(field))
        matched = parts[0] if len(parts) == 1 else parts[0] | parts[1]
        return (~matched & field.is_valid()) if negated else matched
    if pa.types.is_integer(t):
        numbers = [_number(column, t, k, v) for k, v in present]
        scalars = [int(n) for n in numbers if n == n.to_integral_value()]
        if not scalars:
            return field.is_valid() if negated else pc.scalar(False)
        try:
            pa.array(scalars, t)
        except (pa.ArrowInvalid, OverflowError):
            ors = [_compare("=", column, ("num", str(s)), schema) for s in scalars]
            out = ors[0]
            for o in ors[1:]:
                out = out | o
            return (~out & field.is_valid()) if negated else out
    else:
        scalars = [_coerce(column, t, k, v).as_py() for k, v in present]
    value_set = pa.array(scalars, t)
    isin = field.isin(value_set)
    return (~isin & field.is_valid()) if negated else isin


def _compare_columns(op: str, a: str, b: str, schema: pa.Schema) -> pc.Expression:
    ta, tb = _type(schema, a), _type(schema, b)
    if pa.types.is_floating(ta) or pa.types.is_floating(tb):
        raise WhereError(
            f"comparing the floating-point columns {a} and {b} is not supported (SQL and Arrow order NaN differently); "
            f"filter in Python with pc.field({a!r}) {op} pc.field({b!r}) for Arrow's meaning"
        )
    numeric = lambda x: pa.types.is_integer(x) or pa.types.is_decimal(x)  # noqa: E731
    if not (ta == tb or (numeric(ta) and numeric(tb)) or (_is_string(ta) and _is_string(tb))):
        raise WhereError(f"cannot compare {a} ({ta}) with {b} ({tb}): different types")
    return _op(op, pc.field(a), pc.field(b))
