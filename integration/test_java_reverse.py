"""Reverse compatibility: Apache Paimon's own Java classes read what arrowidx writes.

arrowidx writes every index type (bloom-filter, bitmap V1 and V2, range-bitmap, BSI, several
indexes on one column and many columns in one container), 32- and 64-bit deletion vectors and
deletion-vectors index files; ``shared/javaref/bin/paimon-eval`` and ``paimon-dv-read`` (the
real Paimon readers) read them, and their answers must equal arrowidx's on the same predicates
and positions. Everything is batched into a handful of JVM launches (one container per
evaluation launch, one file per deletion-vector launch).

Skipped with the reason when Java, shared/javaref or pyspark (whose jars javaref borrows) is
missing. ``ARROWIDX_JAVAREF`` points at another javaref folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import reduce
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from arrowidx import DeletionVector, FileIndex, write_deletion_vectors, write_file_index


def _javaref() -> Path | None:
    if os.environ.get("ARROWIDX_JAVAREF"):
        return Path(os.environ["ARROWIDX_JAVAREF"])
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "javaref" / "bin" / "paimon-eval").exists():
            return parent / "shared" / "javaref"
    return None


JAVAREF = _javaref()
if JAVAREF is None or not (JAVAREF / "bin" / "paimon-eval").exists():
    pytest.skip("shared/javaref not found (set ARROWIDX_JAVAREF)", allow_module_level=True)
if shutil.which("java") is None:
    pytest.skip("no `java` on PATH: Java 17 runs the Paimon reference", allow_module_level=True)
pytest.importorskip("pyspark", reason="javaref takes its third-party jars from pyspark")

ROWS = 70_000  # > 65,536: two Roaring containers, dense (bitset) ones among them
JVM = "-Xmx3g -Xms3g -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m"


def _run(tool: str, *args: str) -> dict:
    env = dict(os.environ, PYTHON=sys.executable, JAVA_OPTS=os.environ.get("JAVA_OPTS", JVM))
    proc = subprocess.run([str(JAVAREF / "bin" / tool), *args], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{tool} failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------------------
# data: one table, one column per index setup
# --------------------------------------------------------------------------------------


def _with_nulls(rng, values: np.ndarray, share: float) -> list:
    out = values.tolist()
    for i in np.flatnonzero(rng.random(len(out)) < share).tolist():
        out[i] = None
    return out


def _columns() -> dict[str, tuple[str, list]]:
    """``{column: (Paimon type, values)}``."""
    rng = np.random.default_rng(13)
    words = [f"w{i:03d}-" + "xyz" * (i % 5) for i in range(40)]
    low = rng.integers(0, 12, ROWS)
    low[:70] = 99  # a value held by 70 rows only (an array container)
    low[1000] = 77  # a value held by one row (stored inline, no bitmap)
    return {
        "i_bm1": ("INT", _with_nulls(rng, low, 0.05)),
        "i_bm2": ("INT", _with_nulls(rng, rng.integers(-50, 50, ROWS), 0.02)),
        "s_bm": ("STRING", _with_nulls(rng, np.array(words)[rng.integers(0, 40, ROWS)], 0.03)),
        "s_bm1": ("STRING", [words[i] for i in rng.integers(0, 10, ROWS).tolist()]),
        "l_bloom": ("BIGINT", _with_nulls(rng, rng.integers(-(2**62), 2**62, ROWS), 0.01)),
        "i_rb": ("INT", _with_nulls(rng, rng.integers(0, 5000, ROWS), 0.04)),
        "l_bsi": ("BIGINT", _with_nulls(rng, rng.integers(-(10**9), 10**9, ROWS) // 1000, 0.04)),
        "m_multi": ("INT", _with_nulls(rng, rng.integers(0, 300, ROWS), 0.02)),
        "s_rb": ("STRING", _with_nulls(rng, np.array(words)[rng.integers(0, 40, ROWS)], 0.1)),
        # bitmaps of many values: ~7 scattered rows each (arrays in two containers), and runs of
        # rows (run containers; one value of 5,000 rows in a row, which CRoaring lays out)
        "i_bm_many": ("INT", _with_nulls(rng, (np.arange(ROWS) * 7) % 10_000, 0.01)),
        "s_bm_runs": ("STRING", [f"r{v}" for v in np.concatenate(([-1] * 5000, np.sort(rng.integers(0, 3000, ROWS - 5000)))).tolist()]),
    }


OPTIONS = {
    "file-index.bitmap.columns": "i_bm1,i_bm2,s_bm,s_bm1,m_multi,i_bm_many,s_bm_runs",
    "file-index.bitmap.s_bm_runs.version": "1",
    "file-index.bitmap.i_bm1.version": "1",
    "file-index.bitmap.s_bm1.version": "1",
    "file-index.bitmap.i_bm2.index-block-size": "64b",  # many index blocks
    "file-index.bloom-filter.columns": "l_bloom,s_bm,m_multi",
    "file-index.bloom-filter.l_bloom.items": str(ROWS),
    "file-index.bloom-filter.l_bloom.fpp": "0.01",
    "file-index.range-bitmap.columns": "i_rb,m_multi,s_rb",
    "file-index.range-bitmap.i_rb.chunk-size": "64b",  # many dictionary chunks
    "file-index.bsi.columns": "l_bsi",
}

ARROW = {"INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string()}


def _table(columns) -> pa.Table:
    return pa.table({name: pa.array(values, ARROW[t]) for name, (t, values) in columns.items()})


def _predicates(columns) -> list[dict]:
    """Comparisons, IN, NULL tests and AND / OR across columns, on values present and absent."""
    preds: list[dict] = []
    for name, (ptype, values) in columns.items():
        present = [v for v in values[:5000] if v is not None]
        a, b, c = present[0], present[1], present[2]
        absent = "zz-absent" if ptype == "STRING" else 123_456_789
        preds += [
            {"op": "eq", "field": name, "literal": a},
            {"op": "eq", "field": name, "literal": absent},
            {"op": "in", "field": name, "literals": [a, b, absent]},
            {"op": "in", "field": name, "literals": [c]},
            {"op": "is_null", "field": name},
            {"op": "is_not_null", "field": name},
        ]
        if name in ("i_rb", "l_bsi", "m_multi", "s_rb"):  # ordered indexes
            ordered = sorted({v for v in present})
            lo, mid = ordered[len(ordered) // 100], ordered[len(ordered) // 2]
            preds += [{"op": op, "field": name, "literal": v} for op in ("lt", "le", "gt", "ge") for v in (lo, mid)]
            preds.append({"op": "lt", "field": name, "literal": ordered[0]})
            preds.append({"op": "between", "field": name, "lower": lo, "upper": mid})
    preds += [
        {"op": "in", "field": "i_bm1", "literals": [99, 77]},
        {"op": "eq", "field": "i_bm_many", "literal": 4321},
        {"op": "in", "field": "i_bm_many", "literals": [0, 9999, 5000, 17]},
        {"op": "eq", "field": "s_bm_runs", "literal": "r1500"},
        {"op": "in", "field": "s_bm_runs", "literals": ["r0", "r2999", "r7"]},
        {"op": "eq", "field": "i_bm1", "literal": 77},
        {"op": "and", "children": [preds[0], {"op": "lt", "field": "i_rb", "literal": 2500}]},
        {"op": "or", "children": [{"op": "eq", "field": "i_bm2", "literal": 7}, {"op": "ge", "field": "l_bsi", "literal": 0}]},
    ]
    return preds


def _expression(p: dict, schema: pa.Schema) -> pc.Expression:
    op = p["op"]
    if op in ("and", "or"):
        children = [_expression(c, schema) for c in p["children"]]
        return reduce(lambda x, y: (x & y) if op == "and" else (x | y), children)
    field, typ = pc.field(p["field"]), schema.field(p["field"]).type
    if op == "in":
        return field.isin(pa.array(p["literals"], typ))
    if op == "is_null":
        return field.is_null()
    if op == "is_not_null":
        return field.is_valid()
    if op == "between":
        return (field >= pa.scalar(p["lower"], typ)) & (field <= pa.scalar(p["upper"], typ))
    lit = pa.scalar(p["literal"], typ)
    return {"eq": field == lit, "lt": field < lit, "le": field <= lit, "gt": field > lit, "ge": field >= lit}[op]


def _ours(result, rows: int) -> dict:
    if result.kind == "remain":
        return {"kind": "REMAIN", "remain": True}
    if result.kind == "skip":
        return {"kind": "SKIP", "remain": False}
    positions = np.frombuffer(result.bitmap.to_array(), np.uint32).tolist()
    return {"kind": "BITMAP", "remain": bool(positions), "positions": positions}


def _same(ours: dict, java: dict) -> bool:
    """README rule: both not remaining is equal (SKIP == empty bitmap); else kind and rows."""
    if not ours["remain"] and not java.get("remain", True):
        return True
    if ours["kind"] != java["kind"]:
        return False
    return ours["kind"] != "BITMAP" or ours["positions"] == java.get("positions")


# --------------------------------------------------------------------------------------
# file indexes
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Java's and arrowidx's answers for every predicate on the container arrowidx wrote."""
    work = tmp_path_factory.mktemp("java-reverse")
    columns = _columns()
    table = _table(columns)
    data = write_file_index(table, OPTIONS)
    (work / "all.index").write_bytes(data)
    dataset = {"name": "reverse", "rowCount": ROWS,
               "columns": [{"name": n, "paimonType": t, "values": v} for n, (t, v) in columns.items()]}  # fmt: skip
    (work / "dataset.json").write_text(json.dumps(dataset))
    preds = _predicates(columns)
    (work / "predicates.json").write_text(json.dumps({"predicates": preds}))
    java = _run("paimon-eval", "--inline-max", str(ROWS), str(work / "all.index"), str(work / "dataset.json"), str(work / "predicates.json"))
    index = FileIndex(data, table.schema)
    out = []
    for pred, answer in zip(preds, java["predicates"]):
        ours = _ours(index.evaluate(_expression(pred, table.schema)), ROWS)
        out.append((pred, ours, answer["expected"]))
    return index, out


