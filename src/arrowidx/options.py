"""Paimon's ``file-index.*`` options: parsing and validation (sizes like ``16kb``:
:func:`arrowidx.sizes.parse_memory_size`)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .errors import OptionError
from .sizes import parse_memory_size

PREFIX = "file-index."
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
# Keys under file-index. that are not per-index-type and that we accept.
GLOBAL_KEYS = {IN_MANIFEST_THRESHOLD: "500 bytes", "file-index.read.enabled": "true"}

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
                f"unknown option {key!r}{_did_you_mean(key, known_keys())}: index types are"
                f" {', '.join(sorted(INDEX_TYPES))}; other file-index keys are {', '.join(GLOBAL_KEYS)}"
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
            hint = _did_you_mean(opt, sorted(index_type.options))
            raise OptionError(f"unknown option {key!r}{hint}: {type_name} accepts {accepted} per column")
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


#: Keys outside ``file-index.`` that arrowidx itself reads (a delete's vector kind).
DELETION_KEYS = {"deletion-vectors.bitmap64": "false"}


def known_keys() -> list[str]:
    """Every option key arrowidx knows, per column keys shown for a column ``<col>``."""
    from .index import INDEX_TYPES

    keys = [f"{PREFIX}{t}.columns" for t in sorted(INDEX_TYPES)]
    keys += [f"{PREFIX}{t}.<col>.{o}" for t in sorted(INDEX_TYPES) for o in sorted(INDEX_TYPES[t].options)]
    return keys + list(GLOBAL_KEYS) + list(DELETION_KEYS)


def _did_you_mean(key: str, candidates: Iterable[str]) -> str:
    found = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {found[0]!r}?)" if found else ""


def check_option_keys(options: Mapping[object, object], *, what: str, index_keys: bool = True,
                      accepted: Iterable[str] = ()) -> None:  # fmt: skip
    """Refuse a key that is neither a ``file-index.`` key (with ``index_keys``; those are
    checked by :func:`parse_index_options`) nor one of ``accepted``: a typo
    (``file_index.bitmap.columns``, ``deletion-vectors.bitmap-64``) would otherwise be stored
    and silently do nothing. ``what`` names the call (``"arrowidx.build"``) in the message."""
    accepted = set(accepted)
    candidates = ([k for k in known_keys() if k.startswith(PREFIX) and "<col>" not in k] if index_keys else []) + sorted(accepted)
    for key in options:
        if not isinstance(key, str):
            raise OptionError(f"{what}: option keys are strings, got {key!r}")
        if (index_keys and key.startswith(PREFIX)) or key in accepted:
            continue
        hint = _did_you_mean(key, candidates) or _did_you_mean(re.sub(r"[^a-z0-9]+", "-", key.lower()), candidates)
        takes = " and ".join(x for x in ("file-index.* keys" if index_keys else "", ", ".join(sorted(accepted))) if x)
        raise OptionError(f"{what}: unknown option {key!r}{hint}; it takes {takes or 'no options'}")
