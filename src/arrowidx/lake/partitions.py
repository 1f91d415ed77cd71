"""Hive-style partition folders (``key=value/``): discovered by default, as Polars'
``scan_parquet(hive_partitioning=True)``, Spark and DuckDB discover them.

:func:`hive_partitioning` looks at a dataset's data files and returns the
``pyarrow.dataset`` partitioning their folders spell (None when no folder does), its field
types inferred as Spark and DuckDB infer them: integers (``int32``, or ``int64`` beyond),
dates (``YYYY-MM-DD``: ``date32``), else strings; ``__HIVE_DEFAULT_PARTITION__`` is NULL.
:func:`partition_expressions` gives each file's partition expression (``dt == 2024-01-02``),
which pyarrow uses to fill the partition columns and to prune files and row groups.

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


# Polars' inference of Hive values (pl.scan_parquet(hive_partitioning=True)): Int64, Float64,
# then with try_parse_hive_dates a Date or a Datetime("us"), else String.
_PL_INT = re.compile(r"-?\d+")
_PL_FLOAT = re.compile(r"[-+]?((\d*\.\d+)([eE][-+]?\d+)?|inf|NaN|(\d+)[eE][-+]?\d+|\d+\.)")
_PL_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?")
#: ``partitioning=`` values asking for Polars' inference (arrowidx.polars.scan passes them)
POLARS_HIVE = ("polars", "polars-no-dates")


@dataclass(frozen=True)
class PolarsHive:
    """Hive folders read as ``pl.scan_parquet`` reads them: ``types`` for the columns its
    ``hive_schema`` names, Polars' inference for the others (``dates``: try_parse_hive_dates)."""

    dates: bool = True
    types: tuple[tuple[str, pa.DataType], ...] = ()


def _infer_polars(values: list[str], dates: bool) -> pa.DataType:
    present = [v for v in values if v != NULL_PARTITION]
    if not present:
        return pa.string()
    if all(_PL_INT.fullmatch(v) and -(2**63) <= int(v) < 2**63 for v in present):
        return pa.int64()
    if all(_PL_INT.fullmatch(v) or _PL_FLOAT.fullmatch(v) for v in present):
        return pa.float64()
    if dates:
        for pattern, kind in ((_DATE, pa.date32()), (_PL_DATETIME, pa.timestamp("us"))):
            if all(pattern.fullmatch(v) for v in present):
                try:
                    pa.array([v.replace("T", " ") for v in present]).cast(kind)
                    return kind
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    pass
    return pa.string()


def hive_base(folder: str) -> str:
    """The folder above the ``key=value`` folders ``folder`` ends with (Polars reads the
    Hive values of a file's own folders: ``t/a=1/b=2/data.bin`` has ``a`` and ``b``)."""
    while "=" in posixpath.basename(folder) and posixpath.dirname(folder) not in ("", folder):
        folder = posixpath.dirname(folder)
    return folder


def hive_partitioning(files: list[str], spec: Any = "hive", file_schema: pa.Schema | None = None) -> ds.Partitioning | None:
    """The partitioning of the data files ``files`` (paths relative to the root) per
    ``spec`` (see the module docstring); None when there are no partition folders."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, (pa.Schema, dict)):
        schema = spec if isinstance(spec, pa.Schema) else pa.schema(list(spec.items()))
        return ds.HivePartitioning(schema, null_fallback=NULL_PARTITION)
    if not isinstance(spec, (str, PolarsHive)) and isinstance(spec, ds.Partitioning):  # (ds: imported only here)
        return spec
    if isinstance(spec, str) and spec in POLARS_HIVE:
        spec = PolarsHive(dates=spec == "polars")
    if spec != "hive" and not isinstance(spec, PolarsHive):
        raise OptionError(f"partitioning={spec!r}: expected 'hive', None, a pyarrow Schema, a dict of types or a pyarrow.dataset.Partitioning")
    # "hive": discovered from the folders (pyarrow.dataset is imported only if one is a partition)
    keys: dict[str, list[str]] = {}
    for folder in dict.fromkeys(map(posixpath.dirname, files)):  # (each folder once: the values' types are the same)
        for key, value in _folder_pairs(folder):
            keys.setdefault(key, []).append(value)
    if not keys:
        return None
    taken = set(file_schema.names) if file_schema is not None else set()
    if isinstance(spec, PolarsHive):  # Polars: hive_schema's types, the rest inferred as Polars does
        given = dict(spec.types)
        fields = [pa.field(k, given[k] if k in given else _infer_polars(v, spec.dates)) for k, v in keys.items()
                  if k not in taken or k in given]  # fmt: skip
    else:
        fields = [pa.field(k, _infer(v)) for k, v in keys.items() if k not in taken]
    if not fields:
        return None
    return ds.HivePartitioning(pa.schema(fields), null_fallback=NULL_PARTITION)


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


def with_partition_fields(schema: pa.Schema, partitioning: ds.Partitioning | None) -> pa.Schema:
    """The file schema plus the partition fields it does not already hold."""
    if partitioning is None:
        return schema
    for f in partitioning.schema:
        if schema.get_field_index(f.name) < 0:
            schema = schema.append(f)
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
