"""Hive-style partition folders (``key=value/``): discovered by default, as Polars'
``scan_parquet(hive_partitioning=True)``, Spark and DuckDB discover them.

:func:`hive_partitioning` looks at a dataset's data files and returns the
``pyarrow.dataset`` partitioning their folders spell (None when no folder does), its field
types inferred as Spark and DuckDB infer them: integers (``int32``, or ``int64`` beyond),
dates (``YYYY-MM-DD``: ``date32``), else strings; ``__HIVE_DEFAULT_PARTITION__`` is NULL.
:func:`partition_expressions` gives each file's partition expression (``dt == 2024-01-02``),
which pyarrow uses to fill the partition columns and to prune files and row groups.
:func:`polars_partitions` reads them as ``pl.scan_parquet`` does (``arrowidx.polars.scan``):
Polars' types (its CSV reader's inference and parsing), the folders below those given, and a
column the file also holds taking its value from the folder.

The ``partitioning=`` argument of :func:`arrowidx.dataset` (and ``arrowidx.polars.scan``,
the CLI's ``--partitioning``): ``"hive"`` (default: discover), ``None`` (no partition
columns), a ``pa.Schema`` or a ``{name: type}`` dict (Hive folders with these types), or a
``pyarrow.dataset.Partitioning``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from .._lazy import lazy_module
from ..errors import OptionError

ds = lazy_module("pyarrow.dataset")  # it imports pandas: a lake without partition folders never pays it

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_INT = re.compile(r"[-+]?\d{1,18}")


def _folder_pairs(folder: str) -> list[tuple[str, str]]:
    """The ``key=value`` parts of a folder (relative to the root), outermost first."""
    out = []
    for part in folder.split("/"):
        key, sep, value = part.partition("=")
        if not sep or not key:
            return []  # a folder that is not key=value: pyarrow's hive rule reads none above it either
        out.append((unquote(key), unquote(value)))
    return out


def _infer(values: list[str]) -> pa.DataType:
    present = [v for v in values if v != NULL_PARTITION]
    if present and all(_INT.fullmatch(v) for v in present):
        return pa.int32() if all(-(2**31) <= int(v) < 2**31 for v in present) else pa.int64()
    if present and all(_DATE.fullmatch(v) for v in present):
        try:
            pa.array(present).cast(pa.date32())
            return pa.date32()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    return pa.string()


# Polars' Hive columns (pl.scan_parquet(hive_partitioning=True)), as Polars makes them: the
# key=value folders of the first file (below the folders given), typed by hive_schema, else by
# the first file's own column, else inferred from every file's value (Boolean, Int64, Float64,
# with try_parse_hive_dates a Date or Datetime, else String); values read as Polars reads them.
#: ``partitioning=`` values asking for Polars' inference (arrowidx.polars.scan passes them)
POLARS_HIVE = ("polars", "polars-no-dates")


@dataclass(frozen=True)
class PolarsHive:
    """Hive folders read as ``pl.scan_parquet`` reads them.

    ``dates``: try_parse_hive_dates; ``types``: its ``hive_schema`` (None: not given);
    ``bases``: where a file's key=value folders start, as Polars' ``hive_start_idx`` says:
    ``()`` below the lake root (a folder given), the folders given (a list of folders: only
    the key=value folders below each), None the whole path (files and globs)."""

    dates: bool = True
    types: tuple[tuple[str, pa.DataType], ...] | None = None
    bases: tuple[str, ...] | None = ()


class HivePathError(OptionError):
    """Hive folders Polars refuses to read (a key its hive_schema lacks, a value that does
    not parse as its column's type, files with other keys than the first file's):
    ``arrowidx.polars.scan`` hands such a source to ``pl.scan_parquet``, which raises its own error."""


def polars_semantics(spec: Any) -> bool:
    """Whether ``partitioning=`` asks for Polars' Hive columns (their values from the
    folders, also for a column the file holds)."""
    return isinstance(spec, PolarsHive) or (isinstance(spec, str) and spec in POLARS_HIVE)


def same_columns(spec: Any, partitioning: Any) -> Any:
    """The ``partitioning=`` a dataset of some of a lake's files is opened with to get the
    lake's Hive columns (``spec`` as opened, ``partitioning`` as found): for Polars' Hive
    columns, the lake's types as a hive_schema (a subset of the folders would infer others)."""
    if polars_semantics(spec) and partitioning is not None:
        spec = spec if isinstance(spec, PolarsHive) else PolarsHive(dates=spec == "polars")
        return PolarsHive(dates=spec.dates, types=tuple((f.name, f.type) for f in partitioning.schema), bases=spec.bases)
    return partitioning


