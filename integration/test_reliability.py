"""Crashes, races, corruption and copies (issue 11), tried as operators would.

* crash: ``build`` and ``delete`` run in a subprocess killed with SIGKILL at every named
  write point (``ARROWIDX_FAULTS``, see ``arrowidx._faults.fault_point``) and at random moments;
  afterwards the lake reads exactly the old or the new version and accepts the next write;
* races: two processes commit in lockstep, meeting at the fault hook between planning and
  the exclusive create (``before-commit=touch:...,before-commit=wait:...``), so every round
  is a race that exactly one of them loses and retries; no delete is lost;
* corruption sweep: truncations, bit flips, wrong types, paths outside the root and swapped
  ranges in every kind of file arrowidx writes; every outcome is the correct answer or an
  ``ArrowIdxError`` naming the damaged file;
* copies: ``shutil.copytree`` (new mtimes) keeps indexes and deletions; a same-size,
  same-mtime rewrite is detected.

Expected answers come from ``Table.filter`` on the rows in memory minus the deleted rows (a
``pyarrow.dataset`` scan with the filter is not the reference: its statistics drop NaN rows). Counts are
printed (``pytest -s``) and recorded in docs/reliability.md.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import subprocess
import sys
import time

import pyarrow.compute as pc
import pytest

import arrowidx
import arrowidx.facts
from arrowidx import ArrowIdxError, _faults
from arrowidx.lake import manifest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the tests package
from tests.conftest import index_dir, rows_in_memory, tables_equal  # noqa: E402
from tests.manifest_json import as_format3  # noqa: E402
from tests.test_lake import OPTIONS, alive, write_lake  # noqa: E402

FIRST = pc.field("status") == "paid"
SECOND = pc.field("status") == "lost"
THIRD = pc.field("user") < 20
QUERIES = [pc.field("status") == "new", pc.field("id") == 10_007, (pc.field("user") > 150) | (pc.field("amount") > 40.0),
           ~(pc.field("amount") <= 80.0)]  # NaN rows match, in row groups statistics would rule out  # fmt: skip
BUILD_OPTIONS = {**OPTIONS, "file-index.in-manifest-threshold": "100"}
COUNTS: dict[str, dict] = {}

WORKER = r"""
import sys, json
import pyarrow.compute as pc
import arrowidx
root, op = sys.argv[1], sys.argv[2]
if op == "build":
    opts = json.loads(sys.argv[3])
    arrowidx.build(root, opts, progress=False, threads=1)
elif op == "delete":
    arrowidx.delete(root, pc.field("status") == "lost", progress=False)
