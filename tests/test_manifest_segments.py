"""The manifest's entries in file-table segments (manifest format 4, issue 51): a commit
writes a segment of what it changed; a crash while writing one leaves the previous version
readable; a format-3 manifest (entries listed inline) reads and the next build upgrades it;
vacuum keeps the segments a retained manifest names; a reader of an older format refuses a
format-4 manifest; a damaged segment or entry is named. Answers are checked against
``Table.filter`` on the files' rows (``truth``)."""

from __future__ import annotations

import glob
import json
import os
import time

import pyarrow.compute as pc
import pytest

import arrowidx
from arrowidx import facts
from arrowidx.errors import CorruptIndexError, CorruptManifestError
from arrowidx.lake import manifest as manifest_module
from arrowidx.lake.commit import load_manifest, read_manifest
from arrowidx.lake.filetable import SEGMENT_DIR, Segment, encode_segment, segment_ref
from arrowidx.lake.manifest import Manifest, checksum

from .conftest import index_dir
from .manifest_json import as_format3, entries_of
from .test_lake_index_commits import (
    OPTIONS,
    ROWS,
    assert_reads,
    files_asked,
    lake_store,
    run_build,
    truth,
    write_files,
)

IDS = [1, 31 * ROWS + 2, 32 * ROWS, 10**6]


def segments_on_disk(root: str) -> set[str]:
    folder = index_dir(root, "segments")
    return {f"{SEGMENT_DIR}/{n}" for n in os.listdir(folder)} if os.path.isdir(folder) else set()


def on_disk(root: str, rel: str) -> str:
    """Where ``rel`` (``_arrowidx/...``, as a manifest names it) is: in the lake's index root."""
    return index_dir(root, rel.split("/", 1)[1])


def newest(root: str) -> str:
    return sorted(glob.glob(index_dir(root, "manifest-*.json")))[-1]


def reseal(path: str, d: dict) -> None:
    d["checksum"] = checksum(manifest_module.canonical({k: v for k, v in d.items() if k != "checksum"}))
    with open(path, "w") as f:
        json.dump(d, f)


def test_a_commit_of_one_file_writes_a_segment_of_that_file(tmp_path):
    root = str(tmp_path / "lake")
    write_files(root, 0, 60)
    arrowidx.build(root, OPTIONS, progress=False)
    d = json.load(open(newest(root)))
    assert d["format_version"] == 4 and "files" not in d and len(d["segments"]) == 1 and d["segments"][0]["rows"] == 60
    before = segments_on_disk(root)
    write_files(root, 60, 1)
    arrowidx.build(root, progress=False)
    d = json.load(open(newest(root)))
    new = segments_on_disk(root) - before
    assert [r["file"] for r in d["segments"]][:1] == sorted(before) and len(new) == 1
    assert d["segments"][-1]["rows"] == 1 and os.path.getsize(newest(root)) < 2000
    assert_reads(root, [1, 60 * ROWS + 3, 10**6])
    assert files_asked(root, pc.field("id") == 60 * ROWS + 3) == ["f0060.parquet"]


@pytest.mark.parametrize("fault", ["segment-written=kill", "before-commit=kill"])
def test_a_crash_while_writing_a_segment_leaves_the_previous_version(tmp_path, fault):
    root = str(tmp_path / "lake")
    write_files(root, 0, 30)
    arrowidx.build(root, OPTIONS, progress=False)
    committed = load_manifest(lake_store(root), root)
    write_files(root, 30, 3)
    code, err = run_build(root, fault)
    assert code == -9, f"the kill point was not reached (exit {code}): {err[-500:]}"
    after = load_manifest(lake_store(root), root)
    assert after.version == committed.version and after.segments == committed.segments
    assert segments_on_disk(root) - {r.file for r in committed.segments}, "the crash came before any segment was written"
    assert_reads(root, IDS)  # the new files: not in the manifest, read in full
    arrowidx.build(root, progress=False)
    assert load_manifest(lake_store(root), root).version == committed.version + 1
    assert_reads(root, IDS)
    arrowidx.vacuum(root, 0)  # the orphan segment goes; the ones the manifest names stay
    assert segments_on_disk(root) == {r.file for r in load_manifest(lake_store(root), root).segments}
    assert_reads(root, IDS)


def test_a_format3_lake_reads_and_the_next_build_upgrades_it(tmp_path):
    root = str(tmp_path / "lake")
    write_files(root, 0, 40)
    arrowidx.build(root, OPTIONS, progress=False)
    deleted = (3 * ROWS + 4,)
    arrowidx.delete(root, pc.field("id") == deleted[0], progress=False)
    path = newest(root)
    d = as_format3(json.load(open(path)), root)  # the same version as format 3 lists it
    assert d["format_version"] == 3 and len(d["files"]) == 40
    reseal(path, d)
    for rel in segments_on_disk(root):
        os.remove(on_disk(root, rel))  # a format-3 lake has none
    ids = [0, 3 * ROWS + 4, 3 * ROWS + 5, 39 * ROWS, 10**6]
    assert_reads(root, ids, deleted)
    assert files_asked(root, pc.field("id") == 5) == ["f0000.parquet"]
    report = arrowidx.build(root, progress=False)  # nothing else changed: the build upgrades it
    assert report.changed and not report.indexed
    d = json.load(open(newest(root)))
    assert d["format_version"] == 4 and "files" not in d and sum(r["rows"] for r in d["segments"]) == 40
    assert load_manifest(lake_store(root), root).files["f0003.parquet"].deletion.cardinality == 1  # deletions kept
    assert_reads(root, ids, deleted)
    assert not arrowidx.build(root, progress=False).changed


