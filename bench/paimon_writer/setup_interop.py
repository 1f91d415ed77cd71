"""``make interop``: what the Java and pypaimon round trips need from the network, fetched
once, so that no test downloads anything (a test whose piece is missing skips, naming
``make interop``):

* the Paimon 0.9.0 bundle: PyPI's ``pypaimon==0.2.0`` sdist (its
  ``deps/jars/paimon-python-java-bridge-0.9.0.jar``), downloaded with pip into
  ``~/.cache/arrowidx`` (``$ARROWIDX_CACHE``); ``javahelpers.bundle_090`` finds it there;
* ``build/pypaimon-venv``: a virtualenv with :data:`PINS` (pypaimon and pypaimon-rust pin
  pyarrow < 20 and polars < 2, so they cannot live in the project's ``.venv``), made with
  ``uv`` when it is installed (about 13 s from an empty uv cache; pip takes over a minute).

Each piece already in place is kept. Exit status 1 (with the reason) when a download fails.
Run as ``.venv/bin/python bench/paimon_writer/setup_interop.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CACHE = Path(os.environ.get("ARROWIDX_CACHE", Path.home() / ".cache" / "arrowidx"))
BUNDLE_090 = CACHE / "pypaimon-0.2.0" / "deps" / "jars" / "paimon-python-java-bridge-0.9.0.jar"
PINS = ["pypaimon==2.1.0", "pypaimon-rust==0.4.0"]
VENV = ROOT / "build" / "pypaimon-venv"
MAKE_STEP = "make interop"


class SetupFailed(Exception):
    """A download or install failed (the message says which and why)."""


def fetch_paimon_090() -> Path:
    """The Paimon 0.9.0 bundle jar, downloaded the first time."""
    if BUNDLE_090.exists():
        return BUNDLE_090
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "pypaimon==0.2.0", "-d", str(CACHE)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    if done.returncode != 0:
        raise SetupFailed(f"cannot download pypaimon==0.2.0 (the Paimon 0.9.0 bundle) from PyPI: {done.stderr.strip()[-300:]}")
    subprocess.run(["tar", "xzf", str(CACHE / "pypaimon-0.2.0.tar.gz"), "-C", str(CACHE),
                    "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"], check=True)  # fmt: skip
    return BUNDLE_090


def pypaimon_python() -> Path | None:
    """The interpreter of :data:`VENV` if it holds :data:`PINS`, else None."""
    marker = VENV / ".installed"
    if marker.exists() and marker.read_text() == " ".join(PINS):
        return VENV / "bin" / "python"
    return None


def _uv() -> str | None:
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def make_pypaimon_venv() -> Path:
    """:data:`VENV` with :data:`PINS` (made again when the pins changed)."""
    ready = pypaimon_python()
    if ready is not None:
        return ready
    python = VENV / "bin" / "python"
    shutil.rmtree(VENV, ignore_errors=True)
    VENV.parent.mkdir(parents=True, exist_ok=True)
    uv = _uv()
    if uv:
        steps = [[uv, "venv", "-q", "--python", sys.executable, str(VENV)], [uv, "pip", "install", "-q", "--python", str(python), *PINS]]
    else:
        steps = [[sys.executable, "-m", "venv", str(VENV)], [str(python), "-m", "pip", "install", "-q", *PINS]]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            done = None
        if done is None or done.returncode != 0:
            shutil.rmtree(VENV, ignore_errors=True)
            reason = "timed out" if done is None else done.stderr.strip()[-300:]
            raise SetupFailed(f"cannot install {' '.join(PINS)} from PyPI into {VENV}: {reason}")
    (VENV / ".installed").write_text(" ".join(PINS))
    return python


def main() -> int:
    failed = False
    for what, step in (("Paimon 0.9.0 bundle", fetch_paimon_090), ("pypaimon virtualenv", make_pypaimon_venv)):
        try:
            print(f"{MAKE_STEP}: {what}: {step()}")
        except SetupFailed as e:
            print(f"{MAKE_STEP}: {what}: {e}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
