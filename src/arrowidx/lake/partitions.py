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

import copy
import posixpath
import re
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


def _pairs(rel: str) -> list[tuple[str, str]]:
    """The ``key=value`` folders of a file's relative path, outermost first."""
    out = []
    for part in posixpath.dirname(rel).split("/"):
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


def hive_partitioning(files: list[str], spec: Any = "hive", file_schema: pa.Schema | None = None) -> ds.Partitioning | None:
    """The partitioning of the data files ``files`` (paths relative to the root) per
    ``spec`` (see the module docstring); None when there are no partition folders."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, (pa.Schema, dict)):
        schema = spec if isinstance(spec, pa.Schema) else pa.schema(list(spec.items()))
        return ds.HivePartitioning(schema, null_fallback=NULL_PARTITION)
    if not isinstance(spec, str) and isinstance(spec, ds.Partitioning):
        return spec
    if spec != "hive":
        raise OptionError(f"partitioning={spec!r}: expected 'hive', None, a pyarrow Schema, a dict of types or a pyarrow.dataset.Partitioning")
    # "hive": discovered from the folders (pyarrow.dataset is imported only if one is a partition)
    keys: dict[str, list[str]] = {}
    for rel in files:
        for key, value in _pairs(rel):
            keys.setdefault(key, []).append(value)
    if not keys:
        return None
    taken = set(file_schema.names) if file_schema is not None else set()
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


def partition_view(data, filter):
    """``data`` restricted to the files whose partition may hold a row matching ``filter``
    (a ``pc.Expression`` naming a partition column), sharing its caches; ``data`` itself when
    the partitions rule no file out. The files left out are decided from their folder names
    alone (pyarrow's partition expressions), before any of them is opened."""
    if data.partitioning is None or not isinstance(filter, pc.Expression) or not data._partitions:
        return data
    if not (data._bind_columns(filter) & set(data.partitioning.schema.names)):
        return data
    files = data.files
    cached = data.__dict__.get("_partition_dataset")
    if cached is None or cached[0] is not files:
        from .layout import join

        fragments = [
            data.format.make_fragment(join(data.root, rel), data.fs, partition_expression=data._partitions.get(rel, pc.scalar(True)))
            for rel in files
        ]  # (no file is opened: a fragment only names it)
        cached = (files, ds.FileSystemDataset(fragments, data.schema, data.format, data.fs), {join(data.root, rel): rel for rel in files})
        data._partition_dataset = cached
    by_path = cached[2]
    kept = {by_path[f.path] for f in cached[1].get_fragments(filter=filter)}
    if len(kept) == len(files):
        return data
    view = copy.copy(data)
    view._files = [rel for rel in files if rel in kept]
    view._directories = {}  # key directories over these files only: not shared
    view._partition_dataset = None
    return view


def with_pruned(data, view, plans: list) -> list:
    """``plans`` (of ``view``'s files) with a "pruned" plan for each file of ``data`` that
    its partition ruled out, in file order."""
    import numpy as np

    from .scan import FilePlan

    if view is data:
        return plans
    by_path = {p.path: p for p in plans}
    out = []
    for rel in data.files:
        plan = by_path.get(rel)
        if plan is None:
            entry = data.manifest.files.get(rel)
            rows = entry.rows if entry is not None else 0
            plan = FilePlan(rel, rows, "pruned", note="partition", row_group_offsets=np.array([0, rows]), why="ruled out by its partition folder")
        out.append(plan)
    return out
