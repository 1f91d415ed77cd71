"""Reading Apache Paimon tables written by Java (Spark, Flink) with their file indexes and
deletion vectors: ``arrowidx.paimon.open_table(path)``. See docs/paimon.md."""

from .cache import clear_caches
from .table import Explain, FilePlan, PaimonTable, open_table

__all__ = ["Explain", "FilePlan", "PaimonTable", "clear_caches", "open_table"]
