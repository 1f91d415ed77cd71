"""Arrow <-> Paimon types, and the key Java stores in an index for each value.

One table (:data:`ARROW_TO_PAIMON` via :func:`paimon_type`) says which Arrow type is which
Paimon type; :func:`column_keys` turns a whole Arrow column into the keys Java's index
writers compute for it (``Timestamp.getMillisecond()`` for TIMESTAMP(p<=3), ``toMicros()``
above, millis of day for TIME, the unscaled long for DECIMAL, ...), as numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from .errors import ArrowIdxError, UnsupportedTypeError

_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


@dataclass(frozen=True)
class PaimonType:
    """A Paimon data type as far as indexes care.

    ``root`` is one of TINYINT SMALLINT INT BIGINT BOOLEAN STRING DATE TIME TIMESTAMP
    TIMESTAMP_LTZ FLOAT DOUBLE DECIMAL. ``lossy`` is True when the Arrow values are finer
    than the key Java stores (nanosecond timestamps keyed on micros, sub-millisecond TIME
    keyed on millis): such keys only bound a value, they do not identify it.
    """

    root: str
    precision: int | None = None
    scale: int | None = None
    lossy: bool = False

    @property
    def sql(self) -> str:
        """The Paimon SQL spelling, e.g. ``TIMESTAMP(6) WITH LOCAL TIME ZONE``."""
        if self.root == "TIMESTAMP_LTZ":
            return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        if self.root == "DECIMAL":
            return f"DECIMAL({self.precision}, {self.scale})"
        if self.root in ("TIMESTAMP", "TIME"):
            return f"{self.root}({self.precision})"
        return self.root

    @property
    def is_float(self) -> bool:
        return self.root in ("FLOAT", "DOUBLE")

    @property
    def is_string(self) -> bool:
        return self.root == "STRING"

    @property
    def key_dtype(self) -> np.dtype | None:
        """numpy dtype of the keys (None for STRING, whose keys are UTF-8 bytes)."""
        return _KEY_DTYPES.get(self.root)

    @property
    def key_unit(self) -> str | None:
        """Arrow time unit of the key for temporal types (``ms`` or ``us``)."""
        if self.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return "ms" if (self.precision or 0) <= 3 else "us"
        if self.root == "TIME":
            return "ms"
        return None


_KEY_DTYPES = {
    "TINYINT": np.dtype(np.int8),
    "SMALLINT": np.dtype(np.int16),
    "INT": np.dtype(np.int32),
    "BIGINT": np.dtype(np.int64),
    "BOOLEAN": np.dtype(np.bool_),
    "DATE": np.dtype(np.int32),
    "TIME": np.dtype(np.int32),
    "TIMESTAMP": np.dtype(np.int64),
    "TIMESTAMP_LTZ": np.dtype(np.int64),
    "FLOAT": np.dtype(np.float32),
    "DOUBLE": np.dtype(np.float64),
    "DECIMAL": np.dtype(np.int64),
}

# The one table: Arrow type predicate -> Paimon type.
ARROW_TO_PAIMON: list[tuple[str, object]] = [
    ("int8", lambda t: pa.types.is_int8(t) and PaimonType("TINYINT")),
    ("int16", lambda t: pa.types.is_int16(t) and PaimonType("SMALLINT")),
    ("int32", lambda t: pa.types.is_int32(t) and PaimonType("INT")),
    ("int64", lambda t: pa.types.is_int64(t) and PaimonType("BIGINT")),
    ("bool", lambda t: pa.types.is_boolean(t) and PaimonType("BOOLEAN")),
    (
        "string / large_string / string_view",
        lambda t: (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))
        and PaimonType("STRING"),
    ),
    ("date32", lambda t: pa.types.is_date32(t) and PaimonType("DATE")),
    (
        "time32 / time64",
        lambda t: (pa.types.is_time32(t) or pa.types.is_time64(t))
        and PaimonType("TIME", _UNIT_PRECISION[t.unit], lossy=t.unit in ("us", "ns")),
    ),
    (
        "timestamp without tz",
        lambda t: pa.types.is_timestamp(t)
        and t.tz is None
        and PaimonType("TIMESTAMP", _UNIT_PRECISION[t.unit], lossy=t.unit == "ns"),
    ),
    (
        "timestamp with tz",
        lambda t: pa.types.is_timestamp(t)
        and t.tz is not None
        and PaimonType("TIMESTAMP_LTZ", _UNIT_PRECISION[t.unit], lossy=t.unit == "ns"),
    ),
    ("float32", lambda t: pa.types.is_float32(t) and PaimonType("FLOAT")),
    ("float64", lambda t: pa.types.is_float64(t) and PaimonType("DOUBLE")),
    (
        "decimal128",
        lambda t: pa.types.is_decimal128(t) and PaimonType("DECIMAL", t.precision, t.scale),
    ),
]


#: Unsigned integers as the signed type holding every value, as Spark reads them from
#: Parquet (UINT_8 -> SMALLINT, UINT_16 -> INT, UINT_32 -> BIGINT); keys are the values.
_UNSIGNED_AS = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64()}


def index_arrow_type(arrow_type: pa.DataType) -> pa.DataType:
    """The Arrow type whose values an index of an ``arrow_type`` column holds: a dictionary
    (what pandas' ``category`` and Polars' ``Categorical`` write) is indexed as its values,
    ``uint8`` / ``uint16`` / ``uint32`` as the signed type one size up (Paimon's SMALLINT,
    INT, BIGINT); any other type as itself. The bytes are those of an index on a column of
    that type holding the same values, so Java reads them."""
    if pa.types.is_dictionary(arrow_type):
        return index_arrow_type(arrow_type.value_type)
    return _UNSIGNED_AS.get(arrow_type, arrow_type)


@lru_cache(maxsize=64)  # one schema object per schema: a scan's bound filters are kept per schema object
def index_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each field's type as :func:`index_arrow_type` gives it (the schema an
    index is read and a filter bound with)."""
    if all(index_arrow_type(f.type) == f.type for f in schema):
        return schema
    return pa.schema([f.with_type(index_arrow_type(f.type)) for f in schema], schema.metadata)


