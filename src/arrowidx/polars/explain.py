"""What a scan decided (:class:`ScanReport`) and :func:`explain` (planning without reading)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow.fs as pafs

from ..expression import expression_text
from ..lake.plans import Explain, FilePlan
from ..lake.scan import IndexedDataset
from .plan import open_dataset, plan_scan
from .translate import Translation


@dataclass
class ScanReport:
    """What one execution of a scan (or :func:`explain`) decided: the pushed predicate, its
    translation, the projection and row limit, and per file what the indexes did."""

    root: str
    predicate: str | None
    translation: Translation
    plans: list[FilePlan]
    with_columns: list[str] | None = None
    n_rows: int | None = None
    files_read: int = 0
    row_groups_read: int = 0
    rows_read: int = 0
    rows_returned: int | None = None
    seconds: float | None = None

    @property
    def files_total(self) -> int:
        return len(self.plans)

    @property
    def files_skipped(self) -> int:
        return sum(p.skipped for p in self.plans)

    @property
    def rows_total(self) -> int:
        return sum(p.rows for p in self.plans)

    @property
    def rows_kept(self) -> int:
        """Rows in the row groups the indexes kept (before a row limit)."""
        return self.explain.rows_read

    @property
    def explain(self) -> Explain:
        """The per-file table of ``IndexedDataset.explain`` for the translated predicate."""
        return Explain(expression_text(self.translation.expression), self.plans)

    def summary(self) -> str:
        text = (
            f"arrowidx.polars scan of {self.root}: predicate {self.predicate} -> {self.translation}; "
            f"indexes skipped {self.files_skipped}/{self.files_total} files and kept "
            f"{self.rows_kept:,}/{self.rows_total:,} rows"
        )
        if self.seconds is not None:
            text += (
                f"; read {self.rows_read:,} rows in {self.row_groups_read} row groups of {self.files_read} files,"
                f" returned {self.rows_returned:,} rows in {self.seconds * 1000:.1f} ms"
            )
        return text

    def __str__(self) -> str:
        return f"{self.summary()}\n{self.explain}"


def explain(
    source: Any, predicate: pl.Expr | None = None, *, filesystem: pafs.FileSystem | None = None
) -> ScanReport:
    """What a scan of ``source`` would prune for the Polars ``predicate``, without reading
    data: the translation and, per file, which index skipped it or how many row groups stay.

    ``source`` is a path (or anything ``arrowidx.dataset`` takes) or an ``IndexedDataset``.
    """
    data = source if isinstance(source, IndexedDataset) else open_dataset(source, filesystem, "raise")
    planned = plan_scan(data, predicate)
    return ScanReport(data.root, None if predicate is None else str(predicate), planned.translation, planned.plans)