def _polars_pairs(path: str) -> list[tuple[str, str]]:
    """The ``key=value`` folders of ``path`` as Polars parses them (the file name left out;
    one ``=``, no ``*`` in the value; the value percent-decoded, the key as written)."""
    out = []
    for part in path.split("/")[:-1]:
        bits = part.split("=")
        if len(bits) != 2 or "*" in bits[1]:
            continue
        try:
            out.append((bits[0], unquote(bits[1], errors="strict")))
        except UnicodeDecodeError:
            continue  # (not UTF-8 once decoded: Polars reads no value there)
    return out


def _polars_path(folder: str, spec: PolarsHive, root: str) -> str:
    """The part of a file's path (in ``folder``, relative to ``root``) whose key=value
    folders are its Hive values (Polars' ``hive_start_idx``), the file name a placeholder."""
    if spec.bases == ():
        return f"{folder}/f" if folder else "f"
    full = posixpath.join(root, folder, "f")
    for base in spec.bases or ():
        base = base.rstrip("/") + "/"
        if full.startswith(base):
            return full[len(base) :]
    return full


def _no_dates(t: pa.DataType, dates: bool) -> pa.DataType:
    temporal = pa.types.is_temporal(t)
    return pa.string() if temporal and not dates else t


def polars_partitions(files: list[str], spec: Any, root: str, first_schema: Any) -> tuple[Any, dict[str, pc.Expression]]:
    """``(partitioning, each file's partition expression)`` of ``files`` (relative to
    ``root``) as Polars reads their Hive folders (see :class:`PolarsHive`);
    ``first_schema()`` is the first file's Arrow schema (None if unreadable). Raises
    :class:`HivePathError` where Polars raises."""
    if isinstance(spec, str):
        spec = PolarsHive(dates=spec == "polars")
    if not files:
        return None, {}
    folders = tuple(dict.fromkeys(map(posixpath.dirname, files)))
    if not any("=" in _polars_path(f, spec, root) for f in folders):
        return None, {}  # no key=value folder (nothing read, not even the first file's schema)
    schema = first_schema() if spec.types is None else None
    first = posixpath.dirname(files[0])
    key = ("polars hive", spec, root, first, folders, None if schema is None else schema.to_string(show_schema_metadata=False))
    from .. import facts

    partitioning, by_folder = facts.DERIVED.get(key, lambda: (_polars_folders(folders, first, spec, root, schema), 256 * len(folders)))
    return partitioning, {rel: by_folder[posixpath.dirname(rel)] for rel in files} if partitioning is not None else {}


