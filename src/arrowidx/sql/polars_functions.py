"""DuckDB's functions as Polars expressions (the Polars lowering's ``function`` rule), and
date/time arithmetic with constant INTERVALs."""

from __future__ import annotations

from .polars_casts import (
    PL_UNIT,
    from_near,
    literal,
    near_calendar,
    pl_type,
    stamp_from_ints,
    stamp_ints,
)
from .polars_exprs import lower_text, round_half_away, true_divide, upper_text
from .tree import Call, Constant
from .types import SqlType, int_range, stamp_unit
from .values import UNIT_PER_SECOND, Interval

_PARTS_INT = {"year", "month", "day", "hour", "minute", "second", "quarter", "dayofweek", "dayofyear", "week", "isodow",
              "millisecond", "microsecond"}  # fmt: skip


def lower_function(lowering, node: Call, reach):  # noqa: C901 - one rule per function
    import polars as pl

    name, args = node.op, node.args
    if name == "constant_or_null":  # DuckDB's ConstantOrNull: the value unless the argument is NULL
        x = lowering.lower(args[0], reach, False)
        return pl.when(x.is_null()).then(None).otherwise(literal(node.extra, node.type))
    if name == "concat":
        parts = [lowering.lower(a, reach, False) for a in args]
        parts = [p if a.type.id != "NULL" else pl.lit(None, dtype=pl.String) for p, a in zip(parts, args)]
        return pl.concat_str(parts, ignore_nulls=bool(node.extra))
    xs = [lowering.lower(a, reach, False) for a in args]
    x = xs[0] if xs else None
    if name == "lower":
        return lower_text(x)
    if name == "upper":
        return upper_text(x)
    if name == "length":
        return x.str.len_chars().cast(pl.Int64)
    if name == "reverse":
        return x.str.reverse()
    if name in ("starts_with", "ends_with"):
        return x.str.starts_with(xs[1]) if name == "starts_with" else x.str.ends_with(xs[1])
    if name == "contains":
        return x.str.contains(xs[1], literal=True)
    if name == "strpos":  # 1-based character position, 0 when absent, 1 for ''
        found = x.str.contains(xs[1], literal=True)
        before = x.str.split(xs[1]).list.first().str.len_chars().cast(pl.Int64) + 1
        return pl.when(x.is_null() | xs[1].is_null()).then(None).when(xs[1] == "").then(pl.lit(1, dtype=pl.Int64)).when(found).then(before).otherwise(
            pl.when(found.is_null()).then(None).otherwise(pl.lit(0, dtype=pl.Int64))
        )
    if name == "replace":
        return pl.when(xs[1] == "").then(x).otherwise(x.str.replace_all(xs[1], xs[2], literal=True))
    if name == "substring":
        return _substring(x, xs[1], xs[2] if len(xs) > 2 else None)
    if name in ("left", "right"):
        n = xs[1].cast(pl.Int64)
        length = x.str.len_chars().cast(pl.Int64)
        count = pl.when(n >= 0).then(pl.min_horizontal(n, length)).otherwise(pl.max_horizontal(length + n, pl.lit(0)))
        return x.str.slice(0, count) if name == "left" else x.str.slice(length - count, count)
    if name in ("trim", "ltrim", "rtrim"):
        chars = node.extra if node.extra is not None else " "
        method = {"trim": x.str.strip_chars, "ltrim": x.str.strip_chars_start, "rtrim": x.str.strip_chars_end}[name]
        return method(chars)
    if name == "abs":
        return _abs(lowering, node, x, reach)
    if name == "sign":
        t = args[0].type
        return pl.when(x.is_null()).then(None).when(x > 0).then(1).when(x < 0).then(-1).otherwise(0).cast(pl.Int8)
    if name in ("floor", "ceil"):
        t = args[0].type
        if t.id == "DECIMAL":
            div = 10**t.scale
            q = x // pl.lit(div, dtype=pl.Int128)  # floor division
            if name == "ceil":
                q = pl.when(x % pl.lit(div, dtype=pl.Int128) != 0).then(q + 1).otherwise(q)
            return q * pl.lit(div, dtype=pl.Int128) if False else q
        return x.floor() if name == "floor" else x.ceil()
    if name == "round":
        return _round(node, x)
    if name in ("isnan", "isinf", "isfinite"):
        t = args[0].type
        if t.floating:
            return {"isnan": x.is_nan, "isinf": x.is_infinite, "isfinite": x.is_finite}[name]()
        return pl.when(x.is_null()).then(None).otherwise(pl.lit(name == "isfinite"))  # dates, timestamps: never infinite here
    if name in _PARTS_INT or name in ("epoch",):
        return date_part(lowering, name, args[0], x)
    if name == "date_trunc":
        return _date_trunc(lowering, node.extra, args[0], x)
    raise ValueError(f"no Polars rule for {name}")


