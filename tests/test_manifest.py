"""The manifest and commit protocol (issue 11): validation of every field, checksums of the
manifest, index files and deletion-vector ranges, paths kept inside the root, LATEST only a
hint, exclusive-create commits, content fingerprints, repair and vacuum.

Every expected answer comes from plain ``pyarrow.dataset`` (minus the deleted rows)."""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrowidx
import arrowidx.facts
from arrowidx import (
    ArrowIdxError,
    CommitConflictError,
    CorruptIndexError,
    CorruptManifestError,
    StaleDeletionError,
)
from arrowidx.lake import layout
from arrowidx.lake import manifest as manifest_module
from arrowidx.lake.commit import commit_manifest, load_manifest
from arrowidx.lake.manifest import Manifest, checksum
from arrowidx.lake.source import open_lake
from arrowidx.storage import SINGLE_WRITER_ENV, as_store

from .conftest import index_dir, tables_equal
from .manifest_json import as_format3
from .test_lake import OPTIONS, alive, write_lake

DELETED = pc.field("status") == "paid"
QUERY = pc.field("status") == "new"


def small_lake(root, files=3, threshold="100"):
    write_lake(root, files=files, rows=300)
    arrowidx.build(root, {**OPTIONS, "file-index.in-manifest-threshold": threshold}, progress=False)
    arrowidx.delete(root, DELETED, progress=False)
    return root


def expected(root, expr=QUERY, deleted=DELETED):
    flt = alive(deleted) if expr is None else expr & alive(deleted)
    return ds.dataset(root, format="parquet").to_table(filter=flt)


def manifest_file(root) -> str:
    return sorted(glob.glob(index_dir(root, "manifest-*.json")))[-1]


def edit(root, change, reseal=True):
    """Apply ``change`` to the newest manifest's JSON; ``reseal`` recomputes its checksum (so
    the field validation, not the checksum, must catch the problem)."""
    path = manifest_file(root)
    d = as_format3(json.load(open(path)), root)  # (entries inline: edited field by field)
    d = change(d) or d
    if reseal and isinstance(d, dict):
        d["checksum"] = checksum(manifest_module.canonical({k: v for k, v in d.items() if k != "checksum"}))
    with open(path, "w") as f:
        json.dump(d, f)
    return path


def _entry(d, i=0):
    return d["files"][i]


def _set(path, value):
    def change(d):
        target = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _with_deletion(d):
    return next(i for i, f in enumerate(d["files"]) if f.get("deletion"))


def _with_index_file(d):
    return next(i for i, f in enumerate(d["files"]) if f.get("index") and f["index"].get("file"))


BAD_FIELDS = [
    ("top level list", lambda d: [d], None),
    ("files object", _set(["files"], {"a": 1}), "files"),
    ("format", _set(["format"], "nope"), "format"),
    ("format newer", _set(["format_version"], 99), "format_version"),
    ("version text", _set(["version"], "2"), "version"),
    ("version mismatch", _set(["version"], 7), "version"),
    ("options list", _set(["options"], ["a"]), "options"),
    ("option value int", _set(["options", "x"], 1), "options['x']"),
    ("entry list", _set(["files", 0], [1]), "files[0]"),
    ("size text", _set(["files", 0, "size"], "12"), "files[0].size"),
    ("size negative", _set(["files", 0, "size"], -1), "files[0].size"),
    ("size bool", _set(["files", 0, "size"], True), "files[0].size"),
    ("mtime text", _set(["files", 0, "mtime_ns"], "x"), "files[0].mtime_ns"),
    ("rows missing", lambda d: _entry(d).pop("rows") and None, "files[0].rows"),
    ("path int", _set(["files", 0, "path"], 5), "files[0].path"),
    ("path parent", _set(["files", 0, "path"], "../evil.parquet"), "files[0].path"),
    ("path absolute", _set(["files", 0, "path"], "/etc/passwd"), "files[0].path"),
    ("path not normal", _set(["files", 0, "path"], "a/../../b"), "files[0].path"),
    ("path in meta", _set(["files", 0, "path"], "_arrowidx/x"), "files[0].path"),
    ("fingerprint size", _set(["files", 0, "fingerprint"], "1:0123456789abcdef"), "files[0].fingerprint"),
    ("index not object", _set(["files", 0, "index"], "x"), "files[0].index"),
    ("index schema base64", _set(["files", 0, "index", "schema"], "!!!"), "files[0].index.schema"),
    ("index xxh64", _set(["files", 0, "index", "xxh64"], "zz"), "files[0].index.xxh64"),
    ("index size text", _set(["files", 0, "index", "size"], "9"), "files[0].index.size"),
]


