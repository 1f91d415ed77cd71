"""The exceptions arrowidx raises: every one derives from ArrowIdxError."""

from __future__ import annotations


class ArrowIdxError(Exception):
    """Base class of every error arrowidx raises on purpose."""


class CorruptIndexError(ArrowIdxError):
    """Bytes that do not parse as the format they claim to be.

    The message names the source (a file path or ``<bytes>``) and the byte offset
    where reading failed, so a user can find the broken file.
    """

    def __init__(self, message: str, *, source: str = "<bytes>", offset: int | None = None):
        self.source = source
        self.offset = offset
        where = source if offset is None else f"{source} at byte {offset}"
        super().__init__(f"{where}: {message}")


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