def test_container_holds_every_index_type(evaluated):
    index, _ = evaluated
    types = {t for ts in index.columns.values() for t in ts}
    assert types == {"bitmap", "bloom-filter", "range-bitmap", "bsi"}
    assert sorted(index.columns["m_multi"]) == ["bitmap", "bloom-filter", "range-bitmap"]
    versions = {c: r.describe()["version"] for c in ("i_bm1", "i_bm2", "s_bm1") for r in index.readers(c) if r.index_type == "bitmap"}
    assert versions == {"i_bm1": 1, "i_bm2": 2, "s_bm1": 1}


def test_java_answers_equal_ours(evaluated):
    _, answers = evaluated
    assert len(answers) > 90
    errors = [a for a in answers if a[2].get("kind") == "ERROR"]
    assert not errors, f"Java could not read arrowidx's index: {errors[0]}"
    differ = [(p, o, j) for p, o, j in answers if not _same(o, j)]
    assert not differ, "\n".join(
        f"{json.dumps(p)}: arrowidx {o['kind']} {len(o.get('positions', []))} rows,"
        f" Java {j['kind']} {j.get('cardinality', '-')} rows"
        for p, o, j in differ[:10]
    )
    # The bitmaps are real answers, not all REMAIN: most predicates select exact rows.
    assert sum(o["kind"] == "BITMAP" for _, o, _ in answers) > len(answers) // 2


