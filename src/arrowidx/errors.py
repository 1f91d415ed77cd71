"""The exceptions arrowidx raises: every one derives from ArrowIdxError.

Every one crosses a process boundary whole (a Spark executor, a ``multiprocessing`` or
``concurrent.futures`` worker, a Polars ``map_elements``): pickling and ``copy`` rebuild
it with its message and attributes, whatever its constructor takes
(:meth:`ArrowIdxError.__reduce__`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: Where lakes' index files are, by the name arrowidx uses for them inside
#: (``<root>/_arrowidx``, :mod:`arrowidx.lake.layout`): each :class:`~arrowidx.lake.layout.LakeStore`
#: registers its own, so a message names a file where the user finds it (the sidecar).
INDEX_ROOTS: dict[str, str] = {}


def where_it_is(text: str) -> str:
    """``text`` with the lakes' internal index-file names replaced by where the files are."""
    if "_arrowidx" not in text:
        return text
    for logical, real in list(INDEX_ROOTS.items()):
        if logical in text:
            text = re.sub(re.escape(logical) + r"(?![\w.-])", lambda _m, r=real: r, text)
    return text


def _rebuild(cls: type, args: tuple, state: dict[str, Any]) -> BaseException:
    """An exception of ``cls`` with ``args`` and attributes ``state``, without calling
    ``cls.__init__`` (whose arguments, keyword-only ones included, made the message that
    ``args`` already holds)."""
    error = cls.__new__(cls, *args)
    BaseException.__init__(error, *args)  # (OSError subclasses: args as given, not re-parsed)
    error.__dict__.update(state)
    return error


class ArrowIdxError(Exception):
    """Base class of every error arrowidx raises on purpose."""

    def __init__(self, *args: Any) -> None:
        if INDEX_ROOTS:  # name index files where they are (the sidecar), not by their internal name
            args = tuple(where_it_is(a) if isinstance(a, str) else a for a in args)
            for name in ("source", "path"):
                if isinstance(self.__dict__.get(name), str):
                    self.__dict__[name] = where_it_is(self.__dict__[name])
        super().__init__(*args)

    def __reduce__(self):
        # Exception's own reduction calls ``cls(*args)``, which fails for a constructor with
        # required keyword-only arguments (StorageError(message, path=...)) and builds another
        # message for one that formats its arguments: rebuild from the state instead.
        return _rebuild, (type(self), self.args, dict(self.__dict__))


class CorruptIndexError(ArrowIdxError):
    """Bytes that do not parse as the format they claim to be.

    The message names the source (a file path or ``<bytes>``) and the byte offset
    where reading failed, so a user can find the broken file.
    """

    def __init__(self, message: str, *, source: str = "<bytes>", offset: int | None = None):
        self.source = source
        self.offset = offset
        self.detail = message
        where = source if offset is None else f"{source} at byte {offset}"
        super().__init__(f"{where}: {message}")


class NotParquetError(CorruptIndexError):
    """A data file that is not a Parquet file (too short, no ``PAR1`` magic): ``source`` names it."""


class CorruptManifestError(CorruptIndexError):
    """A manifest (or ``LATEST``) that does not validate: ``source`` names the manifest file
    and ``field`` the offending field (``files[3].deletion.offset``)."""

    def __init__(self, message: str, *, source: str, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message, source=source)


class StaleDeletionError(ArrowIdxError):
    """A data file changed (other content) after rows were deleted from it: its deletion
    vector no longer describes it. ``path`` names the data file."""

    def __init__(self, message: str, *, path: str):
        self.path = path
        super().__init__(f"{path}: {message}")


class StorageError(ArrowIdxError, OSError):
    """Storage failed to read, list or write an object (its bytes may well be fine: this is
    not damage). ``path`` names the object; the message quotes the store's own words."""

    def __init__(self, message: str, *, path: str):
        self.path = path
        super().__init__(f"{path}: {message}")