def _substring(s, start, length):
    """DuckDB's 1-based substring: the window [start, start + length) cut to the string."""
    import polars as pl

    start = start.cast(pl.Int64)
    n = s.str.len_chars().cast(pl.Int64)
    begin = pl.when(start > 0).then(start - 1).when(start < 0).then(n + start).otherwise(-1)
    if length is None:
        return s.str.slice(pl.max_horizontal(begin, pl.lit(0)))
    length = length.cast(pl.Int64)
    end = begin + length
    lo = pl.min_horizontal(begin, end)
    hi = pl.max_horizontal(begin, end)
    lo_c = pl.min_horizontal(pl.max_horizontal(lo, pl.lit(0)), n)
    hi_c = pl.min_horizontal(pl.max_horizontal(hi, pl.lit(0)), n)
    return s.str.slice(lo_c, pl.max_horizontal(hi_c - lo_c, pl.lit(0)))


def _abs(lowering, node: Call, x, reach):
    import polars as pl

    t = node.type
    if t.integral and not t.id.startswith("U"):
        lo, _ = int_range(t.id)
        bad = x == lo
        lowering.check(reach, bad, "overflow in abs of {value}", x.cast(pl.String))
        return pl.when(bad).then(None).otherwise(x.cast(pl.Int128).abs()).cast(pl_type(t), strict=False)
    return x.abs()


