"""DuckDB's overloads for the operators and functions a filter may use, and its rule for
choosing one (``FunctionBinder``: the overload whose implicit casts cost least; a tie is an
error). The signatures are DuckDB 2.0's (``SELECT * FROM duckdb_functions()``), including
the ones arrowidx does not evaluate (BIGNUM, TIME WITH TIME ZONE): they take part in the
choice, so a tie or a cheaper overload is found exactly where DuckDB finds it.
"""

from __future__ import annotations

from .tree import Constant, Node
from .types import (
    DECIMAL,
    NUMERIC,
    STRING_LITERAL,
    SqlType,
    implicit_cast_cost,
    integer_literal,
    type_name,
)

# DuckDB's LogicalType::Numeric() order
NUMERIC_ORDER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL",
                 "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")  # fmt: skip
ANY = SqlType("ANY")
_DECIMAL_PARAM = SqlType("DECIMAL")  # a DECIMAL parameter without width (resolved by the bind rule)


def _t(name: str) -> SqlType:
    name = name.strip()
    if name == "DECIMAL":
        return _DECIMAL_PARAM
    if name == "ANY":
        return ANY
    return SqlType({"TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ", "TIME WITH TIME ZONE": "TIMETZ"}.get(name, name))


def _sigs(spec: str) -> list[tuple[tuple[SqlType, ...], SqlType]]:
    out = []
    for item in spec.split(";"):
        item = item.strip()
        if not item:
            continue
        params, ret = item.split("->")
        out.append((tuple(_t(p) for p in params.split(",") if p.strip()), _t(ret)))
    return out


def _numeric(arity: int, skip=()) -> list[tuple[tuple[SqlType, ...], SqlType]]:
    return [((_t(n),) * arity, _t(n)) for n in NUMERIC_ORDER if n not in skip]


_DATE_PARTS = "DATE->BIGINT; INTERVAL->BIGINT; TIMESTAMP->BIGINT; TIMESTAMP WITH TIME ZONE->BIGINT; TIMESTAMPTZ_NS->BIGINT"
_TIME_PARTS = _DATE_PARTS + "; TIME->BIGINT; TIME_NS->BIGINT; TIMESTAMP_NS->BIGINT; TIMETZ->BIGINT"

