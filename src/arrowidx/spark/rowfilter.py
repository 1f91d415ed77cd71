"""Existing Spark pipelines: a ``mapInArrow`` filter over ``_metadata.file_path`` / ``row_index``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from ..lake.commit import latest_version
from ..lake.scan import IndexedDataset
from ..lake.source import open_lake
from .datasets import dataset_at

# --------------------------------------------------------------------------------------
# 4. existing pipelines: a mapInArrow function over _metadata.file_path / row_index
# --------------------------------------------------------------------------------------


def _uri_path(uri: str) -> str:
    """The filesystem path in Spark's ``_metadata.file_path`` (a URI, percent-encoded)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path)
    return unquote(parsed.netloc + parsed.path)  # s3a://bucket/key -> bucket/key, as pyarrow names it


class DeletionAndIndexFilter:
    """A ``mapInArrow`` function: drop deleted rows and the rows an index rules out.

    Built by :func:`apply_deletions_and_index`; picklable, holds no data. Per batch the rows
    are grouped by file (``dictionary_encode`` of the path column) and each file's keep mask
    is looked up with numpy fancy indexing on the row positions; per file and task the
    deletion vector and index answer are computed once.
    """

    def __init__(
        self,
        path: Any,
        filter: pc.Expression | None = None,
        *,
        filesystem: pafs.FileSystem | None = None,
        file_path_column: str = "file_path",
        row_index_column: str = "row_index",
        drop_metadata: bool = False,
        index_root: Any = None,
    ):
        self.store, self.root, _ = open_lake(path, filesystem, None, index_root)
        self.version = latest_version(self.store, self.root)
        self.filter = filter
        self.file_path_column = file_path_column
        self.row_index_column = row_index_column
        self.drop_metadata = drop_metadata

    def _file_rule(self, data: IndexedDataset, uri: str):
        """None (keep every row), or ``f(positions) -> keep mask`` for one data file."""
        local = _uri_path(uri)
        root = self.root.rstrip("/")
        if not local.startswith(root + "/"):
            return None
        rel = local[len(root) + 1 :]
        if rel not in data.manifest.files:
            return None  # not managed by arrowidx: nothing to apply
        data.restat([rel])  # this task's file, looked at freshly
        plan = data.plan_file(rel, self.filter, statistics=False)
        if plan.status == "stale":
            return None  # changed since indexed: its index and deletions no longer apply
        if plan.skipped:
            return lambda positions: np.zeros(len(positions), dtype=bool)
        selected = None
        if plan.result.kind == "bitmap":
            selected = plan.result.to_mask(plan.rows).to_numpy(zero_copy_only=False)
        dv = data.lake.deletion_vector(rel)
        if selected is None and (dv is None or not dv.cardinality):
            return None

        def keep(positions: np.ndarray) -> np.ndarray:
            mask = np.ones(len(positions), dtype=bool)
            if selected is not None:
                inside = positions < len(selected)
                mask[inside] = selected[positions[inside]]
            if dv is not None and dv.cardinality:
                mask &= ~dv.is_deleted(positions)
            return mask

        return keep

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        data = dataset_at(self.store, self.root, self.version)
        rules: dict[str, Any] = {}
        drop = [self.file_path_column, self.row_index_column] if self.drop_metadata else []
        for batch in batches:
            if batch.num_rows:
                encoded = pc.dictionary_encode(batch.column(self.file_path_column))
                codes = encoded.indices.to_numpy(zero_copy_only=False)
                positions = batch.column(self.row_index_column).to_numpy(zero_copy_only=False).astype(np.int64)
                keep = None
                for code, uri in enumerate(encoded.dictionary.to_pylist()):  # per file in the batch
                    if uri not in rules:
                        rules[uri] = self._file_rule(data, uri)
                    rule = rules[uri]
                    if rule is None:
                        continue
                    if keep is None:
                        keep = np.ones(batch.num_rows, dtype=bool)
                    if len(encoded.dictionary) == 1:
                        keep &= rule(positions)
                    else:
                        rows = np.flatnonzero(codes == code)
                        keep[rows] = rule(positions[rows])
                if keep is not None and not keep.all():
                    batch = batch.filter(pa.array(keep))
            yield batch.drop_columns(drop) if drop else batch


def apply_deletions_and_index(
    path: Any,
    filter: pc.Expression | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
    file_path_column: str = "file_path",
    row_index_column: str = "row_index",
    drop_metadata: bool = False,
    index_root: Any = None,
) -> DeletionAndIndexFilter:
    """A function for ``mapInArrow`` that applies ``path``'s deletion vectors and indexes.

    Use it on Spark's own Parquet reader::

        df = spark.read.parquet(path).filter(spark_condition)
        sel = df.select("*", "_metadata.file_path", "_metadata.row_index")
        out = sel.mapInArrow(apply_deletions_and_index(path, filter=arrow_condition), sel.schema)

    ``filter`` (a ``pyarrow.compute.Expression``, optional) is only used to ask the indexes
    which rows cannot match; Spark's own filter must still be applied (rows the index keeps
    may not match). The manifest version is fixed when the function is made (on the
    driver). Files the manifest does not list, or that changed since they were indexed, pass
    through untouched. ``drop_metadata=True`` removes the two metadata columns (then give
    ``mapInArrow`` the schema without them). ``index_root``: where the indexes are when not
    beside the data folder (as given to :func:`arrowidx.build`).
    """
    return DeletionAndIndexFilter(
        path,
        filter,
        filesystem=filesystem,
        file_path_column=file_path_column,
        row_index_column=row_index_column,
        drop_metadata=drop_metadata,
        index_root=index_root,
    )


def with_deletions_and_index(df, path: Any, filter: pc.Expression | None = None, *, filesystem=None, index_root=None):
    """``df`` (read by ``spark.read.parquet(path)``) minus deleted rows and rows the index rules out.

    The same columns and schema as ``df``; a shortcut for the select + ``mapInArrow`` of
    :func:`apply_deletions_and_index`.
    """
    from pyspark.sql import functions as F

    fp, ri = "__arrowidx_file_path", "__arrowidx_row_index"
    selected = df.select("*", F.col("_metadata.file_path").alias(fp), F.col("_metadata.row_index").alias(ri))
    fn = apply_deletions_and_index(
        path, filter, filesystem=filesystem, file_path_column=fp, row_index_column=ri, drop_metadata=True,
        index_root=index_root,
    )
    return selected.mapInArrow(fn, df.schema)
