"""The argument layer of :func:`arrowidx.polars.scan`: ``pl.scan_parquet``'s own arguments,
taken as Polars takes them, and what each becomes for arrowidx.

``scan(source, **arguments)`` accepts every argument of ``pl.scan_parquet`` by its name and
with its default. This module is the one place that says what each one does here:

* sources arrowidx has no folder or file name for (bytes, file objects, lists of them) are
  handed to ``pl.scan_parquet`` unchanged, with every argument: nothing of arrowidx applies;
* Polars' reader settings that never change an answer (``parallel``, ``use_statistics``,
  ``low_memory``, ``cache``) are accepted (arrowidx reads with Polars' defaults);
* ``hive_partitioning`` is the ``partitioning`` arrowidx discovers (None: Polars' rule,
  Hive folders for a single folder given as the source, none otherwise), read as Polars
  reads them (:func:`arrowidx.lake.partitions.polars_partitions`): the key=value folders
  below each folder given (of a file or glob: its whole path), typed by ``hive_schema``,
  else by the first file's own column, else as Polars infers them (Boolean, Int64, Float64,
  then Date or Datetime unless ``try_parse_hive_dates=False``, else String), a column the
  file also holds taking the folder's value; folders Polars refuses (a key ``hive_schema``
  lacks, a value that does not parse, folders of different levels) go to ``pl.scan_parquet``
  unchanged, which raises its own error;
* ``n_rows``, ``row_index_name`` and ``row_index_offset`` shape the frame the scan returns
  (the first ``n_rows`` rows, numbered from ``row_index_offset``: what Polars does with them);
  ``include_file_paths`` adds each row's file path (the files scanned one by one);
* any other argument given with another value than Polars' default is refused with an
  :class:`~arrowidx.errors.OptionError` naming it, never ignored.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError

#: ``pl.scan_parquet``'s arguments and their defaults (Polars 2.1; names of older releases too)
POLARS_DEFAULTS: dict[str, Any] = {
    "n_rows": None,
    "row_index_name": None,
    "row_index_offset": 0,
    "parallel": "auto",
    "use_statistics": True,
    "hive_partitioning": None,
    "glob": True,
    "hidden_file_prefix": None,
    "schema": None,
    "hive_schema": None,
    "try_parse_hive_dates": True,
    "low_memory": False,
    "cache": True,
    "storage_options": None,
    "credential_provider": "auto",
    "include_file_paths": None,
    "missing_columns": "raise",
    "extra_columns": "raise",
    "cast_options": None,
    "decryption": None,
}

#: Polars' private arguments (``pl.read_parquet`` passes ``_expand_paths``) and their defaults
PRIVATE_DEFAULTS: dict[str, Any] = {
    "_expand_paths": True, "_column_mapping": None, "_default_values": None, "_deletion_files": None,
    "_table_statistics": None, "_row_count": None,
}  # fmt: skip

#: arguments that only tune Polars' reader: accepted, never change an answer
READER_SETTINGS = frozenset({"parallel", "use_statistics", "low_memory", "cache"})
#: arguments the frame arrowidx returns applies (:meth:`ScanArguments.shape`; ``include_file_paths``:
#: one scan per file, each with its path)
SHAPING = frozenset({"n_rows", "row_index_name", "row_index_offset", "include_file_paths"})
#: arguments arrowidx maps to its own
MAPPED = frozenset({"hive_partitioning", "hive_schema", "storage_options", "try_parse_hive_dates", "glob",
                    "hidden_file_prefix", "missing_columns"})  # fmt: skip


@dataclass
class ScanArguments:
    """The ``pl.scan_parquet`` arguments one ``scan`` call was given (those differing from
    Polars' defaults), and Polars' private ones (``_name``), kept to hand on unchanged."""

    given: dict[str, Any] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, arguments: dict[str, Any]) -> ScanArguments:
        given = {k: v for k, v in arguments.items() if not k.startswith("_") and not _is_default(k, v)}
        private = {k: v for k, v in arguments.items() if k.startswith("_") and not (k in PRIVATE_DEFAULTS and _same(v, PRIVATE_DEFAULTS[k]))}
        unknown = sorted(k for k in given if k not in POLARS_DEFAULTS)
        if unknown:  # Polars' own error for it first (an argument it removed: its ArgumentRemovedError)
            import polars as pl

            try:
                pl.scan_parquet(b"", **{unknown[0]: given[unknown[0]]})
            except TypeError as e:
                if type(e) is not TypeError:  # (ArgumentRemovedError: Polars says what replaced it)
                    raise
            except Exception:  # noqa: BLE001 - Polars took the argument: arrowidx does not know it
                pass
            raise TypeError(f"scan() got an unexpected keyword argument {unknown[0]!r}")
        return cls(given, private)

    @property
    def file_paths(self) -> str | None:
        """``include_file_paths``: the name of the column of each row's file path (None: none)."""
        return self.given.get("include_file_paths")

    @property
    def deletion_files(self) -> Any:
        """Polars' private ``_deletion_files`` (None: none; see :mod:`arrowidx.polars.deletion_files`)."""
        return self.private.get("_deletion_files")

    @property
    def missing_columns(self) -> str:
        """``missing_columns``: ``"raise"`` (Polars' default) or ``"insert"`` (NULLs)."""
        value = self.given.get("missing_columns", "raise")
        if value not in ("raise", "insert"):
            raise OptionError(f"missing_columns: expected 'raise' or 'insert', got {value!r}")
        return value

    @property
    def hidden_prefixes(self) -> tuple[str, ...]:
        """``hidden_file_prefix`` as a tuple: file names starting with one are skipped."""
        given = self.given.get("hidden_file_prefix")
        if given is None:
            return ()
        prefixes = (given,) if isinstance(given, str) else tuple(given)
        if not all(isinstance(p, str) and p for p in prefixes):
            raise OptionError(f"hidden_file_prefix: expected a prefix or a list of prefixes, got {given!r}")
        return prefixes

    def polars_kwargs(self) -> dict[str, Any]:
        """Every argument, for ``pl.scan_parquet`` itself."""
        return {**self.given, **self.private}

    def check_supported(self) -> None:
        """Refuse what arrowidx cannot do yet with an error naming the argument."""
        for name in self.given:
            if name not in READER_SETTINGS | SHAPING | MAPPED:
                raise OptionError(
                    f"arrowidx.polars.scan does not support {name}= (pl.scan_parquet's argument) on a folder or"
                    f" files arrowidx plans; read without it, or with pl.scan_parquet"
                )
        private = [k for k in self.private if k != "_deletion_files"]  # (rows deleted by position: applied)
        if private:
            name = sorted(private)[0]
            raise OptionError(f"arrowidx.polars.scan does not take Polars' private argument {name}=")

    def partitioning(self, source: Any, partitioning: Any) -> Any:
        """The partitioning arrowidx discovers: ``partitioning`` when given, else what
        ``hive_partitioning`` says (None: Hive folders for a single folder source)."""
        if partitioning is not UNSET:
            return partitioning
        hive = self.given.get("hive_partitioning")
        schema = self.given.get("hive_schema")
        if hive is None:
            hive = schema is not None or _single_folder(source)  # (a hive_schema turns Hive discovery on, as in Polars)
        if not hive:
            return None
        from ..lake.partitions import PolarsHive

        types = None if schema is None else tuple((str(k), _arrow_type(k, v)) for k, v in dict(schema).items())
        return PolarsHive(dates=self.given.get("try_parse_hive_dates", True), types=types, bases=_hive_bases(source))

    def hive_refused(self, source: Any) -> bool:
        """Whether Polars refuses ``source`` with ``hive_partitioning=True``: folders of
        different levels in a list (``pl.scan_parquet`` then raises its own error at collect())."""
        return self.given.get("hive_partitioning") is True and _mixed_levels(source)

    def shape(self, lf):
        """The frame Polars returns for these arguments, from the rows arrowidx read."""
        n_rows = self.given.get("n_rows")
        if n_rows is not None:
            lf = lf.head(n_rows)
        name = self.given.get("row_index_name")
        if name is not None:
            lf = lf.with_row_index(name, offset=self.given.get("row_index_offset", 0))
        return lf


UNSET: Any = object()  # ``partitioning`` not given (scan's default)


def _arrow_type(name: Any, dtype: Any) -> Any:
    """The Arrow type of a Polars data type of ``hive_schema``."""
    import polars as pl

    try:
        return pl.Series("x", [], dtype=dtype).to_arrow().type
    except Exception as e:  # noqa: BLE001 - not a Polars data type
        raise OptionError(f"hive_schema: {name!r}: {dtype!r} is not a Polars data type ({e})") from None


def _is_default(name: str, value: Any) -> bool:
    return name in POLARS_DEFAULTS and _same(value, POLARS_DEFAULTS[name])


def _same(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


def polars_decides(source: Any, glob: bool = True, hidden: tuple[str, ...] = ()) -> bool:
    """Whether ``source`` names nothing arrowidx could plan (a local path that does not exist,
    a glob matching no file, a folder without files): ``pl.scan_parquet`` then gets it
    unchanged, and raises its own error where it raises it (at ``collect()``)."""
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    named = [os.fspath(i) for i in sources if isinstance(i, (str, os.PathLike)) and isinstance(os.fspath(i), str)]
    if hidden and named and all(os.path.isfile(p) and os.path.basename(p).startswith(hidden) for p in named):
        return True  # every file named is hidden by hidden_file_prefix: Polars finds no file
    for item in sources:
        if not isinstance(item, (str, os.PathLike)):
            return False
        path = os.fspath(item)
        if not isinstance(path, str) or ("://" in path and not path.startswith("file://")):
            return False
        path = path[len("file://") :] if path.startswith("file://") else path
        if os.path.isdir(path):
            if not any(files for _, _, files in os.walk(path)) or len(_extensions(path)) > 1:
                return True  # nothing to read, or files of several kinds (Polars refuses the folder)
        elif not os.path.exists(path):
            if not glob or not any(c in path for c in "*?["):
                return True
            import glob as globbing

            if not any(os.path.isfile(p) for p in globbing.iglob(path, recursive=True)):
                return True
    return False


def engine_source(source: Any) -> bool:
    """Whether ``source`` is data rather than a name arrowidx can find indexes for: bytes,
    a buffer, a file object, or a list of them (Polars reads those itself)."""
    if isinstance(source, (list, tuple)):
        return bool(source) and all(engine_source(s) for s in source)
    return isinstance(source, (bytes, bytearray, memoryview, io.IOBase)) or (
        not isinstance(source, (str, os.PathLike)) and hasattr(source, "read")
    )


def _local(item: Any) -> str | None:
    """A local path of a source (``file://`` stripped), or None."""
    if not isinstance(item, (str, os.PathLike)) or not isinstance(os.fspath(item), str):
        return None
    path = os.fspath(item)
    path = path[len("file://") :] if path.startswith("file://") else path
    return None if "://" in path else path


def _hive_bases(source: Any) -> tuple[str, ...] | None:
    """Where Polars reads the key=value folders of each file of ``source`` from (its
    ``hive_start_idx``): ``()`` below the folder given, the folders of a list of folders
    (absolute), None the whole path (a file or glob among the sources)."""
    if not isinstance(source, (list, tuple)):
        return () if _single_folder(source) else None
    paths = [_local(item) for item in source]
    if not paths or any(p is None or not os.path.isdir(p) for p in paths):
        return None
    return tuple(os.path.abspath(p) for p in paths)


def _mixed_levels(source: Any) -> bool:
    """Polars' check of a list with Hive on: a folder after a path of another level (its
    parent differs from the path before, and one of them is a folder) is refused."""
    if not isinstance(source, (list, tuple)):
        return False
    start = None
    previous = None
    for item in source:
        path = _local(item)
        if path is None:
            return False
        here = len(path) if os.path.isdir(path) else 0
        parent = os.path.dirname(os.path.normpath(path))
        if start is not None and start != here and parent != previous:
            return True
        start = here if start is None else min(start, here)
        previous = parent
    return False


def _single_folder(source: Any) -> bool:
    if not isinstance(source, (str, os.PathLike)):
        return False
    path = os.fspath(source)
    if "://" in path:
        return not path.rstrip("/").endswith(".parquet")
    return os.path.isdir(path)


def _extensions(folder: str) -> set[str]:
    """The extensions of the data files below ``folder`` (names starting with ``_`` or ``.``
    left out, as arrowidx's discovery leaves them out)."""
    found: set[str] = set()
    for _, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        found.update(os.path.splitext(f)[1] for f in files if not f.startswith(("_", ".")))
        if len(found) > 1:
            break
    return found
