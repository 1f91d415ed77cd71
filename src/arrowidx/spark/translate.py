"""Spark types and pushed filters -> Arrow types and ``pyarrow.compute`` expressions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from ..errors import ArrowIdxError

# --------------------------------------------------------------------------------------
# 3. the data source: schema, filter translation, partitions, read
# --------------------------------------------------------------------------------------


def _spark_type(t: pa.DataType):
    from pyspark.sql import types as T

    if pa.types.is_dictionary(t):
        return _spark_type(t.value_type)
    simple = [
        (pa.types.is_boolean, T.BooleanType),
        (pa.types.is_int8, T.ByteType),
        (pa.types.is_int16, T.ShortType),
        (pa.types.is_int32, T.IntegerType),
        (pa.types.is_int64, T.LongType),
        (pa.types.is_uint8, T.ShortType),  # as Spark's Parquet reader maps unsigned types
        (pa.types.is_uint16, T.IntegerType),
        (pa.types.is_uint32, T.LongType),
        (pa.types.is_float16, T.FloatType),
        (pa.types.is_float32, T.FloatType),
        (pa.types.is_float64, T.DoubleType),
        (pa.types.is_date, T.DateType),
    ]
    for test, spark_type in simple:
        if test(t):
            return spark_type()
    if pa.types.is_uint64(t):
        return T.DecimalType(20, 0)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return T.BinaryType()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_decimal(t) and t.precision <= 38:
        return T.DecimalType(t.precision, t.scale)
    from pyspark.sql.pandas.types import from_arrow_type

    try:
        return from_arrow_type(t, prefer_timestamp_ntz=True)
    except Exception as e:
        raise ArrowIdxError(f"arrowidx cannot hand Arrow type {t} to Spark: {e}") from None


def arrow_to_spark_schema(schema: pa.Schema):
    """The Spark ``StructType`` for an Arrow schema, as Spark's own Parquet reader infers it.

    Timestamps with a time zone become ``TIMESTAMP``, without one ``TIMESTAMP_NTZ``
    (Spark's ``spark.sql.parquet.inferTimestampNTZ.enabled`` default); unsigned integers
    widen as in Spark. Every field is nullable.
    """
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, _spark_type(f.type), True) for f in schema])


def to_spark_arrow(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` in the exact Arrow schema Spark expects from a Python data source."""
    arrays = []
    for f in target:
        column = table.column(f.name)
        if column.type != f.type:
            unsafe = pa.types.is_timestamp(column.type) and column.type.unit == "ns"  # Spark keeps micros
            column = pc.cast(column, f.type, safe=not unsafe)
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=target)


_NULL = pc.scalar(pa.nulls(1, pa.bool_())[0])  # (pa.scalar(None) would import pandas)


