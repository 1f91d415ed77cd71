"""Storage: how arrowidx names, reads and writes the objects of a dataset.

:func:`storage_error` classifies what a filesystem or object store raised: an object that
is not there, refused access (credentials, permissions), an unreachable or throttling store
(network, timeouts), or another I/O failure. None of these is damage: a file is corrupt
(:class:`~arrowidx.errors.CorruptIndexError`) only when its bytes were read and do not
parse.
"""

from __future__ import annotations

import errno

from .errors import AccessDeniedError, ArrowIdxError, StorageError, StoreUnavailableError

# Words the stores put in their messages (AWS SDK error names and HTTP statuses, as pyarrow's
# S3 filesystem and obstore quote them; GCS and Azure use the HTTP words).
_DENIED = (
    "access denied", "accessdenied", "access_denied", "forbidden", "403", "invalidaccesskeyid",
    "signaturedoesnotmatch", "invalid_access_key", "permission denied", "unauthorized", "401",
    "expiredtoken", "invalidtoken", "no credentials", "credentials",
)  # fmt: skip
_UNAVAILABLE = (
    "timeout", "timed out", "connection refused", "connection reset", "could not connect",
    "couldn't connect", "network", "curlcode", "unreachable", "name or service not known",
    "temporary failure", "slowdown", "slow down", "throttl", "503", "500 internal", "service unavailable",
    "too many requests", "429", "requesttimeout", "broken pipe",
)  # fmt: skip


def storage_error(error: BaseException, path: str, what: str = "file") -> ArrowIdxError:
    """The arrowidx error for ``error``, raised by storage while reading or writing the
    object ``path`` (a ``what``: "index file", "manifest", ...)."""
    if isinstance(error, ArrowIdxError):
        return error
    text = str(error)
    lower = text.lower()
    if isinstance(error, PermissionError) or getattr(error, "errno", None) in (errno.EACCES, errno.EPERM):
        return AccessDeniedError(f"access denied reading or writing the {what}: {text}", path=path)
    if any(word in lower for word in _DENIED):
        return AccessDeniedError(f"the store denied access to the {what} (check the credentials and"
                                 f" permissions): {text}", path=path)  # fmt: skip
    if isinstance(error, (TimeoutError, ConnectionError)) or any(word in lower for word in _UNAVAILABLE):
        return StoreUnavailableError(f"the store could not be reached for the {what}: {text}", path=path)
    return StorageError(f"cannot read or write the {what}: {text}", path=path)
