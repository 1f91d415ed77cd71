"""A real Spark standalone cluster for the integration tests (not a test module).

:class:`StandaloneCluster` starts a master and one worker as separate JVMs from PySpark's own
jars (``bin/spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), on
127.0.0.1 with free ports, each in its own process group, and stops them (with the executor
JVMs the worker started) in :meth:`StandaloneCluster.stop`. Nothing is shared with the test
process but the filesystem:

* the driver is another Python process (:class:`ClusterDriver`, started by
  :meth:`StandaloneCluster.driver`) whose working directory is its own folder;
* the executor is a JVM the worker launches, in the worker's work directory
  (``<work>/worker/app-*/0``), with its own Python workers.

So code that leans on state of the process that planned a query (a module global, a cache,
a relative path, a temporary file of the driver) fails here while it passes in ``local[*]``
mode. A test sends a function to the driver with :meth:`ClusterDriver.call`: the function
must be importable by module and name (a test module's top-level function is: ``integration/``
is on the driver's ``PYTHONPATH``) and is called as ``fn(spark, *args)`` in the driver; its
result comes back pickled (pyarrow tables are picklable).

The fixture ``spark_cluster`` in ``conftest.py`` starts one cluster per test session.
"""

from __future__ import annotations

import importlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from multiprocessing.connection import Client, Listener
from pathlib import Path

HERE = Path(__file__).resolve().parent
START_TIMEOUT = 180.0  # seconds, for a loaded machine
FAST_START = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def java_missing() -> str | None:
    """Why no JVM can be started here (None: one can)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and Path(java_home, "bin", "java").exists():
        return None
    from shutil import which

    return None if which("java") else "Java is absent (no java on PATH, no JAVA_HOME): Spark needs Java 17+"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """A Spark standalone master and one worker (``cores`` cores, ``memory`` for executors);
    ``driver``: also start a :class:`ClusterDriver` process (else connect a session of your
    own to :attr:`master_url`, as ``bench/bench_spark.py --standalone`` does)."""

    def __init__(self, work: Path, *, cores: int = 2, memory: str = "1g", driver: bool = True):
        self.work = Path(work)
        self.with_driver = driver  # start a ClusterDriver process with the cluster (tests)
        self.cores, self.memory = cores, memory
        self.master_port, self.master_ui = free_port(), free_port()
        self.worker_port, self.worker_ui = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{self.master_port}"
        self.processes: list[subprocess.Popen] = []
        self._driver: ClusterDriver | None = None
        self._driver_start: threading.Thread | None = None
        self._driver_error: BaseException | None = None

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY="256m",
            SPARK_DAEMON_JAVA_OPTS=FAST_START,  # the daemons only relay
            SPARK_LOG_DIR=str(self.work / "logs"),
            PYSPARK_PYTHON=sys.executable,
        )
        return env

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        command = [str(spark_home() / "bin" / "spark-class"), *args]
        process = subprocess.Popen(
            command, cwd=self.work, env=self._env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )  # its own process group: stop() ends it with the executors it starts
        log.close()
        self.processes.append(process)
        return process

    def start(self) -> StandaloneCluster:
        (self.work / "worker").mkdir(parents=True, exist_ok=True)
        self._spawn(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.master_ui),
        )  # fmt: skip
        self._wait(lambda: self._state() is not None, "the master to answer")
        self._spawn(
            "worker", "org.apache.spark.deploy.worker.Worker", self.master_url,
            "--host", "127.0.0.1", "--port", str(self.worker_port), "--webui-port", str(self.worker_ui),
            "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(self.work / "worker"),
        )  # fmt: skip
        if self.with_driver:  # the driver's JVM starts meanwhile (it waits for the worker's executor)
            self._driver_start = threading.Thread(target=self._start_driver, daemon=True)
            self._driver_start.start()
        self._wait(lambda: (self._state() or {}).get("aliveworkers", 0) >= 1, "the worker to register")
        return self

    def _start_driver(self) -> None:
        try:
            self._driver = ClusterDriver(self, self.work / "driver")
        except BaseException as e:  # noqa: BLE001 - raised by driver()
            self._driver_error = e

    def _state(self) -> dict | None:
        """The master's status (its web UI's JSON), or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui}/json/", timeout=2) as response:
                return json.loads(response.read())
        except (OSError, ValueError):
            return None

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            for p in self.processes:
                if p.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({p.args[1]}, code {p.returncode}):\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}:\n{self.logs()}")
            time.sleep(0.3)

    def logs(self, tail: int = 4000) -> str:
        out = []
        for log in sorted(self.work.glob("*.log")):
            out.append(f"--- {log.name}\n{log.read_text(errors='replace')[-tail:]}")
        return "\n".join(out)

    def driver(self) -> ClusterDriver:
        """The PySpark driver process connected to this cluster (started with the cluster, one
        application for the whole session)."""
        if self._driver_start is not None:
            self._driver_start.join()
        if self._driver_error is not None:
            raise RuntimeError(f"the cluster driver did not start: {self._driver_error}") from self._driver_error
        if self._driver is None:
            raise RuntimeError("the cluster is not started")
        return self._driver

    def stop(self) -> None:
        if self._driver_start is not None:
            self._driver_start.join()
        if self._driver is not None:
            self._driver.close()
            self._driver = None
        for process in reversed(self.processes):  # worker (and its executors) first, then master
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
            try:
                os.killpg(process.pid, signal.SIGKILL)  # what the daemon left of its group (executors)
            except ProcessLookupError:
                pass
        self.processes.clear()


