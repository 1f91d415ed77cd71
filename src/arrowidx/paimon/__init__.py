"""Apache Paimon tables written by Java (Spark, Flink): read them with their file indexes and
deletion vectors (``arrowidx.paimon.open_table(path)``), and add or rewrite their file indexes
(``arrowidx.paimon.rewrite_file_index(path, options)``). See docs/paimon.md."""

from ..lake.plans import Explain, FilePlan
from .cache import clear_caches
from .rewrite import RewriteReport, rewrite_file_index
from .table import PaimonTable, open_table

__all__ = ["Explain", "FilePlan", "PaimonTable", "RewriteReport", "clear_caches", "open_table", "rewrite_file_index"]
