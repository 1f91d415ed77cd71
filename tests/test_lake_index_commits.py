"""What a commit writes for the lake index (issue 51): runs written before the manifest's
exclusive create, in proportion to what the commit indexed; a crash while writing them
leaves the previous version as it was; a lake written before the lake index reads, and the
next build adds one. Answers are checked against ``Table.filter`` on the files' rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx import _faults, facts
from arrowidx.lake import plan as plan_module
from arrowidx.lake.commit import commit_manifest, load_manifest
from arrowidx.lake.lakeindex import MAX_RUNS, RUN_DIR
from arrowidx.lake.source import open_lake

from .conftest import index_dir

OPTIONS = {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "tag"}
ROWS = 30


def write_files(root: str, first: int, count: int) -> None:
    os.makedirs(root, exist_ok=True)
    for i in range(first, first + count):
        ids = np.arange(i * ROWS, (i + 1) * ROWS, dtype=np.int64)[::-1]
        pq.write_table(pa.table({"id": ids, "tag": [f"t{i % 5}"] * ROWS}), f"{root}/f{i:04d}.parquet")


def truth(root: str, expr: pc.Expression, deleted: tuple = ()) -> pa.Table:
    names = sorted(f for f in os.listdir(root) if f.endswith(".parquet"))
    rows = pa.concat_tables([pq.read_table(f"{root}/{n}") for n in names])
    return rows.filter(~pc.field("id").isin(list(deleted))).filter(expr)


def assert_reads(root: str, ids: list[int], deleted: tuple = ()) -> None:
    facts.clear()
    data = arrowidx.dataset(root)
    for i in ids:
        expr = pc.field("id") == i
        assert data.to_table(filter=expr).sort_by("id").equals(truth(root, expr, deleted).sort_by("id")), i
    expr = pc.field("id").isin(ids)
    assert data.to_table(filter=expr).sort_by("id").equals(truth(root, expr, deleted).sort_by("id"))


def lake_store(root: str):
    """The lake's store seen through its index root (where arrowidx keeps its files)."""
    return open_lake(root)[0]


def runs_on_disk(root: str) -> set[str]:
    folder = index_dir(root, RUN_DIR.split("/", 1)[1])
    return {f"{RUN_DIR}/{n}" for n in os.listdir(folder)} if os.path.isdir(folder) else set()


def files_asked(root: str, expr: pc.Expression) -> list[str]:
    """The files whose own index a read of ``expr`` asks (the others the lake index ruled out)."""
    asked: list[str] = []
    real = plan_module.Planner.decide
    facts.clear()
    try:
        plan_module.Planner.decide = lambda self, rel, e, bound=None: asked.append(rel) or real(self, rel, e, bound)
        arrowidx.dataset(root).to_table(filter=expr)
    finally:
        plan_module.Planner.decide = real
    return asked


def test_a_commit_adding_one_file_writes_a_run_of_its_keys(tmp_path):
    root = str(tmp_path / "lake")
    write_files(root, 0, 200)
    first = arrowidx.build(root, OPTIONS, progress=False)
    before = load_manifest(lake_store(root), root).lake_index
    assert len(before.runs) == 1 and first.lake_index_bytes > 0
    for n in range(1, 13):  # one file per commit
        write_files(root, 200 + n, 1)
        report = arrowidx.build(root, progress=False)
        index = load_manifest(lake_store(root), root).lake_index
        assert index.runs[0] == before.runs[0], "a one-file commit rewrote the run of the 200 files"
        assert len(index.runs) <= MAX_RUNS
        assert report.lake_index_bytes < first.lake_index_bytes / 10, (n, report.lake_index_bytes, first.lake_index_bytes)
    assert_reads(root, [0, 5 * ROWS + 3, 203 * ROWS + 1, 212 * ROWS, 10**6])
    assert files_asked(root, pc.field("id") == 212 * ROWS + 7) == ["f0212.parquet"]


