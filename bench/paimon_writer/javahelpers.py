"""Compile and run the Java helpers of this folder against Apache Paimon, from Python (the
rewrite tests and ``bench/bench_paimon_rewrite.py`` use it).

Two Paimon versions:

* ``0.9.0``: the released bundle inside PyPI's ``pypaimon==0.2.0`` sdist
  (``deps/jars/paimon-python-java-bridge-0.9.0.jar``), which ``make interop``
  (``setup_interop.py``) downloads into ``~/.cache/arrowidx``, with pyspark's Hadoop jars
  (nothing here downloads: without it, :class:`JavaUnavailable` names ``make interop``);
* ``master``: Paimon compiled from source as ``shared/paimon-tables/writer/build-master.sh``
  leaves it, found in ``$PAIMON_MASTER`` (a directory with ``classes/``, ``src/`` and
  ``paimon-shade-from-0.9.0.jar``; see docs/benchmarks.md). Only master has
  ``FileIndexProcessor``, so ``JavaRewrite`` (Java's own rewrite) runs on master only.

Compiled classes are kept under ``build/paimon-java/<version>-<hash of the sources>`` of the
repository, so a test session compiles once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import setup_interop

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CACHE = setup_interop.CACHE
BUILD = ROOT / "build" / "paimon-java"
SOURCES = {
    "0.9.0": ["WriteBench.java", "PaimonCheck.java", "JavaDelete.java", "v09/DvCommit.java"],
    "master": ["WriteBench.java", "PaimonCheck.java", "JavaRewrite.java", "JavaDelete.java", "master/DvCommit.java"],
}
JVM_TEST = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss4m", "-Xmx1g"]
OPENS = [f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in ("java.nio", "sun.nio.ch", "java.lang", "java.util")]


class JavaUnavailable(Exception):
    """Java, pyspark's jars or the Paimon version asked for is not here (the message says which)."""


def _spark_jars() -> Path:
    try:
        import pyspark
    except ImportError:
        raise JavaUnavailable("pyspark is not installed (its jars give the Hadoop classes Paimon needs)") from None
    return Path(pyspark.__file__).parent / "jars"


def bundle_090() -> Path:
    """The Paimon 0.9.0 bundle jar (``$J09``, or where ``make interop`` put it)."""
    if os.environ.get("J09"):
        return Path(os.environ["J09"])
    if not setup_interop.BUNDLE_090.exists():
        raise JavaUnavailable(f"the Paimon 0.9.0 bundle is not at {setup_interop.BUNDLE_090}: run `{setup_interop.MAKE_STEP}`"
                              " (downloads PyPI's pypaimon==0.2.0 sdist, which holds it)")  # fmt: skip
    return setup_interop.BUNDLE_090


def master_dir() -> Path:
    found = os.environ.get("PAIMON_MASTER")
    if not found or not (Path(found) / "classes").is_dir():
        raise JavaUnavailable("PAIMON_MASTER is not set to a Paimon master build (see docs/benchmarks.md, Paimon tables)")
    return Path(found)


def classpath(version: str) -> list[str]:
    sj = _spark_jars()
    if version == "0.9.0":
        return [str(bundle_090()), str(sj / "hadoop-client-api-3.5.0.jar"), str(sj / "hadoop-client-runtime-3.5.0.jar")]
    m = master_dir()
    cp = [str(m / "classes"), str(m / "paimon-shade-from-0.9.0.jar"), str(sj / "*")]
    cp += [j for j in ("/usr/share/java/httpclient5.jar", "/usr/share/java/httpcore5.jar") if Path(j).exists()]
    return cp


def _sourcepath(version: str) -> list[str]:
    if version != "master":
        return []
    m = master_dir()
    src = m / "src"
    parts = [m / "stubs"] + [src / p / "src" / "main" / "java" for p in ("paimon-api", "paimon-common", "paimon-core", "paimon-format", "paimon-codegen-loader")]
    return ["-sourcepath", os.pathsep.join(str(p) for p in parts)]


def compiled(version: str) -> Path:
    """The helpers compiled against ``version`` (compiled once per change of the sources)."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        raise JavaUnavailable("no java/javac on PATH (Java 17 runs Apache Paimon)")
    cp = classpath(version)
    files = [HERE / f for f in SOURCES[version]]
    h = hashlib.sha1()
    for f in files:
        h.update(f.read_bytes())
    h.update(os.pathsep.join(cp).encode())
    out = BUILD / f"{version}-{h.hexdigest()[:12]}"
    if (out / ".ok").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    args = ["javac", "-nowarn", "-proc:none", "-encoding", "UTF-8", "-d", str(out), "-cp", os.pathsep.join(cp), *_sourcepath(version), *map(str, files)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"javac failed for Paimon {version}: {done.stderr[-3000:]}")
    (out / ".ok").touch()
    return out


def command(version: str, main: str, *args: str, jvm: list[str] | None = None) -> list[str]:
    """The ``java`` command line running ``main`` of the helpers against ``version``."""
    cp = [str(compiled(version)), *classpath(version)]
    opens = OPENS if version == "master" else []
    return ["java", *(JVM_TEST if jvm is None else jvm), *opens, "-cp", os.pathsep.join(cp), main, *args]


def read_table(version: str, warehouse: str, table: str, snapshot: str, queries: list[str]) -> dict:
    """What Java's ``PaimonCheck read`` says of ``table`` (``db.<name>``) at ``snapshot``:
    ``"full"``: (rows, digest of the sorted rows); per query and ``file-index.read.enabled``
    value, ``(query, enabled)``: splits, reader rows, rows and digest."""
    out = run(version, "PaimonCheck", str(warehouse), "read", table, snapshot, *queries)
    result: dict = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "full":
            result["full"] = (int(parts[1]), parts[2])
        elif parts[0] == "q":
            result[(parts[1], parts[2] == "true")] = {"splits": int(parts[3]), "reader_rows": int(parts[4]),
                                                      "rows": int(parts[5]), "digest": parts[6]}  # fmt: skip
    return result


def run(version: str, main: str, *args: str, jvm: list[str] | None = None, timeout: float = 600) -> str:
    """Run a helper; its standard output (a failure raises with its standard error)."""
    done = subprocess.run(command(version, main, *args, jvm=jvm), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args[:3])} failed ({done.returncode}): {done.stderr[-3000:]}")
    return done.stdout
