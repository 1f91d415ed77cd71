"""Polars' private ``_deletion_files``: rows deleted by position, outside arrowidx.

``pl.scan_parquet(..., _deletion_files=("iceberg", (position_deletes, deletion_vectors)))``
(what ``pl.scan_iceberg`` passes) drops rows by position: ``position_deletes`` maps a file's
index among the files the scan reads (in its order, as Polars expands the source) to Iceberg
position-delete files, Parquet files of ``file_path`` (one path per file) and ``pos``
(Int64), each ``pos`` a deleted row of that file; positions past the file's end delete
nothing. arrowidx reads those at each execution, as Polars does, and drops them with its
own deletion vectors (a row deleted by either is gone: :func:`merged`).

``deletion_vectors`` (Iceberg Puffin blobs) and ``("delta-deletion-vector", callback)`` are
Polars' alone: :func:`arrowidx.polars.scan` hands such a scan to ``pl.scan_parquet``
unchanged when the dataset has no deleted rows of its own, and refuses it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..deletion import DeletionVector
from ..errors import OptionError
from .plan import Planned


@dataclass(frozen=True)
class PositionDeletes:
    """Iceberg position-delete files by the index of the data file they delete rows of."""

    files: dict[int, tuple[str, ...]]
    storage_options: dict[str, Any] | None = None

    @classmethod
    def of(cls, value: Any, storage_options: dict[str, Any] | None = None) -> PositionDeletes | None:
        """The position deletes of ``_deletion_files``; None when there are none."""
        if value is None:
            return None
        try:
            kind, (positions, _vectors) = value
            files = {int(i): tuple(str(p) for p in paths) for i, paths in dict(positions).items()}
        except (TypeError, ValueError):
            raise OptionError(f"_deletion_files: expected ('iceberg', ({{file index: [paths]}}, {{}})), got {value!r}") from None
        return cls({i: paths for i, paths in files.items() if paths}, storage_options)

    def positions(self, index: int, rows: int) -> np.ndarray:
        """The sorted, distinct positions below ``rows`` that the delete files of the data
        file at ``index`` delete (read now: at each execution, as Polars reads them)."""
        found = [np.zeros(0, np.int64)]
        for path in self.files.get(index, ()):
            df = pl.scan_parquet(path, glob=False, hive_partitioning=False, storage_options=self.storage_options).collect()
            if "pos" not in df.columns or "file_path" not in df.columns:
                raise OptionError(f"_deletion_files: {path}: a position-delete file has the columns file_path and pos,"
                                  f" not {df.columns}")  # fmt: skip
            if df.schema["pos"] != pl.Int64:
                raise OptionError(f"_deletion_files: {path}: pos is {df.schema['pos']}, not Int64")
            if df["file_path"].n_unique() > 1:
                raise OptionError(f"_deletion_files: {path}: deletes rows of more than one data file")
            found.append(df["pos"].drop_nulls().to_numpy().astype(np.int64, copy=False))
        positions = np.unique(np.concatenate(found))
        return positions[(positions >= 0) & (positions < rows)]

    def merged(self, planned: Planned, files: list[str]) -> Planned:
        """``planned`` with these deletes added to its files' deletion vectors (``files``:
        the dataset's files in the order the indexes count them)."""
        index: dict[str, int] = {}
        for i, rel in enumerate(files):
            if i in self.files and rel in index:
                raise OptionError(f"_deletion_files: {rel} is read twice: which of its reads the deletes"
                                  f" of file {i} are for is not known; read it with pl.scan_parquet")  # fmt: skip
            index.setdefault(rel, i)
        vectors = dict(planned.vectors)
        for plan in planned.plans or ():
            i = index.get(plan.path)
            if i not in self.files:
                continue
            extra = self.positions(i, plan.rows)
            if not extra.size:
                continue
            own = vectors.get(plan.path)
            if own is not None and own.cardinality:
                extra = np.union1d(own.positions().astype(np.int64), extra)
            vectors[plan.path] = DeletionVector.from_positions(extra, bitmap64=bool(extra[-1] >= 1 << 31))
        return planned._replace(vectors=vectors)


def polars_applies(value: Any, data: Any) -> bool:
    """Whether ``pl.scan_parquet`` is to read the scan with ``_deletion_files`` ``value``:
    Puffin deletion vectors or a Delta callback, which only Polars applies, on a dataset
    ``data`` from which arrowidx deleted nothing; refused by name if it did (Polars would
    bring its deleted rows back)."""
    if not isinstance(value, tuple) or len(value) != 2:
        return False
    kind, body = value
    if kind == "iceberg" and not (isinstance(body, tuple) and len(body) == 2 and body[1]):
        return False  # position-delete files alone: arrowidx applies them (PositionDeletes)
    if data.lake.has_deletions():
        raise OptionError(f"arrowidx.polars.scan cannot apply Polars' _deletion_files of {kind!r} deletion vectors together"
                          f" with the rows arrowidx.delete deleted from {data.root}; read one or the other")  # fmt: skip
    return True