@pytest.mark.parametrize("name,change,field", BAD_FIELDS, ids=[b[0] for b in BAD_FIELDS])
def test_bad_manifest_field_is_named(tmp_path, name, change, field):
    root = small_lake(str(tmp_path))
    path = edit(root, change)
    with pytest.raises(CorruptManifestError) as info:
        arrowidx.dataset(root).to_table(filter=QUERY)
    assert path in str(info.value)
    if field is not None:
        assert info.value.field == field, str(info.value)


@pytest.mark.parametrize(
    "field,value",
    [
        ("file", "../../outside.dv"),
        ("file", "/etc/passwd"),
        ("file", "_arrowidx/index/x.dv"),
        ("offset", 0),
        ("offset", "3"),
        ("length", -4),
        ("bitmap64", "yes"),
        ("cardinality", 10**9),
    ],
)
def test_bad_deletion_ref_is_named(tmp_path, field, value):
    root = small_lake(str(tmp_path))
    box = {}

    def change(d):
        i = box["i"] = _with_deletion(d)
        d["files"][i]["deletion"][field] = value

    path = edit(root, change)
    with pytest.raises(CorruptManifestError) as info:
        arrowidx.dataset(root)
    assert path in str(info.value) and info.value.field == f"files[{box['i']}].deletion.{field}"


def test_index_file_outside_root_is_refused(tmp_path):
    root = small_lake(str(tmp_path / "lake"))
    for bad in ("../outside.index", "/tmp/x.index", "_arrowidx/deletion/x.index"):
        write_lake(str(tmp_path / "other"), files=1)
        path = edit(root, lambda d, bad=bad: d["files"][_with_index_file(d)]["index"].__setitem__("file", bad))
        with pytest.raises(CorruptManifestError, match="index.file"):
            arrowidx.dataset(root)
        shutil.rmtree(index_dir(root))
        shutil.rmtree(root)
        small_lake(root)
    assert path


def test_manifest_checksum_catches_edits_and_undecodable_bytes(tmp_path):
    root = small_lake(str(tmp_path))
    path = edit(root, _set(["files", 0, "rows"], 1), reseal=False)
    with pytest.raises(CorruptManifestError, match="checksum") as info:
        arrowidx.dataset(root)
    assert path in str(info.value)
    for data in (b"\xff\xfe garbage", b"{not json", b"", b"[]", b'{"format": "arrowidx-manifest", "format_version": "2"}'):
        with open(path, "wb") as f:
            f.write(data)
        with pytest.raises(CorruptManifestError) as info:
            arrowidx.dataset(root)
        assert path in str(info.value)


@pytest.mark.parametrize("latest", [b"0", b"1", b"\xff\xfe", b"", b"-3", b"2\n"])  # (a version above the newest: test_missing_manifest.py)
def test_latest_is_only_a_hint(tmp_path, latest):
    root = small_lake(str(tmp_path))
    with open(index_dir(root, "LATEST"), "wb") as f:
        f.write(latest)
    data = arrowidx.dataset(root)
    assert data.manifest.version == 2
    assert tables_equal(data.to_table(filter=QUERY), expected(root))
    # and the next write is accepted, on top of version 2
    report = arrowidx.delete(root, pc.field("status") == "lost", progress=False)
    assert report.version == 3
    assert tables_equal(arrowidx.dataset(root).to_table(filter=None), expected(root, None, DELETED | (pc.field("status") == "lost")))


