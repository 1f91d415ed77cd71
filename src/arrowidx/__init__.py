"""arrowidx: Apache Paimon's file indexes and deletion vectors, Arrow-native."""

from .errors import ArrowIdxError, CorruptIndexError, OptionError, UnsupportedTypeError
from .file_index import FileIndex, write_file_index
from .lake import build, dataset, delete
from .result import IndexResult

__version__ = "0.1.0"

__all__ = [
    "ArrowIdxError",
    "CorruptIndexError",
    "FileIndex",
    "IndexResult",
    "OptionError",
    "UnsupportedTypeError",
    "build",
    "dataset",
    "delete",
    "write_file_index",
]
