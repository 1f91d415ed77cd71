"""The lake index (``arrowidx.lake.lakeindex``): which files may hold a key, for all files at
once, kept by commits that add, replace and remove files.

References: the rows themselves (``Table.filter`` of each file's data: a file holding a
matching row must never be ruled out), and for integer columns exact membership (Thomas
Wang's hash is a bijection on longs, so the files held are exactly the files holding the
value); per-file planning is compared in ``test_lakeindex_planning.py``.
"""

from __future__ import annotations

import json
import os
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrowidx
from arrowidx.lake import lakeindex
from arrowidx.lake.lakeindex import (
    FileKeys,
    Keyed,
    LakeIndex,
    file_hashes,
    literal_hashes,
    new_schema,
    update,
)
from arrowidx.predicate import bind, needles
from arrowidx.storage import LocalStore
from arrowidx.types import paimon_type

from .differential_support import fuzz_settings
from .test_range_bitmap import LOSSY_RANGE_SPECS, RANGE_SPECS

SETTINGS = fuzz_settings(25)


# ---------------------------------------------------------------------------------------
# keys: a literal's hash is the hash of the rows holding it, for every keyable type
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [s for s in RANGE_SPECS + LOSSY_RANGE_SPECS if not s.is_float], ids=lambda s: s.id)
@given(data=st.data())
@SETTINGS
def test_a_literal_hashes_like_the_rows_equal_to_it(spec, data):
    """For ``column == v`` and ``column IN (...)`` as the planner lowers them (``needles``),
    the literal's hashes are among the file's hashes exactly when some row equals it
    (``Table.filter``), so a file holding a matching row is never ruled out."""
    raws = data.draw(st.lists(spec.raw | st.none(), max_size=40))
    table = pa.table({"c": spec.array(raws)})
    hashes = file_hashes(table, ["c"])["c"]
    seen = [v for v in raws if v is not None]
    picked = data.draw(st.lists(st.sampled_from(seen) | spec.raw if seen else spec.raw, min_size=1, max_size=3))
    literals = spec.array(picked)
    expr = pc.field("c") == literals[0] if len(picked) == 1 else pc.field("c").isin(literals)
    found = needles(bind(expr, table.schema), table.schema)
    if not found:
        return  # not one key lookup (e.g. a literal the column cannot hold): never asked
    ((column, keys),) = found
    held = bool(np.isin(literal_hashes(keys, paimon_type(table.schema.field("c").type)), hashes).any())
    if pa.types.is_string_view(spec.arrow_type):  # (no string_view kernels: equal strings, in Python)
        matching = sum(v in set(picked) for v in seen)
    else:
        matching = table.filter(expr).num_rows
    if matching:
        assert held, f"{expr} matches rows but its hash is not among the file's"
    if pa.types.is_integer(spec.arrow_type):
        assert held == bool(matching)  # a bijection: exact


def test_too_many_keys_leave_a_file_unkeyed_for_that_column():
    table = pa.table({"a": pa.array(np.arange(50, dtype=np.int64)), "b": pa.array(np.arange(50) % 3)})
    with mock.patch.object(lakeindex, "MAX_KEYS_PER_FILE", 10):
        keys = FileKeys(table.schema, ["a", "b"])
        for batch in table.to_batches(max_chunksize=7):
            keys.add(batch)
        got = keys.finish()
    assert got["a"] is None
    assert len(got["b"]) == 3


def test_float_columns_are_not_keyed():
    assert not lakeindex.keyable(pa.float64())
    assert lakeindex.keyable(pa.int32()) and lakeindex.keyable(pa.string()) and lakeindex.keyable(pa.timestamp("ns"))
    assert new_schema({"x": pa.float32(), "y": pa.int64()}).names == ["y"]


# ---------------------------------------------------------------------------------------
# a lake index kept by commits, against the files' rows
# ---------------------------------------------------------------------------------------


