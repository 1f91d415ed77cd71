"""Paimon's ``file-index.*`` options: parsing and validation (sizes like ``16kb``:
:func:`arrowidx.sizes.parse_memory_size`)."""

from __future__ import annotations

import re
import warnings
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


class OptionWarning(UserWarning):
    """An option arrowidx accepts but ignores, as Java Paimon does (a per-column option of a
    column no longer listed in a Paimon table's ``file-index.<type>.columns``)."""


def require_mapping(options: object, what: str) -> None:
    """Refuse options that are not a mapping (a ``"key=value"`` string would otherwise be
    read character by character) with the dict to write instead."""
    if options is None or isinstance(options, Mapping):
        return
    if isinstance(options, str):
        key, sep, value = options.partition("=")
        example = f"{{{key.strip()!r}: {value.strip()!r}}}" if sep else "{'file-index.bitmap.columns': 'status'}"
        raise OptionError(f"{what}: options are a dict of KEY: VALUE, not a string; write {example}")
    raise OptionError(f"{what}: options are a dict of KEY: VALUE, got {type(options).__name__}")


def parse_index_options(options: Mapping[str, object], *, unlisted: str = "raise") -> list[ColumnIndexSpec]:
    """The indexes ``options`` asks for, in a stable order.

    Keys are Paimon's: ``file-index.<type>.columns`` (comma separated) and
    ``file-index.<type>.<column>.<option>``. Keys outside ``file-index.`` are ignored;
    unknown keys inside it are an :class:`OptionError` that names the accepted keys.
    A per-column option of a column not listed in its type's ``.columns``: ``unlisted="raise"``
    (an :class:`OptionError`: surely a typo), ``"warn"`` (an :class:`OptionWarning`, then
    ignored, as Java Paimon ignores it in a table's options) or ``"ignore"``.
    """
    from .index import INDEX_TYPES

    require_mapping(options, "index options")
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
        if not column:  # file-index.<type>.<word>: a misspelt "columns"?
            hint = _did_you_mean(key, [f"{PREFIX}{type_name}.columns"])
            raise OptionError(f"unknown option {key!r}{hint}: {type_name} keys are {PREFIX}{type_name}.columns and"
                              f" {PREFIX}{type_name}.<column>.<option>")  # fmt: skip
        if opt not in index_type.options:
            accepted = ", ".join(sorted(index_type.options)) or "none"
            hint = _did_you_mean(opt, sorted(index_type.options))
            raise OptionError(f"unknown option {key!r}{hint}: {type_name} accepts {accepted} per column")
        spec = specs.get((column, type_name))
        if spec is None:
            message = f"option {key!r} is for column {column!r}, which is not listed in file-index.{type_name}.columns"
            if unlisted == "raise":
                raise OptionError(message)
            if unlisted == "warn":  # Java Paimon keeps such a key and ignores it
                warnings.warn(f"{message}: ignored (as Java Paimon ignores it)", OptionWarning, stacklevel=3)
            continue
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
    import difflib  # (only for a misspelled option)

    found = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {found[0]!r}?)" if found else ""


def check_option_keys(options: Mapping[object, object], *, what: str, index_keys: bool = True,
                      accepted: Iterable[str] = ()) -> None:  # fmt: skip
    """Refuse a key that is neither a ``file-index.`` key (with ``index_keys``; those are
    checked by :func:`parse_index_options`) nor one of ``accepted``: a typo
    (``file_index.bitmap.columns``, ``deletion-vectors.bitmap-64``) would otherwise be stored
    and silently do nothing. ``what`` names the call (``"arrowidx.build"``) in the message."""
    require_mapping(options, what)
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


def _columns_value(value: str) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def merge_index_options(stored: Mapping[str, str], new: Mapping[str, object] | None, *, replace: bool = False,
                  drop: Iterable[str] = ()) -> dict[str, str]:  # fmt: skip
    """The options a build uses: ``stored`` plus ``new`` (column lists are united, other keys
    overridden), minus the ``drop`` entries (``"column"`` or ``"column:type"``: the index, its
    per-column options too); with ``replace=True`` only ``new``. The one rule of adding,
    dropping and setting indexes: ``arrowidx.build`` and ``arrowidx paimon rewrite-index``."""
    out = {} if replace else dict(stored)
    for key, value in (new or {}).items():
        key, value = str(key), str(value)
        if key.endswith(".columns") and key in out:
            value = ",".join(dict.fromkeys(_columns_value(out[key]) + _columns_value(value)))
        out[key] = value
    for item in drop:
        column, _, index_type = str(item).partition(":")
        column, index_type = column.strip(), index_type.strip()
        found = False
        for key in [k for k in out if k.endswith(".columns")]:
            kind = key[len("file-index.") : -len(".columns")]
            if index_type and kind != index_type:
                continue
            columns = _columns_value(out[key])
            if column in columns:
                found = True
                columns.remove(column)
                if columns:
                    out[key] = ",".join(columns)
                else:
                    del out[key]
                for k in [k for k in out if k.startswith(f"file-index.{kind}.{column}.")]:
                    del out[k]
        if not found:
            indexed = sorted(f"{c}:{k[len('file-index.') : -len('.columns')]}" for k, v in out.items() if k.endswith(".columns") for c in _columns_value(v))
            raise OptionError(f"drop {item!r}: no such index; indexed are {', '.join(indexed) or 'none'}")
    return out


def index_edits(current: Mapping[str, str], add: Mapping[str, str] | None = None, *, drop: Iterable[str] = (),
                replace: bool = False) -> dict[str, str | None]:  # fmt: skip
    """The option updates (None: unset) that give a table with options ``current`` the
    indexes ``add`` names (``file-index.*`` keys; ``.columns`` lists are united with the
    table's, forgetting nothing), minus ``drop`` (``"column"`` or ``"column:type"``);
    ``replace=True``: ``add`` alone, every other index forgotten. The same rules as
    :func:`arrowidx.build` with ``drop=`` and ``replace=``."""
    before = {k: v for k, v in current.items() if k.startswith(PREFIX) and k not in GLOBAL_KEYS}
    after = merge_index_options(before, add or {}, replace=replace, drop=drop)
    updates: dict[str, str | None] = {k: v for k, v in after.items() if before.get(k) != v}
    updates.update({k: None for k in before if k not in after})
    return updates
