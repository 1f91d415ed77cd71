"""Paimon's ``file-index.*`` options: parsing, validation and sizes like ``16kb``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import OptionError

PREFIX = "file-index."
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
# Keys under file-index. that are not per-index-type and that we accept.
GLOBAL_KEYS = {IN_MANIFEST_THRESHOLD: "500 bytes", "file-index.read.enabled": "true"}

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


@dataclass
class ColumnIndexSpec:
    """One index to build: a column, an index type and that index's own options."""

    column: str
    index_type: str
    options: dict[str, str] = field(default_factory=dict)


def parse_index_options(options: Mapping[str, object]) -> list[ColumnIndexSpec]:
    """The indexes ``options`` asks for, in a stable order.

    Keys are Paimon's: ``file-index.<type>.columns`` (comma separated) and
    ``file-index.<type>.<column>.<option>``. Keys outside ``file-index.`` are ignored;
    unknown keys inside it are an :class:`OptionError` that names the accepted keys.
    """
    from .index import INDEX_TYPES

    specs: dict[tuple[str, str], ColumnIndexSpec] = {}
    per_column: list[tuple[str, str, str, str]] = []
    for key, value in options.items():
        if not isinstance(key, str) or not key.startswith(PREFIX):
            continue
        if key in GLOBAL_KEYS:
            continue
        rest = key[len(PREFIX) :]
        type_name = next((t for t in sorted(INDEX_TYPES, key=len, reverse=True) if rest.startswith(t + ".")), None)
        if type_name is None:
            raise OptionError(
                f"unknown option {key!r}: index types are {', '.join(sorted(INDEX_TYPES))}; "
                f"other file-index keys are {', '.join(GLOBAL_KEYS)}"
            )
        tail = rest[len(type_name) + 1 :]
        if tail == "columns":
            for column in (c.strip() for c in str(value).split(",")):
                if column:
                    specs.setdefault((column, type_name), ColumnIndexSpec(column, type_name))
            continue
        column, _, opt = tail.rpartition(".")
        per_column.append((key, type_name, column, opt))
    for key, type_name, column, opt in per_column:
        index_type = INDEX_TYPES[type_name]
        if opt not in index_type.options:
            accepted = ", ".join(sorted(index_type.options)) or "none"
            raise OptionError(f"unknown option {key!r}: {type_name} accepts {accepted}")
        spec = specs.get((column, type_name))
        if spec is None:
            raise OptionError(
                f"option {key!r} is for column {column!r}, which is not listed in file-index.{type_name}.columns"
            )
        spec.options[opt] = str(options[key])
    for spec in specs.values():
        INDEX_TYPES[spec.index_type].check_options(spec.column, spec.options)
    return list(specs.values())


def in_manifest_threshold(options: Mapping[str, object]) -> int:
    """``file-index.in-manifest-threshold`` in bytes (default 500 bytes)."""
    return parse_memory_size(str(options.get(IN_MANIFEST_THRESHOLD, "500 bytes")), IN_MANIFEST_THRESHOLD)