OVERLOADS: dict[str, list[tuple[tuple[SqlType, ...], SqlType]]] = {
    "+": _numeric(2) + _sigs(
        "DATE,INTEGER->DATE; INTEGER,DATE->DATE; INTERVAL,INTERVAL->INTERVAL; DATE,INTERVAL->TIMESTAMP; INTERVAL,DATE->TIMESTAMP;"
        "TIME,INTERVAL->TIME; INTERVAL,TIME->TIME; TIMESTAMP_S,INTERVAL->TIMESTAMP; INTERVAL,TIMESTAMP_S->TIMESTAMP;"
        "TIMESTAMP_MS,INTERVAL->TIMESTAMP; INTERVAL,TIMESTAMP_MS->TIMESTAMP; TIMESTAMP,INTERVAL->TIMESTAMP; INTERVAL,TIMESTAMP->TIMESTAMP;"
        "TIMESTAMP_NS,INTERVAL->TIMESTAMP_NS; INTERVAL,TIMESTAMP_NS->TIMESTAMP_NS; TIMETZ,INTERVAL->TIMETZ; INTERVAL,TIMETZ->TIMETZ;"
        "TIME,DATE->TIMESTAMP; DATE,TIME->TIMESTAMP; TIMETZ,DATE->TIMESTAMPTZ; DATE,TIMETZ->TIMESTAMPTZ; BIGNUM,BIGNUM->BIGNUM;"
        "TIMESTAMP WITH TIME ZONE,INTERVAL->TIMESTAMP WITH TIME ZONE; INTERVAL,TIMESTAMP WITH TIME ZONE->TIMESTAMP WITH TIME ZONE;"
        "TIMESTAMPTZ_NS,INTERVAL->TIMESTAMPTZ_NS; INTERVAL,TIMESTAMPTZ_NS->TIMESTAMPTZ_NS"
    ),
    "-": _numeric(2) + _sigs(
        "BIGNUM,BIGNUM->BIGNUM; DATE,DATE->BIGINT; DATE,INTEGER->DATE; TIMESTAMP,TIMESTAMP->INTERVAL; INTERVAL,INTERVAL->INTERVAL;"
        "DATE,INTERVAL->TIMESTAMP; TIME,INTERVAL->TIME; TIMESTAMP,INTERVAL->TIMESTAMP; TIMESTAMP_S,INTERVAL->TIMESTAMP;"
        "TIMESTAMP_MS,INTERVAL->TIMESTAMP; TIMESTAMP_NS,INTERVAL->TIMESTAMP_NS; TIMETZ,INTERVAL->TIMETZ;"
        "TIMESTAMP WITH TIME ZONE,INTERVAL->TIMESTAMP WITH TIME ZONE; TIMESTAMPTZ_NS,INTERVAL->TIMESTAMPTZ_NS;"
        "TIMESTAMP WITH TIME ZONE,TIMESTAMP WITH TIME ZONE->INTERVAL"
    ),
    "neg": _numeric(1) + _sigs("BIGNUM->BIGNUM; INTERVAL->INTERVAL"),
    "*": _numeric(2) + _sigs("INTERVAL,DOUBLE->INTERVAL; DOUBLE,INTERVAL->INTERVAL; BIGINT,INTERVAL->INTERVAL; INTERVAL,BIGINT->INTERVAL"),
    "/": _sigs("FLOAT,FLOAT->FLOAT; DOUBLE,DOUBLE->DOUBLE; INTERVAL,DOUBLE->INTERVAL"),
    "//": _numeric(2, skip=("DECIMAL",)),
    "%": _numeric(2),
    "abs": _numeric(1),
    "round": [sig for n in NUMERIC_ORDER[:8] for sig in (((_t(n),), _t(n)), ((_t(n), _t("INTEGER")), _t(n)))],
    "floor": _sigs("FLOAT->FLOAT; DOUBLE->DOUBLE; DECIMAL->DECIMAL"),
    "ceil": _sigs("FLOAT->FLOAT; DOUBLE->DOUBLE; DECIMAL->DECIMAL"),
    "sign": _sigs("TINYINT->TINYINT; SMALLINT->TINYINT; INTEGER->TINYINT; BIGINT->TINYINT; HUGEINT->TINYINT; FLOAT->TINYINT;"
                  "DOUBLE->TINYINT; UTINYINT->TINYINT; USMALLINT->TINYINT; UINTEGER->TINYINT; UBIGINT->TINYINT; UHUGEINT->TINYINT"),
    "isnan": _sigs("FLOAT->BOOLEAN; DOUBLE->BOOLEAN"),
    "isinf": _sigs("DATE->BOOLEAN; DOUBLE->BOOLEAN; FLOAT->BOOLEAN; TIMESTAMP WITH TIME ZONE->BOOLEAN; TIMESTAMP->BOOLEAN"),
    "isfinite": _sigs("DATE->BOOLEAN; DOUBLE->BOOLEAN; FLOAT->BOOLEAN; TIMESTAMP WITH TIME ZONE->BOOLEAN; TIMESTAMP->BOOLEAN"),
    "lower": _sigs("VARCHAR->VARCHAR"),
    "upper": _sigs("VARCHAR->VARCHAR"),
    "length": _sigs("VARCHAR->BIGINT; BIT->BIGINT"),
    "substring": _sigs("VARCHAR,BIGINT->VARCHAR; VARCHAR,BIGINT,BIGINT->VARCHAR"),
    "left": _sigs("VARCHAR,BIGINT->VARCHAR"),
    "right": _sigs("VARCHAR,BIGINT->VARCHAR"),
    "trim": _sigs("VARCHAR->VARCHAR; VARCHAR,VARCHAR->VARCHAR"),
    "ltrim": _sigs("VARCHAR->VARCHAR; VARCHAR,VARCHAR->VARCHAR"),
    "rtrim": _sigs("VARCHAR->VARCHAR; VARCHAR,VARCHAR->VARCHAR"),
    "replace": _sigs("VARCHAR,VARCHAR,VARCHAR->VARCHAR"),
    "reverse": _sigs("VARCHAR->VARCHAR"),
    "starts_with": _sigs("VARCHAR,VARCHAR->BOOLEAN"),
    "ends_with": _sigs("VARCHAR,VARCHAR->BOOLEAN"),
    "contains": _sigs("VARCHAR,VARCHAR->BOOLEAN"),
    "strpos": _sigs("VARCHAR,VARCHAR->BIGINT"),
    "regexp_matches": _sigs("VARCHAR,VARCHAR->BOOLEAN; VARCHAR,VARCHAR,VARCHAR->BOOLEAN"),
    "like": _sigs("VARCHAR,VARCHAR->BOOLEAN"),
    **{part: _sigs(_DATE_PARTS) for part in ("year", "month", "day", "quarter", "dayofweek", "dayofyear", "week", "isodow")},
    **{part: _sigs(_TIME_PARTS) for part in ("hour", "minute", "second", "millisecond", "microsecond")},
    "epoch": _sigs(
        "TIME->DOUBLE; TIMESTAMPTZ_NS->DOUBLE; TIMESTAMP WITH TIME ZONE->DOUBLE; TIME_NS->DOUBLE; TIMETZ->DOUBLE;"
        "TIMESTAMP_NS->DOUBLE; TIMESTAMP->DOUBLE; DATE->DOUBLE; INTERVAL->DOUBLE"
    ),
    "date_part": _sigs(
        "VARCHAR,TIMETZ->DOUBLE; VARCHAR,TIMESTAMP_NS->DOUBLE; VARCHAR,TIMESTAMP->DOUBLE; VARCHAR,TIME->DOUBLE; VARCHAR,INTERVAL->DOUBLE;"
        "VARCHAR,DATE->DOUBLE; VARCHAR,TIMESTAMP WITH TIME ZONE->DOUBLE; VARCHAR,TIME_NS->DOUBLE; VARCHAR,TIMESTAMPTZ_NS->DOUBLE"
    ),
    "date_trunc": _sigs(
        "VARCHAR,INTERVAL->INTERVAL; VARCHAR,TIMESTAMP WITH TIME ZONE->TIMESTAMP WITH TIME ZONE; VARCHAR,TIMESTAMP->TIMESTAMP;"
        "VARCHAR,TIMESTAMPTZ_NS->TIMESTAMP WITH TIME ZONE; VARCHAR,DATE->TIMESTAMP"
    ),
}