def _polars_folders(folders: tuple[str, ...], first: str, spec: PolarsHive, root: str,
                    schema: pa.Schema | None) -> tuple[Any, dict[str, pc.Expression]]:  # fmt: skip
    """:func:`polars_partitions` per folder (``first``: the first file's; ``schema``: its
    Arrow schema, None when hive_schema is given or the file unreadable): made once per
    list of folders (each query refreshes the file list)."""
    pairs = {folder: _polars_pairs(_polars_path(folder, spec, root)) for folder in folders}
    keys = list(dict.fromkeys(k for k, _ in pairs[first]))
    if not keys and spec.types is None:
        return None, {}  # the first file has none: no Hive columns (Polars' rule)
    given = dict(spec.types) if spec.types is not None else None
    types: dict[str, pa.DataType | None] = {}
    for k in keys:
        if given is not None:
            if k not in given:
                raise HivePathError(f"{first or root}: path contains column not present in the given Hive schema: {k!r}")
            types[k] = _no_dates(given[k], spec.dates)
        elif schema is not None and schema.get_field_index(k) >= 0:
            types[k] = _no_dates(schema.field(k).type, spec.dates)  # the file's own column's type
        else:
            types[k] = None  # inferred
    for folder, found in pairs.items():
        if [k for k, _ in found] != keys:
            raise HivePathError(f"{folder or root}: its key=value folders are not the first file's ({', '.join(keys)})")
    if not keys:
        return None, {}
    values = _polars_values(keys, types, [[v for _, v in pairs[f]] for f in folders], spec.dates)
    fields = [pa.field(k, values[k].type) for k in keys]
    by_folder = {}
    for i, folder in enumerate(folders):
        conditions = [pc.field(k).is_null() if not values[k][i].is_valid else pc.field(k) == values[k][i] for k in keys]
        expr = conditions[0]
        for c in conditions[1:]:
            expr = expr & c
        by_folder[folder] = expr
    return ds.HivePartitioning(pa.schema(fields), null_fallback=NULL_PARTITION), by_folder


def _polars_values(keys: list[str], types: dict[str, pa.DataType | None], rows: list[list[str]], dates: bool) -> dict[str, pa.Array]:
    """Each key's values (one per folder) typed and parsed as Polars parses Hive values:
    by its CSV reader (the same inference and parsing), ``__HIVE_DEFAULT_PARTITION__`` NULL."""
    import io

    import polars as pl

    names = [f"c{i}" for i in range(len(keys))]
    lines = []
    for row in rows:
        cells = ["" if v == NULL_PARTITION else v for v in row]
        if any(("\x1f" in c or "\n" in c or "\r" in c) for c in cells):
            raise HivePathError(f"a Hive value holds a control character: {row!r}")
        lines.append("\x1f".join(["x", *cells]))
    overrides = {n: pl.from_arrow(pa.schema([pa.field(n, types[k])]).empty_table()).schema[n]
                 for n, k in zip(names, keys) if types[k] is not None}  # fmt: skip
    try:
        frame = pl.read_csv(io.BytesIO("\n".join(lines).encode()), has_header=False, separator="\x1f", quote_char=None,
                            try_parse_dates=dates, infer_schema_length=None, new_columns=["_", *names],
                            schema_overrides=overrides)  # fmt: skip
    except pl.exceptions.PolarsError as e:
        raise HivePathError(f"Hive values Polars does not read: {str(e).splitlines()[0]}") from None
    out = {}
    for i, (n, k) in enumerate(zip(names, keys)):
        column = frame[n]
        if column.dtype == pl.Time or column.dtype == pl.Int128 or column.dtype.is_nested():
            raise HivePathError(f"Hive column {k!r}: Polars reads its values as {column.dtype} (left to Polars)")
        if column.dtype == pl.String:  # an empty value is "" (NULL only for __HIVE_DEFAULT_PARTITION__), as Polars has it
            arrow = pa.array([None if row[i] == NULL_PARTITION else row[i] for row in rows], pa.string())
        elif types[k] is not None:
            arrow = column.to_arrow().cast(types[k])
        else:
            arrow = column.to_arrow()
        out[k] = arrow
    return out


def hive_base(folder: str) -> str:
    """The folder above the ``key=value`` folders ``folder`` ends with (Polars reads the
    Hive values of a file's own folders: ``t/a=1/b=2/data.bin`` has ``a`` and ``b``)."""
    while "=" in posixpath.basename(folder) and posixpath.dirname(folder) not in ("", folder):
        folder = posixpath.dirname(folder)
    return folder