# --------------------------------------------------------------------------------------
# deletion vectors
# --------------------------------------------------------------------------------------


def _vectors(bitmap64: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5 + bitmap64)
    vectors = {
        "data-empty.parquet": np.zeros(0, np.int64),
        "data-one.parquet": np.array([0]),
        "data-sparse.parquet": np.sort(rng.choice(3_000_000, 2_000, replace=False)),
        "data-dense.parquet": np.flatnonzero(rng.random(200_000) < 0.4),
        "data-runs.parquet": np.concatenate([np.arange(s, s + 5000) for s in range(0, 1_000_000, 70_000)]),
        "data-max32.parquet": np.array([5, 2**31 - 1]),
    }
    if bitmap64:
        vectors["data-above-2p32.parquet"] = np.array([1, 2**32 - 1, 2**32, 2**32 + 7, 3 * 2**32 + 99])
    return vectors


def _java_positions(vector: dict) -> list[int]:
    return [p for start, end in vector["positionRuns"] for p in range(start, end)]


@pytest.mark.parametrize("bitmap64", [False, True], ids=["32-bit", "64-bit"])
def test_java_reads_our_deletion_vectors_index_file(tmp_path, bitmap64):
    vectors = _vectors(bitmap64)
    data, ranges = write_deletion_vectors({n: DeletionVector.from_positions(p, bitmap64) for n, p in vectors.items()})
    path = tmp_path / "dv.index"
    path.write_bytes(data)
    ranges_json = [{"dataFile": n, "offset": o, "length": ln, "cardinality": len(vectors[n])} for n, (o, ln) in ranges.items()]
    (tmp_path / "ranges.json").write_text(json.dumps(ranges_json))
    java = _run("paimon-dv-read", "--index", "--ranges", str(tmp_path / "ranges.json"), str(path))
    got = {v["dataFile"]: v for v in java["vectors"]}
    assert set(got) == set(vectors)
    for name, positions in vectors.items():
        v = got[name]
        assert "error" not in v or not v["error"], f"{name}: Java: {v['error']}"
        assert v["format"] == ("bitmap64" if bitmap64 else "bitmap32"), name
        assert v["cardinality"] == len(positions), name
        assert _java_positions(v) == positions.tolist(), name


@pytest.mark.parametrize("bitmap64", [False, True], ids=["32-bit", "64-bit"])
def test_java_reads_our_single_deletion_vector(tmp_path, bitmap64):
    positions = _vectors(bitmap64)["data-above-2p32.parquet" if bitmap64 else "data-dense.parquet"]
    record = DeletionVector.from_positions(positions, bitmap64).serialize()
    path = tmp_path / "one.dv"
    path.write_bytes(record)
    java = _run("paimon-dv-read", "--single", str(path))
    (v,) = java["vectors"]
    assert v["crcOk"] is True
    assert v["blobLength"] == len(record)
    assert v["format"] == ("bitmap64" if bitmap64 else "bitmap32")
    assert v["cardinality"] == len(positions)
    assert _java_positions(v) == positions.tolist()