def test_vacuum_keeps_the_segments_a_retained_manifest_names(tmp_path):
    root = str(tmp_path / "lake")
    write_files(root, 0, 8)
    arrowidx.build(root, OPTIONS, progress=False)
    for i in range(8, 14):  # one file a commit: segments added, then merged into new ones
        write_files(root, i, 1)
        arrowidx.build(root, progress=False)
    os.remove(os.path.join(root, "f0002.parquet"))
    arrowidx.build(root, progress=False)
    store = lake_store(root)
    assert sorted(load_manifest(store, root).files) == sorted(f for f in os.listdir(root) if f.endswith(".parquet"))
    versions = sorted(int(p[-13:-5]) for p in glob.glob(index_dir(root, "manifest-*.json")))
    named = {v: {r.file for r in read_manifest(store, root, v).segments} for v in versions}
    assert len(set().union(*named.values())) > len(named[versions[-1]]), "no merge replaced a segment"
    report = arrowidx.vacuum(root, "1h")  # every version retained: every segment stays
    assert not [r for r in report.removed if r.startswith(SEGMENT_DIR)]
    for v in versions:
        facts.clear()
        assert len(read_manifest(store, root, v).files) > 0  # each version's segments are there
    time.sleep(0.05)
    report = arrowidx.vacuum(root, 0)  # only the newest retained
    assert segments_on_disk(root) == named[versions[-1]]
    assert set(report.removed) >= set().union(*named.values()) - named[versions[-1]]
    facts.clear()
    expr = pc.field("id").isin([2 * ROWS + 1, 13 * ROWS + 1, 5])
    assert arrowidx.dataset(root).to_table(filter=expr).sort_by("id").equals(truth(root, expr).sort_by("id"))


def test_a_reader_of_an_older_format_refuses_a_format4_manifest(tmp_path, monkeypatch):
    root = str(tmp_path / "lake")
    write_files(root, 0, 3)
    arrowidx.build(root, OPTIONS, progress=False)
    text = open(newest(root)).read()
    monkeypatch.setattr(manifest_module, "FORMAT_VERSION", 3)  # what arrowidx before format 4 checks
    with pytest.raises(CorruptManifestError, match="manifest format 4 is newer than this arrowidx reads") as info:
        Manifest.from_json(text, newest(root))
    assert info.value.field == "format_version"


def test_a_manifest_of_a_newer_format_says_upgrade_and_never_advises_a_rollback(tmp_path):
    """A lake a newer arrowidx wrote is not damaged: reading it must not suggest accepting a
    rollback (which brings deleted rows back), only an upgrade."""
    root = str(tmp_path / "lake")
    write_files(root, 0, 3)
    arrowidx.build(root, OPTIONS, progress=False)
    arrowidx.delete(root, pc.field("id") == 1, progress=False)
    path = newest(root)
    d = json.loads(open(path).read())
    d["format_version"] = manifest_module.FORMAT_VERSION + 1
    open(path, "w").write(json.dumps(d))
    facts.clear()
    with pytest.raises(CorruptManifestError) as info:
        arrowidx.dataset(root).to_table(filter=pc.field("id") == 2)
    message = str(info.value)
    assert "upgrade arrowidx" in message and "rollback" not in message, message


def test_a_damaged_segment_is_named(tmp_path):
    root = str(tmp_path / "lake")
    write_files(root, 0, 5)
    arrowidx.build(root, OPTIONS, progress=False)
    (rel,) = segments_on_disk(root)
    path = on_disk(root, rel)
    raw = bytearray(open(path, "rb").read())
    raw[len(raw) // 2] ^= 0x10
    open(path, "wb").write(bytes(raw))
    facts.clear()
    with pytest.raises(CorruptIndexError, match="checksum") as info:
        arrowidx.dataset(root).to_table(filter=pc.field("id") == 1)
    assert path in str(info.value)
    os.remove(path)
    facts.clear()
    with pytest.raises(CorruptIndexError, match="missing"):
        arrowidx.dataset(root)


@pytest.mark.parametrize("name,change,field", [
    ("path parent", lambda e: e.update(path="../evil.parquet"), "path"),
    ("path in meta", lambda e: e.update(path="_arrowidx/x.parquet"), "path"),
    ("fingerprint size", lambda e: e.update(fingerprint="1:0123456789abcdef"), "fingerprint"),
    ("cardinality above rows", lambda e: e.update(deletion={"file": "_arrowidx/deletion/x.dv", "offset": 1, "length": 9,
                                                           "cardinality": 10**6, "xxh64": "0123456789abcdef"}), "deletion.cardinality"),
    ("index schema", lambda e: e["index"].update(schema="!!!"), "index.schema"),
])  # fmt: skip
def test_a_bad_entry_in_a_segment_is_named(tmp_path, name, change, field):
    """A segment written and named correctly (size, checksum, resealed manifest) whose entry
    is wrong: the entry's validation (the same as format 3's) names the field."""
    root = str(tmp_path / "lake")
    write_files(root, 0, 3)
    arrowidx.build(root, OPTIONS, progress=False)
    path = newest(root)
    d = json.load(open(path))
    entries = entries_of(d, root)
    change(entries[0])
    data = encode_segment(entries)
    ref = segment_ref(data, "test", Segment(data, "test").num_rows)
    open(on_disk(root, ref.file), "wb").write(data)
    d["segments"] = [ref.to_json()]
    reseal(path, d)
    facts.clear()
    with pytest.raises(CorruptManifestError) as info:
        arrowidx.dataset(root).to_table(filter=pc.field("id").isin([1, ROWS + 1, 2 * ROWS + 1]))
    assert path in str(info.value) and info.value.field.endswith(field), info.value.field
