"""The file table (``arrowidx.lake.filetable``): a manifest's entries in columnar segments,
a segment per commit of what it changed, merged as they grow.

Reference: a plain dict of the entries each commit leaves (what a format-2 manifest would
list), kept beside it by the test."""

from __future__ import annotations

import copy
import os
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrowidx
from arrowidx.lake import filetable
from arrowidx.lake.filetable import (
    FileOverlay,
    FileTable,
    Segment,
    SegmentRef,
    check_segment,
    decode_segment,
    encode_segment,
    update_segments,
)

from .differential_support import fuzz_settings

SETTINGS = fuzz_settings(30)


def _entry(path: str, fid: int, rng: np.random.Generator) -> dict:
    index = None
    if rng.random() < 0.8:
        packed = rng.random() < 0.5
        index = {"options": {"file-index.bloom-filter.columns": "id"}, "schema": "c2NoZW1h", "size": 12,
                 "file": "_arrowidx/index/packed.index" if packed else f"_arrowidx/index/{path}.0123456789abcdef.index",
                 "offset": int(rng.integers(0, 1000)) if packed else None,
                 "xxh64": "0123456789abcdef", "layout": None if packed else {"id": {"bloom-filter": [0, 12, "0123456789abcdef"]}}}  # fmt: skip
    deletion = None
    if rng.random() < 0.3:
        deletion = {"file": "_arrowidx/deletion/x.dv", "offset": 1, "length": 20, "cardinality": int(rng.integers(1, 9)),
                    "bitmap64": False, "xxh64": "fedcba9876543210"}  # fmt: skip
    return {"path": path, "fid": fid, "size": int(rng.integers(1, 10**6)), "mtime_ns": int(rng.integers(0, 10**18)),
            "rows": 10, "index": index, "deletion": deletion, "fingerprint": f"5:{fid:016x}",
            "stamp": None if rng.random() < 0.2 else f"{fid}:1"}  # fmt: skip


class Lake:
    def __init__(self, root: str):
        self.root = root
        self.refs: list[SegmentRef] = []
        self.segments: list[Segment] = []
        self.model: dict[str, dict] = {}
        self.next_fid = 0

    def write(self, rel: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(os.path.join(self.root, rel)), exist_ok=True)
        with open(os.path.join(self.root, rel), "wb") as f:
            f.write(data)

    def commit(self, changed: list[dict], removed: list[str]):
        got = update_segments(self.refs, self.segments, changed, removed, "w1", self.write)
        self.refs, self.segments = got.refs, got.segments
        for d in changed:
            self.model[d["path"]] = d
        for p in removed:
            self.model.pop(p)
        return got

    def table(self) -> FileTable:
        segments = []
        for ref in self.refs:  # as a reader: from the files, checked
            data = open(os.path.join(self.root, ref.file), "rb").read()
            check_segment(data, ref, ref.file)
            segments.append(Segment(data, ref.file))
        return FileTable(segments, lambda d: d)


def _stored(d: dict) -> dict:
    """An entry as a segment gives it back: without the fields that are None."""
    return {k: _stored(v) if isinstance(v, dict) and k in ("index", "deletion") else v for k, v in d.items()
            if v is not None or k in ("mtime_ns", "stamp")}  # fmt: skip


@given(seed=st.integers(0, 2**32 - 1), steps=st.lists(st.sampled_from(["add", "add1", "replace", "remove", "delete"]), min_size=1, max_size=15))
@SETTINGS
def test_the_live_entries_are_those_each_commit_left(tmp_path_factory, seed, steps):
    rng = np.random.default_rng(seed)
    lake = Lake(str(tmp_path_factory.mktemp("lake")))
    names = [f"d={i % 3}/part-{i:03d}.parquet" for i in range(40)]
    with mock.patch.object(filetable, "BATCH_ROWS", 3):  # entries decoded batch by batch
        _steps(lake, names, steps, rng)


