"""arrowidx: Apache Paimon's file indexes and deletion vectors, Arrow-native.

The public names below are imported on first use (PEP 562), so ``import arrowidx`` costs
almost nothing: a query loads what reading needs, a build what building needs, and
neither Polars, pandas nor PySpark is imported unless their adapters are used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    ArrowIdxError,
    CommitConflictError,
    CommitUnsupportedError,
    CorruptIndexError,
    CorruptManifestError,
    MissingFilterError,
    MissingManifestError,
    OptionError,
    StaleDeletionError,
    UnsupportedTypeError,
    UnsupportedValueError,
)

__version__ = "0.1.0"

#: public name -> the module that defines it
_LAZY = {
    **dict.fromkeys(
        ["DynamicBucketAssigner", "paimon_binary_rows", "paimon_bucket", "paimon_bucket_of_hash", "paimon_key_hash",
         "read_hash_index", "write_hash_index", "write_hash_index_file"], ".bucket"),
    **dict.fromkeys(
        ["DeletionVector", "PositionOutOfRangeError", "apply_deletion_vector", "read_deletion_vectors",
         "read_puffin_deletion_vectors", "write_deletion_vectors", "write_deletion_vectors_file",
         "write_puffin_deletion_vectors"], ".deletion"),
    "FileIndex": ".file_index",
    "accept_rollback": ".lake.rollback",
    "write_file_index": ".file_index",
    "build": ".lake.build",
    "dataset": ".lake.dataset_pyarrow",
    "delete": ".lake.delete",
    "migrate": ".lake.migrate",
    "vacuum": ".lake.vacuum",
    "IndexResult": ".result",
}  # fmt: skip

__all__ = [
    "ArrowIdxError", "CommitConflictError", "CommitUnsupportedError", "CorruptIndexError",
    "CorruptManifestError", "DeletionVector", "DynamicBucketAssigner", "FileIndex", "IndexResult",
    "MissingFilterError", "MissingManifestError", "OptionError", "PositionOutOfRangeError",
    "StaleDeletionError", "UnsupportedTypeError", "UnsupportedValueError", "accept_rollback",
    "apply_deletion_vector", "build", "dataset", "delete", "migrate",
    "paimon_binary_rows", "paimon_bucket", "paimon_bucket_of_hash", "paimon_key_hash",
    "read_deletion_vectors", "read_hash_index", "read_puffin_deletion_vectors", "vacuum",
    "write_deletion_vectors", "write_deletion_vectors_file", "write_file_index", "write_hash_index",
    "write_hash_index_file", "write_puffin_deletion_vectors",
]


#: the documented subpackages and modules, imported on first use too (``arrowidx.paimon``)
_SUBMODULES = ["errors", "facts", "options", "paimon", "polars", "spark", "sql"]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'arrowidx' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    """The documented names only (not this module's own imports)."""
    return sorted([*__all__, *_SUBMODULES, "__version__"])


if TYPE_CHECKING:  # for type checkers and IDEs: the names as if imported eagerly
    from .bucket import (  # noqa: F401
        DynamicBucketAssigner,
        paimon_binary_rows,
        paimon_bucket,
        paimon_bucket_of_hash,
        paimon_key_hash,
        read_hash_index,
        write_hash_index,
        write_hash_index_file,
    )
    from .deletion import (  # noqa: F401
        DeletionVector,
        PositionOutOfRangeError,
        apply_deletion_vector,
        read_deletion_vectors,
        read_puffin_deletion_vectors,
        write_deletion_vectors,
        write_deletion_vectors_file,
        write_puffin_deletion_vectors,
    )
    from .file_index import FileIndex, write_file_index  # noqa: F401
    from .lake import accept_rollback, build, dataset, delete, migrate, vacuum  # noqa: F401
    from .result import IndexResult  # noqa: F401
