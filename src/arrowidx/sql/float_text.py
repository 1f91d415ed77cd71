"""The text DuckDB writes for a FLOAT (``CAST(f AS VARCHAR)``): its ``duckdb_fmt::format("{}")``,
which is fmt 6's Grisu with a float's rounding boundaries, falling back, where Grisu cannot
decide, to the shortest text of the value *as a double* (so ``-23732.5625``, not the float's
shortest ``-23732.562``). A port of fmt's ``format_float`` for one value (used once per
distinct value)."""

from __future__ import annotations

import functools
import math
import struct
from fractions import Fraction

_MASK = (1 << 64) - 1
_IMPLICIT = 1 << 52


@functools.cache
def _cached_power(index: int) -> tuple[int, int]:
    """fmt's pow10_significands / pow10_exponents entry: 10^(-348 + 8 index), rounded to 64 bits."""
    value = Fraction(10) ** (-348 + 8 * index)
    e = value.numerator.bit_length() - value.denominator.bit_length() - 63
    while value / Fraction(2) ** e >= 2**64:
        e += 1
    while value / Fraction(2) ** e < 2**63:
        e -= 1
    q = value / Fraction(2) ** e
    f = int(q)
    if q - f >= Fraction(1, 2):
        f += 1
    return f, e


def _get_cached_power(min_exponent: int) -> tuple[int, int, int]:
    index = ((min_exponent + 63) * 0x4D104D42 + ((1 << 32) - 1)) >> 32
    index = (index + 348 - 1) // 8 + 1
    f, e = _cached_power(index)
    return f, e, -348 + index * 8


def _multiply(a: int, b: int) -> int:
    product = a * b
    return ((product >> 64) + ((product >> 63) & 1)) & _MASK


def _normalize(f: int, e: int, shift: int) -> tuple[int, int]:
    bit = _IMPLICIT << shift
    while f & bit == 0:
        f <<= 1
        e -= 1
    offset = 64 - 52 - shift - 1
    return (f << offset) & _MASK, e - offset


def _grisu(value: float) -> tuple[str, int] | None:
    """fmt's Grisu shortest digits of a float (given as a double) and its decimal exponent,
    or None where Grisu gives up."""
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    f = bits & (_IMPLICIT - 1)
    biased = (bits >> 52) & 0x7FF
    if biased:
        f += _IMPLICIT
    else:
        biased = 1
    e = biased - 1023 - 52
    min_normal_e = -125 - 53
    half_ulp = 1 << (53 - 24 - 1)
    if min_normal_e > e:
        half_ulp <<= min_normal_e - e
    upper_f, upper_e = _normalize(f + half_ulp, e, 0)
    lower_f = f - (half_ulp >> (1 if (f == _IMPLICIT and e > min_normal_e) else 0))
    lower_f = (lower_f << (e - upper_e)) & _MASK
    value_f, value_e = _normalize(f, e, 0)
    pow_f, pow_e, cached_exp10 = _get_cached_power(-60 - (value_e + 64))
    value_f, value_e = _multiply(value_f, pow_f), value_e + pow_e + 64
    lower = (_multiply(lower_f, pow_f) - 1) & _MASK
    upper = (_multiply(upper_f, pow_f) + 1) & _MASK
    diff = (upper - value_f) & _MASK
    digits = _gen_digits(upper, value_e, (upper - lower) & _MASK, diff)
    if digits is None:
        return None
    text, exp = digits
    return text, exp - cached_exp10


def _gen_digits(value_f: int, value_e: int, error: int, diff: int) -> tuple[str, int] | None:
    shift = -value_e
    one = 1 << shift
    integral = value_f >> shift
    fractional = value_f & (one - 1)
    exp = len(str(integral))
    buf: list[int] = []

    def on_digit(digit: int, divisor: int, remainder: int, err: int, exp: int, is_integral: bool):
        buf.append(digit)
        if remainder >= err:
            return "more"
        unit = 1 if is_integral else 10 ** (-exp)
        up = ((diff - 1) * unit) & _MASK
        while remainder < up and ((err - remainder) & _MASK) >= divisor and (
            remainder + divisor < up or ((up - remainder) & _MASK) >= ((remainder + divisor - up) & _MASK)
        ):
            buf[-1] -= 1
            remainder = (remainder + divisor) & _MASK
        down = ((diff + 1) * unit) & _MASK
        if remainder < down and ((err - remainder) & _MASK) >= divisor and (
            remainder + divisor < down or ((down - remainder) & _MASK) > ((remainder + divisor - down) & _MASK)
        ):
            return "error"
        return "done" if 2 * unit <= remainder and remainder <= ((err - 4 * unit) & _MASK) else "error"

    while exp > 0:
        power = 10 ** (exp - 1)
        digit, integral = divmod(integral, power)
        exp -= 1
        remainder = ((integral << shift) + fractional) & _MASK
        result = on_digit(digit, (10**exp << shift) & _MASK, remainder, error, exp, True)
        if result == "done":
            return "".join(map(str, buf)), exp
        if result == "error":
            return None
    while True:
        fractional = (fractional * 10) & _MASK
        error = (error * 10) & _MASK
        digit = fractional >> shift
        fractional &= one - 1
        exp -= 1
        result = on_digit(digit, one, fractional, error, exp, False)
        if result == "done":
            return "".join(map(str, buf)), exp
        if result == "error":
            return None


def float_text(value: float) -> str:
    """DuckDB's text of a FLOAT value (a Python float holding a float32)."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    found = _grisu(abs(value))
    if found is not None:
        digits, exp = found
        digits = digits.rstrip("0") or "0"
        exp10 = exp + len(found[0]) - len(digits)
    else:  # fmt's fallback: the shortest digits of the double
        mantissa, _, e = repr(abs(value)).partition("e")
        whole, _, frac = mantissa.partition(".")
        digits = (whole + frac).lstrip("0").rstrip("0") or "0"
        point = len(whole.lstrip("0")) if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")))
        exp10 = point - len(digits) + (int(e) if e else 0)
    return sign + _general(digits, exp10)


def _general(digits: str, exp10: int) -> str:
    """fmt's ``{}``: digits * 10**exp10 written fixed from 1e-4 to 1e16, else with an exponent."""
    n = len(digits)
    exp = n + exp10 - 1
    if -4 <= exp < 16:
        if exp10 >= 0:
            return digits + "0" * exp10 + ".0"
        point = n + exp10
        if point > 0:
            return digits[:point] + "." + digits[point:]
        return "0." + "0" * (-point) + digits
    body = digits[0] + ("." + digits[1:] if n > 1 else "")
    return f"{body}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