def _steps(lake, names, steps, rng) -> None:
    for step in steps:
        present = sorted(lake.model)
        if step in ("add", "add1") or not present:
            new = [p for p in names if p not in lake.model]
            picked = rng.choice(new, min(len(new), 1 if step == "add1" else int(rng.integers(1, 8))), replace=False)
            changed = []
            for p in picked:
                changed.append(_entry(str(p), lake.next_fid, rng))
                lake.next_fid += 1
            lake.commit(changed, [])
        elif step == "replace":
            p = str(rng.choice(present))
            lake.commit([_entry(p, lake.next_fid, rng)], [])
            lake.next_fid += 1
        elif step == "remove":
            lake.commit([], [str(p) for p in rng.choice(present, int(rng.integers(1, len(present) + 1)), replace=False)])
        else:  # a delete: same fid, a new deletion reference
            p = str(rng.choice(present))
            d = copy.deepcopy(lake.model[p])
            d["deletion"] = {"file": "_arrowidx/deletion/y.dv", "offset": 1, "length": 9, "cardinality": 3, "bitmap64": True,
                             "xxh64": "00000000000000ff"}  # fmt: skip
            lake.commit([d], [])
        assert len(lake.refs) <= filetable.MAX_SEGMENTS
        table = lake.table()
        assert list(table) == sorted(lake.model)
        assert {p: table[p] for p in table} == {p: _stored(d) for p, d in lake.model.items()}
        assert sorted(table.fids.tolist()) == sorted(d["fid"] for d in lake.model.values())
        deleted = dict(zip(table.paths, table.column("deleted").tolist()))
        assert deleted == {p: (d["deletion"] or {}).get("cardinality", 0) for p, d in lake.model.items()}
        some = np.array([d["fid"] for d in lake.model.values()][:3] + [10**9], np.int64)
        rows = table.rows_of_fids(some)
        assert sorted(table.fids[rows].tolist()) == sorted(some[:-1].tolist())


def test_a_small_commit_writes_a_small_segment(tmp_path):
    rng = np.random.default_rng(1)
    lake = Lake(str(tmp_path))
    first = lake.commit([_entry(f"part-{i:05d}.parquet", i, rng) for i in range(4000)], [])
    big = first.bytes_written
    written = []
    for i in range(20):
        written.append(lake.commit([_entry(f"new-{i:03d}.parquet", 5000 + i, rng)], []).bytes_written)
    assert max(written) < big / 10, (written, big)  # each writes the newest few entries, never all
    assert len(lake.refs) <= filetable.MAX_SEGMENTS and lake.refs[0].file == first.refs[0].file


def test_every_commit_writes_one_segment_and_a_reader_reads_at_most_three(tmp_path):
    """The segment policy that bounds a delete's requests on an object store (a GET per
    segment, a PUT per segment written; docs/object-stores.md): after a build's base, many
    small commits (deletes: entries already there, a new deletion each) write one segment
    each (never one that a merge of the same commit replaces), a reader reads at most three,
    and what a commit writes stays far below the base."""
    rng = np.random.default_rng(5)
    lake = Lake(str(tmp_path))
    first = lake.commit([_entry(f"part-{i:05d}.parquet", i, rng) for i in range(1000)], [])
    written, counts = [], []
    for n in range(150):
        d = copy.deepcopy(lake.model[f"part-{int(rng.integers(0, 1000)):05d}.parquet"])
        d["deletion"] = {"file": f"_arrowidx/deletion/{n}.dv", "offset": 1, "length": 9, "cardinality": n + 1,
                         "bitmap64": False, "xxh64": "00000000000000ff"}  # fmt: skip
        puts: list[str] = []
        with mock.patch.object(lake, "write", lambda rel, data, puts=puts, real=lake.write: puts.append(rel) or real(rel, data)):
            got = lake.commit([d], [])
        assert len(puts) == 1 and puts == got.written, (n, puts)
        written.append(got.bytes_written)
        counts.append(len(lake.refs))
    assert max(counts) <= 3 and lake.refs[0].file == first.refs[0].file  # the base is never rewritten here
    assert sorted(written)[len(written) // 2] < first.bytes_written / 8, written  # a typical commit: a small tail
    assert {p: lake.table()[p] for p in lake.model} == {p: _stored(d) for p, d in lake.model.items()}


def test_an_overlay_never_changes_the_shared_table():
    rng = np.random.default_rng(2)
    entries = [_entry(f"p{i}", i, rng) for i in range(5)]
    table = FileTable([Segment(encode_segment(entries), "s")], lambda d: d)
    embedded = {**entries[0], "index": {**(entries[0]["index"] or {}), "embedded": "AAAA"}}  # kept as written
    assert FileTable([Segment(encode_segment([embedded]), "e")], lambda d: d)["p0"]["index"]["embedded"] == "AAAA"
    overlay = FileOverlay(table, copy.deepcopy)
    overlay["p1"]["rows"] = 99  # read, changed: a copy
    overlay["p9"] = _entry("p9", 9, rng)
    del overlay["p2"]
    assert table["p1"]["rows"] == 10 and "p2" in table and "p9" not in table
    assert "p2" not in overlay and sorted(overlay) == ["p0", "p1", "p3", "p4", "p9"] and len(overlay) == 5
    overlay["p3"]  # read, unchanged: not a change
    changed, removed = overlay.changes(lambda a, b: a == b)
    assert [d["path"] for d in changed] == ["p1", "p9"] and removed == ["p2"]


def test_a_damaged_segment_is_refused_naming_it(tmp_path):
    rng = np.random.default_rng(3)
    lake = Lake(str(tmp_path))
    lake.commit([_entry(f"p{i}", i, rng) for i in range(5)], [])
    (ref,) = lake.refs
    path = os.path.join(str(tmp_path), ref.file)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 1
    with pytest.raises(arrowidx.CorruptIndexError, match=r"segments/.*checksum"):
        check_segment(bytes(data), ref, ref.file)
    with pytest.raises(arrowidx.CorruptIndexError, match="bytes"):
        check_segment(bytes(data[:-1]), ref, ref.file)
    with pytest.raises(arrowidx.CorruptIndexError, match="not an arrowidx file-table segment"):
        decode_segment(b"PAR1 not arrow", "x.arrow")
    with pytest.raises(arrowidx.CorruptIndexError, match="columns"):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, pa.schema([("path", pa.string())])) as w:
            w.write_table(pa.table({"path": ["a"]}))
        decode_segment(sink.getvalue().to_pybytes(), "x.arrow")


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(file="../x.arrow"), "segments[0].file"),
    (lambda d: d.update(file="_arrowidx/segments/../../x.arrow"), "segments[0].file"),
    (lambda d: d.update(size=-1), "segments[0].size"),
    (lambda d: d.update(xxh64="XYZ"), "segments[0].xxh64"),
])  # fmt: skip
def test_a_bad_segment_reference_names_the_field(edit, field):
    d = {"file": "_arrowidx/segments/0123456789abcdef-w.arrow", "size": 10, "xxh64": "0123456789abcdef", "rows": 1}
    assert SegmentRef.from_json(dict(d), "m.json", "segments[0]").size == 10
    edit(d)
    with pytest.raises(arrowidx.CorruptManifestError) as e:
        SegmentRef.from_json(d, "m.json", "segments[0]")
    assert e.value.field == field