def test_runs_of_removed_and_replaced_files_are_merged_away(tmp_path):
    root = str(tmp_path / "lake")
    write_files(root, 0, 40)
    arrowidx.build(root, OPTIONS, progress=False)
    for i in range(0, 40, 2):
        os.remove(f"{root}/f{i:04d}.parquet")
    write_files(root, 1, 1)  # f0001 rewritten (the same rows: a new content all the same)
    pq.write_table(pa.table({"id": np.array([7, 10**6], np.int64), "tag": ["x", "y"]}), f"{root}/f0003.parquet")
    arrowidx.build(root, progress=False)
    index = load_manifest(lake_store(root), root).lake_index
    assert sum(run.files for run in index.runs) <= 20 + 2, "the keys of removed files were kept"
    assert_reads(root, [7, 3 * ROWS + 1, 10**6, 2 * ROWS + 1, 5 * ROWS])


WORKER = r"""
import json, sys
import arrowidx
arrowidx.build(sys.argv[1], json.loads(sys.argv[2]), progress=False)
"""


def run_build(root: str, faults: str) -> tuple[int, str]:
    env = dict(os.environ)
    env[_faults.FAULTS_ENV] = faults
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", WORKER, root, json.dumps(OPTIONS)], env=env, capture_output=True, timeout=120)
    return proc.returncode, proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("fault", ["artifact-written=kill", "before-commit=kill"])
def test_a_crash_while_writing_the_lake_index_leaves_the_previous_version(tmp_path, fault):
    root = str(tmp_path / "lake")
    write_files(root, 0, 30)
    arrowidx.build(root, OPTIONS, progress=False)
    committed = load_manifest(lake_store(root), root)
    write_files(root, 30, 3)
    code, err = run_build(root, fault)
    assert code == -9, f"the kill point was not reached (exit {code}): {err[-500:]}"
    after = load_manifest(lake_store(root), root)
    assert after.version == committed.version and after.lake_index == committed.lake_index
    assert runs_on_disk(root) - {r.file for r in committed.lake_index.runs}, "the crash came before any run was written"
    assert_reads(root, [1, 31 * ROWS + 2, 32 * ROWS, 10**6])  # the new files: not in the manifest, read in full
    arrowidx.build(root, progress=False)  # the next build commits; the orphan run is named by no manifest
    assert load_manifest(lake_store(root), root).version == committed.version + 1
    assert_reads(root, [1, 31 * ROWS + 2, 32 * ROWS, 10**6])
    assert files_asked(root, pc.field("id") == 31 * ROWS + 2) == ["f0031.parquet"]
    arrowidx.vacuum(root, 0)  # the orphan run goes; the runs the manifest names stay
    assert runs_on_disk(root) == {r.file for r in load_manifest(lake_store(root), root).lake_index.runs}
    assert_reads(root, [1, 31 * ROWS + 2, 32 * ROWS, 10**6])


def test_a_lake_written_before_the_lake_index_reads_and_the_next_build_adds_one(tmp_path):
    root = str(tmp_path / "lake")
    write_files(root, 0, 40)
    arrowidx.build(root, OPTIONS, progress=False)
    arrowidx.delete(root, pc.field("id") == 3 * ROWS + 4, progress=False)
    store = lake_store(root)
    old = load_manifest(store, root)  # the same version as a build before the lake index writes it
    old.lake_index, old.next_fid = None, 0
    for entry in old.files.values():
        entry.fid = None
    commit_manifest(store, root, old, old.version)
    written = index_dir(root, f"manifest-{old.version + 1:08d}.json")
    text = open(written).read() if os.path.exists(written) else ""
    assert "lake_index" not in text and '"fid"' not in text
    assert load_manifest(store, root).lake_index is None
    assert all(e.fid is None for e in load_manifest(store, root).files.values())  # (format 4: in its segments)
    assert_reads(root, [0, 3 * ROWS + 4, 3 * ROWS + 5, 39 * ROWS, 10**6], deleted=(3 * ROWS + 4,))
    assert len(files_asked(root, pc.field("id") == 5)) == 40  # every file's index asked, as before

    report = arrowidx.build(root, progress=False)  # nothing changed: the build adds the lake index
    assert report.changed and not report.indexed
    upgraded = load_manifest(store, root)
    assert upgraded.lake_index is not None and all(e.fid is not None for e in upgraded.files.values())
    assert upgraded.files["f0003.parquet"].deletion is not None  # deletions kept
    assert_reads(root, [0, 3 * ROWS + 4, 3 * ROWS + 5, 39 * ROWS, 10**6], deleted=(3 * ROWS + 4,))
    assert files_asked(root, pc.field("id") == 5) == ["f0000.parquet"]
    assert not arrowidx.build(root, progress=False).changed  # and the build after it has nothing to do