def _round(node: Call, x):
    import polars as pl

    t = node.args[0].type
    digits = node.extra or 0
    if t.integral:
        if digits >= 0:
            return x
        div = 10 ** (-digits)
        wide = x.cast(pl.Int128)
        q = (wide.abs() + div // 2) // div * div
        return pl.when(wide < 0).then(0 - q).otherwise(q).cast(pl_type(node.type), strict=False)
    if t.id == "DECIMAL":
        keep = node.type.scale  # the result's scale
        drop = t.scale - max(digits, 0) if digits >= 0 else t.scale - digits
        if drop <= 0:
            return x * pl.lit(10 ** (keep - t.scale), dtype=pl.Int128) if keep > t.scale else x
        div = 10**drop
        q = (x.abs() + pl.lit(div // 2, dtype=pl.Int128)) // pl.lit(div, dtype=pl.Int128)
        q = pl.when(x < 0).then(0 - q).otherwise(q)
        if digits < 0:  # round(x, -1) keeps scale 0: 15.5 -> 20
            q = q * pl.lit(10 ** (-digits), dtype=pl.Int128)
        return q
    # FLOAT / DOUBLE: DuckDB rounds half away from zero, with std::round on x * 10^d
    if digits == 0:
        return round_half_away(x).cast(pl_type(t))
    factor = 10.0 ** abs(digits)
    if digits > 0:
        scaled = x.cast(pl.Float64) * factor
        out = true_divide(round_half_away(scaled), pl.lit(factor), pl.Float64)
        return pl.when(scaled.is_infinite()).then(x).otherwise(out).cast(pl_type(t))
    scaled = true_divide(x.cast(pl.Float64), pl.lit(factor), pl.Float64)
    return (round_half_away(scaled) * factor).cast(pl_type(t))


def _in_zone(lowering, t: SqlType, x):
    """A timestamp's wall time in the session's zone (zoned values), or itself."""
    if t.zoned:
        return x.dt.convert_time_zone(lowering.zone or t.tz or "UTC")
    return x


def date_part(lowering, part: str, arg, x):
    import polars as pl

    t = arg.type
    if part == "epoch":
        if t.id == "DATE":
            return x.cast(pl.Int32).cast(pl.Float64) * 86400.0
        micros = stamp_ints(x, t) if stamp_unit(t) == "us" else _to_micros(stamp_ints(x, t), stamp_unit(t))
        return true_divide(micros.cast(pl.Float64), pl.lit(1e6), pl.Float64)
    if t.id == "DATE":
        if part in ("hour", "minute", "second", "millisecond", "microsecond"):
            return pl.when(x.is_null()).then(None).otherwise(pl.lit(0, dtype=pl.Int64))
        d = x.dt
    else:
        d = _in_zone(lowering, t, x).dt
    out = {
        "year": d.year, "month": d.month, "day": d.day, "hour": d.hour, "minute": d.minute, "second": d.second,
        "quarter": d.quarter, "dayofyear": d.ordinal_day, "week": d.week, "isodow": d.weekday,
    }.get(part)  # fmt: skip
    if out is not None:
        return out().cast(pl.Int64)
    if part == "dayofweek":  # Sunday 0 .. Saturday 6
        return (d.weekday() % 7).cast(pl.Int64)
    if part == "millisecond":
        return (d.second().cast(pl.Int64) * 1000 + d.millisecond().cast(pl.Int64)).cast(pl.Int64)
    if part == "microsecond":
        return (d.second().cast(pl.Int64) * 1_000_000 + d.microsecond().cast(pl.Int64)).cast(pl.Int64)
    raise ValueError(part)


def _to_micros(ints, unit: str):

    if unit == "ns":
        return ints // 1000  # floored, as DuckDB's epoch of a TIMESTAMP_NS
    return ints * (1_000_000 // UNIT_PER_SECOND[unit])


_TRUNC = {"year": "1y", "quarter": "1q", "month": "1mo", "week": "1w", "day": "1d", "hour": "1h", "minute": "1m",
          "second": "1s", "millisecond": "1ms", "microsecond": "1us", "decade": "10y", "century": "100y", "millennium": "1000y"}  # fmt: skip


def _date_trunc(lowering, part: str, arg, x):
    import polars as pl

    t = arg.type
    if t.id == "DATE":
        x = x.cast(pl.Datetime("us"))
        t = SqlType("TIMESTAMP")
    local = _in_zone(lowering, t, x)
    if part in ("decade", "century", "millennium"):
        size = {"decade": 10, "century": 100, "millennium": 1000}[part]
        year = local.dt.year()
        start = {"decade": (year // size) * size, "century": ((year - 1) // size) * size + 1,
                 "millennium": ((year - 1) // size) * size + 1}[part]  # fmt: skip
        if part == "decade":
            start = (year // size) * size
        out = pl.datetime(start, 1, 1, time_unit=local.dt.time_unit() if False else "us")
        truncated = out.cast(pl.Datetime("us"))
    else:
        truncated = local.dt.truncate(_TRUNC[part])
    if t.zoned:
        zone = lowering.zone or t.tz or "UTC"
        return truncated.dt.replace_time_zone(None).dt.replace_time_zone(zone, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC")
    return truncated


def temporal_arithmetic(lowering, node: Call, a, b, reach):
    """DATE/TIMESTAMP +/- an INTEGER number of days, a constant INTERVAL, DATE - DATE."""
    import polars as pl

    op, t = node.op, node.type
    a_node, b_node = node.args
    if a_node.type.id == "INTERVAL":  # INTERVAL + x: x + INTERVAL
        a_node, b_node, a, b = b_node, a_node, b, a
    if a_node.type.id == "DATE" and b_node.type.id == "DATE":
        return (a.cast(pl.Int32).cast(pl.Int64) - b.cast(pl.Int32).cast(pl.Int64)).cast(pl.Int64)
    if t.id == "DATE":  # DATE +/- INTEGER days
        if a_node.type.id != "DATE":
            a_node, b_node, a, b = b_node, a_node, b, a
        days = a.cast(pl.Int32).cast(pl.Int64)
        n = b.cast(pl.Int64)
        out = days + n if op == "+" else days - n
        bad = out.is_not_null() & ((out > 2_147_483_646) | (out < -2_147_483_646) | (out > 2_147_483_647))
        lowering.check(reach, bad, "date out of range ({value} days)", out.cast(pl.String))
        return pl.when(bad).then(None).otherwise(out).cast(pl.Int32).cast(pl.Date)
    interval = b_node.value if isinstance(b_node, Constant) else None
    if not isinstance(interval, Interval):
        raise ValueError("INTERVAL values other than constants")
    sign = 1 if op == "+" else -1
    months, days, micros = sign * interval.months, sign * interval.days, sign * interval.micros
    src = a_node.type
    if src.id == "DATE":  # DuckDB's timestamps end at day 106751991 (294247-01-10) each way
        day_numbers = a.cast(pl.Int32).cast(pl.Int64)
        bad = day_numbers.is_not_null() & (day_numbers.abs() > 106_751_991) & (day_numbers.abs() != 2_147_483_647)
        lowering.check(reach, bad, "date and time not in timestamp range ({value})", a.cast(pl.String))
        a = pl.when(bad).then(None).otherwise(a)
    if src.id == "DATE" or src.id in ("TIMESTAMP_S", "TIMESTAMP_MS"):
        a = a.cast(pl.Datetime("us"))
        src = SqlType("TIMESTAMP")
    unit = PL_UNIT[stamp_unit(src)]
    a, cycles = near_calendar(a, unit)  # (Polars' calendar ends near the year 262,000)
    local = a.dt.convert_time_zone(lowering.zone or src.tz or "UTC") if src.zoned else a
    if months:
        local = local.dt.offset_by(f"{months}mo")
    if days:
        local = local.dt.offset_by(f"{days}d") if src.zoned else local + pl.duration(days=days)
    out = from_near(local.dt.convert_time_zone("UTC") if src.zoned else local, cycles, unit)
    if micros:
        unit = stamp_unit(t)
        out = stamp_from_ints(stamp_ints(out, t) + micros * UNIT_PER_SECOND[unit] // 1_000_000, t) if unit != "us" else out + pl.duration(microseconds=micros)
    return out

