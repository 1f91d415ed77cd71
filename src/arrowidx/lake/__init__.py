"""Indexed Parquet datasets: build, delete, and read with pruning (issue 5)."""

from .build import BuildReport, build
from .delete import DeleteReport, delete
from .layout import CommitConflictError
from .scan import Explain, FilePlan, IndexedDataset, dataset

__all__ = [
    "BuildReport", "CommitConflictError", "DeleteReport", "Explain", "FilePlan", "IndexedDataset",
    "build", "dataset", "delete",
]  # fmt: skip
