"""Binding the function calls of a filter (sqlglot's function nodes -> :meth:`Binder.call`).

Messages name a function as the user typed it (sqlglot renames ``lcase`` to ``Lower``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fold import simplify
from .functions import ALIASES, OVERLOADS, PART_FUNCTIONS, STRING_FUNCTIONS, SUPPORTED, btype
from .tree import Call, Constant, Node
from .types import BIGINT, DECIMAL, DOUBLE, VARCHAR, SqlType, type_name

_PART_WORDS = {"YEAR": "year", "MONTH": "month", "DAY": "day", "HOUR": "hour", "MINUTE": "minute", "SECOND": "second",
               "QUARTER": "quarter", "DOW": "dayofweek", "DAYOFWEEK": "dayofweek", "DOY": "dayofyear", "DAYOFYEAR": "dayofyear",
               "WEEK": "week", "WEEKS": "week", "EPOCH": "epoch", "ISODOW": "isodow", "MILLISECOND": "millisecond",
               "MILLISECONDS": "millisecond", "MICROSECOND": "microsecond", "MICROSECONDS": "microsecond", "YEARS": "year",
               "MONTHS": "month", "DAYS": "day", "HOURS": "hour", "MINUTES": "minute", "SECONDS": "second"}  # fmt: skip
_TRUNC_WORDS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond",
                "decade", "century", "millennium"}  # fmt: skip
_SPARK_CASTS = {"DOUBLE": "DOUBLE", "FLOAT": "FLOAT", "INT": "INTEGER", "BIGINT": "BIGINT", "SMALLINT": "SMALLINT",
                "TINYINT": "TINYINT", "STRING": "VARCHAR", "BOOLEAN": "BOOLEAN", "BINARY": "BLOB"}  # fmt: skip

if TYPE_CHECKING:  # (an annotation: bind imports this module when it binds a function)
    from .bind import Binder


def bind_function(b: Binder, e, pos: int) -> Node:  # noqa: C901 - one branch per sqlglot node class
    from sqlglot import exp

    name = type(e).__name__
    anonymous = str(e.this).lower() if isinstance(e, exp.Anonymous) else None
    typed = b.typed_name(e, anonymous or name.lower())
    key = ALIASES.get(anonymous, anonymous) if anonymous else None

    def args_of(*nodes) -> list[Node]:
        return [b.bind(a) for a in nodes if a is not None]

    for extra in ("binary", "truncate"):  # arguments sqlglot accepts and DuckDB's function does not
        if e.args.get(extra) is not None:
            raise b.error(f"{typed}() takes fewer arguments", pos)
    if isinstance(e, exp.Substring) and e.args.get("start") is None:
        raise b.error(f"{typed}() takes a string and a start position, e.g. {typed}(s, 2)", pos)
    if name in STRING_FUNCTIONS:
        fn = STRING_FUNCTIONS[name]
        return b.call(fn, args_of(e.this, e.args.get("expression")), e, display=typed)
    if isinstance(e, exp.Substring):
        return b.call("substring", args_of(e.this, e.args.get("start"), e.args.get("length")), e, display=typed)
    if isinstance(e, exp.Trim):
        fn = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get((e.args.get("position") or "BOTH").upper(), "trim")
        args = args_of(e.this, e.expression)
        chars = None
        if len(args) == 2:
            if not isinstance(args[1], Constant) or btype(args[1]).id not in ("VARCHAR", "STRING_LITERAL", "NULL"):
                raise b.error(f"{typed}'s characters must be a quoted literal, e.g. {typed}(s, 'x')", pos)
            if args[1].value is None:
                return Constant(None, VARCHAR, False, pos)
            chars = args[1].value
        return b.call(fn, args, e, display=typed, extra=chars, keep=1)
    if isinstance(e, exp.StrPosition):
        return b.call("strpos", args_of(e.this, e.args.get("substr")), e, display=typed)
    if isinstance(e, exp.Replace) or key == "replace":
        nodes = [e.this, e.expression, e.args.get("replacement")] if isinstance(e, exp.Replace) else list(e.expressions)
        return b.call("replace", args_of(*nodes), e, display=typed)
    if key in ("starts_with", "ends_with", "contains", "strpos", "length", "lower", "upper", "reverse", "left", "right"):
        return b.call(key, args_of(*e.expressions), e, display=typed)
    if isinstance(e, exp.Abs):
        return b.call("abs", args_of(e.this), e, display=typed)
    if isinstance(e, exp.Sign) or key == "sign":
        return b.call("sign", args_of(e.this) if not anonymous else args_of(*e.expressions), e, display=typed)
    if isinstance(e, (exp.Floor, exp.Ceil)):
        fn = "floor" if isinstance(e, exp.Floor) else "ceil"
        if e.args.get("decimals") is not None:
            raise b.error(f"{typed}() takes one argument", pos)
        return b.call(fn, args_of(e.this), e, display=typed)
    if isinstance(e, exp.Round):
        return _round(b, e, typed, pos)
    if isinstance(e, (exp.IsNan, exp.IsInf)) or key in ("isnan", "isinf", "isfinite"):
        fn = key or ("isnan" if isinstance(e, exp.IsNan) else "isinf")
        return b.call(fn, args_of(e.this) if not anonymous else args_of(*e.expressions), e, display=typed)
    if name in PART_FUNCTIONS or key in OVERLOADS and key in ("year", "month", "day", "hour", "minute", "second", "quarter",
                                                              "dayofweek", "dayofyear", "week", "isodow", "epoch"):  # fmt: skip
        fn = PART_FUNCTIONS.get(name) or key
        args = args_of(e.this) if not anonymous else args_of(*e.expressions)
        return b.call(fn, args, e, display=typed)
    if isinstance(e, exp.Extract) or key == "date_part":
        if isinstance(e, exp.Extract):
            part_word, arg_e = e.this.name.upper(), e.expression
        else:
            first = e.expressions[0] if e.expressions else None
            if not (isinstance(first, exp.Literal) and first.is_string) or len(e.expressions) != 2:
                raise b.error(f"{typed} takes a quoted part and a date, e.g. {typed}('year', d)", pos)
            part_word, arg_e = first.this.upper(), e.expressions[1]
        part = _PART_WORDS.get(part_word)
        if part is None:
            raise b.error(f"{part_word.lower()} is not a date part arrowidx evaluates ({', '.join(sorted(set(_PART_WORDS.values())))})", pos)
        arg = b.bind(arg_e)
        params, ret, _ = b.resolve("date_part", [Constant(part, VARCHAR, True, pos), arg], e, display=typed)
        result = DOUBLE if part == "epoch" else BIGINT
        return simplify(Call(part, (b.cast(arg, params[1], e),), result, None, b.position(e)))
    if isinstance(e, (exp.DateTrunc, exp.TimestampTrunc)) or key == "date_trunc":
        if anonymous:
            first = e.expressions[0] if e.expressions else None
            if not (isinstance(first, exp.Literal) and first.is_string) or len(e.expressions) != 2:
                raise b.error(f"{typed} takes a quoted part and a date, e.g. {typed}('day', ts)", pos)
            unit, arg_e = first.this, e.expressions[1]
        else:
            unit_node = e.args.get("unit")
            unit, arg_e = (unit_node.name if unit_node is not None else ""), e.this
        word = unit.lower().rstrip("s") if unit.lower() not in ("ms", "us") else unit.lower()
        word = {"millisecond": "millisecond", "microsecond": "microsecond", "centurie": "century", "millennia": "millennium"}.get(word, word)
        if word not in _TRUNC_WORDS:
            raise b.error(f"{typed} part {unit!r} is not supported ({', '.join(sorted(_TRUNC_WORDS))})", pos)
        arg = b.bind(arg_e)
        params, ret, _ = b.resolve("date_trunc", [Constant(word, VARCHAR, True, pos), arg], e, display=typed)
        return simplify(Call("date_trunc", (b.cast(arg, params[1], e),), ret, word, b.position(e)))
    if isinstance(e, exp.RegexpLike):
        return b.regexp(e, pos)
    if key in ("ifnull", "nvl", "coalesce"):
        return b.coalesce(args_of(*e.expressions), e)
    if key == "nullif" and len(e.expressions) == 2:
        from sqlglot import exp as _exp

        return b.bind(_exp.Nullif(this=e.expressions[0], expression=e.expressions[1]))
    if anonymous and anonymous.upper() in _SPARK_CASTS and len(e.expressions) == 1:  # Spark's double('NaN'), int(x), ...
        target = SqlType(_SPARK_CASTS[anonymous.upper()])
        return b.cast(b.bind(e.expressions[0]), target, e, explicit=True)
    if key in ("concat",):
        return b.concat(args_of(*e.expressions), e, skip_nulls=True)
    raise b.error(f"function {typed}() is not supported in a filter (supported: {SUPPORTED})", pos)


def _round(b: Binder, e, typed: str, pos: int) -> Node:
    arg = b.bind(e.this)
    digits_e = e.args.get("decimals")
    digits = b.bind(digits_e) if digits_e is not None else None
    params, ret, _ = b.resolve("round", [arg] + ([digits] if digits is not None else []), e, display=typed)
    value = 0
    if digits is not None:
        d = b.cast(digits, params[1], e)
        if not isinstance(d, Constant):
            raise b.error(f"{typed}'s digits must be a constant, e.g. {typed}(x, 2)", pos)
        if d.value is None:
            return Constant(None, ret, False, pos)
        value = int(d.value)
    if ret.id == "DECIMAL":
        ret = DECIMAL(ret.width, 0 if value < 0 else min(value, ret.scale))
    return simplify(Call("round", (b.cast(arg, params[0], e),), ret, value, b.position(e)))


__all__ = ["bind_function", "type_name"]