def test_crash_after_commit_before_latest_is_no_wedge(tmp_path):
    root = small_lake(str(tmp_path))
    with open(index_dir(root, "LATEST"), "w") as f:
        f.write("1")  # as if killed between creating manifest-2 and replacing LATEST
    arrowidx.build(root, {**OPTIONS, "file-index.bloom-filter.id.fpp": "0.02"}, progress=False)
    arrowidx.delete(root, pc.field("status") == "lost", progress=False)
    assert load_manifest(*open_lake(root)[:2]).version == 4
    assert tables_equal(arrowidx.dataset(root).to_table(filter=None), expected(root, None, DELETED | (pc.field("status") == "lost")))


def test_losing_writer_gets_conflict_and_nothing_is_lost(tmp_path):
    root = small_lake(str(tmp_path))
    fs, r, _ = open_lake(root)
    first, second = load_manifest(fs, r), load_manifest(fs, r)
    first.options = {**first.options, "who": "first"}
    commit_manifest(fs, r, first, 2)
    second.options = {**second.options, "who": "second"}
    with pytest.raises(CommitConflictError):
        commit_manifest(fs, r, second, 2)
    assert load_manifest(fs, r).options["who"] == "first"
    # the exclusive create itself refuses, even when the version check is passed
    assert not as_store(fs).create(os.path.join(root, layout.manifest_path(3)), b"x")


class _PassThrough(pafs.FileSystemHandler):
    """A local disk behind a pyarrow handler arrowidx does not know: a store that cannot
    create a file only if it is absent."""

    def __init__(self):
        self.fs = pafs.LocalFileSystem()

    def __getattr__(self, name):
        return getattr(self.fs, name)

    def get_type_name(self): return "pass-through"  # noqa: E704
    def normalize_path(self, path): return path  # noqa: E704
    def __eq__(self, other): return self is other  # noqa: E704
    def __ne__(self, other): return self is not other  # noqa: E704
    def get_file_info(self, paths): return self.fs.get_file_info(paths)  # noqa: E704
    def get_file_info_selector(self, selector): return self.fs.get_file_info(selector)  # noqa: E704
    def create_dir(self, path, recursive): return self.fs.create_dir(path, recursive=recursive)  # noqa: E704
    def delete_dir(self, path): return self.fs.delete_dir(path)  # noqa: E704
    def delete_dir_contents(self, path, missing_dir_ok=False): return self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)  # noqa: E704
    def delete_root_dir_contents(self): raise NotImplementedError  # noqa: E704
    def delete_file(self, path): return self.fs.delete_file(path)  # noqa: E704
    def move(self, src, dest): return self.fs.move(src, dest)  # noqa: E704
    def copy_file(self, src, dest): return self.fs.copy_file(src, dest)  # noqa: E704
    def open_input_stream(self, path): return self.fs.open_input_stream(path)  # noqa: E704
    def open_input_file(self, path): return self.fs.open_input_file(path)  # noqa: E704
    def open_output_stream(self, path, metadata=None): return self.fs.open_output_stream(path)  # noqa: E704
    def open_append_stream(self, path, metadata=None): return self.fs.open_append_stream(path)  # noqa: E704


def test_unsupported_filesystem_fails_loudly(tmp_path, monkeypatch):
    monkeypatch.delenv(SINGLE_WRITER_ENV, raising=False)
    write_lake(str(tmp_path), files=1)
    with pytest.raises(arrowidx.CommitUnsupportedError, match="only if it is absent"):
        arrowidx.build(str(tmp_path), OPTIONS, filesystem=pafs.PyFileSystem(_PassThrough()), progress=False)
    assert not glob.glob(index_dir(str(tmp_path), "manifest-*"))