class DatasetNotFoundError(StorageError, FileNotFoundError):
    """The path given as a dataset (a folder of data files, or a file) does not exist: a
    ``FileNotFoundError`` too, as pyarrow's and Polars' readers raise. ``path`` names it."""


class AccessDeniedError(StorageError):
    """The store refused the request: missing or wrong credentials, or no permission."""


class StoreUnavailableError(StorageError):
    """The store could not be reached or answered too slowly: network errors, timeouts,
    throttling (retried a few times with backoff before this is raised)."""


class CommitConflictError(ArrowIdxError):
    """Another writer committed the manifest version this one tried to create."""


class CommitUnsupportedError(ArrowIdxError):
    """The filesystem cannot create a file only if it is absent, so a commit could race."""


class UnsupportedTypeError(ArrowIdxError):
    """An Arrow type that an index type (or a key hash) cannot handle."""


class OptionError(ArrowIdxError):
    """An unknown option key or an invalid option value."""


class UnsupportedValueError(ArrowIdxError, ValueError):
    """A value an index format cannot store (BSI: ``-2**63``, whose absolute value overflows)."""


class PaimonTableError(ArrowIdxError):
    """A Paimon table's metadata is missing or does not parse (the message names the file)."""


class UnsupportedTableError(PaimonTableError):
    """A Paimon table (or table option) arrowidx cannot read correctly, e.g. a merge engine."""


class MissingFilterError(ArrowIdxError, ValueError):
    """A delete given no filter (``None``, empty text): a filter never set does not mean
    "every row". Deleting every row takes an explicit TRUE (``"TRUE"`` or ``pc.scalar(True)``)."""


class MissingManifestError(CorruptManifestError):
    """``LATEST`` names a manifest version that is not on disk (a partial sync, a lifecycle
    rule, a careless ``rm``): reading the newest version left would silently undo the
    deletions of the missing one(s). ``version`` is the missing version, ``newest`` the newest
    on disk (0: none). Restore the manifest, or accept the rollback explicitly with
    :func:`arrowidx.accept_rollback` (``arrowidx accept-rollback PATH``)."""

    def __init__(self, message: str, *, source: str, version: int, newest: int):
        self.version = version
        self.newest = newest
        super().__init__(message, source=source)


def __getattr__(name: str):
    # an error that is also pyarrow's own class is made on first use (``import arrowidx``
    # imports no pyarrow), here, so that it is importable from here and pickles by name
    if name == "UnknownColumnError":
        globals()[name] = cls = _unknown_column_error()
        return cls
    raise AttributeError(f"module 'arrowidx.errors' has no attribute {name!r}")


def _unknown_column_error() -> type:
    import pyarrow as pa

    class UnknownColumnError(ArrowIdxError, pa.ArrowInvalid):
        """A name (in a filter, or in ``columns=``) that is not a column of the schema.

        Also a ``pyarrow.ArrowInvalid`` (so a ``ValueError``): the class pyarrow raises for the
        same call, so ``except pa.ArrowInvalid`` clauses keep working. ``column`` is the name,
        ``columns`` the schema's columns; the message names both, with the closest column.
        """

        def __init__(self, message: str, *, column: str | None = None, columns: Sequence[str] = ()):
            self.column = column
            self.columns = list(columns)
            super().__init__(message)

        @classmethod
        def naming(cls, column: str, columns: Sequence[str], where: str, argument: str = "filter=") -> UnknownColumnError:
            """The error for ``column`` named by ``argument`` (``filter=``, ``columns=``) of a
            call on ``where`` (a dataset root, a table path), whose columns are ``columns``."""
            import difflib  # (only when the error is raised)

            columns = list(columns)
            close = difflib.get_close_matches(column, columns, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return cls(f"{where}: no column {column!r} in {argument}{hint}; the columns are: {', '.join(columns)}",
                       column=column, columns=columns)  # fmt: skip

    UnknownColumnError.__qualname__ = "UnknownColumnError"
    UnknownColumnError.__module__ = __name__
    return UnknownColumnError