def _column(attribute: tuple, schema: pa.Schema) -> pa.Field | None:
    if len(attribute) != 1:
        return None  # nested field: not pushed
    name = attribute[0]
    if schema.get_field_index(name) >= 0:
        return schema.field(name)
    matches = [f for f in schema if f.name.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


def _literal(value: Any, t: pa.DataType) -> pa.Scalar | None:
    """Spark's filter value (a Python object) as a scalar of column type ``t``, or None."""
    import datetime
    import decimal

    if value is None:
        return None
    try:
        if pa.types.is_boolean(t):
            return pa.scalar(value, t) if isinstance(value, bool) else None
        if pa.types.is_signed_integer(t):
            return pa.scalar(value, t) if isinstance(value, int) and not isinstance(value, bool) else None
        if pa.types.is_floating(t) and not pa.types.is_float16(t):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return pa.scalar(float(value), t)
            return None
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return pa.scalar(value, t) if isinstance(value, str) else None
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return pa.scalar(bytes(value), t) if isinstance(value, (bytes, bytearray)) else None
        if pa.types.is_date32(t):
            ok = isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
            return pa.scalar(value, t) if ok else None
        if pa.types.is_timestamp(t):
            if not isinstance(value, datetime.datetime) or t.unit == "ns":
                return None  # Spark sees ns timestamps truncated to micros: no exact filter
            if (value.tzinfo is None) != (t.tz is None):
                return None
            # Spark's literal is microseconds; compare at that precision (pyarrow compares
            # across units exactly), the index binds it to the column's unit when exact.
            return pa.scalar(value, pa.timestamp("us", tz=t.tz))
        if pa.types.is_decimal(t):
            return pa.scalar(value, t) if isinstance(value, decimal.Decimal) else None
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return None
    return None


@dataclass
class Translated:
    """A Spark filter as pyarrow Expressions.

    ``exact``: evaluates, under pyarrow's three-valued logic, to exactly what Spark's filter
    evaluates to (TRUE/FALSE/NULL) for every row; None if no such expression is known (the
    filter is then returned to Spark). ``prune``: what the indexes are asked; each is either
    ``exact`` itself or an expression the indexes answer soundly for Spark's semantics
    (float comparisons: arrowidx's predicate evaluation keeps every row IEEE *or* Java
    ordering selects, and Spark = IEEE on zeros, Java on NaN).
    """

    exact: pc.Expression | None
    prune: pc.Expression | None


def _float_compare(op: str, x: pc.Expression, lit: pa.Scalar) -> pc.Expression:
    """``x <op> lit`` with Spark's float semantics: NaN = NaN, NaN is larger than any number."""
    nan = pc.is_nan(x)  # NULL for NULL rows, so the result stays NULL there, as in Spark
    if math.isnan(lit.as_py()):
        return {"eq": nan, "ge": nan, "gt": x > lit, "lt": ~nan, "le": nan | ~nan}[op]
    plain = {"eq": x == lit, "lt": x < lit, "le": x <= lit, "gt": x > lit, "ge": x >= lit}[op]
    return plain | nan if op in ("gt", "ge") else plain


def _compare(op: str, x: pc.Expression, lit: pa.Scalar, is_float: bool) -> Translated:
    plain = {"eq": x == lit, "lt": x < lit, "le": x <= lit, "gt": x > lit, "ge": x >= lit}[op]
    if is_float:
        return Translated(_float_compare(op, x, lit), plain)
    return Translated(plain, plain)


def _prefix_successor(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (ASCII tail only)."""
    if not prefix or ord(prefix[-1]) >= 0x7F:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


_OPS = {EqualTo: "eq", GreaterThan: "gt", GreaterThanOrEqual: "ge", LessThan: "lt", LessThanOrEqual: "le"}
_UNSUPPORTED = Translated(None, None)


def translate_filter(f, schema: pa.Schema) -> Translated:
    """Translate one ``pyspark.sql.datasource`` filter against the dataset's Arrow schema."""
    if isinstance(f, Not):
        inner = translate_filter(f.child, schema)
        return Translated(
            ~inner.exact if inner.exact is not None else None,
            ~inner.prune if inner.prune is not None else None,
        )
    fld = _column(getattr(f, "attribute", ()), schema)
    if fld is None:
        return _UNSUPPORTED
    t = fld.type
    if pa.types.is_dictionary(t) or pa.types.is_unsigned_integer(t) or pa.types.is_float16(t):
        return _UNSUPPORTED
    x = pc.field(fld.name)
    is_float = pa.types.is_floating(t)
    if isinstance(f, IsNull):
        return Translated(x.is_null(), x.is_null())
    if isinstance(f, IsNotNull):
        return Translated(x.is_valid(), x.is_valid())
    if type(f) in _OPS:
        lit = _literal(f.value, t)
        return _UNSUPPORTED if lit is None else _compare(_OPS[type(f)], x, lit, is_float)
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return Translated(x.is_null(), x.is_null())
        lit = _literal(f.value, t)
        if lit is None:
            return _UNSUPPORTED
        eq = _compare("eq", x, lit, is_float)
        return Translated(eq.exact & x.is_valid(), eq.prune & x.is_valid())
    if isinstance(f, In):
        values = list(f.value)
        has_null = any(v is None for v in values)
        lits = [_literal(v, t) for v in values if v is not None]
        if any(lit is None for lit in lits):
            return _UNSUPPORTED
        if is_float and any(lit.as_py() == 0.0 for lit in lits):  # Spark: -0.0 = 0.0 (is_in tells them apart)
            lits += [pa.scalar(0.0, t), pa.scalar(-0.0, t)]
        try:  # literals keep their own type (timestamps: micros); is_in casts as needed
            value_set = pa.array([lit.as_py() for lit in lits], lits[0].type if lits else t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return _UNSUPPORTED
        # is_in never yields NULL; Spark's IN is NULL for a NULL value or when the list holds
        # NULL and nothing matched. NaN in the set matches NaN, as in Spark.
        found = pc.is_in(x, value_set=value_set, skip_nulls=True)
        expr = found | _NULL if has_null else found | (x.is_null() & _NULL)
        return Translated(expr, expr)
    if isinstance(f, (StringStartsWith, StringEndsWith, StringContains)):
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)) or not isinstance(f.value, str):
            return _UNSUPPORTED
        if isinstance(f, StringEndsWith):
            expr = pc.ends_with(x, pattern=f.value)
            return Translated(expr, expr)
        if isinstance(f, StringContains):
            expr = pc.match_substring(x, pattern=f.value)
            return Translated(expr, expr)
        expr = pc.starts_with(x, pattern=f.value)
        # Over UTF-8 bytes (the order of both Spark and Arrow), "starts with p" is exactly
        # p <= x < successor(p): a range the indexes can answer.
        succ = _prefix_successor(f.value)
        prune = (x >= pa.scalar(f.value, t)) & (x < pa.scalar(succ, t)) if succ is not None else expr
        return Translated(expr, prune)
    return _UNSUPPORTED


def _and_all(exprs: list[pc.Expression]) -> pc.Expression | None:
    out = None
    for e in exprs:
        out = e if out is None else out & e
    return out