def paimon_type(arrow_type: pa.DataType) -> PaimonType:
    """The Paimon type for an Arrow type (through :func:`index_arrow_type`), or
    :class:`UnsupportedTypeError`."""
    arrow_type = index_arrow_type(arrow_type)
    if pa.types.is_uint64(arrow_type):
        raise UnsupportedTypeError(
            "Arrow type uint64 has no Paimon index type (Spark reads it as DECIMAL(20, 0), which no index"
            " holds); cast the column to int64 if its values fit"
        )
    for _, match in ARROW_TO_PAIMON:
        found = match(arrow_type)
        if found:
            return found
    supported = ", ".join([name for name, _ in ARROW_TO_PAIMON] + ["uint8 / uint16 / uint32", "dictionaries of these"])
    raise UnsupportedTypeError(f"Arrow type {arrow_type} has no Paimon index type (supported: {supported})")


def parse_paimon_sql_type(text: str) -> PaimonType:
    """A Paimon SQL type string (``INT``, ``TIMESTAMP(3) WITH LOCAL TIME ZONE``, ``DECIMAL(10,2)``)."""
    t = text.strip().upper()
    ltz = t.endswith("WITH LOCAL TIME ZONE")
    if ltz:
        t = t[: -len("WITH LOCAL TIME ZONE")].strip()
    name, _, args = t.partition("(")
    nums = [int(x) for x in args.rstrip(")").split(",") if x.strip()] if args else []
    name = name.strip()
    if name in ("VARCHAR", "CHAR", "STRING"):
        return PaimonType("STRING")
    if name == "TIMESTAMP":
        p = nums[0] if nums else 6
        return PaimonType("TIMESTAMP_LTZ" if ltz else "TIMESTAMP", p)
    if name == "TIME":
        return PaimonType("TIME", nums[0] if nums else 0)
    if name == "DECIMAL":
        return PaimonType("DECIMAL", nums[0] if nums else 10, nums[1] if len(nums) > 1 else 0)
    if name in _KEY_DTYPES:
        return PaimonType(name)
    raise UnsupportedTypeError(f"unknown Paimon type {text!r}")


@dataclass
class Keys:
    """The index keys of one Arrow column chunk.

    ``values``: numpy array of ``ptype.key_dtype`` (nulls hold an arbitrary filler) or, for
    STRING, a ``pa.LargeBinaryArray`` of UTF-8 bytes (nulls empty). ``nulls``: numpy bool
    mask of NULL rows, or None when there are none.
    """

    values: np.ndarray | pa.Array
    nulls: np.ndarray | None

    def __len__(self) -> int:
        return len(self.values)