class Lake:
    """Files (fid -> table) and the lake index a sequence of commits keeps for them."""

    def __init__(self, root: str, columns=("k", "s")):
        self.root = root
        self.store = LocalStore()
        self.columns = list(columns)
        self.files: dict[int, pa.Table] = {}
        self.next_fid = 0
        self.index: LakeIndex | None = None
        self.written: list[str] = []
        self.schema = new_schema({"k": pa.int64(), "s": pa.string()})

    def write(self, path: str, data: bytes) -> None:
        self.store.put(path, data)

    def commit(self, add: list[pa.Table] = (), remove: list[int] = (), replace: dict[int, pa.Table] | None = None) -> list[int]:
        added = []
        new_fids = []
        for fid in remove:
            del self.files[fid]
        for old, table in (replace or {}).items():
            del self.files[old]
            add = list(add) + [table]
        for table in add:
            fid = self.next_fid
            self.next_fid += 1
            self.files[fid] = table
            new_fids.append(fid)
            added.append(Keyed(fid, file_hashes(table, self.columns), {c: table.schema.field(c).type for c in self.columns}))
        live = np.array(sorted(self.files), np.int64)
        got = update(self.store, self.root, self.index, self.schema, added, live, "w1", self.write)
        self.index = got.index
        self.written += got.written
        return new_fids

    def check(self, column: str, values: list) -> None:
        """Every file holding a value is kept; for integers, exactly those."""
        index = self.index
        fids = np.array(sorted(self.files), np.int64)
        covered = index.covered(column, fids)
        field = pa.field(column, self.schema.field(column).type)
        keys = [v.encode() if isinstance(v, str) else v for v in values]
        held = set(index.holding(self.store, self.root, column, keys).tolist())
        expr = pc.field(column).isin(pa.array(values, field.type))
        for fid, cov in zip(fids.tolist(), covered.tolist()):
            truth = self.files[fid].filter(expr).num_rows > 0
            kept = (not cov) or fid in held
            assert kept or not truth, f"file {fid} holds {values} of {column} but is ruled out"
            if cov and column == "k":
                assert (fid in held) == truth


def _table(rng: np.random.Generator, n: int) -> pa.Table:
    k = rng.integers(0, 60, n)
    s = np.array([f"v{i}" for i in rng.integers(0, 30, n)], dtype=object)
    nulls = rng.random(n) < 0.1
    return pa.table({"k": pa.array(k, pa.int64(), mask=nulls), "s": pa.array(s.tolist(), pa.string())})


@given(seed=st.integers(0, 2**32 - 1), steps=st.lists(st.sampled_from(["add", "add", "add1", "remove", "replace"]), min_size=1, max_size=14))
@SETTINGS
def test_commits_keep_every_file_holding_a_key(tmp_path_factory, seed, steps):
    """Random commits (adds of one or more files, removals, replacements: new fids) with
    small merge thresholds: after each, for random needles and IN lists, a file holding a
    matching row is never ruled out, and integer keys rule out exactly the others."""
    rng = np.random.default_rng(seed)
    root = str(tmp_path_factory.mktemp("lake"))
    lake = Lake(root)
    with mock.patch.object(lakeindex, "BLOCK", 8), mock.patch.object(lakeindex, "MAX_RUNS", 3):
        for step in steps:
            if step.startswith("add") or not lake.files:
                lake.commit([_table(rng, int(rng.integers(0, 30))) for _ in range(1 if step == "add1" else int(rng.integers(1, 4)))])
            elif step == "remove":
                lake.commit(remove=[int(rng.choice(sorted(lake.files)))])
            else:
                lake.commit(replace={int(rng.choice(sorted(lake.files))): _table(rng, int(rng.integers(0, 30)))})
            assert len(lake.index.runs) <= 3
            for _ in range(3):
                lake.check("k", rng.integers(0, 64, int(rng.integers(1, 25))).tolist())
                lake.check("s", [f"v{i}" for i in rng.integers(0, 33, int(rng.integers(1, 3)))])
            covered = lake.index.covered("k", np.array(sorted(lake.files), np.int64))
            assert covered.all()  # every file added since the index began is covered
            # the index round-trips through the manifest's JSON
            again = LakeIndex.from_json(json.loads(json.dumps(lake.index.to_json())), "m.json")
            assert again.runs == lake.index.runs


def test_a_small_commit_writes_a_small_run(tmp_path):
    """Adding one file to a lake of many writes a run of that file's keys only; merges
    happen when newer runs grow (amortised), never a rewrite of everything per commit."""
    rng = np.random.default_rng(7)
    lake = Lake(str(tmp_path))
    lake.commit([_table(rng, 200) for _ in range(200)])
    base = lake.index.runs[0].size
    sizes = []
    for _ in range(30):
        before = set(lake.written)
        lake.commit([_table(rng, 200)])
        sizes.append(sum(os.path.getsize(os.path.join(str(tmp_path), p)) for p in set(lake.written) - before))
    assert lake.index.runs[0].size == base or lake.index.runs[0].size > base  # the base run stays (or absorbed later)
    assert len(lake.index.runs) <= lakeindex.MAX_RUNS
    assert sum(sizes) < 30 * base / 4, sizes  # 30 commits wrote far less than 30 rewrites of the base