"""


def expected(root, deleted, expr=None):
    flt = alive(deleted) if expr is None else expr & alive(deleted)
    return rows_in_memory(root).filter(flt)


def assert_reads(root, deleted):
    data = arrowidx.dataset(root)
    for expr in [None, *QUERIES]:
        got = data.to_table(filter=expr)
        assert tables_equal(got, expected(root, deleted, expr)), f"{root}: wrong answer for {expr}"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("template") / "lake")
    write_lake(root, files=4, rows=400)
    arrowidx.build(root, BUILD_OPTIONS, progress=False)
    arrowidx.delete(root, FIRST, progress=False)
    return root


def fresh_copy(template, tmp_path, name="lake"):
    """A copy of the lake ``template`` with its indexes (both folders, as docs/guide.md says)."""
    root = str(tmp_path / name)
    shutil.copytree(template, root)
    if os.path.isdir(index_dir(template)):
        shutil.copytree(index_dir(template), index_dir(root))
    return root


def run_worker(root, op, faults=None, kill_after=None):
    env = dict(os.environ)
    env.pop(_faults.FAULTS_ENV, None)
    if faults:
        env[_faults.FAULTS_ENV] = faults
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = os.pathsep.join([src, os.path.dirname(src), env.get("PYTHONPATH", "")])
    args = [sys.executable, "-c", WORKER, root, op]
    if op == "build":
        args.append(json.dumps({**BUILD_OPTIONS, "file-index.bloom-filter.id.fpp": "0.02"}))
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.kill()
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode(errors="replace")


KILL_POINTS = [
    ("build", "index-written=kill@1"),
    ("build", "index-written=kill@3"),
    ("build", "before-commit=kill"),
    ("build", "committed=kill"),
    ("build", "latest-written=kill"),
    ("delete", "deletion-written=kill"),
    ("delete", "before-commit=kill"),
    ("delete", "committed=kill"),
    ("delete", "latest-written=kill"),
]


def check_after_crash(root, op):
    """The lake reads as the old or the new version, then accepts the next write."""
    version = arrowidx.dataset(root).manifest.version
    assert version in (2, 3), version
    deleted = FIRST | SECOND if (op == "delete" and version == 3) else FIRST
    assert_reads(root, deleted)
    report = arrowidx.delete(root, THIRD, progress=False)
    assert report.version == version + 1
    assert_reads(root, deleted | THIRD)
    return "new" if version == 3 else "old"


def test_crash_at_every_write_point_and_at_random(template, tmp_path):
    outcomes = {"old": 0, "new": 0}
    for i, (op, fault) in enumerate(KILL_POINTS):
        root = fresh_copy(template, tmp_path, f"k{i}")
        code, err = run_worker(root, op, fault)
        assert code == -9, f"{op} {fault}: the kill point was not reached (exit {code}): {err[-500:]}"
        outcomes[check_after_crash(root, op)] += 1
    rng = random.Random(11)
    took = {}
    for op in ("build", "delete"):  # how long each runs, start-up included, to aim the random kills
        started = time.perf_counter()
        code, err = run_worker(fresh_copy(template, tmp_path, f"t-{op}"), op)
        assert code == 0, err[-500:]
        took[op] = time.perf_counter() - started
    random_trials = 8
    killed = 0
    for i in range(random_trials):
        op = ("build", "delete")[i % 2]
        root = fresh_copy(template, tmp_path, f"r{i}")
        code, err = run_worker(root, op, kill_after=rng.uniform(0.5, 1.1) * took[op])
        assert code in (0, -9), err[-500:]
        killed += code == -9
        outcomes[check_after_crash(root, op)] += 1
    COUNTS["crash"] = {"kill_points": len(KILL_POINTS), "random_trials": random_trials, "random_killed": killed,
                       "seconds_per_run": {k: round(v, 2) for k, v in took.items()}, **outcomes}  # fmt: skip
    print(f"\ncrash: {COUNTS['crash']}")


RACER = r"""
import importlib, json, os, sys, time
import pyarrow.compute as pc
import arrowidx
from arrowidx import _faults
from arrowidx.lake import commit
delete_module = importlib.import_module("arrowidx.lake.delete")
build_module = importlib.import_module("arrowidx.lake.build")
root, me, rounds, barrier = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
conflicts = 0
real = commit.commit_manifest
def counting(*a, **k):
    global conflicts
    try:
        return real(*a, **k)
    except arrowidx.CommitConflictError:
        conflicts += 1
        raise
delete_module.commit_manifest = build_module.commit_manifest = counting
opts = json.loads(sys.argv[5])
for r in range(rounds):
    open(os.path.join(barrier, f"{r}-{me}"), "w").close()
    while not os.path.exists(os.path.join(barrier, f"{r}-{1 - me}")):
        time.sleep(0.002)
    # both have planned on the same version before either creates the next one: one
    # create fails, and its retry passes the rendezvous at once (both files exist)
    os.environ[_faults.FAULTS_ENV] = (f"before-commit=touch:{barrier}/commit-{r}-{me},"
                                     f"before-commit=wait:{barrier}/commit-{r}-{1 - me}")
    if me == 1 and r % 2:
        opts["file-index.bloom-filter.id.fpp"] = str(0.01 + (r % 7) / 100)
        arrowidx.build(root, opts, progress=False, threads=1)
    else:
        arrowidx.delete(root, pc.field("id") == 10_000 * (r % 4) + 2 * r + me, progress=False)
