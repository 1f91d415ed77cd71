"""Reading Java-written Paimon tables (../shared/paimon-tables) against Java's own answers.

References: ``<table>.expected.csv`` (the full table as Java's ReadBuilder returns it) and
``java-answers.txt`` (splits Java plans per predicate); predicates are applied to the
expected rows with pyarrow.compute, independently of arrowidx.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest

from arrowidx.errors import PaimonTableError, UnsupportedTableError

from .conftest import shared_dir

paimon = pytest.importorskip("arrowidx.paimon")
pytest.importorskip("fastavro")

ROOT = shared_dir("paimon-tables")
VERSIONS = ["paimon-0.9.0", "paimon-master"]
pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(), reason=f"the Java-written Paimon tables are not at {ROOT} (../shared/paimon-tables from the repository root)"
)


def tables():
    out = []
    for v in VERSIONS:
        for csv in sorted((ROOT / v).glob("*.expected.csv")):
            out.append((v, csv.name[: -len(".expected.csv")]))
    return out


def expected(version: str, name: str, schema: pa.Schema) -> pa.Table:
    t = pacsv.read_csv(ROOT / version / f"{name}.expected.csv",
                       convert_options=pacsv.ConvertOptions(column_types=schema, strings_can_be_null=True))
    return t.select(schema.names).cast(schema)


def sort(t: pa.Table) -> pa.Table:
    return t.sort_by([(c, "ascending") for c in t.column_names])


def parse_predicate(text: str) -> pc.Expression:
    m = re.fullmatch(r"(\w+) (=|>|<|>=|<=) (.+)", text.strip())
    assert m, text
    col, op, lit = m.groups()
    value = lit[1:-1] if lit.startswith("'") else (float(lit) if "." in lit else int(lit))
    f = pc.field(col)
    return {"=": f == value, ">": f > value, "<": f < value, ">=": f >= value, "<=": f <= value}[op]


def java_answers():
    out = []
    if not ROOT.is_dir():
        return out  # the module is skipped (pytestmark)
    for v in VERSIONS:
        for line in (ROOT / v / "java-answers.txt").read_text().splitlines():
            name, pred, enabled, splits, _ = line.split("\t")
            if enabled.endswith("true"):
                out.append((v, name, pred, int(splits.split("=")[1])))
    return out


@pytest.mark.parametrize("version,name", tables())
def test_full_read_equals_java(version, name):
    t = paimon.open_table(ROOT / version / "db.db" / name)
    got = t.to_table()
    assert got.schema == t.schema
    assert sort(got).equals(sort(expected(version, name, t.schema)))
    assert t.count_rows() == got.num_rows
    assert t.scanner().read_all().num_rows == got.num_rows


@pytest.mark.parametrize("version,name,pred,splits", java_answers())
def test_predicates_exact_and_no_more_files_than_java(version, name, pred, splits, row_takes):
    t = paimon.open_table(ROOT / version / "db.db" / name)
    expr = parse_predicate(pred)
    want = expected(version, name, t.schema).filter(expr)
    assert sort(t.to_table(filter=expr)).equals(sort(want))
    assert t.count_rows(expr) == want.num_rows
    cols = ["id"]
    assert sort(t.to_table(filter=expr, columns=cols)).equals(sort(want.select(cols)))
    plan = t.explain(expr)
    groups = {(p.file.partition, p.file.bucket) for p in plan.files if not p.skipped}
    assert len(groups) <= splits


def test_indexes_prune_files():
    t = paimon.open_table(ROOT / "paimon-master" / "db.db" / "append_idx")
    plan = t.explain(pc.field("status") == "pending")
    assert plan.files_read == 1 and plan.files[0].file.rows == 2000
    assert {p.reason for p in plan.files if p.skipped} == {"index"}
    assert "bitmap" in {p.reason for p in plan.files if not p.skipped}
    assert t.explain(pc.field("part") == "a").files_read == 4  # partition pruning
    assert {p.reason for p in t.explain(pc.field("part") == "a").files if p.skipped} == {"partition"}


def test_filters_asked_again_answer_as_a_fresh_table(row_takes):
    """A table remembers its last filters bound (and what their reads derive): equal
    filters built anew, filters differing only in a literal or its type, and more filters
    than it remembers are each answered as a table opened for that one query answers."""
    path = ROOT / "paimon-master" / "db.db" / "append_idx"
    t = paimon.open_table(path)
    want = expected("paimon-master", "append_idx", t.schema)
    status, name = pc.field("status"), pc.field("name")
    filters = [
        lambda: status == "pending",
        lambda: status == "paid",
        lambda: name == want.column("name")[123].as_py(),
        lambda: pc.field("id") == 2003,
        lambda: pc.field("id") == pa.scalar(100, pa.int8()),
        lambda: pc.field("id") == 100,
        lambda: pc.field("id") == 2003.5,
        lambda: pc.field("amount") == pa.scalar(93, pa.int32()),
        lambda: pc.field("amount") == pa.scalar(93, pa.int64()),
        lambda: (pc.field("part") == "a") & (status == "new"),
        lambda: pc.field("price") == 60.13,
        lambda: pc.field("price") == pa.scalar(60.13, pa.float32()),  # printed alike, never equal
        lambda: pc.field("price") < 60.3,
    ]
    for _ in range(2):
        for make in filters + filters[::-1]:
            expr = make()
            fresh = paimon.open_table(path)
            got = t.to_table(filter=expr)
            assert sort(got).equals(sort(fresh.to_table(filter=expr))), expr
            assert sort(got).equals(sort(want.filter(expr))), expr
            assert str(t.explain(expr)) == str(fresh.explain(expr))
            assert t.count_rows(expr) == got.num_rows


def _copy(tmp_path, version, name) -> Path:
    dst = tmp_path / name
    shutil.copytree(ROOT / version / "db.db" / name, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.chmod(dst, 0o755)
    return dst


def _edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _commit_schema(d: Path, edit) -> None:
    """A snapshot of table ``d`` whose schema is the latest one changed by ``edit`` (in
    place, on its JSON), with the same files: what ALTER TABLE commits."""
    latest = int((d / "snapshot" / "LATEST").read_text())
    snap = json.loads((d / "snapshot" / f"snapshot-{latest}").read_text())
    schema = json.loads((d / "schema" / f"schema-{snap['schemaId']}").read_text())
    edit(schema)
    schema["id"] = new_id = snap["schemaId"] + 1
    (d / "schema" / f"schema-{new_id}").write_text(json.dumps(schema))
    snap["id"], snap["schemaId"] = latest + 1, new_id
    (d / "snapshot" / f"snapshot-{latest + 1}").write_text(json.dumps(snap))
    (d / "snapshot" / "LATEST").write_text(str(latest + 1))


@pytest.mark.parametrize("version", VERSIONS)
def test_schema_evolution_rename_and_add(tmp_path, version, row_takes):
    """A later schema renames ``name``, widens ``amount`` and adds ``extra``: old files are read with their own
    names (and their indexes evaluated against them); the new column is NULL."""
    d = _copy(tmp_path, version, "append_idx")

    def evolve(schema: dict) -> None:
        for f in schema["fields"]:
            if f["name"] == "name":
                f["name"] = "full_name"
            if f["name"] == "amount":
                f["type"] = "BIGINT"  # widened: old files are read as INT and cast
        schema["fields"].append({"id": schema["highestFieldId"] + 1, "name": "extra", "type": "INT"})
        schema["highestFieldId"] += 1

    _commit_schema(d, evolve)

    t = paimon.open_table(d)
    assert t.schema.names == ["id", "part", "full_name", "status", "amount", "price", "extra"]
    base = paimon.open_table(ROOT / version / "db.db" / "append_idx")
    want = expected(version, "append_idx", base.schema).rename_columns(
        ["id", "part", "full_name", "status", "amount", "price"])
    want = want.set_column(4, "amount", want.column("amount").cast(pa.int64()))
    want = want.append_column("extra", pa.nulls(want.num_rows, pa.int32()))
    assert sort(t.to_table()).equals(sort(want))
    needle = want.column("full_name")[123].as_py()
    expr = pc.field("full_name") == needle
    assert sort(t.to_table(filter=expr)).equals(sort(want.filter(expr)))
    # the old files' bloom filters (on "name") still rule files out
    assert t.explain(expr).files_read < len(t.files)
    assert t.to_table(filter=pc.field("extra") == 1).num_rows == 0
    amount = pc.field("amount") == 3500
    assert sort(t.to_table(filter=amount)).equals(sort(want.filter(amount)))
    assert t.to_table(filter=pc.field("extra").is_null()).num_rows == want.num_rows


@pytest.mark.parametrize("version", VERSIONS)
def test_columns_swapping_names_are_read_by_field_id(tmp_path, version, row_takes):
    """A later schema swaps the names of ``name`` and ``status``: a filter on the new
    ``status`` reads the old files' ``name`` (by field id; its bloom filter keeps files
    whole), never their ``status`` column of the same name and type (also when Polars
    filters the files), and the other way round."""
    d = _copy(tmp_path, version, "append_idx")
    renamed = {"name": "status", "status": "name"}

    def swap(schema: dict) -> None:
        for f in schema["fields"]:
            f["name"] = renamed.get(f["name"], f["name"])

    _commit_schema(d, swap)

    t = paimon.open_table(d)
    base = paimon.open_table(ROOT / version / "db.db" / "append_idx")
    old = expected(version, "append_idx", base.schema)
    want = old.rename_columns([renamed.get(c, c) for c in old.column_names])
    for column in ("status", "name"):
        for value in (want.column(column)[7].as_py(), old.column(column)[7].as_py()):
            expr = pc.field(column) == value
            assert sort(t.to_table(filter=expr)).equals(sort(want.filter(expr))), (column, value)


@pytest.mark.parametrize("version", VERSIONS)
def test_merge_on_read_equals_java(tmp_path, version):
    """The pk_dv table with deletion vectors switched off: merging every file (level 0
    included) by key and sequence number gives the table Java reads."""
    d = _copy(tmp_path, version, "pk_dv")
    for s in (d / "schema").glob("schema-*"):
        _edit_json(s, lambda doc: doc["options"].update({"deletion-vectors.enabled": "false"}))
    t = paimon.open_table(d)
    assert t.merge_on_read
    want = expected(version, "pk_dv", t.schema)
    assert sort(t.to_table()).equals(sort(want))
    expr = pc.field("status") == "updated"
    assert sort(t.to_table(filter=expr)).equals(sort(want.filter(expr)))
    assert t.count_rows() == want.num_rows


def test_unsupported_merge_engine(tmp_path):
    d = _copy(tmp_path, "paimon-master", "pk_dv")
    for s in (d / "schema").glob("schema-*"):
        _edit_json(s, lambda doc: doc["options"].update(
            {"deletion-vectors.enabled": "false", "merge-engine": "aggregation"}))
    with pytest.raises(UnsupportedTableError, match="merge-engine='aggregation'"):
        paimon.open_table(d)


def test_missing_snapshot():
    with pytest.raises(PaimonTableError, match="snapshot-99.*not found"):
        paimon.open_table(ROOT / "paimon-master" / "db.db" / "append_idx", snapshot=99)


def test_old_snapshot_reads_its_files():
    t = paimon.open_table(ROOT / "paimon-master" / "db.db" / "append_idx", snapshot=2)
    assert t.snapshot_id == 2 and t.to_table().num_rows == 8000


def test_truncated_manifest(tmp_path):
    d = _copy(tmp_path, "paimon-master", "append_idx")
    m = sorted((d / "manifest").glob("manifest-[!l]*"))[0]
    m.write_bytes(m.read_bytes()[:100])
    with pytest.raises(PaimonTableError, match=m.name):
        paimon.open_table(d).to_table()


def test_unknown_snapshot_version(tmp_path):
    d = _copy(tmp_path, "paimon-master", "append_idx")
    latest = (d / "snapshot" / "LATEST").read_text().strip()
    _edit_json(d / "snapshot" / f"snapshot-{latest}", lambda doc: doc.update({"version": 99}))
    with pytest.raises(UnsupportedTableError, match=f"snapshot-{latest}.*version 99"):
        paimon.open_table(d)


def test_merge_rows_reference():
    from arrowidx.paimon.table import merge_rows

    t = pa.table({
        "k": [1, 1, 2, 2, 3, 3],
        "v": ["a", "b", "c", "d", "e", "f"],
        "_SEQUENCE_NUMBER": [1, 5, 4, 2, 1, 2],
        "_VALUE_KIND": [0, 2, 0, 0, 0, 3],
    })
    last = merge_rows(t, ["k"], "deduplicate")
    assert sorted(zip(last["k"].to_pylist(), last["v"].to_pylist())) == [(1, "b"), (2, "c")]
    first = merge_rows(t, ["k"], "first-row")
    assert sorted(zip(first["k"].to_pylist(), first["v"].to_pylist())) == [(1, "a"), (2, "d"), (3, "e")]


@pytest.mark.parametrize("damage", ["empty", "truncated", "wrong magic"])
def test_damaged_index_extra_files_only_cost_speed(tmp_path, damage):
    """``.index`` extra files are mapped in place, not read whole; an empty, truncated or
    foreign one answers REMAIN (the data file is read), so the answer stays exact."""
    d = _copy(tmp_path, "paimon-0.9.0", "append_idx")
    t = paimon.open_table(d)
    pred = pc.field("name") == "zzz"
    assert t.explain(pred).files_read < len(t.explain(pred).files)  # the intact indexes prune
    for p in d.rglob("*.parquet.index"):
        data = p.read_bytes()
        p.write_bytes({"empty": b"", "truncated": data[:20], "wrong magic": b"\0" * 8 + data[8:]}[damage])
    t = paimon.open_table(d)
    java = expected("paimon-0.9.0", "append_idx", t.schema)  # Java's rows, not our own read
    assert sort(t.to_table()).equals(sort(java))
    for expr in (pred, pc.field("status") == "pending", pc.field("id") > 3, pc.field("name") == java.column("name")[5].as_py()):
        assert sort(t.to_table(filter=expr)).equals(sort(java.filter(expr))), expr
    plan = t.explain(pred)
    assert "index" not in {p.reason for p in plan.files if p.skipped}


def test_file_names_in_metadata_cannot_leave_the_table(tmp_path):
    """Paimon writes generated plain file names; a name with a separator or ``..`` in a
    snapshot, manifest list, manifest or index manifest is damage, refused with an error
    naming the metadata file, and nothing outside the table is opened."""
    import fastavro

    d = _copy(tmp_path, "paimon-master", "pk_dv")
    latest = (d / "snapshot" / "LATEST").read_text().strip()
    snapshot = d / "snapshot" / f"snapshot-{latest}"
    original = snapshot.read_text()
    doc = json.loads(original)
    for key in ("baseManifestList", "indexManifest"):
        _edit_json(snapshot, lambda doc, key=key: doc.update({key: "../../../etc/passwd"}))
        with pytest.raises(PaimonTableError, match=r"not a plain file name"):
            paimon.open_table(d).to_table()
        snapshot.write_text(original)

    def rewrite(path: Path, edit) -> None:
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            schema, codec, records = reader.writer_schema, reader.codec, list(reader)
        edit(records)
        with open(path, "wb") as f:
            fastavro.writer(f, schema, records, codec=codec)

    manifest_list = d / "manifest" / doc["baseManifestList"]
    saved = manifest_list.read_bytes()
    rewrite(manifest_list, lambda recs: recs[0].update({"_FILE_NAME": "../x"}))
    with pytest.raises(PaimonTableError, match=rf"{manifest_list.name}.*'../x' is not a plain file name"):
        paimon.open_table(d).to_table()
    manifest_list.write_bytes(saved)
    with open(manifest_list, "rb") as f:
        manifest = d / "manifest" / next(iter(fastavro.reader(f)))["_FILE_NAME"]
    rewrite(manifest, lambda recs: recs[0]["_FILE"].update({"_FILE_NAME": "sub/../../data.parquet"}))
    with pytest.raises(PaimonTableError, match=rf"{manifest.name}.*data file 'sub/../../data.parquet'"):
        paimon.open_table(d).to_table()


def test_index_files_are_read_whole_when_they_cannot_be_mapped(monkeypatch):
    """Mapping an ``.index`` file can fail (the process's limit of mappings): the file is then
    read whole, and the plan is the same as with mapped files."""
    import mmap

    from arrowidx.paimon import metadata

    table = ROOT / "paimon-0.9.0" / "db.db" / "append_idx"
    pred = pc.field("name") == "zzz"
    mapped = paimon.open_table(table).explain(pred)

    def refuse(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(metadata.mmap, "mmap", refuse)
    assert mmap.mmap is refuse
    read = paimon.open_table(table).explain(pred)
    assert [p.status for p in read.files] == [p.status for p in mapped.files]
    assert read.files_read < len(read.files)


def test_tables_opened_again_share_what_was_parsed(tmp_path, monkeypatch):
    """A table object opened again in the same process parses no manifest list, manifest,
    index file or footer an earlier one parsed (Paimon never rewrites a file), and answers alike; a file
    changed in place is parsed again (on a local filesystem its size and modification time
    are part of the key); ``clear_caches`` forgets everything."""
    from arrowidx.paimon import cache, metadata, table

    d = _copy(tmp_path, "paimon-master", "append_idx")
    expr = pc.field("status") == "pending"
    counts = {"avro": 0, "index": 0, "footer": 0}
    for module, name, what in [(metadata, "read_avro", "avro"), (table, "FileIndex", "index")]:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _r=real, _w=what, **k: counts.__setitem__(_w, counts[_w] + 1) or _r(*a, **k))
    footers = table.FOOTERS

    class Footers:  # counts footers read
        def get(self, key, make):
            return footers.get(key, lambda: counts.__setitem__("footer", counts["footer"] + 1) or make())

        def holds(self, key):
            return footers.holds(key)

    monkeypatch.setattr(table, "FOOTERS", Footers())
    want = sort(paimon.open_table(d).to_table(filter=expr))
    first = dict(counts)
    assert first["index"] and first["footer"] and first["avro"] > 2
    counts.update(avro=0, index=0, footer=0)
    again = paimon.open_table(d)
    assert sort(again.to_table(filter=expr)).equals(want)
    assert again._snapshot.get("baseManifestList") and not again._snapshot.get("indexManifest")
    assert counts == {"avro": 0, "index": 0, "footer": 0}  # manifest lists and manifests shared too

    index_file = next(d.rglob("*.index"))  # damaged in place: parsed again, and only costs speed
    index_file.write_bytes(index_file.read_bytes()[:10])
    counts.update(avro=0, index=0, footer=0)
    plan = paimon.open_table(d).explain(expr)
    assert counts["index"] == 1
    damaged = [p for p in plan.files if p.path.endswith(index_file.name[: -len(".index")])]
    assert damaged and not damaged[0].skipped
    assert sort(paimon.open_table(d).to_table(filter=expr)).equals(want)

    cache.clear_caches()
    counts.update(avro=0, index=0, footer=0)
    assert sort(paimon.open_table(d).to_table(filter=expr)).equals(want)
    assert counts["index"] == first["index"] and counts["avro"] == first["avro"] and counts["footer"]


def test_manifest_lists_without_a_recorded_size_are_shared_only_on_a_local_filesystem(tmp_path, monkeypatch):
    """Paimon 0.9.0's snapshots do not record their manifest lists' sizes: on a local
    filesystem a table opened again parses no manifest list (a stat gives the size for the
    key), and a manifest list rewritten in place is parsed again; on another filesystem,
    where nothing vouches for the bytes, each table object parses them."""
    import pyarrow.fs as pafs

    from arrowidx.paimon import metadata

    d = _copy(tmp_path, "paimon-0.9.0", "append_idx")
    snapshot = json.loads(sorted((d / "snapshot").glob("snapshot-*"))[-1].read_text())
    assert "baseManifestListSize" not in snapshot
    lists = [snapshot[k] for k in ("baseManifestList", "deltaManifestList") if snapshot.get(k)]
    parsed = []
    real = metadata._read_manifest_list
    monkeypatch.setattr(metadata, "_read_manifest_list", lambda fs, path: parsed.append(path) or real(fs, path))
    want = paimon.open_table(d).files
    assert len(parsed) == len(lists)
    parsed.clear()
    assert [f.name for f in paimon.open_table(d).files] == [f.name for f in want]
    assert parsed == []

    listed = d / "manifest" / lists[0]
    data = listed.read_bytes()
    listed.write_bytes(data + b"\0")  # changed in place (size and time): parsed again
    listed.write_bytes(data)
    os.utime(listed, ns=(1, 1))
    assert [f.name for f in paimon.open_table(d).files] == [f.name for f in want]
    assert parsed == [str(listed)]

    parsed.clear()
    remote = pafs.SubTreeFileSystem(str(d), pafs.LocalFileSystem())
    for _ in range(2):
        assert [f.name for f in paimon.open_table("", filesystem=remote).files] == [f.name for f in want]
    assert len(parsed) == 2 * len(lists)


def test_tables_opened_again_share_each_files_polars_scan(tmp_path):
    """Each data file's Polars scan (which keeps the file's metadata once it ran) is made
    once per process: a table opened again gets the same scan, which reads the same rows; a
    data file changed in place gets a new one, and ``clear_caches`` forgets them."""
    import os

    import polars as pl

    from arrowidx.paimon import cache

    d = _copy(tmp_path, "paimon-master", "append_idx")
    first, again = paimon.open_table(d), paimon.open_table(d)
    f = first.files[0]
    path = first._fragment(f).path
    scan = first._polars_scan(f, path)
    assert again._polars_scan(again.files[0], path) is scan
    want = pl.read_parquet(path)
    assert scan.collect().equals(want)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # changed in place
    assert paimon.open_table(d)._polars_scan(f, path) is not scan
    later = paimon.open_table(d)._polars_scan(f, path)
    cache.clear_caches()
    assert paimon.open_table(d)._polars_scan(f, path) is not later


def test_shared_cache_keeps_its_budget():
    from arrowidx.paimon.cache import SharedCache

    made = []

    def make(value, weight):
        return lambda: made.append(value) or (value, weight)

    c = SharedCache("test", 10)
    assert c.get("a", make("A", 4)) == "A" and c.get("b", make("B", 4)) == "B"
    assert c.get("a", make("A2", 4)) == "A"  # a hit, now the most recent
    assert c.get("c", make("C", 4)) == "C"  # over budget: the least recent ("b") goes
    assert c.get("b", make("B2", 4)) == "B2" and len(c) == 2
    assert c.get("big", make("BIG", 11)) == "BIG" and c.get("big", make("BIG2", 11)) == "BIG2"  # never kept
    assert c.get(None, make("N", 1)) == "N" and c.get(None, make("N2", 1)) == "N2"  # a None key is never kept
    assert made == ["A", "B", "C", "B2", "BIG", "BIG2", "N", "N2"]
    assert c.holds("b") and not c.holds("a") and not c.holds("big") and not c.holds(None)
