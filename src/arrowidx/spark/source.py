"""The ``arrowidx`` Python data source: partitions on the driver, reads on the executors.

The indexes prune with the filter given when the DataFrame is loaded (``where`` or
``filter`` option, or :func:`read`), never with filters Spark pushes from ``.filter()``:
PySpark (4.1 to 4.3 at least) stores the reader of the last scan that pushed filters on the
relation and reuses it, pruned for *that* query, for a later query on the same DataFrame
that pushes none (``df.filter("id = 0").count()`` then ``df.count()`` returned 0). A filter
given at load time belongs to the relation itself, so every query on it means the same rows.
"""

from __future__ import annotations

import base64
import difflib
import functools
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    InputPartition,
)

from .. import facts
from ..errors import ArrowIdxError, OptionError
from ..expression import UnknownColumnError
from ..filters import Filter, user_columns, user_filter
from ..lake.plan import index_pruned
from ..lake.read import column_bytes
from ..lake.scan import IndexedDataset
from ..lake.source import open_lake
from ..sizes import parse_memory_size
from .build import FORMAT_NAME
from .datasets import dataset_at
from .native import native_frame, plan_route, spark_uri
from .session import ensure_worker_python
from .sparksql import to_spark_sql
from .translate import arrow_to_spark_schema, to_spark_arrow

_LOG = logging.getLogger("arrowidx.spark")


class FilePartition(InputPartition):
    """Data files to read in one task, at the manifest version the query was planned on;
    ``one_pass``: the indexes pruned nothing for the query, so its files are read in one pass
    (see :meth:`arrowidx.lake.scan.IndexedDataset.read_plans`)."""

    def __init__(self, paths: tuple[str, ...], version: int, one_pass: bool = False):
        super().__init__((paths, version, one_pass))
        self.paths = paths
        self.version = version
        self.one_pass = one_pass


DEFAULT_MAX_PARTITION_BYTES = 128 << 20  # as Spark's spark.sql.files.maxPartitionBytes
OPEN_COST_BYTES = 4 << 20  # as Spark's spark.sql.files.openCostInBytes