def test_merges_keep_few_segments_with_tiny_thresholds(tmp_path):
    rng = np.random.default_rng(4)
    lake = Lake(str(tmp_path))
    with mock.patch.object(filetable, "MAX_SEGMENTS", 2):
        for i in range(12):
            lake.commit([_entry(f"p{i}", i, rng)], [f"p{i - 3}"] if i >= 3 else [])
            assert len(lake.refs) <= 2
    assert list(lake.table()) == sorted(lake.model)


@pytest.mark.parametrize("n, compression", [(1, None), (filetable.PLAIN_ROWS, None), (filetable.PLAIN_ROWS + 1, "lz4"), (300, "lz4")])
def test_a_small_segment_is_plain_arrow_ipc_and_a_large_one_lz4(n, compression):
    """A segment of at most ``PLAIN_ROWS`` entries is byte for byte pyarrow's uncompressed
    IPC file of its rows (no LZ4 set-up on a small lake's first read), a larger one pyarrow's
    LZ4 one; both give back the entries written."""
    rng = np.random.default_rng(n)
    entries = [_entry(f"part-{i:05d}.parquet", i, rng) for i in range(n)]
    data = encode_segment(entries, [])
    table = decode_segment(data, "s")
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_file(sink, filetable.SCHEMA, options=options) as writer:
        writer.write_table(table, max_chunksize=filetable.BATCH_ROWS)
    assert data == sink.getvalue().to_pybytes()
    got = FileTable([Segment(data, "s")], lambda d: d)
    assert {p: got[p] for p in got} == {d["path"]: _stored(d) for d in entries}


@pytest.mark.parametrize("fids, next_fid", [
    ([0, 1, 2], 3), ([2, -1, 0, -1], 3), ([], 0), ([-1, -1], 0),  # valid: distinct, below next_fid (-1: none)
    ([0, 1, 1], 3), ([5, 3, 5, -1], 6), ([0, 3], 3), ([7], 7),  # a repeated fid, or one not below next_fid
])  # fmt: skip
def test_file_ids_must_be_distinct_and_below_next_fid(fids, next_fid):
    """``check_fids`` refuses a file table whose ids repeat or reach ``next_fid`` (a
    :class:`CorruptManifestError` naming the source), as the plain definition says."""
    from arrowidx.errors import CorruptManifestError
    from arrowidx.lake.manifest import check_fids

    keyed = [f for f in fids if f >= 0]
    valid = len(set(keyed)) == len(keyed) and all(f < next_fid for f in keyed)
    if valid:
        check_fids(np.array(fids, np.int64), next_fid, "m.json")
    else:
        with pytest.raises(CorruptManifestError, match="m.json"):
            check_fids(np.array(fids, np.int64), next_fid, "m.json")