def _nulls(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    validity = arr.buffers()[0]
    if validity is None:  # (a null-typed array: every slot is null)
        return np.ones(len(arr), bool)
    return ~_bits(validity, arr.offset, len(arr))


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """``n`` bits of an Arrow bitmap from bit ``offset``, as booleans."""
    return np.unpackbits(np.frombuffer(buffer, np.uint8), bitorder="little")[offset : offset + n].view(bool)


def _numbers(arr: pa.Array, fill: bool = False) -> np.ndarray:
    """The values of a fixed-width array (numbers, temporal storage, booleans) from its data
    buffer, null slots 0 / False with ``fill``: what ``fill_null(0).to_numpy()`` gives,
    without pyarrow's numpy conversion, which imports pandas (a literal's keys are
    computed on every read)."""
    t = arr.type
    n = len(arr)
    data = arr.buffers()[1]
    if pa.types.is_boolean(t):
        values = _bits(data, arr.offset, n) if data is not None else np.zeros(n, bool)
    else:
        kind = "f" if pa.types.is_floating(t) else "u" if pa.types.is_unsigned_integer(t) else "i"
        dtype = np.dtype(f"<{kind}{t.bit_width // 8}")
        values = np.frombuffer(data, dtype)[arr.offset : arr.offset + n] if data is not None else np.zeros(n, dtype)
    if fill and arr.null_count:
        values = values.copy()
        values[_nulls(arr)] = 0
    return values


def canonical_float_keys(values: np.ndarray) -> np.ndarray:
    """Floats with every NaN replaced by Java's canonical NaN (``floatToIntBits`` semantics)."""
    if values.dtype == np.float32:
        bits = values.view(np.uint32).copy()
        bits[np.isnan(values)] = 0x7FC00000
        return bits.view(np.float32)
    bits = values.view(np.uint64).copy()
    bits[np.isnan(values)] = 0x7FF8000000000000
    return bits.view(np.float64)


def java_float_order(values: np.ndarray) -> np.ndarray:
    """Signed integers that sort like Java's ``Float.compare`` / ``Double.compare``.

    -0.0 sorts below 0.0 and (canonical) NaN above +inf.
    """
    values = canonical_float_keys(values)
    if values.dtype == np.float32:
        bits = values.view(np.int32)
        return bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))
    bits = values.view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def decimal_unscaled(arr: pa.Array) -> np.ndarray:
    """The unscaled values of a decimal128 array as int64 (Java's ``Decimal.toUnscaledLong``).

    Raises :class:`UnsupportedTypeError` when a value does not fit in a long.
    """
    words = np.frombuffer(arr.buffers()[1], dtype="<i8")[2 * arr.offset : 2 * (arr.offset + len(arr))]
    words = words.reshape(-1, 2)
    low, high = words[:, 0], words[:, 1]
    nulls = _nulls(arr)
    ok = high == (low >> 63)
    if nulls is not None:
        ok |= nulls
    if not ok.all():
        raise UnsupportedTypeError(f"decimal values of {arr.type} do not fit in a 64-bit unscaled long")
    return low.copy()


def column_keys(arr: pa.Array | pa.ChunkedArray, ptype: PaimonType) -> Keys:
    """The keys Java's index writers compute for every row of ``arr``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if index_arrow_type(arr.type) != arr.type:  # dictionaries as their values, unsigned as signed
        arr = arr.cast(index_arrow_type(arr.type))
    nulls = _nulls(arr)
    root = ptype.root
    if root == "STRING":
        if not pa.types.is_large_string(arr.type):
            arr = arr.cast(pa.large_string())
        return Keys(arr.view(pa.large_binary()), nulls)
    if root == "DECIMAL":
        return Keys(decimal_unscaled(arr), nulls)
    if root == "BOOLEAN":
        return Keys(_numbers(arr, fill=True), nulls)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        unit = arr.type.unit
        values = _numbers(arr, fill=True).astype(np.int64, copy=False)
        values = _rescale(values, unit, ptype.key_unit)
        return Keys(values.astype(ptype.key_dtype, copy=False), nulls)
    values = _numbers(arr, fill=nulls is not None)
    values = values.astype(ptype.key_dtype, copy=False)
    if ptype.is_float:
        values = canonical_float_keys(values)
    return Keys(values, nulls)


_UNIT_SCALE = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _rescale(values: np.ndarray, unit: str, key_unit: str) -> np.ndarray:
    """Convert integer time values between units, flooring like Java's ``floorDiv``."""
    src, dst = _UNIT_SCALE[unit], _UNIT_SCALE[key_unit]
    if src == dst:
        return values
    if src < dst:
        return values * (dst // src)
    return np.floor_divide(values, src // dst)


def literal_keys(values: pa.Array, ptype: PaimonType) -> list:
    """The keys of literals already cast to the column's Arrow type, as Python values.

    Null literals give None. Used per literal (never per row), so a list is fine.
    """
    keys = column_keys(values, ptype)
    if isinstance(keys.values, pa.Array):
        out = keys.values.to_pylist()  # per literal, not per row
    else:
        out = keys.values.tolist()
    if keys.nulls is not None:
        out = [None if n else v for v, n in zip(out, keys.nulls.tolist())]
    return out


def integer_array(values: Any, what: str) -> np.ndarray:
    """A 1-D numpy integer array from an Arrow array, numpy array, range or sequence."""
    if isinstance(values, pa.ChunkedArray):
        chunks = [integer_array(c, what) for c in values.chunks]
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
    if isinstance(values, pa.Array):
        if values.null_count:
            raise ArrowIdxError(f"{what} contain {values.null_count} nulls")
        if not pa.types.is_integer(values.type):
            raise UnsupportedTypeError(f"{what} must be integers, got Arrow type {values.type}")
        return values.to_numpy(zero_copy_only=False)
    if isinstance(values, range):
        return np.arange(values.start, values.stop, values.step, dtype=np.int64)
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    if arr.ndim != 1:
        if arr.ndim == 0:
            arr = arr.reshape(1)
        else:
            raise ArrowIdxError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0 and arr.dtype.kind not in "iu":
        return np.zeros(0, np.int64)
    if arr.dtype.kind not in "iu":
        raise UnsupportedTypeError(f"{what} must be integers, got dtype {arr.dtype}")
    return arr
