"""The structure a commit writes (``arrowidx.lake.structure``): file ids kept while a file's
content is the same and new for new content, small containers packed into one index file,
a segment and a lake-index run of the commit's changes only, written as artifacts.

References: the entries each commit leaves (a dict kept by the test), the container bytes
given to it, and the keys of the rows (``Table.filter``)."""

from __future__ import annotations

import base64
import dataclasses
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from arrowidx.lake.filetable import FileOverlay
from arrowidx.lake.lakeindex import file_hashes
from arrowidx.lake.structure import Structure, commit_structure, open_table
from arrowidx.storage import LocalStore


@dataclass
class Index:
    size: int
    xxh64: str
    embedded: str | None = None
    file: str | None = None
    offset: int | None = None


@dataclass
class Entry:
    path: str
    size: int
    rows: int
    fingerprint: str | None
    index: Index | None = None
    fid: int | None = None
    mtime_ns: int | None = None
    stamp: str | None = None


def _entry_of(d: dict) -> Entry:
    index = Index(**{k: v for k, v in d["index"].items() if k not in ("schema", "options")}) if d.get("index") else None
    return Entry(d["path"], d["size"], d["rows"], d.get("fingerprint"), index, d["fid"], d["mtime_ns"], d["stamp"])


class Lake:
    def __init__(self, root: str):
        self.root, self.store = root, LocalStore()
        self.structure = Structure()
        self.files: dict = {}
        self.written: list[str] = []

    def commit(self, edit, keys=None):
        base = open_table(self.store, self.root, self.structure.segments, _entry_of) if self.structure.segments else {}
        files = FileOverlay(base, dataclasses.replace) if self.structure.segments else dict(base)
        edit(files)
        structure, artifacts, info = commit_structure(self.store, self.root, self.structure, base, files, keys=keys,
                                                      key_types={"k": pa.int64()}, writer="w")  # fmt: skip
        for rel, data in artifacts.items():
            self.store.put(os.path.join(self.root, rel), data)
        self.written.append(artifacts)
        self.structure = structure
        return info

    def table(self):
        return open_table(self.store, self.root, self.structure.segments, _entry_of)


def _container(i: int) -> bytes:
    return bytes([i % 251]) * (10 + i % 7)


def _new(path: str, i: int, content: int) -> Entry:
    data = _container(i)
    return Entry(path, 1000 + content, 10, f"{1000 + content}:{content:016x}",
                 Index(len(data), xxhash.xxh64_hexdigest(data), embedded=base64.b64encode(data).decode()))  # fmt: skip


def test_fids_packing_and_keys_across_commits(tmp_path):
    lake = Lake(str(tmp_path))
    tables = {f"p{i}": pa.table({"k": pa.array(np.arange(i * 10, i * 10 + 10), pa.int64())}) for i in range(6)}
    keys = {p: file_hashes(t, ["k"]) for p, t in tables.items()}

    def add_all(files):
        for i in range(5):
            files[f"p{i}"] = _new(f"p{i}", i, i)

    lake.commit(add_all, keys)
    table = lake.table()
    fids = {p: table[p].fid for p in table}
    assert sorted(fids.values()) == [0, 1, 2, 3, 4]
    packed = [rel for rel in lake.written[0] if "/packed-" in rel]
    assert len(packed) == 1  # every small container in one index file
    for i in range(5):
        e = table[f"p{i}"]
        assert e.index.embedded is None and e.index.file == packed[0]
        data = lake.written[0][packed[0]][e.index.offset : e.index.offset + e.index.size]
        assert data == _container(i) and xxhash.xxh64_hexdigest(data) == e.index.xxh64

    def edit(files):
        files["p1"].rows = 10  # read only: not a change
        files["p2"] = dataclasses.replace(files["p2"], stamp="moved")  # same content (a copy): same fid
        files["p3"] = _new("p3", 33, 99)  # new content: a new fid
        del files["p4"]
        files["p5"] = _new("p5", 5, 5)

    info = lake.commit(edit, {"p5": keys["p5"]})
    assert (info.entries_written, info.files_removed, info.keyed) == (3, 1, 1)  # p3's keys were not given: not keyed
    table = lake.table()
    assert sorted(table) == ["p0", "p1", "p2", "p3", "p5"]
    assert table["p2"].fid == fids["p2"] and table["p2"].stamp == "moved"
    assert table["p3"].fid not in fids.values() and table["p5"].fid not in fids.values()
    index = lake.structure.lake_index
    live = np.array(sorted(table.fids), np.int64)
    covered = dict(zip(live.tolist(), index.covered("k", live).tolist()))
    assert covered[table["p3"].fid] is False and covered[table["p5"].fid] and covered[fids["p0"]]
    held = set(index.holding(lake.store, lake.root, "k", [52]).tolist())
    assert held == {table["p5"].fid}  # 52 is in p5's rows only
    for p in ("p0", "p1", "p2", "p5"):
        assert (table[p].fid in held) == bool(tables[p].filter(pc.field("k") == 52).num_rows)