def discover_partitions(files: list[str], spec: Any, root: str, first_schema: Any) -> tuple[Any, dict[str, pc.Expression]]:
    """``(partitioning, each file's partition expression)`` of the data files ``files``
    (relative to ``root``) per ``spec`` (see the module docstring); ``(None, {})`` when
    there are no partition folders. ``first_schema()``: the first file's Arrow schema (Polars'
    Hive columns take the type of a column the file holds)."""
    if polars_semantics(spec):
        return polars_partitions(files, spec, root, first_schema)
    partitioning = hive_partitioning(files, spec)
    return partitioning, partition_expressions(partitioning, files) if partitioning is not None else {}


def hive_partitioning(files: list[str], spec: Any = "hive") -> ds.Partitioning | None:
    """The partitioning of the data files ``files`` (paths relative to the root) per
    ``spec`` (see the module docstring; Polars' own: :func:`polars_partitions`); None when
    there are no partition folders."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, (pa.Schema, dict)):
        schema = spec if isinstance(spec, pa.Schema) else pa.schema(list(spec.items()))
        return ds.HivePartitioning(schema, null_fallback=NULL_PARTITION)
    if not isinstance(spec, (str, PolarsHive)) and isinstance(spec, ds.Partitioning):  # (ds: imported only here)
        return spec
    if spec != "hive":
        raise OptionError(f"partitioning={spec!r}: expected 'hive', None, a pyarrow Schema, a dict of types or a pyarrow.dataset.Partitioning")
    # "hive": discovered from the folders (pyarrow.dataset is imported only if one is a partition)
    keys: dict[str, list[str]] = {}
    for folder in dict.fromkeys(map(posixpath.dirname, files)):  # (each folder once: the values' types are the same)
        for key, value in _folder_pairs(folder):
            keys.setdefault(key, []).append(value)
    if not keys:
        return None
    return ds.HivePartitioning(pa.schema([pa.field(k, _infer(v)) for k, v in keys.items()]), null_fallback=NULL_PARTITION)


def partition_expressions(partitioning: ds.Partitioning, files: list[str]) -> dict[str, pc.Expression]:
    """Each file's partition expression (``pc.scalar(True)`` for a file outside any)."""
    out: dict[str, pc.Expression] = {}
    for rel in files:
        folder = posixpath.dirname(rel)
        try:
            out[rel] = partitioning.parse("/" + folder + "/") if folder else pc.scalar(True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise OptionError(f"{rel}: its partition folders do not match the partitioning ({e})") from None
    return out


def with_partition_fields(schema: pa.Schema, partitioning: ds.Partitioning | None, replace: bool = False) -> pa.Schema:
    """The file schema plus the partition fields it does not already hold (``replace``: a
    field it holds takes the partition field's type, in its place, as Polars' Hive columns do)."""
    if partitioning is None:
        return schema
    for f in partitioning.schema:
        i = schema.get_field_index(f.name)
        if i < 0:
            schema = schema.append(f)
        elif replace:
            schema = schema.set(i, f)
    return schema


def partition_values(expression: pc.Expression) -> dict[str, Any]:
    """``{column: value}`` of a file's partition expression (None for a NULL partition)."""
    keys = ds.get_partition_keys if hasattr(ds, "get_partition_keys") else ds._get_partition_keys
    return dict(keys(expression))


def partition_dataset(files: list[str], expressions: dict[str, pc.Expression], paths: list[str], schema: pa.Schema,
                      fmt: ds.ParquetFileFormat, fs) -> ds.FileSystemDataset:  # fmt: skip
    """``files`` (at ``paths``) as one pyarrow dataset of fragments that only name them and
    carry their partition expressions: what :func:`kept_by_partitions` asks (no file is opened)."""
    fragments = [
        fmt.make_fragment(path, fs, partition_expression=expressions.get(rel, pc.scalar(True))) for rel, path in zip(files, paths)
    ]
    return ds.FileSystemDataset(fragments, schema, fmt, fs)


def kept_by_partitions(dataset: ds.FileSystemDataset, filter: pc.Expression) -> set[str]:
    """The paths of ``dataset``'s files whose partition may hold a row matching ``filter``:
    decided from their folder names alone (pyarrow's partition expressions)."""
    return {f.path for f in dataset.get_fragments(filter=filter)}
