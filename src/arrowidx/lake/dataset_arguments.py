"""The argument layer of :func:`arrowidx.dataset` and its reads: ``pyarrow.dataset``'s own
arguments, taken as pyarrow takes them, and what each becomes for arrowidx (issue 49).

* ``format``: Parquet only (``"parquet"`` or a ``ParquetFileFormat``); another is refused;
* ``filesystem`` as a URI string (``"file:///data"``, ``"s3://..."``): the filesystem it names;
* ``partitioning`` as pyarrow's partitioning factory (``ds.partitioning(flavor="hive")``,
  ``ds.HivePartitioning.discover()``): the partitioning pyarrow discovers with it, its
  types as pyarrow infers them;
* scan settings that never change an answer (``use_threads``, ``batch_size``,
  ``batch_readahead``, ``fragment_readahead``, ``memory_pool``, ``cache_metadata``) are
  accepted on ``to_table``, ``to_batches``, ``scanner``, ``count_rows``; any other is refused
  by name; ``fragment_scan_options`` is taken by ``arrowidx.dataset``'s reads
  (:mod:`arrowidx.lake.dataset_pyarrow`: the read's format gets them);
* ``format`` as a ``ParquetFileFormat``: its read options and fragment scan options are the
  reads' (``LakeFiles.given_format``); ``schema``: the dataset schema, files cast to it.
"""

from __future__ import annotations

from typing import Any

from ..errors import OptionError

#: scan settings of pyarrow's ``Dataset.to_table``/``scanner``/... that never change the rows
SCAN_SETTINGS = frozenset({"use_threads", "batch_size", "batch_readahead", "fragment_readahead", "memory_pool",
                           "cache_metadata"})  # fmt: skip


def check_format(fmt: Any) -> None:
    """Refuse a ``format`` other than Parquet, naming it."""
    if fmt is None or fmt == "parquet" or type(fmt).__name__ == "ParquetFileFormat":
        return
    raise OptionError(f"format={fmt!r}: arrowidx indexes Parquet files only; read other formats with pyarrow.dataset")


def filesystem_of(filesystem: Any) -> Any:
    """``filesystem`` as pyarrow takes it: a URI string names the filesystem."""
    if isinstance(filesystem, str):  # (pyarrow: the URI's filesystem, rooted at its path)
        import pyarrow.fs as pafs

        fs, prefix = pafs.FileSystem.from_uri(filesystem)
        return pafs.SubTreeFileSystem(prefix, fs) if prefix.strip("/") else fs
    return filesystem


def partitioning_of(partitioning: Any, source: Any, filesystem: Any) -> Any:
    """A pyarrow partitioning factory as the partitioning pyarrow discovers with it (its
    folders read and typed by pyarrow itself); anything else unchanged."""
    if type(partitioning).__name__ != "PartitioningFactory":
        return partitioning
    import pyarrow.dataset as ds

    return ds.dataset(source, filesystem=filesystem, format="parquet", partitioning=partitioning).partitioning


def check_scan_settings(settings: dict[str, Any], call: str) -> None:
    """Accept pyarrow's scan settings that never change an answer; refuse others by name."""
    for name, value in settings.items():
        if name in SCAN_SETTINGS:
            continue
        if name == "fragment_scan_options" and value is None:
            continue
        raise TypeError(f"{call}() got an unexpected keyword argument {name!r}")


def check_schema(schema: Any) -> None:
    """``schema=`` is a ``pa.Schema`` (or None), as pyarrow takes it."""
    import pyarrow as pa

    if schema is not None and not isinstance(schema, pa.Schema):
        raise TypeError(f"schema= takes a pyarrow.Schema, got {type(schema).__name__}")


def discovered_files(store: Any, root: str, explicit: list[str] | None, ignore_prefixes: Any,
                     exclude_invalid_files: bool, fmt: Any) -> list[str] | None:  # fmt: skip
    """The data files (full paths) as pyarrow's discovery finds them with ``ignore_prefixes``
    and ``exclude_invalid_files``; ``explicit`` (the files given, or None: the folder's, as
    arrowidx lists them) when neither is given.

    ``ignore_prefixes`` (pyarrow's default ``["_", "."]``): a file below the folder is left
    out when a part of its path starts with one (arrowidx's own folders always are);
    ``exclude_invalid_files``: files pyarrow cannot read as Parquet are left out (each file's
    footer is read, as pyarrow reads it)."""
    import posixpath

    from .layout import is_index_path

    if ignore_prefixes is None and not exclude_invalid_files:
        return explicit
    if ignore_prefixes is not None and (isinstance(ignore_prefixes, str) or not all(isinstance(p, str) for p in ignore_prefixes)):
        raise TypeError(f"ignore_prefixes= takes a list of strings (as pyarrow), got {ignore_prefixes!r}")
    paths = explicit
    if paths is None:
        prefixes = tuple(ignore_prefixes) if ignore_prefixes is not None else ("_", ".")
        paths = []
        for info in store.list(root, hidden=True):
            rel = posixpath.relpath(info.path, root)
            if not is_index_path(rel) and not (prefixes and any(part.startswith(prefixes) for part in rel.split("/"))):
                paths.append(info.path)
    if exclude_invalid_files:
        paths = [p for p in paths if _readable(fmt, store.fs, p)]
    return paths


def _readable(fmt: Any, fs: Any, path: str) -> bool:
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        (fmt if fmt is not None else ds.ParquetFileFormat()).inspect(path, filesystem=fs)
    except (OSError, pa.ArrowException):
        return False
    return True
