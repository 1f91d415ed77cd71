"""What the Java round trips of the Paimon rewrite and delete share: where ``../shared``'s
Java-written tables are, a Paimon version's Java classes (skipped with the reason where Java
or the build is missing), and a writable copy of a table."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "paimon_writer"))
import javahelpers  # noqa: E402


def shared_tables() -> Path | None:
    """``shared/paimon-tables`` beside the checkout (or above it), None when absent."""
    for parent in ROOT.parents:
        if (parent / "shared" / "paimon-tables").is_dir():
            return parent / "shared" / "paimon-tables"
    return None


def java_version(version: str) -> str:
    """``version`` ("0.9.0" or "master") once its Java classes are compiled; the test is
    skipped, naming why, where they cannot be."""
    try:
        javahelpers.compiled(version)
    except javahelpers.JavaUnavailable as e:
        pytest.skip(f"Paimon {version}: {e}")
    return version


def copy_table(src: Path, warehouse: Path, table: str) -> str:
    """A writable copy of ``src/db.db/<table>`` in ``warehouse`` (the fixtures are read-only)."""
    dst = warehouse / "db.db" / table
    shutil.copytree(src / "db.db" / table, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return str(dst)
