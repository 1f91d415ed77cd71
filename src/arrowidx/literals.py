"""Plain Python values as pyarrow Scalars, without pyarrow's Python-object conversion.

``pa.scalar(5, pa.int64())`` (and ``pa.array`` of Python objects) imports pandas, when it is
installed, to see whether the value is a pandas object: ~0.3-0.8 s in a new process, paid
by every reader that builds a filter Expression from a Polars expression or SQL text even
though no pandas code runs. :func:`scalar` builds the same Scalar from its Arrow buffers
(one value, fixed-width, boolean, string or decimal types), and falls back to
``pa.scalar`` for anything else.
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa


def scalar(value: Any, type: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, type)`` for a plain Python value (int, float, bool, str, bytes,
    Decimal; temporal types given as their integer storage), built from buffers."""
    if value is None:
        return pa.nulls(1, type)[0]
    try:
        if pa.types.is_boolean(type) and isinstance(value, (bool, np.bool_)):
            return _from(type, [None, pa.py_buffer(b"\x01" if value else b"\x00")])
        if (pa.types.is_integer(type) or pa.types.is_temporal(type)) and _is_int(value) and not pa.types.is_interval(type):
            width = type.bit_width // 8
            dtype = np.dtype(f"<{'u' if pa.types.is_unsigned_integer(type) else 'i'}{width}")
            info = np.iinfo(dtype)
            if info.min <= int(value) <= info.max:
                return _from(type, [None, pa.py_buffer(np.array([int(value)], dtype).tobytes())])
        if pa.types.is_floating(type) and isinstance(value, (float, int, np.floating)) and not pa.types.is_float16(type):
            return _from(type, [None, pa.py_buffer(struct.pack("<f" if type.bit_width == 32 else "<d", float(value)))])
        if (pa.types.is_string(type) or pa.types.is_large_string(type)) and isinstance(value, str):
            return _variable(type, value.encode())
        if (pa.types.is_binary(type) or pa.types.is_large_binary(type)) and isinstance(value, bytes):
            return _variable(type, value)
        if pa.types.is_decimal128(type) and isinstance(value, (Decimal, int)) and not isinstance(value, bool):
            unscaled = Decimal(value).scaleb(type.scale)
            if unscaled == unscaled.to_integral_value() and abs(unscaled) < 10**type.precision:
                return _from(type, [None, pa.py_buffer(int(unscaled).to_bytes(16, "little", signed=True))])
    except (OverflowError, ValueError, pa.ArrowException):
        pass
    return pa.scalar(value, type)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _from(type: pa.DataType, buffers: list) -> pa.Scalar:
    return pa.Array.from_buffers(type, 1, buffers)[0]


def _variable(type: pa.DataType, data: bytes) -> pa.Scalar:
    offsets = np.array([0, len(data)], np.int64 if pa.types.is_large_string(type) or pa.types.is_large_binary(type) else np.int32)
    return _from(type, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])