print(json.dumps({"conflicts": conflicts}))
"""


def test_no_lost_delete_in_races(tmp_path):
    root = str(tmp_path / "lake")
    write_lake(root, files=4, rows=200)
    arrowidx.build(root, BUILD_OPTIONS, progress=False)
    barrier = str(tmp_path / "barrier")
    os.makedirs(barrier)
    rounds = 50
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, root, str(me), str(rounds), barrier, json.dumps(BUILD_OPTIONS)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        for me in (0, 1)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err.decode()[-2000:]
    conflicts = sum(json.loads(out.decode().strip().splitlines()[-1])["conflicts"] for out, _ in results)
    ids = [10_000 * (r % 4) + 2 * r for r in range(rounds)] + [10_000 * (r % 4) + 2 * r + 1 for r in range(rounds) if r % 2 == 0]
    deleted = pc.field("id").isin(ids)
    present = rows_in_memory(root).filter(deleted).num_rows
    assert present == len(ids)  # every id exists once, so every delete had a row to delete
    assert arrowidx.dataset(root).count_rows(filter=deleted) == 0, "a delete was lost"
    assert_reads(root, deleted)
    version = arrowidx.dataset(root).manifest.version
    assert version == 1 + rounds + rounds // 2 + rounds // 2  # every commit is its own version
    COUNTS["races"] = {"rounds": rounds, "deletes": len(ids), "builds": rounds // 2, "conflicts_retried": conflicts,
                       "lost_deletes": 0}  # fmt: skip
    print(f"\nraces: {COUNTS['races']}")
    assert conflicts == rounds, "each round is one race: one writer's create fails and it retries once"


# ------------------------------------------------------------------------------------------
# Corruption sweep
# ------------------------------------------------------------------------------------------


def _reseal(d):
    d["checksum"] = manifest.checksum(manifest.canonical({k: v for k, v in d.items() if k != "checksum"}))
    return json.dumps(d).encode()


def _manifest_edits(text: bytes) -> list[tuple[str, bytes]]:
    """Wrong types, paths outside the root and swapped ranges, each resealed (so validation,
    not the manifest checksum, must catch it)."""
    out = []
    base = json.loads(text)
    dv_i = [i for i, f in enumerate(base["files"]) if f.get("deletion")]
    ix_i = [i for i, f in enumerate(base["files"]) if f.get("index", {}).get("file")]
    edits = {
        "files a dict": lambda d: d.__setitem__("files", {"x": 1}),
        "top level list": None,
        "size text": lambda d: d["files"][0].__setitem__("size", "400"),
        "mtime text": lambda d: d["files"][0].__setitem__("mtime_ns", "yesterday"),
        "path int": lambda d: d["files"][0].__setitem__("path", 7),
        "rows negative": lambda d: d["files"][0].__setitem__("rows", -1),
        "schema bad base64": lambda d: d["files"][ix_i[0]]["index"].__setitem__("schema", "%%%"),
        "embedded bad base64": lambda d: d["files"][ix_i[0]]["index"].update(embedded="@@@@", file=None),
        "offset text": lambda d: d["files"][dv_i[0]]["deletion"].__setitem__("offset", "1"),
        "cardinality list": lambda d: d["files"][dv_i[0]]["deletion"].__setitem__("cardinality", [1]),
        "path ../": lambda d: d["files"][0].__setitem__("path", "../evil.parquet"),
        "path absolute": lambda d: d["files"][0].__setitem__("path", "/etc/passwd"),
        "index ../": lambda d: d["files"][ix_i[0]]["index"].__setitem__("file", "../evil.index"),
        "index absolute": lambda d: d["files"][ix_i[0]]["index"].__setitem__("file", "/etc/passwd"),
        "dv ../": lambda d: d["files"][dv_i[0]]["deletion"].__setitem__("file", "_arrowidx/deletion/../../evil.dv"),
        "dv absolute": lambda d: d["files"][dv_i[0]]["deletion"].__setitem__("file", "/etc/passwd"),
        "dv ranges swapped": "swap",
        "dv offset past end": lambda d: d["files"][dv_i[0]]["deletion"].__setitem__("offset", 10**6),
        "index of another file": "index-swap",
    }
    for name, change in edits.items():
        d = json.loads(text)
        if change is None:
            out.append((name, json.dumps([d]).encode()))
            continue
        if change == "swap":
            a, b = d["files"][dv_i[0]]["deletion"], d["files"][dv_i[1]]["deletion"]
            for k in ("offset", "length"):
                a[k], b[k] = b[k], a[k]
        elif change == "index-swap":
            a, b = d["files"][ix_i[0]]["index"], d["files"][ix_i[1]]["index"]
            a["file"], b["file"] = b["file"], a["file"]
        else:
            change(d)
        out.append((name, _reseal(d)))
    return out


def _damages(data: bytes, rng: random.Random, flips: int) -> list[tuple[str, bytes]]:
    out = []
    for cut in sorted({0, 1, len(data) // 3, len(data) // 2, len(data) - 1}):
        out.append((f"truncated to {cut}", data[:cut]))
    for _ in range(flips):
        raw = bytearray(data)
        at = rng.randrange(len(raw))
        raw[at] ^= 1 << rng.randrange(8)
        out.append((f"bit flip at {at}", bytes(raw)))
    return out


def test_corruption_sweep(template, tmp_path):
    root = fresh_copy(template, tmp_path)
    arrowidx.delete(root, SECOND, progress=False)  # two deletion files, vectors in both
    deleted = FIRST | SECOND
    truth = {str(e): expected(root, deleted, e) for e in [None, *QUERIES]}
    rng = random.Random(1)
    meta = index_dir(root)
    manifest = sorted(glob.glob(os.path.join(meta, "manifest-*.json")))[-1]
    indexes = sorted(glob.glob(os.path.join(meta, "index", "*.index")))
    dvs = sorted(glob.glob(os.path.join(meta, "deletion", "*.dv")))
    latest = os.path.join(meta, "LATEST")
    cases: list[tuple[str, str, bytes]] = []
    text = open(manifest, "rb").read()
    cases += [("manifest", manifest, d) for d in _damages(text, rng, 30)]
    inline = json.dumps(as_format3(json.loads(text), root)).encode()  # (entries edited field by field: listed inline)
    cases += [("manifest", manifest, d) for d in _manifest_edits(inline)]
    named = {index_dir(root, ref.file.split("/", 1)[1]) for ref in arrowidx.dataset(root).manifest.segments}
    for path in sorted(glob.glob(os.path.join(meta, "segments", "*.arrow"))):  # the file table's segments
        kind = "segment" if path in named else "segment of an older version"
        cases += [(kind, path, d) for d in _damages(open(path, "rb").read(), rng, 12)]
    cases += [("LATEST", latest, d) for d in _damages(open(latest, "rb").read(), rng, 4)]
    cases += [("LATEST", latest, (f"set to {v}", v)) for v in (b"0", b"1", b"2", b"99", b"\xff")]
    for path in indexes[:2]:
        cases += [("index", path, d) for d in _damages(open(path, "rb").read(), rng, 12)]
    cases += [("index", indexes[0], ("replaced by another index", open(indexes[1], "rb").read()))]
    current = arrowidx.dataset(root).manifest
    used = {index_dir(root, e.deletion.file.split("/", 1)[1]) for e in current.files.values() if e.deletion}  # (_arrowidx/...: the index root's)
    for path in dvs:
        kind = "deletion" if path in used else "deletion file of an older version"
        cases += [(kind, path, d) for d in _damages(open(path, "rb").read(), rng, 15)]
    target, other = (dvs[0], dvs[1]) if dvs[0] in used else (dvs[1], dvs[0])
    cases += [("deletion", target, ("replaced by the other deletion file", open(other, "rb").read()))]
    outcomes: dict[str, dict[str, int]] = {}
    failures = []
    ranges = {}  # deletion file -> the byte ranges of the vectors in use (read alone, each checked)
    for e in current.files.values():
        if e.deletion:
            record = e.deletion.length if e.deletion.bitmap64 else e.deletion.length + 8
            ranges.setdefault(index_dir(root, e.deletion.file.split("/", 1)[1]), []).append((e.deletion.offset, e.deletion.offset + record))
    for kind, path, (what, data) in cases:
        original = open(path, "rb").read()
        open(path, "wb").write(data)
        arrowidx.facts.clear()  # each case read as a new process reads it
        touched = _touches(original, data, ranges.get(path, [])) if kind == "deletion" else False
        try:
            for mode in ("raise", "fallback"):
                tally = outcomes.setdefault(kind, {"reads": 0, "correct": 0, "error naming the file": 0})
                tally["reads"] += 1
                try:
                    ds_ = arrowidx.dataset(root, on_corrupt=mode)
                    ok = all(tables_equal(ds_.to_table(filter=e), truth[str(e)]) for e in [None, *QUERIES])
                    if not ok:
                        failures.append(f"{kind} {what} ({mode}): WRONG ANSWER")
                    else:
                        tally["correct"] += 1
                        if touched:  # a byte of a vector in use is damaged: that always raises
                            failures.append(f"{kind} {what} ({mode}): a damaged vector in use was read without an error")
                except ArrowIdxError as e:
                    if path in str(e):
                        tally["error naming the file"] += 1
                    else:
                        failures.append(f"{kind} {what} ({mode}): error does not name {path}: {e}")
                except Exception as e:  # noqa: BLE001 - anything else is a failure
                    failures.append(f"{kind} {what} ({mode}): raw {type(e).__name__}: {e}")
                if kind == "index" and mode == "fallback" and tally["correct"] == 0:
                    failures.append(f"{kind} {what}: fallback did not give the correct answer")
        finally:
            open(path, "wb").write(original)
    COUNTS["corruption"] = {"cases": len(cases), "reads": 2 * len(cases), **outcomes}
    print(f"\ncorruption: {json.dumps(COUNTS['corruption'])}")
    assert not failures, "\n".join(failures[:20])
    # LATEST is only a hint, except that naming a version above the newest on disk (set to 99, a
    # flipped bit) is refused as a missing manifest naming LATEST (issue 47): never a wrong answer
    assert outcomes["LATEST"]["correct"] + outcomes["LATEST"]["error naming the file"] == outcomes["LATEST"]["reads"]
    assert outcomes["LATEST"]["correct"] >= outcomes["LATEST"]["reads"] - 8
    assert outcomes["index"]["correct"] >= outcomes["index"]["reads"] // 2  # every fallback read is correct
    assert outcomes["segment"]["error naming the file"] == outcomes["segment"]["reads"]  # each damage is refused
    # damage to a vector in use always raises (checked per case above); damage elsewhere in a
    # deletion file (its version byte, vectors of files no longer listed) changes no answer
    assert outcomes["deletion"]["correct"] < outcomes["deletion"]["reads"]


def _touches(original: bytes, damaged: bytes, ranges: list[tuple[int, int]]) -> bool:
    """Whether ``damaged`` differs from ``original`` inside one of ``ranges`` (a truncation
    touches every byte it removed)."""
    for start, end in ranges:
        if original[start:end] != damaged[start:end]:
            return True
    return False


def test_copies_keep_deletions_and_rewrites_are_caught(template, tmp_path):
    root = fresh_copy(template, tmp_path)
    arrowidx.delete(root, SECOND, progress=False)
    deleted = FIRST | SECOND
    rows_deleted = rows_in_memory(root).num_rows - expected(root, deleted).num_rows
    time.sleep(0.01)
    copy = str(tmp_path / "copy")
    shutil.copytree(root, copy, copy_function=shutil.copy)  # cp -r: new mtimes
    shutil.copytree(index_dir(root), index_dir(copy), copy_function=shutil.copy)  # and its indexes beside it
    assert_reads(copy, deleted)
    plan = arrowidx.dataset(copy).explain(QUERIES[0])
    assert not [p for p in plan.files if p.status == "stale"]
    report = arrowidx.delete(copy, THIRD, progress=False)
    assert all(e.index is not None for e in arrowidx.dataset(copy).manifest.files.values())
    assert_reads(copy, deleted | THIRD)
    # a different file of the same size put in place with the same mtime (cp -p, rsync -t)
    a, b = os.path.join(copy, "part-000.parquet"), os.path.join(copy, "part-001.parquet")
    st = os.stat(a)
    with open(b, "rb") as f:
        other = f.read()
    with open(a, "r+b") as f:  # same size: keep a's length, take b's tail (another footer)
        f.seek(0)
        f.write(other[-st.st_size :] if len(other) >= st.st_size else other + b"\0" * (st.st_size - len(other)))
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(a).st_size == st.st_size and os.stat(a).st_mtime_ns == st.st_mtime_ns
    with pytest.raises(ArrowIdxError, match="part-000.parquet"):
        arrowidx.dataset(copy).to_table(filter=QUERIES[0])
    COUNTS["copies"] = {"rows_deleted_kept_after_copy": rows_deleted, "delete_on_copy_version": report.version,
                        "same_size_same_mtime_rewrite": "detected"}  # fmt: skip
    print(f"\ncopies: {COUNTS['copies']}")


def test_embedded_base64_garbage_in_a_manifest(template, tmp_path):
    root = fresh_copy(template, tmp_path)
    arrowidx.build(root, {**OPTIONS, "file-index.in-manifest-threshold": "1000000"}, progress=False)
    path = sorted(glob.glob(index_dir(root, "manifest-*.json")))[-1]
    d = as_format3(json.load(open(path)), root)  # (the entry edited: listed inline)
    ref = d["files"][0]["index"]
    ref["embedded"] = "!" * len(ref["embedded"])
    open(path, "wb").write(_reseal(d))
    with pytest.raises(ArrowIdxError, match="embedded index"):
        arrowidx.dataset(root).to_table(filter=QUERIES[0])
    got = arrowidx.dataset(root, on_corrupt="fallback").to_table(filter=QUERIES[0])
    assert tables_equal(got, expected(root, FIRST, QUERIES[0]))