def _pack(files: list[tuple[str, int]], max_bytes: int, min_partitions: int) -> list[tuple[str, ...]]:
    """Group ``(path, bytes to read)`` into partitions as Spark packs files
    (``FilePartition.getFilePartitions``): a file joins the current partition while the
    partition's bytes plus the file's stay within ``max(4 MiB, total / min_partitions)``,
    capped at ``max_bytes``, where each file already in it also counts 4 MiB for opening it.
    Files stay in path order (Spark sorts them by size first).

    So a query reading little runs about ``min_partitions`` tasks (Spark's default
    parallelism), however many files survive: a task of a Python data source costs tens of
    milliseconds (a Python worker round trip), far more than one more small file. A file is
    never split, so ``max_bytes`` of 1 gives one file per partition.
    """
    total = sum(size + OPEN_COST_BYTES for _, size in files)
    target = min(max_bytes, max(OPEN_COST_BYTES, -(-total // max(1, min_partitions))))
    groups: list[list[str]] = []
    current, used = [], 0
    for path, size in files:
        if current and used + size > target:
            groups.append(current)
            current, used = [], 0
        current.append(path)
        used += size + OPEN_COST_BYTES
    if current:
        groups.append(current)
    return [tuple(g) for g in groups]


def encode_filter(expr: pc.Expression) -> str:
    """``expr`` as the text of the ``filter`` option (pyarrow's own serialisation, base64)."""
    if not isinstance(expr, pc.Expression):
        raise OptionError(f"filter must be a pyarrow.compute.Expression or SQL text, not {type(expr).__name__}")
    return base64.b64encode(expr.__reduce__()[1][0].to_pybytes()).decode("ascii")


def load_filter(options: Mapping[str, str], schema: pa.Schema) -> Filter:
    """The filter of the ``where`` (SQL text, SQL's meaning) and ``filter``
    (:func:`encode_filter`) options, AND-ed (:class:`arrowidx.filters.Filter`)."""
    parts = []
    where = options.get("where")
    sql = user_filter(str(where), schema, "where", options.get("sessionTimeZone")) if where else None
    if sql is not None and sql.pushdown is not None:
        parts.append(sql.pushdown)
    encoded = options.get("filter")
    if encoded:
        try:
            parts.append(pc.Expression._deserialize(pa.py_buffer(base64.b64decode(str(encoded), validate=True))))
        except Exception as e:  # noqa: BLE001 - any malformed option text
            raise OptionError(
                f"the filter option is not an encoded pyarrow Expression ({type(e).__name__}); pass it with"
                " arrowidx.spark.read(spark, path, filter=expr) or give SQL text with .option('where', ...)"
            ) from None
    out = parts[0] if parts else None
    for p in parts[1:]:
        out = out & p
    return Filter(out, sql.residual if sql is not None else None)


STORAGE_PREFIX = "storage."  # data source options "storage.<key>": an object store's storage_options

#: The data source's options a user gives (``.option(key, value)``, or ``**options`` of :func:`read`).
USER_OPTIONS = ("where", "filter", "on_corrupt", "maxPartitionBytes", "minPartitions", "index_root")
#: Options :func:`read` sets itself for the files it hands to the data source.
READ_OPTIONS = ("files", "version", "sessionTimeZone")
ON_CORRUPT = ("raise", "fallback")


def check_source_options(options: Mapping[str, object], *, call: str = 'spark.read.format("arrowidx")',
                         accepted: Sequence[str] = ("path", *USER_OPTIONS, *READ_OPTIONS)) -> None:  # fmt: skip
    """Refuse, where the DataFrame is loaded (on the driver, before any job), an option the
    data source does not know (``.option("wher", ...)`` would otherwise read the whole lake,
    ``.option("on_corupt", ...)`` be ignored), with the closest known one; and a value of
    ``on_corrupt``, ``maxPartitionBytes`` or ``minPartitions`` it cannot use. Spark gives
    option names in lower case: they are compared so. ``storage.<key>`` options are an
    object store's ``storage_options``."""
    known = {k.lower(): k for k in accepted}
    for key in options:
        name = str(key)
        if name.lower() in known or name.lower().startswith(STORAGE_PREFIX):
            continue
        close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
        hint = f" (did you mean {known[close[0]]!r}?)" if close else ""
        takes = ", ".join(k for k in known.values() if k in USER_OPTIONS)
        raise OptionError(f"{call}: unknown option {name!r}{hint}; it takes {takes} and storage.<key> (object stores)")
    lower = {str(k).lower(): v for k, v in options.items()}
    on_corrupt = lower.get("on_corrupt")
    if on_corrupt is not None and str(on_corrupt) not in ON_CORRUPT:
        raise OptionError(f"{call}: on_corrupt must be one of {', '.join(ON_CORRUPT)}, got {on_corrupt!r}")
    if lower.get("maxpartitionbytes") is not None:
        parse_memory_size(str(lower["maxpartitionbytes"]), "maxPartitionBytes")
    if lower.get("minpartitions") is not None:
        text = str(lower["minpartitions"]).strip()
        if not text.isdigit() or int(text) < 1:
            raise OptionError(f"{call}: minPartitions must be a whole number >= 1, got {lower['minpartitions']!r}")


def storage_options_of(options: Mapping[str, str]) -> dict[str, str] | None:
    """The ``storage.<key>`` options of the data source (an object store's endpoint,
    credentials...: :func:`read` passes ``storage_options`` so), or None."""
    found = {str(k)[len(STORAGE_PREFIX) :]: str(v) for k, v in options.items() if str(k).lower().startswith(STORAGE_PREFIX)}
    return found or None


def _said_to_spark(method):
    """A planning method of the data source whose arrowidx errors Spark shows as their message
    alone: ``[PYTHON_DATA_SOURCE_ERROR] ...: arrowidx.sql.WhereError: where: unknown column
    ...``, not a traceback of arrowidx's frames with the message at its end. PySpark's worker
    prints only the message when ``SPARK_HIDE_TRACEBACK`` is set (what the session setting
    ``spark.sql.execution.pyspark.udf.hideTraceback.enabled`` does for every UDF); it is set
    here, in the planning worker that raises, only when the error is arrowidx's own."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except ArrowIdxError:
            if "PYTHON_WORKER_FACTORY_SECRET" in os.environ:  # (in a Spark Python worker only)
                os.environ["SPARK_HIDE_TRACEBACK"] = "1"
            raise

    return wrapper


def absolute(path: str) -> str:
    """``path`` with a local relative path made absolute here (on the driver): executors run
    in other working directories."""
    path = os.fspath(path)
    return path if "://" in path else os.path.abspath(path)


def planning_dataset(
    path: str, on_corrupt: str = "raise", storage_options: Mapping[str, str] | None = None, index_root: str | None = None
) -> IndexedDataset:
    """The dataset to plan on, kept by the planning process across queries
    (:data:`arrowidx.facts.OPEN`; its opened
    indexes, footers and deletion vectors are cached per file identity) and refreshed: the
    manifest re-read when its version changed, the files listed and stat-ed again. What is
    kept only saves time: every query refreshes it."""
    store, root, _ = open_lake(path, None, storage_options, index_root)
    key = ("spark planning dataset", store.key, root, on_corrupt)
    data = facts.OPEN.peek(key)
    if data is not None:
        data.refresh()
        return data
    return facts.OPEN.get(key, lambda: (IndexedDataset(store, root, on_corrupt=on_corrupt), 4 << 20))


class _Reader(DataSourceReader):
    """Reads the planned files with the load-time filter; its state travels to the executors."""

    def __init__(self, path: str, schema, options: Mapping[str, str]):
        self.path = absolute(path)  # made absolute where the query is planned, not on executors
        self.schema = schema  # pyspark StructType of the output
        self.on_corrupt = options.get("on_corrupt", "raise")
        self.max_partition_bytes = parse_memory_size(
            str(options.get("maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES)), "maxPartitionBytes"
        )
        self.min_partitions = int(options.get("minPartitions", os.cpu_count() or 1))
        self.options = {k: str(options[k]) for k in ("where", "filter", "sessionTimeZone") if options.get(k)}
        self.storage = storage_options_of(options)
        self.index_root = options.get("index_root") or None
        # set by arrowidx.spark.read for the files Spark's own reader cannot serve: only these
        # files, at the manifest version read() planned on
        self.files = json.loads(options["files"]) if options.get("files") else None
        self.version = int(options["version"]) if options.get("version") else None

    @_said_to_spark
    def partitions(self) -> list[FilePartition]:
        if self.files is not None:
            store, root, _ = open_lake(self.path, None, self.storage, self.index_root)
            data = dataset_at(store, root, self.version, self.on_corrupt)
            data.restat(list(self.files))
        else:
            data = planning_dataset(self.path, self.on_corrupt, self.storage, self.index_root)
        _check_columns(self.schema.fieldNames(), data.schema, data.root, ".schema(...)")  # a user's .schema(...)
        where = load_filter(self.options, data.schema)
        expr = where.pushdown
        one_pass = True
        if expr is None and where.residual is None and self.files is None:
            # sizes from the file system: files added since the build are not in the manifest
            files = [(rel, data.lake.info(rel).size) for rel in data.lake.files]
        else:
            # what each surviving file costs to read: the compressed bytes of the columns the
            # query reads (its output and filter columns), in the row groups that survive
            residual = where.residual.columns if where.residual is not None else []
            columns = list(dict.fromkeys(self.schema.fieldNames() + sorted(data.lake.columns_of(expr)) + residual))
            if self.files is None:
                plans = data.plan(expr, statistics=expr)
            else:
                bound: dict = {}
                statistics = False if expr is None else expr
                plans = [data.plan_file(rel, expr, bound, statistics=statistics) for rel in self.files]
            one_pass = not index_pruned(plans)
            files = [
                (plan.path, column_bytes(data.lake.footer(plan.path), plan.row_groups, columns, compressed=True))
                for plan in plans
                if plan.row_groups
            ]
        version = data.manifest.version
        groups = _pack(files, self.max_partition_bytes, self.min_partitions)
        return [FilePartition(group, version, one_pass) for group in groups]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, FilePartition):
            return  # Spark's placeholder when nothing survived pruning
        store, root, _ = open_lake(self.path, None, self.storage, self.index_root)
        data = dataset_at(store, root, partition.version, self.on_corrupt)
        data.restat(list(partition.paths))  # only the files this task reads, looked at freshly
        where = load_filter(self.options, data.schema)
        expr = where.pushdown
        names = self.schema.fieldNames()
        columns = None if names == data.schema.names else names
        target = to_arrow_schema(self.schema, timezone="UTC")
        for rel in partition.paths:
            plan = data.plan_file(rel, expr, statistics=False if expr is None else expr)
            if not plan.row_groups:
                continue
            table = data.read_plan(plan, expr, where.read_columns(columns), one_pass=partition.one_pass)
            if table is None or table.num_rows == 0:
                continue
            table = where.apply_table(table, columns)
            yield from to_spark_arrow(table, target).to_batches(max_chunksize=64 * 1024)


class ArrowIdxDataSource(DataSource):
    """``spark.read.format("arrowidx").load(path)``: an indexed Parquet dataset, read in Python.

    Options: ``where`` (SQL text, as the CLI's ``--where``) and ``filter`` (a pyarrow
    Expression, see :func:`read`): the rows of the dataset this DataFrame holds, pruned by
    the indexes; ``on_corrupt`` (``raise``, default, or ``fallback``: read a file whose index
    is damaged in full), ``maxPartitionBytes`` (default ``128mb``) and ``minPartitions``
    (default the planning machine's cores; :func:`read` passes Spark's default parallelism):
    how the files that survive pruning are packed into Spark partitions (:func:`_pack`).
    ``files`` and ``version`` are set by :func:`read` for the files it hands to this source.
    Filters applied later with ``.filter()`` are applied by Spark and do not prune (see the
    module docstring for why): loaded without a filter, the source says so once in the
    Spark log (:func:`warn_unfiltered`).
    """

    @_said_to_spark
    def __init__(self, options) -> None:
        super().__init__(options)
        # called once per DataFrame: when it is loaded (later queries unpickle this instance),
        # on the driver: a typo is refused before any job
        check_source_options(options)
        if not any(options.get(k) for k in ("where", "filter", "files")):
            self._check_path()  # a missing dataset is said first, and alone
            warn_unfiltered(str(options.get("path", "")))

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise ArrowIdxError('give the dataset path: spark.read.format("arrowidx").load(path)')
        return path

    def _check_path(self) -> None:
        path = absolute(self._path())
        if "://" not in path and not os.path.exists(path):
            raise ArrowIdxError(f"spark.read.format('arrowidx').load({self._path()!r}): {path}: no such dataset directory")

    @_said_to_spark
    def schema(self):
        self._check_path()
        store, root, _ = open_lake(absolute(self._path()), None, storage_options_of(self.options), self.options.get("index_root") or None)
        data = IndexedDataset(store, root)
        load_filter(self.options, data.schema)  # a bad where or filter fails the load, not a later query
        return arrow_to_spark_schema(data.schema)

    @_said_to_spark
    def reader(self, schema) -> DataSourceReader:
        return _Reader(self._path(), schema, self.options)


def warn_unfiltered(path: str) -> None:
    """The warning of a DataFrame loaded without a filter. It goes to Python logging in the
    process that loads the DataFrame, a Python worker of the driver whose output Spark shows
    with its own log (the driver's standard error); a Python data source is not told whether
    a query filters, so it is said once, when the DataFrame is loaded."""
    _LOG.warning(
        "arrowidx: spark.read.format('arrowidx').load(%r) has no load-time filter: a .filter() or"
        " WHERE on this DataFrame is applied by Spark after every file is read through Python, and"
        " the indexes cannot prune it. To prune, and read with Spark's own Parquet reader, use"
        " arrowidx.spark.read(spark, %r, where)",
        path,
        path,
    )


def register(spark) -> None:
    """Register the ``arrowidx`` data source. In local mode the workers run this
    interpreter unless one was set (:func:`ensure_worker_python`)."""
    ensure_worker_python(spark)
    spark.dataSource.register(ArrowIdxDataSource)


def read(
    spark, path: str, filter: pc.Expression | str | None = None, *, columns: Sequence[str] | None = None,
    storage_options: Mapping[str, str] | None = None, **options: str,
):  # fmt: skip
    """The rows of the indexed dataset at ``path`` that match ``filter`` (a
    ``pyarrow.compute.Expression`` with pyarrow's meaning, or SQL text with SQL's meaning),
    deleted rows dropped, as one DataFrame; ``columns``: only these columns (the filter may
    use others).

    Planned here, on the driver, when called: the indexes prune files with ``filter``; the
    files that survive are read by Spark's own Parquet reader with the filter (and each
    file's deletion vector) in Spark's plan, a small exact index answer is read by the
    driver, and only files Spark's reader cannot serve exactly are read through the
    ``arrowidx`` data source (see :mod:`arrowidx.spark.native`). The DataFrame holds the
    files, deletions and manifest version of this moment, as ``spark.read.parquet`` fixes
    its file listing when called. SQL text is parsed here: text that is not valid SQL for
    the dataset raises :class:`~arrowidx.sql.WhereError` in this call, before any job.
    ``options`` are the data source's (``on_corrupt``, ``maxPartitionBytes``,
    ``minPartitions``, ``index_root``: where the indexes are when not beside the data folder,
    as given to :func:`arrowidx.build`).

    ``storage_options``: endpoint, region and credentials of an object-store URI
    (``s3://bucket/lake``; docs/object-stores.md), passed to the executors as the data
    source's ``storage.<key>`` options (an object-store lake is read by the data source).
    """
    for key in ("where", "filter"):
        if key in options:
            raise OptionError(f"arrowidx.spark.read: give the filter as the third argument, read(spark, path, {options[key]!r}),"
                              f" not as {key}=")  # fmt: skip
    check_source_options(options, call="arrowidx.spark.read", accepted=USER_OPTIONS)
    path = absolute(path)
    on_corrupt = str(options.get("on_corrupt", "raise"))
    index_root = options.get("index_root") or None
    data = planning_dataset(path, on_corrupt, storage_options, index_root)
    schema = data.schema
    names = list(schema.names) if columns is None else user_columns(columns, schema, data.root)
    _check_columns(names, schema, data.root)
    spark_schema = arrow_to_spark_schema(schema)
    out_schema = arrow_to_spark_schema(pa.schema([schema.field(c) for c in names]))
    where, where_sql = Filter(None, None), None
    if isinstance(filter, str):  # refused here, on the driver, before any job (WhereError)
        zone = _session_time_zone(spark)  # SQL's naive times mean the session's wall time, as in Spark
        where = user_filter(filter, schema, "where", zone)
        if zone:
            options = {"sessionTimeZone": zone, **options}
    elif filter is not None:
        if not isinstance(filter, pc.Expression):
            raise OptionError(f"filter must be a pyarrow.compute.Expression or SQL text, not {type(filter).__name__}")
        where = Filter(filter, None)
    register(spark)  # (after the filter: a refusal needs no session)
    expr = where.pushdown
    if expr is not None and where.residual is None:
        # the filter in Spark SQL with arrowidx's meaning (None: no exact spelling)
        where_sql = to_spark_sql(expr, schema)
    plans = data.plan(expr, statistics=False if expr is None else expr)
    native_ok = storage_options is None and spark_uri(path, data.root).startswith("file://")
    exact = filter is None or where_sql is not None
    route = plan_route(data, plans, translatable=exact and native_ok, columns=names)
    frames = []
    if route.local:
        frames.append(_local_frame(spark, data, route.local, where, names, out_schema))
    if route.native:
        frames.append(native_frame(spark, spark_uri(path, data.root), data.root, route, spark_schema, where_sql, names))
    if route.python:
        if "minPartitions" not in options:
            parallelism = _default_parallelism(spark)
            if parallelism:
                options = {**options, "minPartitions": str(parallelism)}
        reader = spark.read.format(FORMAT_NAME).schema(out_schema)
        reader = reader.option("files", json.dumps(sorted(route.python))).option("version", str(route.version))
        if isinstance(filter, str):
            reader = reader.option("where", filter)
        elif filter is not None:
            reader = reader.option("filter", encode_filter(filter))
        for key, value in options.items():
            reader = reader.option(key, str(value))
        for key, value in (storage_options or {}).items():
            reader = reader.option(STORAGE_PREFIX + str(key), str(value))
        frames.append(reader.load(path))
    if not frames:
        return spark.createDataFrame([], out_schema)  # nothing survived the indexes: no job at all
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _local_frame(spark, data: IndexedDataset, plans, where: Filter, columns: list[str], out_schema):
    """The rows the plans keep, read here (the arrowidx scan core: only the row groups holding
    them, deleted rows dropped), as a DataFrame of Spark's local relation."""
    from pyspark.sql.pandas.types import to_arrow_schema

    target = to_arrow_schema(out_schema, timezone="UTC")
    read = data.read_plans(plans, where.pushdown, where.read_columns(columns), one_pass=False)
    tables = [where.apply_table(t, columns) for t in read if t is not None and t.num_rows]
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return spark.createDataFrame([], out_schema)  # (a union with an empty local relation costs nothing)
    table = to_spark_arrow(pa.concat_tables(tables).combine_chunks(), target)
    return spark.createDataFrame(table, schema=out_schema)


def _session_time_zone(spark) -> str | None:
    """Spark's ``spark.sql.session.timeZone`` (None without a session)."""
    try:
        return str(spark.conf.get("spark.sql.session.timeZone"))
    except Exception:  # noqa: BLE001 - no session (a refusal check), or Spark Connect without conf
        return None


def _default_parallelism(spark) -> int | None:
    """Spark's default parallelism (the cores of its executors; None where the client has no
    SparkContext, as with Spark Connect)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect raises its own error for sparkContext
        return None


def _check_columns(columns: list[str], schema: pa.Schema, root: str, argument: str = "columns=") -> None:
    if not columns:
        raise OptionError("columns must name at least one column (Spark reads no zero-column data source)")
    for name in columns:
        if name not in schema.names:
            raise UnknownColumnError.naming(name, schema.names, root, argument)


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
    )  # fmt: skip
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