def test_checksums_of_index_and_deletion_bytes(tmp_path):
    root = small_lake(str(tmp_path))
    (index,) = glob.glob(index_dir(root, "index", "part-001.parquet.*.index"))
    raw = bytearray(open(index, "rb").read())
    layout = load_manifest(open_lake(root)[0], root).files["part-001.parquet"].index.layout
    start, length, _ = next(iter(layout["status"].values()))  # a byte the query reads
    raw[start + length // 2] ^= 0x10
    open(index, "wb").write(bytes(raw))
    arrowidx.facts.clear()  # a new process: this one holds the bytes it verified before the damage
    with pytest.raises(CorruptIndexError, match="checksum") as info:
        arrowidx.dataset(root).to_table(filter=QUERY)
    assert index in str(info.value)
    assert tables_equal(arrowidx.dataset(root, on_corrupt="fallback").to_table(filter=QUERY), expected(root))
    # an incremental build repairs it
    arrowidx.build(root, {**OPTIONS, "file-index.in-manifest-threshold": "100"}, progress=False)
    assert tables_equal(arrowidx.dataset(root).to_table(filter=QUERY), expected(root))
    (dv,) = glob.glob(index_dir(root, "deletion", "*.dv"))
    raw = bytearray(open(dv, "rb").read())
    raw[-3] ^= 0x01
    open(dv, "wb").write(bytes(raw))
    arrowidx.facts.clear()  # a new process
    for mode in ("raise", "fallback"):  # never a fallback for deletions
        with pytest.raises(CorruptIndexError) as info:
            arrowidx.dataset(root, on_corrupt=mode).to_table(filter=QUERY)
        assert dv in str(info.value)


def test_swapped_deletion_ranges_are_caught(tmp_path):
    root = small_lake(str(tmp_path))

    def swap(d):
        with_dv = [f for f in d["files"] if f.get("deletion")]
        a, b = with_dv[0]["deletion"], with_dv[1]["deletion"]
        a["offset"], b["offset"], a["length"], b["length"] = b["offset"], a["offset"], b["length"], a["length"]

    edit(root, swap)
    with pytest.raises(CorruptIndexError, match=r"\.dv.*checksum"):
        arrowidx.dataset(root).to_table(filter=QUERY)


def test_damaged_deletion_file_error_names_it(tmp_path):
    root = small_lake(str(tmp_path))
    (dv,) = glob.glob(index_dir(root, "deletion", "*.dv"))
    open(dv, "r+b").write(b"\x07")  # the version byte: outside every vector, which are read alone
    assert tables_equal(arrowidx.dataset(root).to_table(filter=QUERY), expected(root))
    os.remove(dv)
    arrowidx.facts.clear()  # a new process (this one holds the vectors it verified)
    with pytest.raises(CorruptIndexError, match="missing") as info:
        arrowidx.dataset(root).to_table(filter=QUERY)
    assert dv in str(info.value)


def test_missing_index_file_raises_or_falls_back(tmp_path):
    root = small_lake(str(tmp_path))
    for index in glob.glob(index_dir(root, "index", "*.index")):
        os.remove(index)
    arrowidx.facts.clear()  # a new process (this one holds the index bytes it verified)
    with pytest.raises(CorruptIndexError, match="missing"):
        arrowidx.dataset(root).to_table(filter=QUERY)
    assert tables_equal(arrowidx.dataset(root, on_corrupt="fallback").to_table(filter=QUERY), expected(root))


def test_embedded_index_damage_is_caught(tmp_path):
    root = small_lake(str(tmp_path), threshold="100000")

    def flip(d):
        ref = d["files"][0]["index"]
        raw = bytearray(base64.b64decode(ref["embedded"]))
        raw[len(raw) // 2] ^= 0x04
        ref["embedded"] = base64.b64encode(bytes(raw)).decode()

    edit(root, flip)
    with pytest.raises(CorruptIndexError, match="embedded index.*checksum"):
        arrowidx.dataset(root).to_table(filter=QUERY)
    assert tables_equal(arrowidx.dataset(root, on_corrupt="fallback").to_table(filter=QUERY), expected(root))


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlinks_out_of_the_root_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = str(tmp_path / "lake")
    write_lake(root, files=2, rows=300)
    os.makedirs(index_dir(root))
    os.symlink(outside, index_dir(root, "index"))
    with pytest.raises(ArrowIdxError, match="outside the dataset root"):
        arrowidx.build(root, {**OPTIONS, "file-index.in-manifest-threshold": "10"}, progress=False)
    assert not list(outside.iterdir())
    # a committed index file replaced by a link to a file outside is refused when read
    os.remove(index_dir(root, "index"))
    small_lake(root)
    (index,) = glob.glob(index_dir(root, "index", "part-001.parquet.*.index"))
    shutil.copy(index, outside / "copy.index")
    os.remove(index)
    os.symlink(outside / "copy.index", index)
    arrowidx.facts.clear()  # a new process
    with pytest.raises(ArrowIdxError, match="outside the dataset root"):
        arrowidx.dataset(root).to_table(filter=QUERY)


def test_copied_lake_keeps_indexes_and_deletions(tmp_path):
    root = small_lake(str(tmp_path / "lake"))
    copy = str(tmp_path / "copy")
    shutil.copytree(root, copy, copy_function=shutil.copy)  # new mtimes
    shutil.copytree(index_dir(root), index_dir(copy), copy_function=shutil.copy)  # the lake's indexes beside it (docs/guide.md)
    assert os.stat(os.path.join(copy, "part-000.parquet")).st_mtime_ns != os.stat(os.path.join(root, "part-000.parquet")).st_mtime_ns
    data = arrowidx.dataset(copy)
    assert {p.status for p in data.explain(QUERY).files} <= {"skipped", "bitmap", "remain"}
    assert tables_equal(data.to_table(filter=None), expected(copy, None))
    report = arrowidx.delete(copy, pc.field("status") == "lost", progress=False)
    manifest = arrowidx.dataset(copy).manifest
    assert all(e.index is not None for e in manifest.files.values()), "a delete on a copy keeps the indexes"
    assert report.version == 3


def test_same_size_same_mtime_rewrite_is_detected(tmp_path):
    root = str(tmp_path)
    kw = dict(compression="none", use_dictionary=False, write_statistics=False)
    a = pa.table({"id": pa.array(range(1000), pa.int64()), "status": pa.array(["x"] * 1000)})
    b = pa.table({"id": pa.array(range(1000, 2000), pa.int64()), "status": pa.array(["x"] * 1000)})
    path = os.path.join(root, "part-0.parquet")
    pq.write_table(a, path, **kw)
    pq.write_table(b, os.path.join(root, "_b"), **kw)
    st = os.stat(path)
    assert os.path.getsize(os.path.join(root, "_b")) == st.st_size
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    arrowidx.delete(root, pc.field("id") < 10, progress=False)
    shutil.copyfile(os.path.join(root, "_b"), path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as cp -p / rsync -t leave it
    with pytest.raises(StaleDeletionError, match="part-0.parquet"):
        arrowidx.dataset(root).to_table(filter=pc.field("id") == 1500)
    got = arrowidx.dataset(root, on_stale_deletions="read-full").to_table(filter=pc.field("id") == 1500)
    assert got.num_rows == 1
    with pytest.raises(StaleDeletionError):
        arrowidx.delete(root, pc.field("id") == 1600, progress=False)
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False, on_stale_deletions="read-full")
    assert arrowidx.dataset(root).to_table(filter=pc.field("id") == 1500).num_rows == 1


def test_vacuum_keeps_retained_versions_and_in_flight_files(tmp_path):
    root = small_lake(str(tmp_path))
    arrowidx.build(root, {**OPTIONS, "file-index.bloom-filter.id.fpp": "0.02", "file-index.in-manifest-threshold": "100"}, progress=False)
    arrowidx.delete(root, pc.field("status") == "lost", progress=False)
    deleted = DELETED | (pc.field("status") == "lost")
    before = sorted(glob.glob(index_dir(root, "**", "*"), recursive=True))
    report = arrowidx.vacuum(root)  # default retention: everything is recent
    assert report.removed == [] and report.kept_versions == [1, 2, 3, 4]
    orphan = index_dir(root, "index", "in-flight.index")
    open(orphan, "wb").write(b"x")
    report = arrowidx.vacuum(root, older_than=0)
    assert report.kept_versions == [4] and os.path.exists(orphan) is False
    current = arrowidx.dataset(root).manifest
    for entry in current.files.values():
        if entry.index and entry.index.file:
            assert os.path.exists(index_dir(root, entry.index.file.split("/", 1)[1]))  # (_arrowidx/...: the index root's)
    assert tables_equal(arrowidx.dataset(root).to_table(filter=None), expected(root, None, deleted))
    assert len(before) > len(glob.glob(index_dir(root, "**", "*"), recursive=True))
    # a file written after the retention window began (a build still running) is kept
    open(orphan, "wb").write(b"x")
    assert arrowidx.vacuum(root, older_than=3600).removed == [] and os.path.exists(orphan)


def test_entries_without_fingerprints_still_read(tmp_path):
    """Version-1 manifests (no checksums, no fingerprints) stay readable."""
    root = small_lake(str(tmp_path))
    path = manifest_file(root)
    d = as_format3(json.load(open(path)), root)
    d.pop("checksum")
    d["format_version"] = 1
    for f in d["files"]:
        f.pop("fingerprint")
        for ref in ("index", "deletion"):
            if f.get(ref):
                f[ref].pop("xxh64")
    json.dump(d, open(path, "w"))
    m = Manifest.from_json(open(path).read(), path)
    assert m.version == 2
    assert tables_equal(arrowidx.dataset(root).to_table(filter=QUERY), expected(root))


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, (*path, i))
    yield path


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=4,
)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_field_replaced_by_any_json_is_valid_or_named(manifest_text, data):
    """Whatever JSON value replaces whatever node of a real manifest (resealed, so only the
    validation can catch it): a Manifest, or CorruptManifestError naming the manifest."""
    d = json.loads(manifest_text)
    paths = [p for p in _leaves(d) if p and p[0] != "checksum"]
    path = data.draw(st.sampled_from(paths))
    value = data.draw(JSON_VALUES)
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    d["checksum"] = checksum(manifest_module.canonical({k: v for k, v in d.items() if k != "checksum"}))
    try:
        Manifest.from_json(json.dumps(d), "m.json", expect_version=2)
    except CorruptManifestError as e:
        assert "m.json" in str(e)


