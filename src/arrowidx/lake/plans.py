"""What planning decided, per file and in total: :class:`FilePlan` and :class:`Explain`,
shared by every reader (lakes through :mod:`.plan`, Paimon tables through
:mod:`arrowidx.paimon.table`), and the words ``explain()`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ArrowIdxError
from ..expression import expression_text
from ..file_index import FileIndex
from ..result import REMAIN, IndexResult


@dataclass
class FilePlan:
    """What the indexes and Parquet's own pruning decided for one data file.

    ``status``: ``skipped`` (ruled out before its data is opened: by an index, or for a
    Paimon table also by its partition or manifest statistics), ``bitmap`` (an index
    selected rows), ``remain`` (kept whole), ``pruned`` (Parquet statistics or a partition
    folder ruled out every row group), ``stale`` (changed since indexed: read in full),
    ``no index``, ``fallback`` (a corrupt index ignored). ``reason`` says in one word what
    decided: ``index``, ``bitmap``, ``partition``, ``stats`` ("" when nothing ruled out).
    """

    path: str  # relative to the dataset root (a Paimon table's: the file's full path)
    rows: int
    status: str
    result: IndexResult = field(default_factory=lambda: REMAIN)
    index_types: list[str] = field(default_factory=list)
    row_groups: list[int] = field(default_factory=list)
    row_groups_total: int = 0
    rows_selected: int | None = None
    deleted: int = 0
    note: str = ""
    row_group_offsets: np.ndarray | None = None
    exact: bool = False  # the bitmap is exactly the matching rows: no need to filter again
    pruned_by_statistics: int = 0  # row groups the index kept that statistics/partitions ruled out
    why: str = ""  # explain(): which index decided, and why a kept file was kept
    reason: str = ""
    file: Any = None  # the source's own record of the file (a Paimon DataFile; None for a lake)
    deletion: Any = None  # where a Paimon file's deletion vector is (a lake's is in its manifest entry)

    @property
    def skipped(self) -> bool:
        """The whole file was ruled out before its data is opened (see ``status``)."""
        return self.status == "skipped"

    @property
    def read(self) -> bool:
        """Some row group of the file is to be read."""
        return bool(self.row_groups)


@dataclass
class Explain:
    """Per-file decisions for one filter, and the totals. ``print()`` it for a table.

    ``snapshot_id``: the Paimon snapshot planned; ``not_read``: ``(file, why)`` of files a
    Paimon table's snapshot holds but a read leaves out (level-0 files of deletion-vector
    tables, the postpone bucket)."""

    filter: str
    files: list[FilePlan]
    snapshot_id: int | None = None
    not_read: list[tuple[str, str]] = field(default_factory=list)

    @property
    def files_read(self) -> int:
        """Files whose data is read (not skipped or pruned)."""
        return sum(p.status not in ("skipped", "pruned") for p in self.files)

    @property
    def files_skipped(self) -> int:
        """Files the indexes ruled out."""
        return sum(p.skipped for p in self.files)

    @property
    def files_pruned(self) -> int:
        """Files the indexes kept that row-group statistics or partitions ruled out."""
        return sum(p.status == "pruned" for p in self.files)

    @property
    def rows_total(self) -> int:
        return sum(p.rows for p in self.files)

    @property
    def rows_read(self) -> int:
        """Rows in the row groups that will be read."""
        total = 0
        for p in self.files:
            if p.row_group_offsets is None:
                total += 0 if p.skipped else p.rows
            else:
                offs = p.row_group_offsets
                total += int(sum(offs[g + 1] - offs[g] for g in p.row_groups))
        return total

    @property
    def rows_deleted(self) -> int:
        return sum(p.deleted for p in self.files)

    def to_dict(self) -> dict:
        return {
            "filter": self.filter,
            "files": [
                {
                    "path": p.path, "status": p.status, "index_types": p.index_types, "rows": p.rows,
                    "rows_selected": p.rows_selected, "row_groups_read": len(p.row_groups),
                    "row_groups_total": p.row_groups_total, "row_groups_pruned_by_statistics": p.pruned_by_statistics,
                    "deleted": p.deleted, "note": p.note, "why": p.why,
                }  # fmt: skip
                for p in self.files
            ],
            "files_total": len(self.files),
            "files_skipped": self.files_skipped,
            "files_pruned": self.files_pruned,
            "rows_total": self.rows_total,
            "rows_read": self.rows_read,
            "rows_deleted": self.rows_deleted,
        }

    def __str__(self) -> str:
        lines = [f"filter: {self.filter}"]
        if self.snapshot_id is not None:
            lines.append(f"snapshot {self.snapshot_id}: {self.files_read} of {len(self.files)} file(s) read")
        lines.append(f"{'file':32} {'decision':8} {'rows':>10} {'selected':>10} {'row groups':>10} {'deleted':>8}  why")
        shown, similar = None, 0
        for i, p in enumerate(self.files):
            key = (p.status, p.why)
            if key == shown and i < len(self.files) - 1:  # fold runs of files decided alike
                similar += 1
                continue
            if similar:
                lines.append(f"  ... {similar} more file(s) decided the same way")
                similar = 0
            shown = key
            selected = "-" if p.rows_selected is None else f"{p.rows_selected:,}"
            groups = "-" if p.skipped or p.row_group_offsets is None else f"{len(p.row_groups)}/{p.row_groups_total}"
            why = p.why or ",".join(p.index_types) or p.note
            lines.append(f"{p.path[-32:]:32} {p.status:8} {p.rows:>10,} {selected:>10} {groups:>10} {p.deleted:>8,}  {why}")
        by_metadata = sum(p.skipped and p.reason in ("partition", "stats") for p in self.files)
        lines.append(
            f"total: {len(self.files)} file(s), {self.files_skipped - by_metadata} skipped by the indexes,"
            f" {self.files_pruned + by_metadata} by"
            f" statistics/partitions; rows read {self.rows_read:,} of {self.rows_total:,};"
            f" {self.rows_deleted:,} deleted row(s) in these files"
        )
        lines.extend(f"not read ({why}): {name}" for name, why in self.not_read)
        return "\n".join(lines)


def decided_why(plan: FilePlan) -> str:
    """Why one file was skipped or kept, from its plan alone (which index types answered,
    what ruled it out), for a source whose explain names no index answer per type (Paimon)."""
    types = ", ".join(plan.index_types)
    if plan.reason == "partition":
        return "ruled out by its partition"
    if plan.reason == "stats":
        return "ruled out by the manifest's min/max statistics"
    if plan.skipped:
        return f"ruled out by {types or 'its index'}"
    if plan.status == "bitmap":
        return f"{types or 'index'}: {plan.rows_selected:,} row(s) may match"
    return f"kept: {types} cannot rule it out" if types else "no index on the filter's columns"


def describe_answer(index_type: str, answer: IndexResult, expr) -> str:
    """One index type's answer in words, e.g. ``bloom filter: value may be present``."""
    name = index_type.replace("-", " ")
    if not answer.remain:
        return f"{name}: no row can match"
    if answer.kind == "bitmap":
        return f"{name}: {len(answer.bitmap):,} row(s) may match"
    if index_type == "bloom-filter":
        text = expression_text(expr)
        return f"{name}: value may be present" if ("==" in text or "is_in" in text) else f"{name}: answers only = and IN"
    return f"{name}: cannot answer this filter"


def explain_why(plan: FilePlan, index: FileIndex | None, expr, named: set[str]) -> str:
    """Why one file was skipped or kept, in words (which index answered what; ``named``:
    the columns ``expr`` names)."""
    if plan.status in ("stale", "no index", "fallback"):
        return f"{plan.status}: {plan.note}" if plan.note else "no index: read in full"
    if expr is None:
        return "no filter"
    if index is None:
        return "no index"
    try:
        answers = index.answers_by_type(expr)
    except ArrowIdxError:
        return ",".join(plan.index_types)
    parts = [describe_answer(t, answer, expr) for t, answer in answers.items()]
    if plan.skipped and plan.index_types:
        parts = [f"ruled out by {', '.join(plan.index_types)}"] + [p for p in parts if "no row" not in p]
    unindexed = sorted(named - set(index.columns))
    if unindexed:
        parts.append(f"no index on {', '.join(unindexed)}")
    if plan.pruned_by_statistics:
        parts.append(f"{plan.pruned_by_statistics} row group(s) ruled out by Parquet statistics/partition")
    return "; ".join(parts) or "no index on the filter's columns"
