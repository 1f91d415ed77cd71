"""arrowidx on Spark (PySpark 4.1+): build indexes, write indexed datasets, read with pruning.

Four entry points, all working through the filesystem (executors read and write data and
index files themselves; the driver only ever gathers manifest rows):

* :func:`build` indexes an existing Parquet dataset: a DataFrame of relative paths is
  spread over the executors, each task runs the local build's per-file function
  (:func:`arrowidx.lake.build.index_one_file`, which writes ``_arrowidx/index/*.index``)
  inside ``mapInArrow`` and returns manifest rows; the driver commits the manifest. The
  result is the same manifest and the same index files as :func:`arrowidx.build`.
* :func:`write` writes a DataFrame as an indexed dataset: every task writes its Parquet
  file(s) and their indexes under ``_arrowidx/staging/<write id>/`` (invisible to plain
  readers, which skip ``_`` names) and returns manifest rows; the driver moves the files of
  the successful task attempts into place and commits the manifest. Files of failed or
  retried attempts are never moved and are deleted with the staging folder.
* :func:`read` (or :func:`register`, then ``spark.read.format("arrowidx")``) reads an
  indexed dataset with the filter given at load time (a ``pyarrow.compute`` Expression or
  SQL text): the indexes prune files (a file the indexes rule out is not a partition at
  all) and rows; deletion vectors are applied. Filters applied afterwards with
  ``.filter()`` are Spark's own and do not prune: PySpark reuses a pushed-down reader
  across queries on one DataFrame (see :mod:`arrowidx.spark.source`).
* :func:`apply_deletions_and_index` returns a ``mapInArrow`` function for pipelines that
  read Parquet with Spark's own reader: given ``_metadata.file_path`` and
  ``_metadata.row_index`` it drops deleted rows and rows an index rules out.

:func:`paimon_rewrite_file_index` adds or rewrites the file indexes of an Apache Paimon table
and :func:`paimon_delete` deletes rows from one, with the work spread over the executors
(:mod:`arrowidx.spark.paimon`).

See ``docs/spark.md`` for usage, the settings needed and which filters are accepted.
"""

from .build import FORMAT_NAME, PUSHDOWN_CONF, STAGING_DIR, WriteReport, build, write
from .paimon import paimon_delete, paimon_rewrite_file_index
from .rowfilter import DeletionAndIndexFilter, apply_deletions_and_index, with_deletions_and_index
from .session import ensure_worker_python
from .source import ArrowIdxDataSource, FilePartition, encode_filter, local_session, read, register
from .translate import Translated, arrow_to_spark_schema, translate_filter

__all__ = [
    "ArrowIdxDataSource",
    "DeletionAndIndexFilter",
    "WriteReport",
    "apply_deletions_and_index",
    "arrow_to_spark_schema",
    "build",
    "encode_filter",
    "ensure_worker_python",
    "paimon_delete",
    "paimon_rewrite_file_index",
    "read",
    "register",
    "translate_filter",
    "with_deletions_and_index",
    "write",
]

# also importable from here (used by tests and docs)
_REEXPORTS = (FORMAT_NAME, PUSHDOWN_CONF, STAGING_DIR, FilePartition, Translated, local_session)
