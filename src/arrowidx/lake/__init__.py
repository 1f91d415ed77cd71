"""Indexed Parquet datasets: build, delete, and read with pruning (issue 5).

The names below are imported on first use (PEP 562): a read imports the scan, never the
writers (``build``, ``delete``, ``vacuum``), and a build never the scan's pyarrow.dataset.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

_LAZY = {
    "BuildReport": ".build", "build": ".build", "DeleteReport": ".delete", "delete": ".delete",
    "CommitConflictError": "..errors", "Explain": ".scan", "FilePlan": ".scan", "IndexedDataset": ".scan",
    "dataset": ".dataset_pyarrow", "RollbackReport": ".rollback", "accept_rollback": ".rollback",
    "VacuumReport": ".vacuum", "vacuum": ".vacuum", "MigrateReport": ".migrate", "migrate": ".migrate",
}  # fmt: skip

__all__ = [
    "BuildReport", "CommitConflictError", "DeleteReport", "Explain", "FilePlan", "IndexedDataset", "MigrateReport",
    "RollbackReport", "VacuumReport", "accept_rollback", "build", "dataset", "delete", "migrate", "vacuum",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'arrowidx.lake' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _function(name: str) -> Any:
    return getattr(importlib.import_module(_LAZY[name], __name__), name)


class _Package(types.ModuleType):
    """``build``, ``delete``, ``vacuum`` and ``migrate`` are also the names of submodules, which the import
    system binds on this package when each is first imported: these properties keep the
    functions (as the eager imports did; ``importlib.import_module("arrowidx.lake.build")``
    is the module)."""

    build = property(lambda self: _function("build"), lambda self, value: None)
    delete = property(lambda self: _function("delete"), lambda self, value: None)
    vacuum = property(lambda self: _function("vacuum"), lambda self, value: None)
    migrate = property(lambda self: _function("migrate"), lambda self, value: None)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # for type checkers and IDEs: the names as if imported eagerly
    from ..errors import CommitConflictError  # noqa: F401
    from .build import BuildReport, build  # noqa: F401
    from .dataset_pyarrow import dataset  # noqa: F401
    from .delete import DeleteReport, delete  # noqa: F401
    from .migrate import MigrateReport, migrate  # noqa: F401
    from .rollback import RollbackReport, accept_rollback  # noqa: F401
    from .scan import Explain, FilePlan, IndexedDataset  # noqa: F401
    from .vacuum import VacuumReport, vacuum  # noqa: F401