@pytest.fixture(scope="module")
def manifest_text(tmp_path_factory):
    root = small_lake(str(tmp_path_factory.mktemp("m")))
    return open(manifest_file(root)).read()


def test_cli_vacuum_and_option_checks(tmp_path, capsys):
    from arrowidx.cli import main

    root = small_lake(str(tmp_path))
    arrowidx.delete(root, pc.field("status") == "lost", progress=False)
    assert main(["vacuum", root, "--dry-run"]) == 0 and "would remove 0 file(s)" in capsys.readouterr().out
    assert main(["vacuum", root, "--older-than", "0"]) == 0
    out = capsys.readouterr().out
    assert "removed" in out and "kept version(s) 3" in out
    assert sorted(os.listdir(index_dir(root, "deletion"))) and len(glob.glob(index_dir(root, "manifest-*"))) == 1
    assert tables_equal(arrowidx.dataset(root).to_table(filter=QUERY), expected(root, QUERY, DELETED | (pc.field("status") == "lost")))
    assert main(["vacuum", root, "--older-than", "soon"]) == 2
    for call in (lambda: arrowidx.dataset(root, on_stale_deletions="ignore"),
                 lambda: arrowidx.delete(root, QUERY, on_stale_deletions="drop", progress=False),
                 lambda: arrowidx.build(root, OPTIONS, on_stale_deletions="x", progress=False)):  # fmt: skip
        with pytest.raises(arrowidx.OptionError, match="on_stale_deletions"):
            call()


def test_vacuum_repairs_latest(tmp_path):
    root = small_lake(str(tmp_path))
    latest = index_dir(root, "LATEST")
    open(latest, "w").write("1")
    assert arrowidx.vacuum(root).latest_repaired and open(latest).read() == "2"
    assert not arrowidx.vacuum(root).latest_repaired
