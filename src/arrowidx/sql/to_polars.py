"""The bound tree -> a Polars expression with DuckDB's value for every row (the residual).

Errors DuckDB raises for particular values (a string that does not convert, a division by
zero, an overflow) are not raised inside Polars: each becomes a *check*, a boolean
expression TRUE on the rows that raise, masked by the rows that reach the operation the way
DuckDB reaches them (a CASE branch only on its rows, a later COALESCE argument only where the
earlier ones are NULL, the right side of AND/OR only where the left does not decide).
:class:`~arrowidx.sql.Residual` evaluates the checks with the mask and raises the first that
holds.

Where DuckDB evaluates lazily: in a filter (its *select* mode) ``a AND b`` evaluates ``b``
only where ``a`` is TRUE and ``a OR b`` only where ``a`` is not TRUE; under NOT or inside a
value both sides are evaluated (its *execute* mode).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import values as V
from .polars_casts import CastLowering, decimal_text, literal, pl_type, stamp_ints
from .polars_exprs import (  # noqa: F401
    UPPER_FIX,
    lower_text,
    round_half_away,
    round_half_even,
    true_divide,
    upper_text,
)
from .tree import Call, Column, Constant, Failure, Node, Visitor
from .types import SqlType, int_range, stamp_unit, type_name


@dataclass
class Check:
    """Rows where evaluating the filter raises: ``cond`` (already masked by the rows that
    reach it), the message (``{value}`` is replaced by the first offending ``shown`` value)."""

    cond: object
    message: str
    shown: object = None
    quote: bool = False  # show the value as a quoted string


_OVERFLOW_NAMES = {"TINYINT": "INT8", "SMALLINT": "INT16", "INTEGER": "INT32", "BIGINT": "INT64", "HUGEINT": "INT128",
                   "UTINYINT": "UINT8", "USMALLINT": "UINT16", "UINTEGER": "UINT32", "UBIGINT": "UINT64"}  # fmt: skip
_OP_WORDS = {"+": "addition", "-": "subtraction", "*": "multiplication", "//": "division", "%": "modulo", "/": "division"}


class PolarsLowering(CastLowering, Visitor):
    """``lower(node)`` -> a Polars expression; ``checks`` collects the errors to test."""

    def __init__(self, zone: str | None = None, text_of=None):
        self.zone = zone
        self.checks: list[Check] = []
        self.text_of = text_of or (lambda node: "the filter")

    # -- entry ----------------------------------------------------------------------------------
    def lower(self, node: Node, reach=None, select: bool = False):
        return self.visit(node, reach, select)

    def check(self, reach, cond, message: str, shown=None, quote: bool = False) -> None:
        cond = cond.fill_null(False)
        self.checks.append(Check(cond if reach is None else (reach & cond), message, shown, quote))

    @staticmethod
    def truthy(expr):
        return expr.fill_null(False)

    @staticmethod
    def _and(reach, cond):
        return cond if reach is None else reach & cond

    # -- leaves ---------------------------------------------------------------------------------
    def column(self, node: Column, reach, select):
        import polars as pl

        x = pl.col(node.name)
        t = node.type
        if t.id == "DECIMAL":
            return x.cast(pl.Decimal(38, t.scale)).to_physical()
        if t.id == "VARCHAR":
            return x.cast(pl.String)
        if t.id == "DATE":
            return x.cast(pl.Date)
        if t.zoned:
            return x.dt.convert_time_zone("UTC")
        if t.id == "BLOB":
            return x.cast(pl.Binary)
        return x

    def constant(self, node: Constant, reach, select):
        return literal(node.value, node.type)

    def failure(self, node: Failure, reach, select):
        import polars as pl

        self.check(reach, pl.lit(True), node.message)
        return pl.lit(None, dtype=pl_type(node.type) if node.type.id not in ("INTERVAL",) else pl.Null)

    # -- logic ------------------------------------------------------------------------------------
    def conjunction(self, node: Call, reach, select):
        import polars as pl

        left = self.lower(node.args[0], reach, select).cast(pl.Boolean)  # (a NULL operand is BOOLEAN)
        if node.op == "and":
            right_reach = self._and(reach, self.truthy(left)) if select else reach
            return left & self.lower(node.args[1], right_reach, select).cast(pl.Boolean)
        right_reach = self._and(reach, ~self.truthy(left)) if select else reach
        return left | self.lower(node.args[1], right_reach, select).cast(pl.Boolean)

    def negation(self, node: Call, reach, select):
        return ~self.lower(node.args[0], reach, False)

    def is_null(self, node: Call, reach, select):
        x = self.lower(node.args[0], reach, False)
        return x.is_null() if node.op == "is_null" else x.is_not_null()

    def comparison(self, node: Call, reach, select):
        a, b = (self.lower(x, reach, False) for x in node.args)
        return {"=": a.__eq__, "!=": a.__ne__, "<": a.__lt__, "<=": a.__le__, ">": a.__gt__, ">=": a.__ge__}[node.op](b)

    def distinct(self, node: Call, reach, select):
        a, b = (self.lower(x, reach, False) for x in node.args)
        return a.ne_missing(b) if node.op == "distinct" else a.eq_missing(b)

    def in_list(self, node: Call, reach, select):
        """``x IN (...)`` evaluated whole: every item for every row reaching it (the lists
        DuckDB's IN rewriter leaves as they are)."""
        import polars as pl

        arg = self.lower(node.args[0], reach, False)
        t = node.args[0].type
        if node.extra is None and not all(isinstance(i, Constant) for i in node.args[1:]):
            out = None
            for item in node.args[1:]:
                eq = self.lower(Call("=", (node.args[0], item), node.type, None, node.pos), reach, False)
                out = eq if out is None else (out | eq)
            return out
        if node.extra is not None:  # a long list, converted in bulk
            values, has_null = node.extra
            series = pl.Series(values).cast(pl_type(t))
        else:
            items = [self.lower(i, reach, False) for i in node.args[1:]]  # (registers their checks)
            present = [i.value for i in node.args[1:] if isinstance(i, Constant) and i.value is not None]
            has_null = any(isinstance(i, Constant) and i.value is None for i in node.args[1:])
            series = pl.select(pl.concat_list([literal(v, t) for v in present]).alias("v")).to_series().explode() if present else None
            del items
        out = arg.is_in(series.implode(), nulls_equal=False) if series is not None and series.len() else pl.lit(False)
        out = pl.when(arg.is_null()).then(None).otherwise(out)
        return (pl.when(out).then(True).otherwise(None) if has_null else out).cast(pl.Boolean)

    def function(self, node: Call, reach, select):
        import polars as pl

        from .polars_functions import lower_function

        if node.op == "like_error":  # a LIKE DuckDB cannot match: an error on each string it reaches
            x = self.lower(node.args[0], reach, False)
            self.check(reach, x.is_not_null(), node.extra)
            return pl.lit(None, dtype=pl.Boolean)
        return lower_function(self, node, reach)

    def case(self, node: Call, reach, select):
        import polars as pl

        n = node.extra
        conds, values = node.args[:n], node.args[n:]
        if not conds:
            return self.lower(values[-1], reach, False)
        remaining = reach
        parts = []
        for c, v in zip(conds, values):
            cond = self.truthy(self.lower(c, remaining, True))
            parts.append((cond, self.lower(v, self._and(remaining, cond), False)))
            remaining = self._and(remaining, ~cond)
        other = self.lower(values[-1], remaining, False)
        expr = pl.when(parts[0][0]).then(parts[0][1])
        for cond, value in parts[1:]:
            expr = expr.when(cond).then(value)
        return expr.otherwise(other).cast(pl_type(node.type)) if node.type.id != "NULL" else expr.otherwise(other)

    def coalesce(self, node: Call, reach, select):
        import polars as pl

        remaining = reach
        parts = []
        for a in node.args:
            x = self.lower(a, remaining, False)
            parts.append(x)
            remaining = self._and(remaining, x.is_null())
        return pl.coalesce(parts)

    def cast(self, node: Call, reach, select):
        safe = node.extra[0]
        (arg,) = node.args
        x = self.lower(arg, reach, False)
        if len(node.extra) > 2:
            what = node.extra[2]
        else:
            what = f"CAST({arg.name} AS {type_name(node.type)})" if isinstance(arg, Column) else ""
        return self.lower_cast(x, arg.type, node.type, safe, reach, what)

    # -- numbers ----------------------------------------------------------------------------------
    def negate_number(self, node: Call, reach, select):
        import polars as pl

        (arg,) = node.args
        x = self.lower(arg, reach, False)
        t = node.type
        if t.integral:
            lo, _ = int_range(t.id)
            bad = (x != 0) if t.id.startswith("U") else (x == lo)
            self.check(reach, bad, "overflow in negation of {value}", x)
            return pl.when(bad).then(None).otherwise(0 - x.cast(pl.Int128)).cast(pl_type(t), strict=False)
        return (0 - x) if t.id == "DECIMAL" else -x

    def arithmetic(self, node: Call, reach, select):
        import polars as pl

        a_node, b_node = node.args
        op, t = node.op, node.type
        if a_node.type.id in ("DATE",) or a_node.type.stamp or b_node.type.id == "INTERVAL" or a_node.type.id == "INTERVAL":
            from .polars_functions import temporal_arithmetic

            a = self.lower(a_node, reach, False) if a_node.type.id != "INTERVAL" else None
            b = self.lower(b_node, reach, False) if b_node.type.id != "INTERVAL" else None
            return temporal_arithmetic(self, node, a, b, reach)
        a, b = self.lower(a_node, reach, False), self.lower(b_node, reach, False)
        both = a.is_not_null() & b.is_not_null()
        words = _OP_WORDS[op]
        shown = pl.concat_str([_show(a, a_node.type), pl.lit(f" {op} "), _show(b, b_node.type)])
        if t.floating:
            if op == "%":
                if node.extra and node.extra.get("check"):  # DECIMAL operands too wide for DECIMAL
                    self.check(reach, both & (b == 0), "division by zero in {value}", shown)
                return pl.map_batches([a, b], lambda s: _fmod(s[0], s[1]), return_dtype=pl_type(t))
            if op == "//":  # DuckDB 2.0: the plain quotient, and a division by zero is an error
                self.check(reach, both & (b == 0), "division by zero in {value}", shown)
                return true_divide(a, b, pl_type(t))
            if op == "/":
                return true_divide(a, b, pl_type(t))
            return {"+": a.__add__, "-": a.__sub__, "*": a.__mul__}[op](b).cast(pl_type(t))
        if t.id == "DECIMAL":
            return self._decimal_arithmetic(node, a, b, both, reach, shown)
        # integers: exact in 128 bits, then checked against the result type
        wide_a, wide_b = a.cast(pl.Int128), b.cast(pl.Int128)
        lo, hi = int_range(t.id)
        if op in ("//", "%"):
            self.check(reach, both & (b == 0), "division by zero in {value}", shown)
            safe_b = pl.when(b == 0).then(pl.lit(1, dtype=pl.Int128)).otherwise(wide_b)
            q = _trunc_div(wide_a, safe_b)
            if op == "//":
                bad = both & (q > hi) & (b != 0)
                self.check(reach, bad, f"overflow in {words} of {{value}}", shown)
                return pl.when(bad | (b == 0)).then(None).otherwise(q).cast(pl_type(t), strict=False)
            r = wide_a - q * safe_b
            return pl.when(b == 0).then(None).otherwise(r).cast(pl_type(t), strict=False)
        exact, wrapped = _wide(op, wide_a, wide_b)  # 128-bit arithmetic wraps: ``wrapped`` says where
        if t.id == "HUGEINT":
            bad = both & wrapped
            self.check(reach, bad, f"overflow in {words} of INT128 ({{value}})", shown)
            return pl.when(bad).then(None).otherwise(exact)
        bad = both & (wrapped | (exact < lo) | (exact > hi))
        self.check(reach, bad, f"overflow in {words} of {_OVERFLOW_NAMES[t.id]} ({{value}})", shown)
        return pl.when(bad).then(None).otherwise(exact).cast(pl_type(t), strict=False)

    def _decimal_arithmetic(self, node: Call, a, b, both, reach, shown):
        import polars as pl

        op, t = node.op, node.type
        check = bool(node.extra and node.extra.get("check"))
        limit = 10**t.width
        if op in ("+", "-", "*"):
            exact, wrapped = _wide(op, a.cast(pl.Int128), b.cast(pl.Int128))
            exact = pl.when(wrapped).then(None).otherwise(exact)
        else:  # %
            self.check(reach, both & (b == 0), "division by zero in {value}", shown)
            safe_b = pl.when(b == 0).then(pl.lit(1, dtype=pl.Int128)).otherwise(b)
            return pl.when(b == 0).then(None).otherwise(a - _trunc_div(a, safe_b) * safe_b)
        if check:
            bad = both & (exact.is_null() | (exact.abs() >= pl.lit(limit, dtype=pl.Int128)))
            self.check(reach, bad, f"overflow in {_OP_WORDS[op]} of DECIMAL({t.width}) ({{value}})", shown)
            return pl.when(bad).then(None).otherwise(exact)
        return exact

    # -- strings ----------------------------------------------------------------------------------
    def like(self, node: Call, reach, select):
        (arg,) = node.args
        pattern, escape, ilike = node.extra
        x = self.lower(arg, reach, False)
        if ilike:
            x = lower_text(x)
        return like_expr(x, pattern, escape)

    def regexp(self, node: Call, reach, select):
        (arg,) = node.args
        pattern, options = node.extra
        x = self.lower(arg, reach, False)
        prefix = "(?i)" if "i" in options and "c" not in options.split("i")[-1] else ""
        return x.str.contains(prefix + pattern)


# -- helpers -----------------------------------------------------------------------------------------


def stamp_from_series(values: list[int], t: SqlType):
    import polars as pl

    ints = pl.Series(values, dtype=pl.Int64)
    if stamp_unit(t) == "s":
        ints = pl.Series([v if abs(v) >= V.STAMP_INF else v * 1000 for v in values], dtype=pl.Int64)
    return ints.cast(pl.Datetime({"s": "ms", "ms": "ms", "us": "us", "ns": "ns"}[stamp_unit(t)], "UTC" if t.zoned else None))


def _wide(op: str, a, b):
    """``a op b`` in Int128 (which wraps) and where it wrapped."""
    import polars as pl

    if op == "+":
        r = a + b
        return r, ((a >= 0) == (b >= 0)) & ((r >= 0) != (a >= 0))
    if op == "-":
        r = a - b
        return r, ((a >= 0) != (b >= 0)) & ((r >= 0) != (a >= 0))
    r = a * b
    low = -(2**127)
    safe_a = pl.when(a == 0).then(pl.lit(1, dtype=pl.Int128)).otherwise(a)
    wrapped = (a != 0) & ((r // safe_a) != b)
    wrapped = wrapped | ((a == -1) & (b == low)) | ((b == -1) & (a == low))
    return r, wrapped


def _trunc_div(a, b):
    """Integer division truncated toward zero (Polars' ``//`` floors)."""
    import polars as pl

    q = a // b
    fix = ((a % b) != 0) & ((a < 0) != (b < 0))
    return pl.when(fix).then(q + 1).otherwise(q)


def _fmod(a, b):
    import polars as pl

    x = a.to_numpy(allow_copy=True).astype(np.float64 if a.dtype == pl.Float64 else np.float32)
    y = b.to_numpy(allow_copy=True).astype(x.dtype)
    with np.errstate(all="ignore"):
        r = np.fmod(x, y)
    out = pl.Series(a.name, r)
    return out.set(a.is_null() | b.is_null(), None) if (a.null_count() or b.null_count()) else out


def _show(x, t: SqlType):
    """A value's text in error messages."""
    import polars as pl

    if t.id == "DECIMAL":
        return decimal_text(x, t.scale).fill_null("NULL")
    if t.stamp:
        return stamp_ints(x, t).cast(pl.String).fill_null("NULL")
    return x.cast(pl.String).fill_null("NULL")


def like_regex(pattern: str, escape: str | None) -> str:
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape and ch == escape:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return "(?s)^" + "".join(out) + "$"


def like_expr(x, pattern: str, escape: str | None):
    """``x LIKE pattern`` (DuckDB: no escape character unless ESCAPE; ``_`` is one character)."""
    import polars as pl

    special = set("%_" + (escape or ""))
    core = pattern.strip("%")
    if escape is None or escape not in pattern:
        if not (set(core) & special):
            lead, trail = pattern.startswith("%"), pattern.endswith("%")
            if pattern and set(pattern) == {"%"}:
                return pl.when(x.is_null()).then(None).otherwise(pl.lit(True))
            if lead and trail:
                return x.str.contains(core, literal=True)
            if lead:
                return x.str.ends_with(core)
            if trail:
                return x.str.starts_with(core)
            return x == pl.lit(pattern)
    return x.str.contains(like_regex(pattern, escape))



def run(frame, exprs):
    """``frame.select(exprs)`` (eagerly: Polars 2.1's lazy engine gives ``lit <= when(...)``
    the wrong length)."""
    return frame.select(exprs)