def test_a_removed_file_is_dropped_by_merges_and_its_runs_go(tmp_path):
    rng = np.random.default_rng(3)
    lake = Lake(str(tmp_path))
    fids = lake.commit([_table(rng, 50) for _ in range(4)])
    lake.commit(remove=fids[:3])  # most of the run's files gone: it is rewritten
    (run,) = lake.index.runs
    assert run.fids == ((fids[3], fids[3] + 1),)
    left = lake.files[fids[3]]
    assert run.columns["k"].count == len(pc.unique(left["k"].drop_null()))  # the others' keys are gone
    assert run.columns["s"].count == len(pc.unique(left["s"].drop_null()))
    lake.commit(remove=fids[3:])
    assert lake.index.runs == ()


# ---------------------------------------------------------------------------------------
# damage and the manifest's reference
# ---------------------------------------------------------------------------------------


def test_a_damaged_block_is_a_corrupt_index_error_naming_the_run(tmp_path):
    rng = np.random.default_rng(1)
    lake = Lake(str(tmp_path))
    lake.commit([_table(rng, 100) for _ in range(5)])
    (run,) = lake.index.runs
    path = os.path.join(str(tmp_path), run.file)
    data = bytearray(open(path, "rb").read())
    data[run.columns["k"].offset + 3] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(arrowidx.CorruptIndexError, match=r"lake-index/.*\.run.*checksum"):
        lake.index.holding(lake.store, lake.root, "k", list(range(64)))
    os.truncate(path, run.size - 10)
    with pytest.raises(arrowidx.CorruptIndexError, match=r"\.run"):
        lake.index.holding(lake.store, lake.root, "s", [b"v1"])
    os.remove(path)
    with pytest.raises(arrowidx.CorruptIndexError, match=r"missing"):
        lake.index.holding(lake.store, lake.root, "s", [b"v1"])


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(format=9), "lake_index.format"),
        (lambda d: d.update(schema="not base64!"), "lake_index.schema"),
        (lambda d: d["runs"][0].update(file="../outside.run"), "lake_index.runs[0].file"),
        (lambda d: d["runs"][0].update(size=10), "lake_index.runs[0].columns.k"),
        (lambda d: d["runs"][0].update(fids=[[5, 2]]), "lake_index.runs[0].fids"),
        (lambda d: d["runs"][0]["columns"]["k"].update(count=-1), "lake_index.runs[0].columns.k.count"),
        (lambda d: d["runs"][0]["columns"].update(nope={"offset": 8, "count": 0, "spread": 0}), "lake_index.runs[0].columns.nope"),
    ],
)
def test_a_bad_reference_is_a_corrupt_manifest_error_naming_the_field(tmp_path, edit, field):
    rng = np.random.default_rng(2)
    lake = Lake(str(tmp_path))
    lake.commit([_table(rng, 20) for _ in range(2)])
    d = json.loads(json.dumps(lake.index.to_json()))
    edit(d)
    with pytest.raises(arrowidx.CorruptManifestError) as e:
        LakeIndex.from_json(d, "manifest-00000002.json")
    assert e.value.field == field and "manifest-00000002.json" in str(e.value)


def test_a_needle_reads_one_window_per_run(tmp_path):
    """A needle over a large run reads a few blocks, not the section."""
    rng = np.random.default_rng(4)
    lake = Lake(str(tmp_path))
    tables = [pa.table({"k": pa.array(rng.permutation(1000) + 1000 * i, pa.int64()), "s": pa.array(["x"] * 1000)})
              for i in range(100)]  # fmt: skip
    lake.commit(tables)
    reads = []
    real = LocalStore.get_ranges

    def counting(self, path, ranges, what="file"):
        reads.append(sum(n for _, n in ranges))
        return real(self, path, ranges, what)

    with mock.patch.object(LocalStore, "get_ranges", counting):
        held = lake.index.holding(lake.store, lake.root, "k", [54321])
    assert held.tolist() == [54]
    (run,) = lake.index.runs
    assert len(reads) == 1 and reads[0] < run.columns["k"].length / 20, (reads, run.columns["k"])
