"""DuckDB's casts as Polars expressions: vectorised for the common values, and through
:mod:`.values` once per distinct value for the rare ones (a string like ``' 1_000.5e1'``
cast to an integer, a float's shortest text). A failed cast is reported through the
lowering's checks (``strict``) or gives NULL (``TRY_CAST``).

Values are held in Polars as :func:`pl_type` says: a DECIMAL as its unscaled integer
(Int128), a TIMESTAMP_S as milliseconds, a zoned timestamp in UTC.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from . import values as V
from .types import SqlType, fits, int_range, stamp_unit, type_name

_INT_PL = {"TINYINT": "Int8", "SMALLINT": "Int16", "INTEGER": "Int32", "BIGINT": "Int64", "HUGEINT": "Int128",
           "UTINYINT": "UInt8", "USMALLINT": "UInt16", "UINTEGER": "UInt32", "UBIGINT": "UInt64"}  # fmt: skip
PL_UNIT = {"s": "ms", "ms": "ms", "us": "us", "ns": "ns"}


def pl_type(t: SqlType):
    """The Polars type values of ``t`` are held in."""
    import polars as pl

    if t.id in _INT_PL:
        return getattr(pl, _INT_PL[t.id])
    simple = {"BOOLEAN": pl.Boolean, "FLOAT": pl.Float32, "DOUBLE": pl.Float64, "DECIMAL": pl.Int128, "VARCHAR": pl.String,
              "BLOB": pl.Binary, "DATE": pl.Date, "NULL": pl.Null}  # fmt: skip
    if t.id in simple:
        return simple[t.id]
    if t.stamp:
        return pl.Datetime(PL_UNIT[stamp_unit(t)], "UTC" if t.zoned else None)
    raise ValueError(f"no Polars type for {type_name(t)}")


def stamp_ints(expr, t: SqlType):
    """A timestamp expression as Int64 counts of ``t``'s own unit."""
    import polars as pl

    ints = expr.cast(pl.Int64)  # (a zoned value's own UTC count: no calendar, so no year limit)
    return ints // 1000 if stamp_unit(t) == "s" else ints


def stamp_from_ints(ints, t: SqlType):
    import polars as pl

    if stamp_unit(t) == "s":  # (held in milliseconds; DuckDB's infinities stay the largest values)
        ints = pl.when(ints.abs() >= V.STAMP_INF).then(ints).otherwise(ints * 1000)
    return ints.cast(pl.Int64).cast(pl.Datetime(PL_UNIT[stamp_unit(t)], "UTC" if t.zoned else None))


def per_value(expr, fn: Callable, frm: SqlType, out_type):
    """``expr`` mapped through ``fn`` (a Python function of one value in :mod:`.values`' form,
    returning None where it fails), computed once per distinct value (floats by their bits:
    ``-0.0`` and ``0.0``, and NaNs of either sign, are distinct)."""
    import polars as pl
    import pyarrow.compute as pc

    def run(series: pl.Series) -> pl.Series:
        if series.dtype == pl.Null or series.len() == 0 or series.null_count() == series.len():
            return pl.Series(series.name, [None] * series.len(), dtype=out_type)
        arr = (series.cast(pl.Decimal(38, 0)) if series.dtype == pl.Int128 else series).to_arrow()
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        floating = pa.types.is_floating(arr.type)
        if floating:
            unsigned = np.uint32 if arr.type == pa.float32() else np.uint64
            keys = pa.array(arr.to_numpy(zero_copy_only=False).view(unsigned), mask=arr.is_null().to_numpy(zero_copy_only=False))
        else:
            keys = arr
        uniq = pc.unique(keys.filter(pc.is_valid(keys)))
        index = pc.index_in(keys, uniq)
        if floating:
            distinct = uniq.to_numpy(zero_copy_only=False).view(np.float32 if arr.type == pa.float32() else np.float64).tolist()
        else:
            distinct = uniq.to_pylist()
        mapped = [fn(from_polars_value(v, frm)) for v in distinct]
        table = pl.Series("v", mapped, dtype=out_type, strict=False)
        return table.gather(pl.from_arrow(index)).alias(series.name)

    return expr.map_batches(run, return_dtype=out_type, is_elementwise=True)


