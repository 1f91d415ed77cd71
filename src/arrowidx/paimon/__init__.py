"""Apache Paimon tables written by Java (Spark, Flink): read them with their file indexes and
deletion vectors (``arrowidx.paimon.open_table(path)``), add or rewrite their file indexes
(``arrowidx.paimon.rewrite_file_index(path, options)``) and delete rows with deletion vectors
Java reads (``arrowidx.paimon.delete(path, where)``). See docs/paimon.md."""

from ..lake.plans import Explain, FilePlan
from .cache import clear_caches
from .delete_rows import DeleteReport, delete
from .rewrite import RewriteReport, rewrite_file_index
from .table import PaimonTable, open_table

__all__ = [
    "DeleteReport", "Explain", "FilePlan", "PaimonTable", "RewriteReport", "clear_caches", "delete", "open_table",
    "rewrite_file_index",
]  # fmt: skip
