"""arrowidx: Apache Paimon's file indexes and deletion vectors, Arrow-native."""

from .bucket import (
    DynamicBucketAssigner,
    paimon_binary_rows,
    paimon_bucket,
    paimon_bucket_of_hash,
    paimon_key_hash,
    read_hash_index,
    write_hash_index,
    write_hash_index_file,
)
from .deletion import (
    DeletionVector,
    PositionOutOfRangeError,
    apply_deletion_vector,
    read_deletion_vectors,
    read_puffin_deletion_vectors,
    write_deletion_vectors,
    write_deletion_vectors_file,
    write_puffin_deletion_vectors,
)
from .errors import (
    ArrowIdxError,
    CommitConflictError,
    CommitUnsupportedError,
    CorruptIndexError,
    CorruptManifestError,
    OptionError,
    StaleDeletionError,
    UnsupportedTypeError,
    UnsupportedValueError,
)
from .file_index import FileIndex, write_file_index
from .lake import build, dataset, delete, vacuum
from .result import IndexResult

__version__ = "0.1.0"

__all__ = [
    "DeletionVector",
    "DynamicBucketAssigner",
    "PositionOutOfRangeError",
    "apply_deletion_vector",
    "paimon_binary_rows",
    "paimon_bucket",
    "paimon_bucket_of_hash",
    "paimon_key_hash",
    "read_deletion_vectors",
    "read_hash_index",
    "write_deletion_vectors",
    "write_deletion_vectors_file",
    "write_puffin_deletion_vectors",
    "read_puffin_deletion_vectors",
    "write_hash_index",
    "write_hash_index_file",
    "ArrowIdxError",
    "CommitConflictError",
    "CommitUnsupportedError",
    "CorruptIndexError",
    "CorruptManifestError",
    "StaleDeletionError",
    "FileIndex",
    "IndexResult",
    "OptionError",
    "UnsupportedTypeError",
    "UnsupportedValueError",
    "build",
    "dataset",
    "delete",
    "vacuum",
    "write_file_index",
]
