"""A missing newest manifest is refused, never read as a silent rollback (issue 47, item 6).

``LATEST`` names version N, ``manifest-N.json`` is gone (a partial sync, a lifecycle rule, an
``rm``): every read and write raises ``MissingManifestError`` naming the missing version and
the way to accept the rollback; ``arrowidx.accept_rollback`` / ``arrowidx accept-rollback``
moves ``LATEST`` back and reports the deletions it undoes. Expected rows are the rows written
minus the deletes still committed."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.cli import main
from arrowidx.errors import CorruptManifestError, MissingManifestError
from arrowidx.lake.commit import check_latest, metadata_listing
from arrowidx.storage import as_store

from .conftest import index_dir
from .manifest_json import manifest_entries

IDS = list(range(10))


@pytest.fixture
def lost(tmp_path):
    """A lake at version 3 (v2 deleted id < 3, v3 deleted id 7) whose manifest 3 is gone;
    returns the root and the deletion file only version 3 referenced."""
    root = str(tmp_path)
    pq.write_table(pa.table({"id": pa.array(IDS, pa.int64())}), os.path.join(root, "p.parquet"))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    arrowidx.delete(root, "id < 3", progress=False)
    arrowidx.delete(root, "id = 7", progress=False)
    third = index_dir(root, "manifest-00000003.json")
    dv = manifest_entries(third, root)[0]["deletion"]["file"]
    os.remove(third)
    return root, dv


def message(root) -> str:
    return (
        f"{index_dir(root)}/LATEST: names manifest version 3, but manifest-00000003.json is not on disk (the newest"
        " there is version 2): reading version 2 would bring back every row deleted after it. Restore the missing"
        f" manifest(s) (a backup, the rest of a sync), or accept the rollback to version 2: arrowidx.accept_rollback({root!r})"
        f" (CLI: arrowidx accept-rollback {root}), which says which deletions it undoes"
    )


def live_ids(root) -> list[int]:
    return sorted(arrowidx.dataset(root).to_table().column("id").to_pylist())


def test_every_read_and_write_refuses(lost):
    root, _ = lost
    calls = {
        "dataset": lambda: arrowidx.dataset(root),
        "build": lambda: arrowidx.build(root, progress=False),
        "delete": lambda: arrowidx.delete(root, "id = 1", progress=False),
        "vacuum": lambda: arrowidx.vacuum(root, older_than=0),
        "polars": lambda: arrowidx.polars.scan(root).collect(),
    }
    import arrowidx.polars  # noqa: F401

    for name, call in calls.items():
        with pytest.raises(MissingManifestError) as info:
            call()
        assert str(info.value) == message(root), name
        assert (info.value.version, info.value.newest) == (3, 2)
        assert isinstance(info.value, CorruptManifestError)
    assert sorted(os.listdir(index_dir(root, "deletion")))  # vacuum removed nothing
    assert open(index_dir(root, "LATEST")).read() == "3"


def test_a_dataset_open_before_the_loss_refuses_at_its_next_refresh(tmp_path):
    root = str(tmp_path)
    pq.write_table(pa.table({"id": pa.array(IDS, pa.int64())}), os.path.join(root, "p.parquet"))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    arrowidx.delete(root, "id < 3", progress=False)
    data = arrowidx.dataset(root)
    os.remove(index_dir(root, "manifest-00000002.json"))
    with pytest.raises(MissingManifestError, match="LATEST: names manifest version 2, but manifest-00000002.json"):
        data.refresh()


def test_cli_refuses(lost, capsys):
    root, _ = lost
    assert main(["query", root, "--where", "id >= 0"]) == 1
    assert capsys.readouterr().err == f"arrowidx: {message(root)}\n"


def test_accept_rollback_reports_then_moves_latest_back(lost):
    root, dv = lost
    preview = arrowidx.accept_rollback(root, dry_run=True)
    assert (preview.version, preview.latest, preview.missing, preview.dry_run) == (2, 3, [3], True)
    assert preview.deletion_files == {dv: 4} and preview.vectors == 1 and preview.rows == 4  # v3's vector: ids 0, 1, 2, 7
    assert str(preview) == (
        f"would roll back {root} to manifest v2 (LATEST named v3; version 3 missing); the deletions of the lost version(s)"
        f" would be live again: up to 4 row(s) in 1 vector(s) of 1 deletion file(s) ({dv})"
    )
    with pytest.raises(MissingManifestError):  # a dry run changes nothing
        arrowidx.dataset(root)

    report = arrowidx.accept_rollback(root)
    assert (report.version, report.missing, report.rows, report.dry_run) == (2, [3], 4, False)
    assert open(index_dir(root, "LATEST")).read() == "2"
    assert live_ids(root) == [3, 4, 5, 6, 7, 8, 9]  # version 2: id < 3 deleted, the delete of id 7 undone
    # and the lake is writable again, on top of version 2
    assert arrowidx.delete(root, "id = 9", progress=False).version == 3
    assert live_ids(root) == [3, 4, 5, 6, 7, 8]
    again = arrowidx.accept_rollback(root)
    assert again.missing == [] and str(again) == f"nothing to accept: {root} is at manifest v3, the version LATEST names"


def test_cli_accept_rollback(lost, capsys):
    root, dv = lost
    assert main(["accept-rollback", root, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["version"], report["missing"], report["deletion_files"], report["rows"]) == (2, [3], {dv: 4}, 4)
    assert live_ids(root) == [3, 4, 5, 6, 7, 8, 9]


def test_a_version_committed_after_the_listing_is_not_missing(tmp_path):
    """A reader lists ``_arrowidx/``, a writer commits N+1 and rewrites LATEST, the reader then
    reads LATEST: N+1 is on disk, so the reader reads the version it listed."""
    root = str(tmp_path)
    pq.write_table(pa.table({"id": pa.array(IDS, pa.int64())}), os.path.join(root, "p.parquet"))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    store = arrowidx.dataset(root).store
    listed, _ = metadata_listing(store, root)
    arrowidx.delete(root, "id < 3", progress=False)  # version 2, LATEST = 2
    _, latest = metadata_listing(store, root)
    check_latest(store, root, max(listed), latest)  # newest listed 1, LATEST 2, manifest 2 there: no error


def test_a_store_whose_reads_are_round_trips_checks_latest_beside_the_manifest(tmp_path):
    """On a store whose reads are not quick (object stores; here fsspec's memory filesystem),
    LATEST is read on the I/O pool while the manifest is: the refusal is the same."""
    import fsspec
    import pyarrow.fs as pafs

    memory = fsspec.filesystem("memory")
    root = f"/issue47-missing-{os.getpid()}-{tmp_path.name}"
    memory.mkdirs(root, exist_ok=True)
    fs = pafs.PyFileSystem(pafs.FSSpecHandler(memory))
    try:
        assert not as_store(fs).quick_reads
        pq.write_table(pa.table({"id": pa.array(IDS, pa.int64())}), f"{root}/p.parquet", filesystem=fs)
        arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, filesystem=fs, progress=False)
        arrowidx.delete(root, "id < 3", filesystem=fs, progress=False)
        assert arrowidx.dataset(root, filesystem=fs).count_rows() == 7
        memory.rm(f"{index_dir(root)}/manifest-00000002.json")
        with pytest.raises(MissingManifestError) as info:
            arrowidx.dataset(root, filesystem=fs)
        assert (info.value.version, info.value.newest) == (2, 1)
        assert arrowidx.accept_rollback(root, filesystem=fs).missing == [2]
        assert arrowidx.dataset(root, filesystem=fs).count_rows() == 10
    finally:
        memory.rm(root, recursive=True)