def from_polars_value(v, t: SqlType):
    """A Python value Polars gives (``to_pylist``) in :mod:`.values`' form."""
    import datetime as dt
    import decimal

    if isinstance(v, decimal.Decimal):  # an Int128 (a DECIMAL's unscaled integer, a HUGEINT)
        return int(v)
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return (v - dt.date(1970, 1, 1)).days
    if t.id == "FLOAT" and isinstance(v, float):
        return V.float32(v)
    return v


# -- the cast -----------------------------------------------------------------------------------------


class CastLowering:
    """Mixed into the Polars lowering: :meth:`lower_cast` of an expression of type ``frm``."""

    zone: str | None

    def check(self, reach, cond, message: str, shown=None, quote: bool = False) -> None:  # provided by the lowering
        raise NotImplementedError

    def lower_cast(self, x, frm: SqlType, to: SqlType, safe: bool, reach, what: str):  # noqa: C901
        import polars as pl

        f, t = frm.id, to.id
        if frm == to:
            return x
        what = f" ({what})" if what else ""
        if f == "NULL":
            return pl.lit(None, dtype=pl_type(to))
        zone = self.zone

        def failed(out, value_expr=x, reason: str | None = None):
            """``out`` with a check that every non-NULL input gave a value."""
            bad = value_expr.is_not_null() & out.is_null()
            if safe:
                return out
            self.check(reach, bad, reason or f"could not convert {{value}} to {type_name(to)}{what}", value_expr, quote=frm.id == "VARCHAR")
            return out

        if f == "VARCHAR":
            return failed(self._from_text(x, to, zone), reason=f"could not convert string {{value}} to {type_name(to)}{what}")
        if t == "VARCHAR":
            return self._to_text(x, frm, zone)
        if t == "BOOLEAN":
            if frm.numeric:
                return x != _zero(frm)
            raise ValueError(f"cast {type_name(frm)} -> BOOLEAN")
        if f == "BOOLEAN" and to.numeric:
            one = x.cast(pl.Int8)
            return one.cast(pl.Int128) * 10**to.scale if t == "DECIMAL" else one.cast(pl_type(to))
        if frm.numeric and to.numeric:
            out = self._numeric(x, frm, to)
            return failed(out, reason=f"{{value}} is out of range for {type_name(to)}{what}")
        if frm.temporal and to.temporal:
            return failed(self._temporal(x, frm, to, zone), reason=f"{{value}} is out of range for {type_name(to)}{what}")
        if f == "BLOB" and t == "BLOB":
            return x
        raise ValueError(f"cast {type_name(frm)} -> {type_name(to)}")

    # numbers
    def _numeric(self, x, frm: SqlType, to: SqlType):
        import polars as pl

        f, t = frm.id, to.id
        if frm.integral:
            if to.integral:
                return x.cast(pl_type(to), strict=False)
            if t == "DECIMAL":
                scaled = x.cast(pl.Int128) * 10**to.scale
                return scaled if _holds(frm, to) else _in_width(scaled, to.width)
            return x.cast(pl_type(to))  # to FLOAT/DOUBLE: round to nearest
        if f == "DECIMAL":
            if to.integral:
                whole = _rescale(x, frm.scale, 0)
                lo, hi = int_range(t)
                return pl.when((whole >= lo) & (whole <= hi)).then(whole).otherwise(None).cast(pl_type(to), strict=False)
            if t == "DECIMAL":
                rescaled = _rescale(x, frm.scale, to.scale)
                return rescaled if _holds(frm, to) else _in_width(rescaled, to.width)
            from .polars_exprs import true_divide

            if t == "DOUBLE" and frm.width <= 15:
                return true_divide(x.cast(pl.Float64), pl.lit(float(10**frm.scale)), pl.Float64)
            if t == "FLOAT" and frm.width <= 7 and frm.scale <= 10:
                return true_divide(x.cast(pl.Float32), pl.lit(float(10**frm.scale), dtype=pl.Float32), pl.Float32)
            return per_value(x, lambda v: V.cast_value(v, frm, to), frm, pl_type(to))
        # from FLOAT / DOUBLE
        if to.integral:
            lo, hi = int_range(t)
            from .polars_exprs import round_half_even

            r = round_half_even(x.cast(pl.Float64))
            ok = r.is_finite() & (r >= float(lo)) & (r < float(hi) + 1.0)
            if t in ("BIGINT", "UBIGINT", "HUGEINT"):
                ok = ok & (r < float(2**63 if t == "BIGINT" else 2**64 if t == "UBIGINT" else 2**127))
            return pl.when(ok).then(r).otherwise(None).cast(pl_type(to), strict=False)
        if t == "DECIMAL":
            from .polars_exprs import round_half_away

            scaled = round_half_away(x.cast(pl.Float64) * float(10**to.scale))
            ok = scaled.is_finite() & (scaled.abs() < float(10**to.width))
            return pl.when(ok).then(scaled).otherwise(None).cast(pl.Int128, strict=False)
        if t == "DOUBLE":
            return x.cast(pl.Float64)
        narrowed = x.cast(pl.Float32)  # DOUBLE -> FLOAT: a finite value that overflows is an error
        return pl.when(x.is_finite() & narrowed.is_infinite()).then(None).otherwise(narrowed)

    # dates and timestamps
    def _temporal(self, x, frm: SqlType, to: SqlType, zone: str | None):
        import polars as pl

        if frm.id == "DATE":
            unit = stamp_unit(to)
            days = x.cast(pl.Int32).cast(pl.Int64)
            infinite = days.abs() == V.DATE_INF  # DuckDB's infinite dates are infinite timestamps
            days = pl.when(infinite).then(None).otherwise(days)
            per_day = 86_400 * V.UNIT_PER_SECOND[unit]
            limit = (2**63 - 1) // per_day
            ints = pl.when(days.abs() <= limit).then(days * per_day).otherwise(None)
            if to.zoned:
                out = _local_to_utc(ints.cast(pl.Datetime(PL_UNIT[unit])), zone or to.tz or "UTC", PL_UNIT[unit])
            else:
                out = stamp_from_ints(ints, to)
            inf = stamp_from_ints(pl.when(x.cast(pl.Int32) > 0).then(V.STAMP_INF).otherwise(-V.STAMP_INF), to)
            return pl.when(infinite).then(inf).otherwise(out)
        if to.id == "DATE":
            unit = PL_UNIT[stamp_unit(frm)]
            if stamp_unit(frm) == "ns":  # DuckDB rounds to microseconds first
                x = stamp_from_ints(_narrow(stamp_ints(x, frm), 1000), SqlType("TIMESTAMPTZ" if frm.zoned else "TIMESTAMP"))
                unit = "us"
            local = _utc_to_local(x, zone or frm.tz or "UTC", unit) if frm.zoned else x
            return local.dt.date()
        ints = stamp_ints(x, frm)
        if frm.zoned and not to.zoned:
            ints = stamp_ints(_utc_to_local(x, zone or frm.tz or "UTC", PL_UNIT[stamp_unit(frm)]).dt.replace_time_zone("UTC"), frm)
        a, b = V.UNIT_PER_SECOND[stamp_unit(frm)], V.UNIT_PER_SECOND[stamp_unit(to)]
        if b >= a:
            factor = b // a
            limit = (2**63 - 1) // factor
            out_ints = pl.when(ints.abs() <= limit).then(ints * factor).otherwise(None)
        else:
            out_ints = _narrow(ints, a // b)
        out = stamp_from_ints(out_ints, to)
        if to.zoned and not frm.zoned:
            naive = out.dt.replace_time_zone(None)
            return _local_to_utc(naive, zone or to.tz or "UTC", PL_UNIT[stamp_unit(to)])
        return out

    # text
    def _from_text(self, x, to: SqlType, zone: str | None):
        import polars as pl

        t = to.id
        s = x
        if to.integral:
            clean = s.str.contains(r"^[+-]?[0-9]{1,18}$")
            fast = pl.when(clean).then(s.str.strip_prefix("+").cast(pl.Int64, strict=False))
            lo, hi = int_range(t)
            fast_in = pl.when(fast.is_not_null() & (fast >= max(lo, -(2**63))) & (fast <= min(hi, 2**63 - 1))).then(fast)
            slow = per_value(pl.when(clean.not_()).then(s), lambda v: _or_none(V.parse_integer, v, t), _VARCHAR, pl.Int128)
            return pl.when(clean).then(fast_in.cast(pl_type(to), strict=False)).otherwise(slow.cast(pl_type(to), strict=False))
        if t == "DOUBLE":
            clean = s.str.contains(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
            slow = per_value(pl.when(clean.not_()).then(s), lambda v: _or_none(V.parse_float, v, "DOUBLE"), _VARCHAR, pl.Float64)
            return pl.when(clean).then(s.cast(pl.Float64, strict=False)).otherwise(slow)
        if t == "FLOAT":
            return per_value(s, lambda v: _or_none(V.parse_float, v, "FLOAT"), _VARCHAR, pl.Float32)
        if t == "DECIMAL":
            return per_value(s, lambda v: _or_none(V.parse_decimal, v, to.width, to.scale), _VARCHAR, pl.Int128)
        if t == "BOOLEAN":
            low = s.str.to_lowercase()
            return pl.when(low.is_in(["true", "t", "yes", "y", "1"])).then(True).when(low.is_in(["false", "f", "no", "n", "0"])).then(False).otherwise(None)
        if t == "DATE":
            clean = s.str.contains(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
            fast = s.str.to_date("%Y-%m-%d", strict=False)
            slow = per_value(pl.when(clean.not_() | fast.is_null()).then(s), lambda v: _or_none(V.parse_date, v), _VARCHAR, pl.Int32)
            return pl.when(clean & fast.is_not_null()).then(fast).otherwise(slow.cast(pl.Date))
        if to.stamp:
            unit = stamp_unit(to)
            ints = per_value(s, lambda v: _or_none(V.parse_timestamp, v, unit, zone or to.tz, to.zoned), _VARCHAR, pl.Int64)
            return stamp_from_ints(ints, to)
        if t == "BLOB":
            return per_value(s, lambda v: _or_none(V.parse_blob, v), _VARCHAR, pl.Binary)
        raise ValueError(f"cast VARCHAR -> {type_name(to)}")

    def _to_text(self, x, frm: SqlType, zone: str | None):
        import polars as pl

        f = frm.id
        if f == "BOOLEAN":
            return pl.when(x).then(pl.lit("true")).when(x.not_()).then(pl.lit("false")).otherwise(None)
        if frm.integral:
            return x.cast(pl.String)
        if f == "DECIMAL":
            return decimal_text(x, frm.scale)
        if f in ("FLOAT", "DOUBLE"):
            return per_value(x, lambda v: V.format_float(v, f == "FLOAT"), frm, pl.String)
        if f == "DATE":
            return per_value(x.cast(pl.Int32), V.format_date, SqlType("INTEGER"), pl.String)
        if frm.stamp:
            ints = stamp_ints(x, frm)
            return per_value(ints, lambda v: V.to_text(v, frm, zone), SqlType("BIGINT"), pl.String)
        if f == "BLOB":
            return per_value(x, V.format_blob, frm, pl.String)
        raise ValueError(f"cast {type_name(frm)} -> VARCHAR")


_VARCHAR = SqlType("VARCHAR")


def _or_none(fn, *args):
    try:
        return fn(*args)
    except V.CastError:
        return None


def _zero(t: SqlType):
    import polars as pl

    return pl.lit(0, dtype=pl_type(t))


def _holds(frm: SqlType, to: SqlType) -> bool:
    """Whether DECIMAL ``to`` holds every value of ``frm``'s type (DuckDB then checks nothing,
    even for a value beyond its type's width, such as round(DECIMAL(5,0) -99999, -1))."""
    from .types import decimal_props

    fw, fs = decimal_props(frm)
    return to.scale >= fs and to.width - to.scale >= fw - fs


def _narrow(ints, factor: int):
    """``ints / factor`` rounded half away from zero (DuckDB's timestamp to a coarser unit)."""
    import polars as pl

    q = (ints.abs() + factor // 2) // factor
    return pl.when(ints < 0).then(0 - q).otherwise(q)


def _in_width(unscaled, width: int):
    import polars as pl

    limit = 10**width
    return pl.when(unscaled.abs() < pl.lit(limit, dtype=pl.Int128)).then(unscaled).otherwise(None)


def _rescale(unscaled, frm_scale: int, to_scale: int):
    """An unscaled DECIMAL at another scale, rounding half away from zero."""
    import polars as pl

    x = unscaled.cast(pl.Int128)
    if to_scale >= frm_scale:
        return x * pl.lit(10 ** (to_scale - frm_scale), dtype=pl.Int128)
    div = 10 ** (frm_scale - to_scale)
    half = div // 2
    magnitude = (x.abs() + pl.lit(half, dtype=pl.Int128)) // pl.lit(div, dtype=pl.Int128)
    return pl.when(x < 0).then(0 - magnitude).otherwise(magnitude)


def decimal_text(unscaled, scale: int):
    """DuckDB's text of a DECIMAL (all its scale digits)."""
    import polars as pl

    digits = unscaled.abs().cast(pl.String)
    sign = pl.when(unscaled < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    if scale == 0:
        return pl.concat_str([sign, digits])
    padded = digits.str.zfill(scale + 1)
    n = padded.str.len_chars()
    return pl.concat_str([sign, padded.str.slice(0, n - scale), pl.lit("."), padded.str.slice(n - scale)])


# Polars' calendar (chrono) ends near the year 262,000, DuckDB's timestamps near 294,000: a
# time further out is moved by whole 400-year Gregorian cycles (same weekdays, same zone
# rules: the last ones ahead, local mean time behind) into 2000-2400 or 1000-1400, computed
# there, and moved back.
_CYCLE_MS = 146_097 * 86_400_000
_FAR_MS = 8_000_000_000_000_000
_FUTURE_MS, _PAST_MS = 946_684_800_000, -30_610_224_000_000


def near_calendar(x, unit: str = "us"):
    """``x`` (a Datetime in ``unit``) moved into Polars' calendar, and the 400-year cycles it
    was moved by."""
    import polars as pl

    ms = x.dt.cast_time_unit("ms").cast(pl.Int64)
    cycles = pl.when(ms > _FAR_MS).then((ms - _FUTURE_MS) // _CYCLE_MS).when(ms < -_FAR_MS).then((ms - _PAST_MS) // _CYCLE_MS).otherwise(0)
    return x - pl.duration(milliseconds=cycles * _CYCLE_MS, time_unit=unit), cycles


def from_near(y, cycles, unit: str = "us"):
    import polars as pl

    return y + pl.duration(milliseconds=cycles * _CYCLE_MS, time_unit=unit)


def _utc_to_local(x, zone: str, unit: str = "us"):
    near, cycles = near_calendar(x, unit)
    return from_near(near.dt.convert_time_zone(zone), cycles, unit)


def _local_to_utc(naive, zone: str, unit: str = "us"):
    if zone.upper() in ("UTC", "Z", "GMT"):
        return naive.dt.replace_time_zone("UTC")
    near, cycles = near_calendar(naive, unit)
    return from_near(near.dt.replace_time_zone(zone, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC"), cycles, unit)


def check_fits(value: int, t: SqlType) -> bool:
    return fits(value, t.id)


def literal(value, t: SqlType):
    """A constant as a Polars expression of ``t``'s Polars type."""
    import polars as pl

    if t.id == "NULL":
        return pl.lit(None)
    dtype = pl_type(t)
    if value is None:
        return pl.lit(None, dtype=dtype)
    if t.id == "DATE":
        return pl.lit(value, dtype=pl.Int32).cast(pl.Date)
    if t.stamp:
        return stamp_from_ints(pl.lit(value, dtype=pl.Int64), t)
    if t.id in ("FLOAT",):
        return pl.lit(np.float32(value), dtype=pl.Float32)
    return pl.lit(value, dtype=dtype)
