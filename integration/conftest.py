"""Spark for the integration run: one local SparkSession, and one standalone cluster
(master, worker and executor in their own JVMs), each started once (Spark start-up is the
slow part); a moto S3 server per module that asks for ``s3``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3_support import S3Server  # noqa: E402


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 for the module's tests (``integration/s3_support.py``),
    stopped after them; skipped where moto is not installed or cannot start."""
    pytest.importorskip("moto", reason="install the test extra: pip install -e '.[test]' (moto[server])")
    try:
        server = S3Server()
    except (RuntimeError, OSError) as e:
        pytest.skip(f"cannot start moto_server on 127.0.0.1: {e}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark():
    pyspark = pytest.importorskip("pyspark", reason="install the 'spark' extra: pip install -e '.[spark]'")
    del pyspark
    import arrowidx.spark

    session = arrowidx.spark.local_session(
        "local[2,2]",  # 2 cores; ",2": a failed task is retried once
        "arrowidx-integration",
        spark_default_parallelism="2",
        spark_driver_memory="1g",
        # A session time zone other than UTC, so timestamp literals are checked as instants.
        spark_sql_session_timeZone="America/Los_Angeles",
        spark_sql_execution_arrow_pyspark_enabled="true",
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone cluster on 127.0.0.1 (``integration/spark_cluster.py``): a master and
    one 2-core worker started from PySpark's own jars, stopped at the end of the session.

    Run code on it with ``spark_cluster.driver().call(fn, *args)``: ``fn(spark, *args)`` runs
    in a separate driver process (its own working directory) whose executor is another JVM
    with its own Python workers, and the result comes back pickled. ``fn`` must be a
    top-level function of a module in ``integration/`` (or anything importable). Skipped only
    where Java is absent.
    """
    pytest.importorskip("pyspark", reason="install the 'spark' extra: pip install -e '.[spark]'")
    from spark_cluster import StandaloneCluster, java_missing

    reason = java_missing()
    if reason:
        pytest.skip(reason)
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def pytest_terminal_summary(terminalreporter):
    """How many cases of the differential suites run here were selective."""
    import sys

    if "tests.differential_support" in sys.modules:
        sys.modules["tests.differential_support"].report_tallies(terminalreporter)
