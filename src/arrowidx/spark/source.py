"""The ``arrowidx`` Python data source: partitions on the driver, reads on the executors."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    InputPartition,
)

from ..errors import ArrowIdxError
from ..lake.layout import (
    resolve,
)
from ..lake.scan import IndexedDataset
from ..options import parse_memory_size
from .build import FORMAT_NAME, PUSHDOWN_CONF
from .datasets import _dataset_at, _refresh
from .session import ensure_worker_python
from .translate import _and_all, _to_spark_arrow, arrow_to_spark_schema, translate_filter


class FilePartition(InputPartition):
    """Data files to read in one task, at the manifest version the query was planned on."""

    def __init__(self, paths: tuple[str, ...], version: int):
        super().__init__((paths, version))
        self.paths = paths
        self.version = version


DEFAULT_MAX_PARTITION_BYTES = 128 << 20  # as Spark's spark.sql.files.maxPartitionBytes
MIN_PARTITION_BYTES = 16 << 20
OPEN_COST_BYTES = 1 << 20


def _pack(files: list[tuple[str, int]], max_bytes: int, min_partitions: int) -> list[tuple[str, ...]]:
    """Group ``(path, bytes to read)`` into partitions, in path order, as Spark packs files.

    A Spark task costs far more than opening one more file (a Python worker round trip per
    partition), so surviving files are packed up to ``max(16 MiB, total / min_partitions)``
    bytes per partition (each file also counts 1 MiB), capped at ``max_bytes``. A file is
    never split, so ``max_bytes`` of 1 gives one file per partition.
    """
    total = sum(size + OPEN_COST_BYTES for _, size in files)
    target = min(max_bytes, max(MIN_PARTITION_BYTES, -(-total // max(1, min_partitions))))
    groups: list[list[str]] = []
    current, used = [], 0
    for path, size in files:
        cost = size + OPEN_COST_BYTES
        if current and used + cost > target:
            groups.append(current)
            current, used = [], 0
        current.append(path)
        used += cost
    if current:
        groups.append(current)
    return [tuple(g) for g in groups]


class _Reader(DataSourceReader):
    """Reads the planned files; state set by ``pushFilters`` travels to the executors."""

    def __init__(self, path: str, schema, options: Mapping[str, str]):
        import os

        self.path = path
        self.schema = schema  # pyspark StructType of the output
        self.on_corrupt = options.get("on_corrupt", "raise")
        self.max_partition_bytes = parse_memory_size(
            str(options.get("maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES)), "maxPartitionBytes"
        )
        self.min_partitions = int(options.get("minPartitions", 2 * (os.cpu_count() or 1)))
        self.exact: list[pc.Expression] = []  # accepted filters (applied exactly by read_plan)
        self.prune: list[pc.Expression] = []  # everything the indexes may use

    def _open(self) -> IndexedDataset:
        fs, root, _ = resolve(self.path)
        return IndexedDataset(fs, root, on_corrupt=self.on_corrupt)

    def partitions(self) -> list[FilePartition]:
        data = self._open()
        prune = _and_all(self.prune)
        if prune is None:
            # sizes from the file system: files added since the build are not in the manifest
            files = [(rel, data._info(rel).size) for rel in data.files]
        else:
            files = []
            exact = _and_all(self.exact)
            for plan in data.plan(prune, statistics=False if exact is None else exact):
                if not plan.row_groups:
                    continue
                share = len(plan.row_groups) / plan.row_groups_total if plan.row_groups_total else 1.0
                files.append((plan.path, int(data._info(plan.path).size * share)))
        version = data.manifest.version
        return [FilePartition(group, version) for group in _pack(files, self.max_partition_bytes, self.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, FilePartition):
            return  # Spark's placeholder when nothing survived pruning
        fs, root, _ = resolve(self.path)
        data = _dataset_at(fs, root, partition.version, self.on_corrupt)
        _refresh(data, list(partition.paths))
        prune, exact = _and_all(self.prune), _and_all(self.exact)
        names = self.schema.fieldNames()
        columns = None if names == data.schema.names else names
        target = to_arrow_schema(self.schema, timezone="UTC")
        for rel in partition.paths:
            plan = data.plan_file(rel, prune, statistics=False if exact is None else exact)
            if not plan.row_groups:
                continue
            table = data.read_plan(plan, exact, columns)
            if table is None or table.num_rows == 0:
                continue
            yield from _to_spark_arrow(table, target).to_batches(max_chunksize=64 * 1024)


class _PushdownReader(_Reader):
    def pushFilters(self, filters: list) -> list:
        """Accept the filters ``read_plan`` applies exactly; hand the others back to Spark."""
        data = self._open()
        schema = data.schema if data.files else pa.schema([])
        rejected = []
        for f in filters:
            tr = translate_filter(f, schema)
            if tr.prune is not None:
                self.prune.append(tr.prune)
            if tr.exact is not None:
                self.exact.append(tr.exact)
            else:
                rejected.append(f)
        return rejected


class ArrowIdxDataSource(DataSource):
    """``spark.read.format("arrowidx").load(path)``: an indexed Parquet dataset.

    Options: ``on_corrupt`` (``raise``, default, or ``fallback``: read a file whose index is
    damaged in full), ``pushdown`` (``true`` by default; ``false`` reads without filter
    pushdown, for sessions where ``spark.sql.python.filterPushdown.enabled`` is off),
    ``maxPartitionBytes`` (default ``128mb``) and ``minPartitions`` (default twice the
    driver's cores): how the files that survive pruning are packed into Spark partitions.
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise ArrowIdxError('give the dataset path: spark.read.format("arrowidx").load(path)')
        return path

    def schema(self):
        fs, root, _ = resolve(self._path())
        return arrow_to_spark_schema(IndexedDataset(fs, root).schema)

    def reader(self, schema) -> DataSourceReader:
        if str(self.options.get("pushdown", "true")).lower() == "false":
            return _Reader(self._path(), schema, self.options)
        return _PushdownReader(self._path(), schema, self.options)


def register(spark) -> None:
    """Register the ``arrowidx`` data source and turn on Python filter pushdown.

    Sets ``spark.sql.python.filterPushdown.enabled=true`` for the session (without it Spark
    refuses a reader that implements ``pushFilters``); where the session does not allow
    setting it, a warning says so and ``.option("pushdown", "false")`` still reads. In local
    mode the workers run this interpreter unless one was set (:func:`ensure_worker_python`).
    """
    ensure_worker_python(spark)
    spark.dataSource.register(ArrowIdxDataSource)
    try:
        spark.conf.set(PUSHDOWN_CONF, "true")
    except Exception as e:  # e.g. a Connect server that forbids it
        warnings.warn(
            f"could not set {PUSHDOWN_CONF}=true ({e}); set it when creating the session, or read"
            ' with .option("pushdown", "false") (no index pruning)',
            stacklevel=2,
        )


def local_session(master: str = "local[2]", app_name: str = "arrowidx", **conf: str):
    """A local ``SparkSession`` ready for arrowidx, with the data source registered.

    Its Python workers run this interpreter (``sys.executable``), the one arrowidx is
    installed in; on a cluster, install arrowidx on the executors instead. ``conf`` adds
    Spark settings (``spark_sql_shuffle_partitions="2"`` sets ``spark.sql.shuffle.partitions``).
    """
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master(master).appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config(PUSHDOWN_CONF, "true")
    )  # fmt: skip
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


