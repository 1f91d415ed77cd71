"""Modules imported on first use.

``pyarrow.dataset`` imports pandas when it is installed (~0.8 s in a new process):
a reader that never scans with pyarrow (``arrowidx.polars`` reads with Polars) must not pay
it. Modules that scan with pyarrow name it through :func:`lazy_module`; the import happens
at the first attribute used.
"""

from __future__ import annotations

import importlib
from typing import Any


class _LazyModule:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for the module ``name`` that imports it at the first attribute used."""
    return _LazyModule(name)
