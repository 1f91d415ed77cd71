"""SQL types and DuckDB's rules for combining them, written once.

A :class:`SqlType` is one of DuckDB's logical types (``INTEGER``, ``DECIMAL(10,2)``,
``TIMESTAMP WITH TIME ZONE``, ...) plus the two types DuckDB gives literals while it binds:
``INTEGER_LITERAL`` (an integer constant, which fits into any integer type that holds its
value) and ``STRING_LITERAL`` (a quoted constant, which casts implicitly to anything).

The functions below are DuckDB's (``src/common/types.cpp``, ``src/function/cast_rules.cpp``,
``src/function/combine_types_rules.cpp``, ``bind_comparison_expression.cpp``): the implicit
cast costs, the "max logical type" of two types, and the type a comparison is made in. The
binder (:mod:`.bind`) asks only these; nothing else decides a type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

# -- the types ---------------------------------------------------------------------------------

SIGNED = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")
UNSIGNED = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")
INTEGRAL = SIGNED + UNSIGNED
STAMPS = ("TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP", "TIMESTAMP_NS", "TIMESTAMPTZ", "TIMESTAMPTZ_NS")
NUMERIC = INTEGRAL + ("FLOAT", "DOUBLE", "DECIMAL")

BITS = {"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64, "HUGEINT": 128,
        "UTINYINT": 8, "USMALLINT": 16, "UINTEGER": 32, "UBIGINT": 64, "UHUGEINT": 128}  # fmt: skip

# DuckDB's LogicalTypeId numbers (CombineNumericTypes orders by them)
_ORDER = {"BOOLEAN": 10, "TINYINT": 11, "SMALLINT": 12, "INTEGER": 13, "BIGINT": 14, "DECIMAL": 21, "FLOAT": 22,
          "DOUBLE": 23, "UTINYINT": 28, "USMALLINT": 29, "UINTEGER": 30, "UBIGINT": 31, "UHUGEINT": 49, "HUGEINT": 50}  # fmt: skip


@dataclass(frozen=True)
class SqlType:
    """A DuckDB logical type. ``width``/``scale`` for DECIMAL; ``value`` for INTEGER_LITERAL
    (the constant); ``tz`` for TIMESTAMPTZ columns read from Arrow (the column's zone, used
    when no session zone is given)."""

    id: str
    width: int = 0
    scale: int = 0
    value: int | None = None
    tz: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return type_name(self)

    # predicates
    @property
    def integral(self) -> bool:
        return self.id in INTEGRAL

    @property
    def numeric(self) -> bool:
        return self.id in NUMERIC

    @property
    def floating(self) -> bool:
        return self.id in ("FLOAT", "DOUBLE")

    @property
    def decimal(self) -> bool:
        return self.id == "DECIMAL"

    @property
    def stamp(self) -> bool:
        return self.id in STAMPS

    @property
    def zoned(self) -> bool:
        return self.id in ("TIMESTAMPTZ", "TIMESTAMPTZ_NS")

    @property
    def temporal(self) -> bool:
        return self.id == "DATE" or self.id in STAMPS

    @property
    def text(self) -> bool:
        return self.id == "VARCHAR"

    @property
    def null(self) -> bool:
        return self.id == "NULL"


def T(name: str) -> SqlType:  # noqa: N802 - a type constructor reads best as a capital
    return SqlType(name)


def DECIMAL(width: int, scale: int) -> SqlType:  # noqa: N802
    return SqlType("DECIMAL", width, scale)


BOOLEAN, VARCHAR, NULL, DOUBLE, FLOAT, BIGINT, INTEGER = T("BOOLEAN"), T("VARCHAR"), T("NULL"), T("DOUBLE"), T("FLOAT"), T("BIGINT"), T("INTEGER")
HUGEINT, DATE, TIMESTAMP, INTERVAL, BLOB, STRING_LITERAL = T("HUGEINT"), T("DATE"), T("TIMESTAMP"), T("INTERVAL"), T("BLOB"), T("STRING_LITERAL")


def integer_literal(value: int) -> SqlType:
    return SqlType("INTEGER_LITERAL", value=value)


def literal_type(value: int) -> SqlType:
    """The type DuckDB gives an integer constant: the smallest of INTEGER, BIGINT, HUGEINT,
    UHUGEINT holding it (None: larger, DuckDB's BIGNUM)."""
    for name in ("INTEGER", "BIGINT", "HUGEINT", "UHUGEINT"):
        if fits(value, name):
            return T(name)
    return None


def int_range(name: str) -> tuple[int, int]:
    bits = BITS[name]
    return (0, (1 << bits) - 1) if name.startswith("U") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def fits(value: int, name: str) -> bool:
    lo, hi = int_range(name)
    return lo <= value <= hi


def type_name(t: SqlType) -> str:
    if t.id == "DECIMAL":
        return f"DECIMAL({t.width},{t.scale})"
    return {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ_NS": "TIMESTAMPTZ_NS", "NULL": '"NULL"'}.get(t.id, t.id)


def normalize(t: SqlType) -> SqlType:
    """A literal's type as a value type (LogicalType::NormalizeType)."""
    if t.id == "STRING_LITERAL":
        return VARCHAR
    if t.id == "INTEGER_LITERAL":
        return literal_type(t.value)
    return t


# -- Arrow <-> SQL ---------------------------------------------------------------------------


def from_arrow(t: pa.DataType) -> SqlType | None:
    """The type DuckDB reads an Arrow column as (None: not one a filter can use)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return BOOLEAN
    if pa.types.is_integer(t):
        return T({"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT", "uint8": "UTINYINT",
                  "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT"}[str(t)])  # fmt: skip
    if pa.types.is_float32(t):
        return FLOAT
    if pa.types.is_float64(t):
        return DOUBLE
    if pa.types.is_decimal(t) and t.precision <= 38:
        return DECIMAL(t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return VARCHAR
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        return BLOB
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return SqlType("TIMESTAMPTZ_NS" if t.unit == "ns" else "TIMESTAMPTZ", tz=t.tz)
        return T({"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP", "ns": "TIMESTAMP_NS"}[t.unit])
    if pa.types.is_time(t):
        return T("TIME_NS" if t.unit == "ns" else "TIME")
    if pa.types.is_null(t):
        return NULL
    return None


def stamp_unit(t: SqlType) -> str:
    return {"TIMESTAMP_S": "s", "TIMESTAMP_MS": "ms", "TIMESTAMP": "us", "TIMESTAMP_NS": "ns", "TIMESTAMPTZ": "us", "TIMESTAMPTZ_NS": "ns"}[t.id]


def to_arrow(t: SqlType) -> pa.DataType:
    """The Arrow type values of ``t`` are computed in."""
    t = normalize(t)
    simple = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INTEGER": pa.int32(), "BIGINT": pa.int64(),
              "UTINYINT": pa.uint8(), "USMALLINT": pa.uint16(), "UINTEGER": pa.uint32(), "UBIGINT": pa.uint64(),
              "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "VARCHAR": pa.string(), "BLOB": pa.binary(), "DATE": pa.date32(),
              "TIME": pa.time64("us"), "TIME_NS": pa.time64("ns"), "NULL": pa.null(), "INTERVAL": pa.month_day_nano_interval(),
              "HUGEINT": pa.decimal128(38, 0)}  # fmt: skip
    if t.id in simple:
        return simple[t.id]
    if t.id == "DECIMAL":
        return pa.decimal128(t.width, t.scale)
    if t.stamp:
        return pa.timestamp(stamp_unit(t), tz=("UTC" if t.tz is None else t.tz) if t.zoned else None)
    raise ValueError(f"no Arrow type for {type_name(t)}")


# -- implicit casts (CastRules::ImplicitCast) ---------------------------------------------------------


def _target_cost(t: SqlType) -> int:
    return {"BIGINT": 101, "INTEGER": 102, "HUGEINT": 103, "DOUBLE": 104, "DECIMAL": 105, "TIMESTAMP_NS": 119, "TIMESTAMP": 120,
            "TIMESTAMP_MS": 121, "TIMESTAMP_S": 122, "TIMESTAMPTZ": 123, "TIMESTAMPTZ_NS": 124, "VARCHAR": 149}.get(t.id, 110)  # fmt: skip


_IMPLICIT = {
    "TINYINT": ("SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL"),
    "SMALLINT": ("INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL"),
    "INTEGER": ("BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL"),
    "BIGINT": ("FLOAT", "DOUBLE", "HUGEINT", "DECIMAL"),
    "UTINYINT": ("USMALLINT", "UINTEGER", "UBIGINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL"),
    "USMALLINT": ("UINTEGER", "UBIGINT", "INTEGER", "BIGINT", "HUGEINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL"),
    "UINTEGER": ("UBIGINT", "BIGINT", "UHUGEINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL"),
    "UBIGINT": ("FLOAT", "DOUBLE", "UHUGEINT", "HUGEINT", "DECIMAL"),
    "HUGEINT": ("FLOAT", "DOUBLE", "DECIMAL"),
    "UHUGEINT": ("FLOAT", "DOUBLE", "DECIMAL"),
    "FLOAT": ("DOUBLE",),
    "DOUBLE": (),
    "DECIMAL": ("FLOAT", "DOUBLE"),
    "DATE": ("TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPTZ_NS", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP_S"),
    "TIMESTAMP_S": ("TIMESTAMP", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ"),
    "TIMESTAMP_MS": ("TIMESTAMP", "TIMESTAMP_NS", "TIMESTAMPTZ"),
    "TIMESTAMP_NS": ("TIMESTAMP",),
    "TIMESTAMP": ("TIMESTAMP_NS", "TIMESTAMPTZ", "TIMESTAMPTZ_NS"),
    "TIMESTAMPTZ": ("TIMESTAMPTZ_NS",),  # (the ICU extension's casts: TIMESTAMP_S / _MS -> TIMESTAMPTZ)
}  # fmt: skip


def implicit_cast_cost(frm: SqlType, to: SqlType) -> int:
    """What DuckDB charges to cast ``frm`` to ``to`` implicitly (-1: it does not)."""
    if frm.id == "NULL":
        return _target_cost(to)
    if frm.id == "STRING_LITERAL":
        if to.id in ("INTEGER_LITERAL", "STRING_LITERAL"):
            return -1
        return 1 if to.id == "VARCHAR" else 20
    if frm.id == "INTEGER_LITERAL":
        own = literal_type(frm.value)
        if own is not None and own.id == to.id:
            return 0
        if to.id in ("FLOAT", "DOUBLE") or (to.integral and fits(frm.value, to.id)):
            return _target_cost(to) - 90
        return implicit_cast_cost(own, to) if own is not None else -1
    if frm.id == to.id:
        return 0
    return _target_cost(to) if to.id in _IMPLICIT.get(frm.id, ()) else -1


# -- max logical type (LogicalType::TryGetMaxLogicalType / ForceMaxLogicalType) ---------------------


def decimal_props(t: SqlType) -> tuple[int, int] | None:
    """(width, scale) of ``t`` seen as a DECIMAL (GetDecimalProperties)."""
    if t.id == "DECIMAL":
        return t.width, t.scale
    if t.id == "INTEGER_LITERAL":
        own = literal_type(t.value)
        return decimal_props(own) if own is not None else None
    widths = {"NULL": 0, "BOOLEAN": 1, "TINYINT": 3, "SMALLINT": 5, "INTEGER": 10, "BIGINT": 19, "UTINYINT": 3,
              "USMALLINT": 5, "UINTEGER": 10, "UBIGINT": 20, "HUGEINT": 38, "UHUGEINT": 38}  # fmt: skip
    return (widths[t.id], 0) if t.id in widths else None


def _decimal_size_check(other: SqlType, dec: SqlType) -> SqlType:
    width, scale = dec.width, dec.scale
    props = decimal_props(other)
    if props is not None and props[0] > width - scale:
        return DECIMAL(min(props[0] + scale, 38), scale)
    return dec


def _combine_numeric(a: SqlType, b: SqlType) -> SqlType:
    if _ORDER[a.id] > _ORDER[b.id]:
        a, b = b, a
    if a.id == "BIGINT" or b.id == "UBIGINT":
        return HUGEINT
    if a.id == "INTEGER" or b.id == "UINTEGER":
        return BIGINT
    if a.id == "SMALLINT" or b.id == "USMALLINT":
        return INTEGER
    if a.id == "TINYINT" or b.id == "UTINYINT":
        return T("SMALLINT")
    return DOUBLE


def try_max_type(a: SqlType, b: SqlType, *, force: bool = False) -> SqlType | None:
    """The type both ``a`` and ``b`` are cast to (None: none; ``force``: ForceMaxLogicalType,
    which falls back to the type of the higher rank)."""
    result = _try_max(a, b, force)
    if result is None and force:
        return a if _score(a) >= _score(b) else b
    return result


def _try_max(a: SqlType, b: SqlType, force: bool) -> SqlType | None:
    recurse = (lambda x, y: try_max_type(x, y, force=True)) if force else (lambda x, y: _try_max(x, y, False))
    if a.id != b.id:
        if a.id == "NULL" or b.id == "NULL":
            return normalize(b if a.id == "NULL" else a)
        if a.id == "STRING_LITERAL" or b.id == "STRING_LITERAL":
            return normalize(b if a.id == "STRING_LITERAL" else a)
    elif a.id == "STRING_LITERAL":
        return VARCHAR
    elif a.id == "INTEGER_LITERAL":
        la, lb = literal_type(a.value), literal_type(b.value)
        return None if la is None or lb is None else recurse(la, lb)
    elif a.id == "DECIMAL":
        extra = max(a.width - a.scale, b.width - b.scale)
        scale = max(a.scale, b.scale)
        width = extra + scale
        if width > 38:
            width, scale = 38, 38 - extra
        return DECIMAL(width, scale)
    if a.id != b.id:
        ab, ba = implicit_cast_cost(a, b), implicit_cast_cost(b, a)
        if ab >= 0 and (ab < ba or ba < 0):
            return _decimal_size_check(a, b) if b.id == "DECIMAL" else b
        if ba >= 0:
            return _decimal_size_check(b, a) if a.id == "DECIMAL" else a
        if a.id == "INTEGER_LITERAL":
            own = literal_type(a.value)
            return None if own is None else recurse(own, b)
        if b.id == "INTEGER_LITERAL":
            own = literal_type(b.value)
            return None if own is None else recurse(a, own)
        if a.numeric and b.numeric:
            return _combine_numeric(a, b)
        if a.id == "BOOLEAN" and b.integral:
            return b
        if b.id == "BOOLEAN" and a.integral:
            return a
        return None
    return a


def _score(t: SqlType) -> int:
    order = ["BOOLEAN", "UTINYINT", "TINYINT", "USMALLINT", "SMALLINT", "UINTEGER", "INTEGER", "UBIGINT", "BIGINT",
             "UHUGEINT", "HUGEINT", "DECIMAL", "FLOAT", "DOUBLE"]  # fmt: skip
    if t.id in order:
        return 10 + order.index(t.id)
    return {"TIME": 50, "TIME_NS": 51, "DATE": 52, "TIMESTAMP_S": 53, "TIMESTAMP_MS": 54, "TIMESTAMP": 55, "TIMESTAMPTZ": 55,
            "TIMESTAMP_NS": 56, "TIMESTAMPTZ_NS": 56, "INTERVAL": 58, "VARCHAR": 77, "BLOB": 101}.get(t.id, 0)  # fmt: skip


_SWITCH_FROM_VARCHAR = set(NUMERIC) | {"BOOLEAN", "DATE", "TIME", "TIME_NS", "INTERVAL", "INTEGER_LITERAL"} | set(STAMPS)


def comparison_type(a: SqlType, b: SqlType, *, equality: bool) -> SqlType | None:
    """The type DuckDB compares ``a`` and ``b`` in (BoundComparisonExpression::TryBindComparison):
    ``=``, ``<>``, IN and DISTINCT force a type; ``<`` and friends can fail (None)."""
    result = try_max_type(a, b, force=equality)
    if result is None:
        return None
    if result.id == "DECIMAL":
        pa_, pb = decimal_props(a), decimal_props(b)
        if pa_ is None or pb is None:
            return result
        width = max(pa_[0], pb[0])
        scale = max(pa_[1], pb[1])
        width = max(scale + max(pa_[0] - pa_[1], pb[0] - pb[1]), width)
        return DECIMAL(min(width, 38), scale)
    if result.id == "VARCHAR":
        if a.id != "VARCHAR" and a.id in _SWITCH_FROM_VARCHAR:
            return normalize(a)
        if b.id != "VARCHAR" and b.id in _SWITCH_FROM_VARCHAR:
            return normalize(b)
    return result
