"""One local SparkSession for the whole integration run (Spark start-up is the slow part)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    pyspark = pytest.importorskip("pyspark", reason="install the 'spark' extra: pip install -e '.[spark]'")
    del pyspark
    # Executors' Python workers must be this interpreter (the one with arrowidx installed).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import arrowidx.spark

    session = (
        SparkSession.builder.master("local[2,2]")  # 2 cores; ",2": a failed task is retried once
        .appName("arrowidx-integration")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.pyspark.python", sys.executable)
        # A session time zone other than UTC, so timestamp literals are checked as instants.
        .config("spark.sql.session.timeZone", "America/Los_Angeles")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    arrowidx.spark.register(session)
    yield session
    session.stop()
