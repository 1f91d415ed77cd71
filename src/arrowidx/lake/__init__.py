"""Indexed Parquet datasets: build, delete, and read with pruning (issue 5)."""

from ..errors import CommitConflictError
from .build import BuildReport, build
from .delete import DeleteReport, delete
from .migrate import MigrateReport, migrate
from .rollback import RollbackReport, accept_rollback
from .scan import Explain, FilePlan, IndexedDataset, dataset
from .vacuum import VacuumReport, vacuum

__all__ = [
    "BuildReport", "CommitConflictError", "DeleteReport", "Explain", "FilePlan", "IndexedDataset", "MigrateReport",
    "RollbackReport", "VacuumReport", "accept_rollback", "build", "dataset", "delete", "migrate", "vacuum",
]  # fmt: skip
