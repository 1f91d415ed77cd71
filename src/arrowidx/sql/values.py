"""Single SQL values and DuckDB's casts between them, in Python.

Used for constants (a literal compared with a column is cast once, when the text is
compiled) and, per distinct value, for the rare column values the vectorised casts in
:mod:`.to_polars` leave over (a string like ``' 1_000.5e1'`` cast to an integer).

A value is held as: ``bool``; ``int`` (integers; a DECIMAL's unscaled integer; a DATE's days
since 1970-01-01; a TIMESTAMP's count of its unit since 1970-01-01 UTC; a TIME's
microseconds); ``float`` (FLOAT values are float32 values); ``str``; ``bytes``; an
``Interval``; ``None`` (NULL).

The parsers follow DuckDB's (``integer_cast_operator.hpp``, ``date.cpp``, ``timestamp.cpp``):
whitespace around numbers, ``_`` between digits, ``0x``/``0b`` integers, a fraction cast to
an integer rounds half away from zero, ``'nan'``/``'inf'`` for floats, dates with ``-``, ``/``,
``\\`` or space, ``(BC)``, ``epoch`` and ``infinity``.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext

import numpy as np

from .types import SqlType, decimal_props, fits, int_range, stamp_unit, type_name


class CastError(Exception):
    """A value DuckDB cannot cast (its message is DuckDB's reason, in our words)."""


@dataclass(frozen=True)
class Interval:
    months: int = 0
    days: int = 0
    micros: int = 0


_SPACE = " \t\n\r\v\f"
DAY_US = 86_400_000_000
UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
# DuckDB's infinite dates and timestamps
DATE_INF, DATE_NINF = 2**31 - 1, -(2**31 - 1)
STAMP_INF, STAMP_NINF = 2**63 - 1, -(2**63 - 1)


def _exact(text: str) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 400
        return Decimal(text)


def round_half_away(value: Decimal) -> int:
    """``value`` rounded to an integer, halves away from zero (DuckDB's decimal rounding)."""
    with localcontext() as ctx:
        ctx.prec = 400
        return int(value.to_integral_value(rounding=ROUND_HALF_UP))


# -- strings -> numbers --------------------------------------------------------------------------

_DIGITS = r"\d(?:_?\d)*"
_NUMBER = re.compile(rf"([+-]?)(?:({_DIGITS})(?:\.((?:{_DIGITS})?))?|\.({_DIGITS}))(?:[eE]([+-]?{_DIGITS}))?")
_HEX = re.compile(r"0[xX]([0-9a-fA-F]+)|0[bB]([01]+)")


def _number_text(text: str) -> Decimal | None:
    """The exact value of a decimal number in DuckDB's spelling (None: not one)."""
    m = _NUMBER.fullmatch(text.strip(_SPACE))
    if m is None:
        return None
    sign, whole, frac, only_frac, exp = m.groups()
    digits = (whole or "").replace("_", "") + "." + (frac or only_frac or "").replace("_", "")
    if digits == ".":
        return None
    exponent = int(exp.replace("_", "")) if exp else 0
    mantissa = _exact(("-" if sign == "-" else "") + digits)
    if exponent > 400:  # beyond every type: infinity (a DOUBLE) or an error (the others)
        return mantissa if mantissa.is_zero() else Decimal("-Infinity") if mantissa < 0 else Decimal("Infinity")
    if exponent < -400:
        return Decimal(0).copy_sign(mantissa)
    return mantissa.scaleb(exponent)


def parse_integer(text: str, name: str) -> int:
    """A string as integer type ``name`` (DuckDB's TryCast: a fraction rounds half away)."""
    m = _HEX.fullmatch(text.lstrip(_SPACE))
    if m is not None:
        value = int(m.group(1), 16) if m.group(1) is not None else int(m.group(2), 2)
    else:
        number = _number_text(text)
        if number is None or (not text.lstrip(_SPACE)[:1].isdigit() and text.lstrip(_SPACE)[:1] not in "+-."):
            raise CastError(f"could not convert string {text!r} to {_INT_NAMES[name]}")
        if not number.is_finite() or abs(number) > Decimal(2) ** 130:
            raise CastError(f"could not convert string {text!r} to {_INT_NAMES[name]}")
        value = round_half_away(number)
        if name.startswith("U") and text.lstrip(_SPACE).startswith("-") and re.search(r"[1-9]", text.split("e")[0].split("E")[0]):
            raise CastError(f"could not convert string {text!r} to {_INT_NAMES[name]}")
    if not fits(value, name):
        raise CastError(f"could not convert string {text!r} to {_INT_NAMES[name]}")
    return value


_INT_NAMES = {"TINYINT": "INT8", "SMALLINT": "INT16", "INTEGER": "INT32", "BIGINT": "INT64", "HUGEINT": "INT128",
              "UTINYINT": "UINT8", "USMALLINT": "UINT16", "UINTEGER": "UINT32", "UBIGINT": "UINT64", "UHUGEINT": "UINT128"}  # fmt: skip

_SPECIAL_FLOAT = re.compile(r"([+-]?)(nan|inf|infinity)", re.IGNORECASE)


def parse_float(text: str, name: str) -> float:
    """A string as FLOAT or DOUBLE (correctly rounded; overflow gives infinity)."""
    stripped = text.strip(_SPACE)
    special = _SPECIAL_FLOAT.fullmatch(stripped)
    if special is not None:
        sign = -1.0 if special.group(1) == "-" else 1.0
        if special.group(2).lower() == "nan":
            return math.copysign(math.nan, sign)
        return sign * math.inf
    number = _number_text(text)
    if number is None:
        raise CastError(f"could not convert string {text!r} to {name}")
    if not number.is_finite():
        return float(number)
    if name == "FLOAT":
        return decimal_to_float32(number)
    try:
        return float(number)
    except OverflowError:
        return math.copysign(math.inf, number)


def decimal_to_float32(number: Decimal) -> float:
    """The float32 nearest ``number`` (ties to even), as a Python float."""
    if number.is_zero():
        return -0.0 if number.is_signed() else 0.0
    try:
        double = float(number)
    except OverflowError:
        double = math.copysign(math.inf, number)
    single = float32(double)
    if math.isinf(single) or single == double:
        return single
    # double rounding can land on a float32 tie: decide it with the exact value
    lo, hi = (single, float(np.nextafter(np.float32(single), np.float32(math.copysign(math.inf, double - single)))))
    lo, hi = min(lo, hi), max(lo, hi)
    mid = (Decimal(lo) + Decimal(hi)) / 2
    if number < mid:
        return lo
    if number > mid:
        return hi
    return lo if int(np.float32(lo).view(np.int32)) % 2 == 0 else hi


def parse_decimal(text: str, width: int, scale: int) -> int:
    """A string as DECIMAL(width, scale): the unscaled integer, rounded half away from zero.
    (DuckDB counts the digits before the point, and before any exponent, against the width.)"""
    number = _number_text(text)
    whole = _NUMBER.fullmatch(text.strip(_SPACE))
    if whole is not None and len((whole.group(2) or "").replace("_", "").lstrip("0")) > width - scale:
        number = None
    if number is None or not number.is_finite():
        raise CastError(f"could not convert string {text!r} to DECIMAL({width},{scale})")
    value = round_half_away(number.scaleb(scale))
    if abs(value) >= 10**width:
        raise CastError(f"could not convert string {text!r} to DECIMAL({width},{scale}): the value is out of range")
    return value


_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def parse_bool(text: str) -> bool:
    low = text.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise CastError(f"could not convert string {text!r} to BOOL")


# -- strings -> dates and times ----------------------------------------------------------------------


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def _valid_date(y: int, m: int, d: int) -> bool:
    if not 1 <= m <= 12 or d < 1:
        return False
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return d <= (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[m - 1]


_DATE_MIN, _DATE_MAX = days_from_civil(-5877641, 6, 25), days_from_civil(5881580, 7, 10)


def _parse_date_prefix(text: str) -> tuple[int, int, bool] | None:
    """DuckDB's Date::TryConvertDate: (days, position after the date, special) or None."""
    pos, n = 0, len(text)
    while pos < n and text[pos] in _SPACE:
        pos += 1
    if pos >= n:
        return None
    negative = text[pos] == "-"
    if negative:
        pos += 1
        if pos >= n:
            return None
    if not text[pos].isascii() or not text[pos].isdigit():
        word = re.match(r"[A-Za-z]*", text[pos:]).group(0).lower()
        rest = text[pos + len(word) :]
        if word in ("infinity", "inf"):
            value = DATE_NINF if negative else DATE_INF
        elif word == "epoch":
            value = 0
        else:
            return None
        return (value, n, True) if rest.strip(_SPACE) == "" else None
    start = pos
    while pos < n and "0" <= text[pos] <= "9":
        pos += 1
    if pos - start > 9:
        return None
    year = int(text[start:pos])
    if negative:
        year = -year
    if pos >= n:
        return None
    sep = text[pos]
    pos += 1
    if sep not in " -/\\":
        return None
    month, pos = _two_digits(text, pos)
    if month is None or pos >= n or text[pos] != sep:
        return None
    pos += 1
    if pos >= n:
        return None
    day, pos = _two_digits(text, pos)
    if day is None:
        return None
    if n - pos >= 5 and text[pos] in _SPACE and text[pos + 1] == "(" and text[pos + 2 : pos + 4].lower() == "bc" and text[pos + 4] == ")":
        if negative or year == 0:
            return None
        year = -year + 1
        pos += 5
    if not _valid_date(year, month, day):
        return None
    days = days_from_civil(year, month, day)
    if not _DATE_MIN <= days <= _DATE_MAX:
        return None
    return days, pos, False


def _two_digits(text: str, pos: int) -> tuple[int | None, int]:
    if pos >= len(text) or not ("0" <= text[pos] <= "9"):
        return None, pos
    if pos + 1 < len(text) and "0" <= text[pos + 1] <= "9":
        return int(text[pos : pos + 2]), pos + 2
    return int(text[pos]), pos + 1


def parse_date(text: str) -> int:
    """A string as a DATE (days): a date, optionally followed by anything but a digit."""
    parsed = _parse_date_prefix(text)
    if parsed is None or (not parsed[2] and parsed[1] < len(text) and "0" <= text[parsed[1]] <= "9"):
        raise CastError(f"invalid date {text!r} (expected YYYY-MM-DD)")
    return parsed[0]


_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?")
_OFFSET = re.compile(r"([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?")


def parse_timestamp(text: str, unit: str, zone: str | None = None, zoned: bool = False) -> int:
    """A string as a timestamp in ``unit`` since the epoch. A naive timestamp ignores an
    offset or zone name (as DuckDB's TIMESTAMP does); ``zoned`` (TIMESTAMPTZ) applies it, or
    reads the wall time in ``zone`` (the session's) when the text has none."""
    parsed = _parse_date_prefix(text)
    if parsed is None:
        raise CastError(f"invalid timestamp {text!r} (expected YYYY-MM-DD hh:mm:ss[.ffffff])")
    days, pos, special = parsed
    if special:
        if days in (DATE_INF, DATE_NINF):
            return STAMP_INF if days == DATE_INF else STAMP_NINF
        if pos >= len(text):
            return 0
    per_second = UNIT_PER_SECOND[unit]
    per_day = 86_400 * per_second
    offset_us, zone_name = None, None
    if pos == len(text):
        nanos_of_day = 0
    else:
        if text[pos] in " T":
            pos += 1
        m = _TIME.match(text, pos)
        if m is None:
            raise CastError(f"invalid timestamp {text!r} (expected YYYY-MM-DD hh:mm:ss[.ffffff])")
        hh, mm, ss, frac = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), m.group(4) or ""
        if mm > 59 or ss > 59:
            raise CastError(f"invalid timestamp {text!r}")
        nanos_of_day = ((hh * 60 + mm) * 60 + ss) * 10**9 + int((frac[:9]).ljust(9, "0") or 0)
        if nanos_of_day > 86_400 * 10**9:
            raise CastError(f"invalid timestamp {text!r}: the time is out of range")
        pos = m.end()
        rest = text[pos:]
        if rest:
            if rest[0] == "Z":
                offset_us, rest = 0, rest[1:]
            elif (om := _OFFSET.match(rest)) is not None:
                sign = -1 if om.group(1) == "-" else 1
                offset_us = sign * ((int(om.group(2)) * 60 + int(om.group(3) or 0)) * 60 + int(om.group(4) or 0)) * 1_000_000
                rest = rest[om.end() :]
            elif rest[0] == " " and re.match(r" [A-Za-z0-9/_+-]+", rest):
                zm = re.match(r" ([A-Za-z0-9/_+-]+)", rest)
                zone_name, rest = zm.group(1), rest[zm.end() :]
            else:
                raise CastError(f"invalid timestamp {text!r}")
            if rest.strip(_SPACE):
                raise CastError(f"invalid timestamp {text!r}")
    # microseconds are truncated, except for units of a second or a millisecond, which round
    if unit == "ns":
        sub = nanos_of_day
    else:
        micros = nanos_of_day // 1000
        sub = micros * per_second // 1_000_000 if unit == "us" else _round_div(micros * per_second, 1_000_000)
    value = days * per_day + sub
    if zoned:
        if offset_us is not None:
            value -= offset_us * per_second // 1_000_000
        else:
            value = local_to_utc(value, unit, zone_name or zone or "UTC")
    _check_stamp(value, unit, text)
    return value


def round_away(a: int, b: int) -> int:
    """``a / b`` rounded half away from zero."""
    q = (abs(a) + b // 2) // b
    return -q if a < 0 else q


def _round_div(a: int, b: int) -> int:
    q, r = divmod(a, b)
    return q + (1 if 2 * r >= b else 0)


def _check_stamp(value: int, unit: str, text) -> None:
    limit = 2**63 - 1
    if unit != "ns":
        limit = min(limit, (2**63 - 1) // (1_000_000 // UNIT_PER_SECOND[unit]) if unit in ("s", "ms") else limit)
    if not -limit <= value <= limit or (unit == "ns" and not -(2**63) + 1 <= value):
        raise CastError(f"timestamp {text!r} is out of range")
    if unit in ("s", "ms", "us"):
        micros = value * (1_000_000 // UNIT_PER_SECOND[unit])
        if not _STAMP_MIN_US <= micros <= _STAMP_MAX_US:
            raise CastError(f"timestamp {text!r} is out of range")


_STAMP_MIN_US = days_from_civil(-290308, 12, 22) * DAY_US
_STAMP_MAX_US = days_from_civil(294247, 1, 10) * DAY_US + 4 * 3600_000_000 + 54_775_806


def local_to_utc(value: int, unit: str, zone: str) -> int:
    """A wall time in ``zone`` as an instant (both in ``unit``; DuckDB/ICU's rule for gaps and
    folds: the earlier offset)."""
    if zone.upper() in ("UTC", "Z", "GMT"):
        return value
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array([value], pa.timestamp(unit))
    try:
        local = pc.assume_timezone(arr, timezone=zone, ambiguous="earliest", nonexistent="latest")
    except (pa.ArrowInvalid, ValueError) as err:
        raise CastError(f"unknown time zone {zone!r}") from err
    return local.cast(pa.int64())[0].as_py()


# -- casts between values ---------------------------------------------------------------------------------


def cast_value(value, frm: SqlType, to: SqlType, *, zone: str | None = None):
    """``value`` of type ``frm`` cast to ``to`` as DuckDB casts it (CastError: it cannot)."""
    if value is None:
        return None
    f, t = frm.id, to.id
    if f == "INTEGER_LITERAL":
        f = "HUGEINT"
    if f == "STRING_LITERAL":
        f = "VARCHAR"
    if f == t and (f != "DECIMAL" or (frm.width, frm.scale) == (to.width, to.scale)):
        return value
    if f == "VARCHAR":
        return _from_string(value, to, zone)
    if t == "VARCHAR":
        return to_text(value, frm, zone)
    if t == "BOOLEAN":
        if frm.numeric or f == "BOOLEAN":
            return bool(value) if not (isinstance(value, float) and math.isnan(value)) else True
        raise CastError(f"cannot cast {type_name(frm)} to BOOLEAN")
    if f == "BOOLEAN" and to.numeric:
        return cast_value(int(value), SqlType("INTEGER"), to)
    if frm.numeric and to.numeric:
        return _numeric(value, frm, to)
    if frm.temporal and to.temporal:
        return _temporal(value, frm, to, zone)
    raise CastError(f"cannot cast {type_name(frm)} to {type_name(to)}")


def _from_string(text: str, to: SqlType, zone: str | None):
    t = to.id
    if to.integral:
        return parse_integer(text, t)
    if t in ("FLOAT", "DOUBLE"):
        return parse_float(text, t)
    if t == "DECIMAL":
        return parse_decimal(text, to.width, to.scale)
    if t == "BOOLEAN":
        return parse_bool(text)
    if t == "DATE":
        return parse_date(text)
    if to.stamp:
        return parse_timestamp(text, stamp_unit(to), zone or to.tz, zoned=to.zoned)
    if t == "BLOB":
        return parse_blob(text)
    if t == "VARCHAR":
        return text
    raise CastError(f"cannot cast VARCHAR to {type_name(to)}")


def _numeric(value, frm: SqlType, to: SqlType):
    f, t = frm.id, to.id
    if frm.integral or f == "DECIMAL":
        exact = Decimal(value).scaleb(-frm.scale) if f == "DECIMAL" else Decimal(value)
        if to.integral:
            result = round_half_away(exact) if f == "DECIMAL" else value
            if not fits(result, t):
                raise CastError(f"{_show(value, frm)} is out of range for {type_name(to)}")
            return result
        if t == "DECIMAL":
            result = round_half_away(exact.scaleb(to.scale))
            fw, fs = decimal_props(frm) or (38, 0)
            holds = to.scale >= fs and to.width - to.scale >= fw - fs  # DuckDB checks nothing then
            if abs(result) >= 10**to.width and not holds:
                raise CastError(f"could not cast {_show(value, frm)} to {type_name(to)}: the value is out of range")
            return result
        if t == "DOUBLE":
            return float(exact) if f == "DECIMAL" else float(value)
        return decimal_to_float32(exact)
    # from FLOAT / DOUBLE
    if to.integral:
        if math.isnan(value) or math.isinf(value):
            raise CastError(f"{_show(value, frm)} cannot be cast to {type_name(to)}")
        result = int(np.rint(value))
        lo, hi = int_range(t)
        if not lo <= result <= hi:
            raise CastError(f"{_show(value, frm)} is out of range for {type_name(to)}")
        return result
    if t == "DECIMAL":
        scaled = value * float(10**to.scale)
        if math.isnan(scaled) or math.isinf(scaled) or abs(round_half_away(Decimal(scaled))) >= 10**to.width:
            raise CastError(f"could not cast {_show(value, frm)} to {type_name(to)}")
        return round_half_away(Decimal(scaled))
    if t == "DOUBLE":
        return value
    # DOUBLE -> FLOAT: out of FLOAT's range (but finite) is an error
    single = float32(value)
    if math.isfinite(value) and math.isinf(single):
        raise CastError(f"{_show(value, frm)} is out of range for FLOAT")
    return single


def _temporal(value: int, frm: SqlType, to: SqlType, zone: str | None):
    if frm.id == "DATE":
        if value in (DATE_INF, DATE_NINF):
            return STAMP_INF if value == DATE_INF else STAMP_NINF
        unit = stamp_unit(to)
        stamp = value * 86_400 * UNIT_PER_SECOND[unit]
        if to.zoned:
            stamp = local_to_utc(stamp, unit, zone or to.tz or "UTC")
        _check_stamp(stamp, unit, _show(value, frm))
        return stamp
    unit = stamp_unit(frm)
    if value in (STAMP_INF, STAMP_NINF):
        if to.id == "DATE":
            return DATE_INF if value == STAMP_INF else DATE_NINF
        return value
    if frm.zoned and not to.zoned:
        value = utc_to_local(value, unit, zone or frm.tz or "UTC")
    elif to.zoned and not frm.zoned and to.id != "DATE":
        value = local_to_utc(value, unit, zone or to.tz or "UTC")
    if to.id == "DATE":
        if unit == "ns":  # rounded to microseconds first
            value, unit = round_away(value, 1000), "us"
        return value // (86_400 * UNIT_PER_SECOND[unit])
    target = stamp_unit(to)
    a, b = UNIT_PER_SECOND[unit], UNIT_PER_SECOND[target]
    if b >= a:
        result = value * (b // a)
    else:
        result = round_away(value, a // b)
    _check_stamp(result, target, _show(value, frm))
    return result


def utc_to_local(value: int, unit: str, zone: str) -> int:
    """An instant as the wall time in ``zone`` (both in ``unit``)."""
    if zone.upper() in ("UTC", "Z", "GMT"):
        return value
    import pyarrow as pa

    arr = pa.array([value], pa.timestamp(unit, tz="UTC")).cast(pa.timestamp(unit, tz=zone))
    import pyarrow.compute as pc

    return pc.local_timestamp(arr).cast(pa.int64())[0].as_py()


def parse_blob(text: str) -> bytes:
    """DuckDB's VARCHAR -> BLOB: ASCII characters as they are, ``\\xNN`` as a byte."""
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 3 < len(text) + 0 and text[i + 1] in "xX" and re.fullmatch(r"[0-9a-fA-F]{2}", text[i + 2 : i + 4]):
                out.append(int(text[i + 2 : i + 4], 16))
                i += 4
                continue
            raise CastError(f"invalid escape in {text!r} (a BLOB takes \\xNN for a byte)")
        if ord(ch) > 127:
            raise CastError(f"{text!r} is not a BLOB literal: write non-ASCII bytes as \\xNN")
        out.append(ord(ch))
        i += 1
    return bytes(out)


# -- values -> text (DuckDB's CAST(x AS VARCHAR)) -------------------------------------------------------


def format_float(value: float, single: bool = False) -> str:
    """DuckDB's text of a DOUBLE (the shortest digits that read back as the value, written as
    Python writes a float: positional from 1e-4 to 1e16, else ``1e+16``) or of a FLOAT
    (:func:`~.float_text.float_text`)."""
    if single:
        from .float_text import float_text

        return float_text(value)
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def format_decimal(unscaled: int, scale: int) -> str:
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    return sign + (digits[:-scale] + "." + digits[-scale:] if scale else digits)


def format_date(days: int) -> str:
    if days == DATE_INF:
        return "infinity"
    if days == DATE_NINF:
        return "-infinity"
    y, m, d = civil_from_days(days)
    if y <= 0:
        return f"{1 - y:04d}-{m:02d}-{d:02d} (BC)"
    return f"{y:04d}-{m:02d}-{d:02d}"


def format_timestamp(value: int, unit: str, offset_text: str | None = None) -> str:
    if value == STAMP_INF:
        return "infinity"
    if value == STAMP_NINF:
        return "-infinity"
    per_second = UNIT_PER_SECOND[unit]
    days, rest = divmod(value, 86_400 * per_second)
    seconds, frac = divmod(rest, per_second)
    hh, mm, ss = seconds // 3600, seconds // 60 % 60, seconds % 60
    date = format_date(days)
    bc = date.endswith(" (BC)")
    if bc:
        date = date[:-5]
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]
    fraction = ("." + str(frac).rjust(digits, "0")).rstrip("0").rstrip(".") if frac else ""
    text = f"{date} {hh:02d}:{mm:02d}:{ss:02d}{fraction}"
    if bc:
        text += " (BC)"
    return text + (offset_text or "")


def format_blob(data: bytes) -> str:
    return "".join(chr(b) if 32 <= b <= 126 and b != 92 else f"\\x{b:02X}" for b in data)


def to_text(value, frm: SqlType, zone: str | None = None) -> str:
    f = frm.id
    if f == "BOOLEAN":
        return "true" if value else "false"
    if frm.integral or f == "INTEGER_LITERAL":
        return str(value)
    if f in ("FLOAT", "DOUBLE"):
        return format_float(value, f == "FLOAT")
    if f == "DECIMAL":
        return format_decimal(value, frm.scale)
    if f == "DATE":
        return format_date(value)
    if frm.stamp:
        unit = stamp_unit(frm)
        if frm.zoned:
            zone = zone or frm.tz or "UTC"
            local = utc_to_local(value, unit, zone)
            return format_timestamp(local, unit, offset_suffix((local - value) // UNIT_PER_SECOND[unit]))
        return format_timestamp(value, unit)
    if f == "BLOB":
        return format_blob(value)
    if f == "VARCHAR":
        return value
    raise CastError(f"cannot cast {type_name(frm)} to VARCHAR")


def offset_suffix(seconds: int) -> str:
    sign = "-" if seconds < 0 else "+"
    seconds = abs(seconds)
    hh, mm, ss = seconds // 3600, seconds // 60 % 60, seconds % 60
    return f"{sign}{hh:02d}" + (f":{mm:02d}" if mm or ss else "") + (f":{ss:02d}" if ss else "")


def _show(value, t: SqlType) -> str:
    try:
        return to_text(value, t)
    except CastError:
        return repr(value)


# -- Arrow scalars <-> values ------------------------------------------------------------------------


def from_python(value, t: SqlType):
    """A value read from Arrow (``Scalar.as_py()``) in this module's form."""
    if value is None:
        return None
    if t.id == "DECIMAL":
        return int(Decimal(value).scaleb(t.scale))
    if t.id == "DATE":
        return (value - _dt.date(1970, 1, 1)).days
    if t.id == "FLOAT":
        return struct.unpack("f", struct.pack("f", value))[0]
    return value


def float32(value: float) -> float:
    """The float32 nearest a double (infinity beyond FLOAT's range), as a Python float."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


__all__ = ["CastError", "Interval", "cast_value", "parse_blob", "to_text"]

