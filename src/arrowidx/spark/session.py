"""Local Spark sessions whose Python workers can import arrowidx."""

from __future__ import annotations

from ..errors import ArrowIdxError


def ensure_worker_python(spark) -> None:
    """In local mode, make Python workers run an interpreter that has arrowidx.

    With no ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` set, workers would start
    ``python3`` from the PATH (often without arrowidx: ``ModuleNotFoundError`` in every
    task); they get this interpreter (``sys.executable``) instead. An interpreter the user
    set is checked once and, if it cannot import arrowidx, an error says what to do.
    Clusters are left alone (install arrowidx on the executors).
    """
    import os
    import subprocess
    import sys

    try:
        sc = spark.sparkContext
        master = str(sc.master)
    except Exception:  # Spark Connect: no SparkContext on the client
        return
    if not master.startswith("local"):
        return
    chosen = os.environ.get("PYSPARK_PYTHON") or sc.getConf().get("spark.pyspark.python", None)
    if not chosen:
        sc.pythonExec = sys.executable  # read by every Python function registered from now on
        os.environ["PYSPARK_PYTHON"] = sys.executable
        return
    if os.path.realpath(str(chosen)) == os.path.realpath(sys.executable) or getattr(sc, "_arrowidx_python_ok", False):
        return
    try:
        ok = subprocess.run([str(chosen), "-c", "import arrowidx"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise ArrowIdxError(
            f"Spark's Python workers run {chosen} (PYSPARK_PYTHON / spark.pyspark.python), which cannot"
            f" import arrowidx: set PYSPARK_PYTHON={sys.executable} before creating the session, or"
            " create it with arrowidx.spark.local_session()"
        )
    sc._arrowidx_python_ok = True
