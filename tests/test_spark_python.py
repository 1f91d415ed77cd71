"""Spark in local mode runs its Python workers with an interpreter that has arrowidx.

A fake session stands in for Spark here (the real one is in integration/test_spark.py):
what is checked is which interpreter the workers get and the message when it is wrong.
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pyspark")

from arrowidx.errors import ArrowIdxError  # noqa: E402
from arrowidx.spark import ensure_worker_python  # noqa: E402


class _Conf(dict):
    def get(self, key, default=None):
        return super().get(key, default)


class _Context:
    def __init__(self, master: str, conf: dict | None = None):
        self.master = master
        self.pythonExec = "python3"
        self._conf = _Conf(conf or {})

    def getConf(self):
        return self._conf


class _Session:
    def __init__(self, master: str, conf: dict | None = None):
        self.sparkContext = _Context(master, conf)


def test_local_session_without_a_python_gets_this_interpreter(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = _Session("local[2]")
    ensure_worker_python(session)
    assert session.sparkContext.pythonExec == sys.executable


def test_a_python_without_arrowidx_fails_at_once_with_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    fake = tmp_path / "python-without-arrowidx"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    session = _Session("local[*]", {"spark.pyspark.python": str(fake)})
    with pytest.raises(ArrowIdxError, match="PYSPARK_PYTHON.*local_session"):
        ensure_worker_python(session)


def test_clusters_are_left_alone(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = _Session("spark://cluster:7077")
    ensure_worker_python(session)
    assert session.sparkContext.pythonExec == "python3"
