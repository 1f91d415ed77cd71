"""One local SparkSession for the whole integration run (Spark start-up is the slow part)."""

from __future__ import annotations

import pytest


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