ALIASES = {
    "lcase": "lower", "ucase": "upper", "len": "length", "char_length": "length", "character_length": "length",
    "substr": "substring", "prefix": "starts_with", "suffix": "ends_with", "instr": "strpos", "position": "strpos",
    "ceiling": "ceil", "datetrunc": "date_trunc", "datepart": "date_part", "dayofmonth": "day", "weekofyear": "week",
    "dow": "dayofweek", "doy": "dayofyear", "mod": "%", "ifnull": "coalesce", "nvl": "coalesce", "iif": "if",
}  # fmt: skip


class NoMatch(Exception):
    """No overload takes these arguments (``ambiguous``: several tie)."""

    def __init__(self, ambiguous: bool = False):
        self.ambiguous = ambiguous


def cast_cost(frm: SqlType, to: SqlType) -> int:
    """The cost of passing a ``frm`` argument to a ``to`` parameter (-1: impossible)."""
    if to.id == "ANY":
        return 0
    if to is _DECIMAL_PARAM or (to.id == "DECIMAL" and to.width == 0):
        if frm.id == "STRING_LITERAL":
            return -1  # DuckDB cannot cast a string literal to a DECIMAL of unknown width
        if frm.id == "DECIMAL":
            return 0
        return implicit_cast_cost(frm, DECIMAL(18, 3))
    return implicit_cast_cost(frm, to)


def choose(name: str, args: list[SqlType]) -> tuple[tuple[SqlType, ...], SqlType]:
    """The overload of ``name`` DuckDB binds for arguments of types ``args`` (their binding
    types: INTEGER_LITERAL / STRING_LITERAL for literals)."""
    best, best_cost, ties = None, None, 0
    for params, ret in OVERLOADS[name]:
        if len(params) != len(args):
            continue
        total = 0
        for a, p in zip(args, params):
            c = cast_cost(a, p)
            if c < 0:
                break
            total += c
        else:
            if best_cost is None or total < best_cost:
                best, best_cost, ties = (params, ret), total, 0
            elif total == best_cost:
                ties += 1
    if best is None:
        raise NoMatch()
    if ties:
        raise NoMatch(ambiguous=True)
    return best


def signature(name: str, args: list[SqlType]) -> str:
    return f"{name}({', '.join(type_name(a) for a in args)})"


def is_numeric_name(name: str) -> bool:
    return name in NUMERIC


# The functions a filter may call, as sqlglot names them, and the type DuckDB binds an operand with
PART_FUNCTIONS = {"Year": "year", "Month": "month", "Day": "day", "Hour": "hour", "Minute": "minute", "Second": "second",
                   "Quarter": "quarter", "DayOfWeek": "dayofweek", "DayOfYear": "dayofyear", "Week": "week", "WeekOfYear": "week",
                   "TimeToUnix": "epoch", "DayOfMonth": "day", "DayOfWeekIso": "isodow"}  # fmt: skip
STRING_FUNCTIONS = {"Lower": "lower", "Upper": "upper", "Length": "length", "Reverse": "reverse", "StartsWith": "starts_with",
                     "EndsWith": "ends_with", "Contains": "contains", "Left": "left", "Right": "right"}  # fmt: skip
SUPPORTED = (
    "lower, upper, length, substring, left, right, trim, ltrim, rtrim, concat, ||, replace, reverse, starts_with, "
    "ends_with, contains, strpos, regexp_matches, abs, round, floor, ceil, sign, isnan, isinf, isfinite, year, month, "
    "day, hour, minute, second, quarter, dayofweek, dayofyear, week, epoch, extract, date_part, date_trunc, coalesce, "
    "ifnull, nullif, if, CASE, CAST, TRY_CAST, current_date, now"
)


def btype(node: Node) -> SqlType:
    """The type DuckDB binds an operand with (ExpressionBinder::GetExpressionReturnType): a
    literal integer is INTEGER_LITERAL, a literal string STRING_LITERAL."""
    if isinstance(node, Constant) and node.literal:
        if node.type.id == "VARCHAR":  # (a NULL too: DuckDB's bound constant)
            return STRING_LITERAL
        if node.type.integral and node.value is not None:
            return integer_literal(node.value)
    return node.type