class ClusterDriver:
    """A Python process running a SparkSession on the cluster, in its own working directory;
    :meth:`call` runs a function there."""

    def __init__(self, cluster: StandaloneCluster, cwd: Path):
        cwd.mkdir(parents=True, exist_ok=True)
        self.cwd = cwd
        self.log = cwd.parent / "driver.log"
        authkey = secrets.token_bytes(16)
        self.listener = Listener(("127.0.0.1", 0), authkey=authkey)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        host, port = self.listener.address
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "driver", cluster.master_url, host, str(port), authkey.hex()],
                cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        accepted: list = []
        waiter = threading.Thread(target=lambda: accepted.append(self.listener.accept()), daemon=True)
        waiter.start()
        deadline = time.monotonic() + START_TIMEOUT
        while waiter.is_alive() and self.process.poll() is None and time.monotonic() < deadline:
            waiter.join(0.5)
        if not accepted:
            self.close()
            raise RuntimeError(f"the cluster driver did not start:\n{self.output()}")
        self.conn = accepted[0]
        ok, message = self.conn.recv()  # the session is up, or why not
        if not ok:
            raise RuntimeError(f"the cluster driver could not create its session:\n{message}\n{self.output()}")

    def output(self, tail: int = 6000) -> str:
        """What the driver process and its JVM wrote (Spark's log, Python workers' stderr)."""
        return self.log.read_text(errors="replace")[-tail:] if self.log.exists() else ""

    def call(self, fn, *args):
        """``fn(spark, *args)`` in the driver process; its result, or AssertionError with the
        driver's traceback."""
        self.conn.send((fn.__module__, fn.__qualname__, args))
        ok, value = self.conn.recv()
        if not ok:
            raise AssertionError(f"{fn.__qualname__} failed on the cluster:\n{value}")
        return value

    def close(self) -> None:
        try:
            self.conn.send(None)  # (AttributeError: never connected)
            self.process.wait(timeout=60)
        except (AttributeError, OSError, EOFError, subprocess.TimeoutExpired):
            pass
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.listener.close()


def _driver_main(master: str, host: str, port: int, authkey: bytes) -> None:
    conn = Client((host, port), authkey=authkey)
    try:
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master(master).appName("arrowidx-cluster-test")
            .config("spark.pyspark.python", sys.executable)
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.memory", "768m")
            .config("spark.executor.memory", "768m")
            .config("spark.executor.cores", "2")
            .config("spark.cores.max", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "America/Los_Angeles")
            # small test data: start-up dominates, so JIT to C1 only and one GC thread
            .config("spark.driver.extraJavaOptions", FAST_START)
            .config("spark.executor.extraJavaOptions", FAST_START)
            .getOrCreate()
        )  # fmt: skip
    except BaseException:
        conn.send((False, traceback.format_exc()))
        return
    conn.send((True, None))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            break
        if message is None:
            break
        module, name, args = message
        try:
            target = importlib.import_module(module)
            for part in name.split("."):
                target = getattr(target, part)
            conn.send((True, target(spark, *args)))
        except BaseException:  # noqa: BLE001 - reported to the test
            conn.send((False, traceback.format_exc()))
    spark.stop()


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "driver":
    _driver_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), bytes.fromhex(sys.argv[5]))
