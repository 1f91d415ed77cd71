"""Sizes such as ``16kb`` in options, as Paimon's ``MemorySize.parse`` reads them.

Its own module so that the index types (which take sizes among their options) do not
import :mod:`arrowidx.options`, which knows the index types.
"""

from __future__ import annotations

import re

from .errors import OptionError

_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}  # fmt: skip


def parse_memory_size(text: str, key: str = "size") -> int:
    """Bytes in a size such as ``16kb``, ``32b``, ``1 mb`` (Paimon's ``MemorySize.parse``)."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise OptionError(f"{key}: {text!r} is not a size; use a number with b, kb, mb or gb, e.g. '16kb'")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]
