"""A needle costs what its answer needs at any lake size (issue 51).

Lakes of many small files: ``files`` x 500 rows (``id``: a unique id shuffled across the
files, bloom filter at Paimon's default ``fpp``; ``amount``; ``status``), cached under
``bench-data/scale-<files>x500``. Every measurement is a new process; arrowidx and the
engine alone alternate, and each row prints the median, the spread (min-max) and the ratio
(engine alone / arrowidx: above 1, arrowidx is faster).

* ``local``: the first needle of a new process (``id == X``, imports done, timed inside the
  child) against ``pyarrow.dataset``, and the whole process, over 200, 2,000 and 20,000
  files; and how arrowidx's time grows from the smallest lake to the largest; then the same
  needle through ``arrowidx.polars.scan`` against ``pl.scan_parquet`` (the same planner).
* ``s3``: requests (counted by a proxy in front of a moto server, as bench_s3.py) of a
  needle in a new process over 1,000 and 10,000 files, of ``--s3-deletes`` deletes of one
  row in a row over 1,000 files (each round's count: commits add and merge file-table
  segments), and of the needle again after them, against pyarrow.dataset's requests for the
  same needle.
* ``commit``: a build that adds one file to the 20,000-file lake (a hard-linked copy):
  time and bytes written, against a full build of the same lake.

    .venv/bin/python bench/bench_scale.py [--only local,s3,commit] [--sizes 200,2000,20000]
        [--rounds 5] [--s3-files 1000,10000] [--s3-deletes 6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "bench-data"
SRC = str(ROOT / "src")
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "integration"))
from common import machine  # noqa: E402

PY = sys.executable
ROWS = 500
OPTIONS = {"file-index.bloom-filter.columns": "id"}


def lake_table(files: int, i: int, ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table({
        "id": pa.array(ids[i * ROWS : (i + 1) * ROWS]),
        "amount": pa.array(rng.gamma(2.0, 20.0, ROWS)),
        "status": pa.array(np.array(["new", "paid", "shipped"])[rng.integers(0, 3, ROWS)]),
    })  # fmt: skip


def local_lake(files: int) -> tuple[Path, int]:
    """The lake of ``files`` files (written and indexed once, then cached) and a needle in it."""
    root = DATA / f"scale-{files}x{ROWS}"
    rng = np.random.default_rng(files)
    ids = rng.permutation(files * ROWS).astype(np.int64)
    if not _index_folder(root).exists():
        import arrowidx

        root.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        for i in range(files):
            pq.write_table(lake_table(files, i, ids, rng), root / f"part-{i:05d}.parquet")
        written = time.perf_counter() - started
        report = arrowidx.build(root, OPTIONS, progress=False)
        print(f"   wrote {files:,} files in {written:.1f}s; {report}", flush=True)
    else:  # a cached lake: brought up to this version's manifest (a lake index added once)
        import arrowidx

        report = arrowidx.build(root, progress=False)
        if report.changed:
            print(f"   upgraded the cached lake: {report}", flush=True)
    return root, int(ids[(files // 2) * ROWS + 123])


# ------------------------------------------------------------------------------------------
# a new process per measurement
# ------------------------------------------------------------------------------------------

CHILD = {
    "arrowidx": """
        import time; t0 = time.perf_counter()
        import arrowidx, pyarrow.dataset, pyarrow.compute as pc
        arrowidx.dataset
        t1 = time.perf_counter()
        n = arrowidx.dataset({root!r}).to_table(filter=pc.field("id") == {value!r}, columns=["id", "amount"]).num_rows
    """,
    "pyarrow": """
        import time; t0 = time.perf_counter()
        import pyarrow.dataset as ds, pyarrow.compute as pc
        t1 = time.perf_counter()
        n = ds.dataset({root!r}, format="parquet").to_table(filter=pc.field("id") == {value!r}, columns=["id", "amount"]).num_rows
    """,
    "arrowidx.polars": """
        import time; t0 = time.perf_counter()
        import arrowidx.polars, polars as pl
        t1 = time.perf_counter()
        n = arrowidx.polars.scan({root!r}).filter(pl.col("id") == {value!r}).select("id", "amount").collect().height
    """,
    "polars": """
        import time; t0 = time.perf_counter()
        import polars as pl
        t1 = time.perf_counter()
        n = pl.scan_parquet({root!r} + "/*.parquet").filter(pl.col("id") == {value!r}).select("id", "amount").collect().height
    """,
}
END = """
        t2 = time.perf_counter()
        import json, sys; print(json.dumps({{"import": t1 - t0, "query": t2 - t1, "rows": n}}))
"""


def child(kind: str, root: Path, value: int) -> tuple[float, dict]:
    code = textwrap.dedent(CHILD[kind].format(root=str(root), value=value) + END.format())
    start = time.perf_counter()
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={**os.environ, "PYTHONPATH": SRC}).stdout  # fmt: skip
    return time.perf_counter() - start, json.loads(out.strip().splitlines()[-1])


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:9,.1f} ms ({min(xs) * 1000:,.0f}-{max(xs) * 1000:,.0f})"


def row(label: str, ours: list[float], theirs: list[float] | None, engine: str = "") -> None:
    if theirs is None:
        print(f"{label:52} {_ms(ours):>28}", flush=True)
        return
    ratio = statistics.median(theirs) / statistics.median(ours)
    print(f"{label:52} {_ms(ours):>28} {_ms(theirs):>28}  {ratio:6.2f}x vs {engine}", flush=True)


def local(sizes: list[int], rounds: int, polars: bool = True) -> None:
    print(f"\n## local lakes of {ROWS}-row files: first needle of a new process (imports done) and the whole process")
    print(f"{'case':52} {'arrowidx':>28} {'pyarrow.dataset':>28}  ratio")
    firsts: dict[int, list[float]] = {}
    for files in sizes:
        root, value = local_lake(files)
        inside: dict[str, list[float]] = {"arrowidx": [], "pyarrow": []}
        whole: dict[str, list[float]] = {"arrowidx": [], "pyarrow": []}
        rows = {}
        for _ in range(rounds):
            for kind in ("arrowidx", "pyarrow"):
                wall, got = child(kind, root, value)
                inside[kind].append(got["query"])
                whole[kind].append(wall)
                rows[kind] = got["rows"]
        assert rows["arrowidx"] == rows["pyarrow"] == 1, rows
        row(f"{files:>6,} files: first needle (imports done)", inside["arrowidx"], inside["pyarrow"], "pyarrow.dataset")
        row(f"{files:>6,} files: whole process", whole["arrowidx"], whole["pyarrow"], "pyarrow.dataset")
        firsts[files] = inside["arrowidx"]
        if polars:  # the same needle through Polars (the same planner: the lake index first)
            times: dict[str, list[float]] = {"arrowidx.polars": [], "polars": []}
            for _ in range(rounds):
                for kind in times:
                    wall, got = child(kind, root, value)
                    times[kind].append(got["query"])
                    rows[kind] = got["rows"]
            assert rows["arrowidx.polars"] == rows["polars"] == 1, rows
            row(f"{files:>6,} files: Polars first needle (imports done)", times["arrowidx.polars"], times["polars"], "pl.scan_parquet")
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        growth = statistics.median(firsts[large]) / statistics.median(firsts[small])
        print(f"arrowidx's first needle grows {growth:.2f}x from {small:,} to {large:,} files", flush=True)


# ------------------------------------------------------------------------------------------
# S3: requests
# ------------------------------------------------------------------------------------------

S3_CHILD = r"""
import json, os, sys, time
import pyarrow.compute as pc
engine, uri, what, value = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import pyarrow.dataset as ds, pyarrow.fs as pafs
if engine == "arrowidx":
    import arrowidx, arrowidx.lake, arrowidx.objectstore, obstore
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.readline()
start = time.perf_counter()
if engine == "arrowidx" and what == "delete":
    rows = arrowidx.delete(uri, pc.field("id") == value, progress=False).rows_deleted
elif engine == "arrowidx":
    rows = arrowidx.dataset(uri).to_table(filter=pc.field("id") == value, columns=["id", "amount"]).num_rows
else:
    fs = pafs.S3FileSystem(endpoint_override=os.environ["AWS_ENDPOINT_URL"], access_key=os.environ["AWS_ACCESS_KEY_ID"],
                           secret_key=os.environ["AWS_SECRET_ACCESS_KEY"], region=os.environ["AWS_REGION"])
    rows = ds.dataset(uri[len("s3://"):], filesystem=fs, format="parquet").to_table(
        filter=pc.field("id") == value, columns=["id", "amount"]).num_rows
print(json.dumps({"ms": (time.perf_counter() - start) * 1000, "rows": rows}))
"""


def _s3_lake(server, bucket: str, files: int) -> tuple[str, np.ndarray]:
    import pyarrow.fs as pafs
    from s3_support import ACCESS_KEY, REGION, SECRET_KEY

    import arrowidx

    server.create_bucket(bucket)
    fs = pafs.S3FileSystem(endpoint_override=server.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    rng = np.random.default_rng(files + 1)
    ids = rng.permutation(files * ROWS).astype(np.int64)
    tables = [lake_table(files, i, ids, rng) for i in range(files)]
    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: pq.write_table(tables[i], f"{bucket}/lake/part-{i:05d}.parquet", filesystem=fs), range(files)))
    uri = f"s3://{bucket}/lake"
    written = time.perf_counter() - started
    report = arrowidx.build(uri, OPTIONS, progress=False, storage_options=server.storage_options())
    print(f"   {files:,} files on S3 written in {written:.0f}s, indexed in {report.seconds:.0f}s", flush=True)
    return uri, ids


def _s3_run(proxy, env: dict, engine: str, uri: str, what: str, value: int) -> tuple[float, dict, int]:
    proc = subprocess.Popen([PY, "-c", S3_CHILD, engine, uri, what, str(value)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout.readline().strip() == "ready"
    before = proxy.snapshot()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out = json.loads(proc.stdout.readline())
    proc.wait(600)
    return out["ms"], proxy.since(before), out["rows"]


def s3(sizes: list[int], rounds: int, deletes: int = 6) -> None:
    from s3_proxy import CountingProxy
    from s3_support import ACCESS_KEY, REGION, SECRET_KEY, S3Server

    print("\n## S3 (moto server behind a counting proxy): requests of a new process")
    server = S3Server()
    proxy = CountingProxy(server.endpoint)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "ARROWIDX_SINGLE_WRITER"}
        env.update({"AWS_ENDPOINT_URL": proxy.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                    "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true", "PYTHONPATH": SRC})  # fmt: skip
        for files in sizes:
            uri, ids = _s3_lake(server, f"scale-{files}", files)
            needle = int(ids[(files // 3) * ROWS + 7])
            cases = [("needle", "arrowidx", rounds), ("needle", "pyarrow", rounds)]
            if files == min(sizes):  # deletes in a row (each commits: segments grow and merge), then needles again
                cases += [("delete", "arrowidx", max(deletes, 1)), ("needle", "arrowidx", rounds)]
            done = 0
            for what, engine, n in cases:
                runs = []
                for r in range(n):
                    value = needle if what == "needle" else int(ids[(r * 997 + 11) % len(ids)])
                    runs.append(_s3_run(proxy, env, engine, uri, what, value))
                ms = [x[0] / 1000 for x in runs]
                counts = [x[1] for x in runs]
                label = f"{what} after {done} deletes" if what == "needle" and done else what
                per_round = ", ".join(str(c.get("requests", 0)) for c in counts)
                print(f"{files:>6,} files, {label:24} {engine:8}: {statistics.median(c.get('requests', 0) for c in counts):5,.0f}"
                      f" requests (each round: {per_round}), {statistics.median(c.get('bytes', 0) for c in counts) / 1e6:7.2f} MB,"
                      f" {_ms(ms)}", flush=True)  # fmt: skip
                for r, c in enumerate(counts):
                    if engine == "arrowidx":  # where they go
                        kinds = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k not in ("requests", "bytes"))
                        print(f"{'':14}round {r + 1}: {c.get('requests', 0)} [{kinds}]", flush=True)
                done += n if what == "delete" else 0
    finally:
        proxy.stop()
        server.stop()


# ------------------------------------------------------------------------------------------
# a commit of one file to the largest lake, against a full build
# ------------------------------------------------------------------------------------------

COMMIT_CHILD = r"""
import json, sys, time
import arrowidx
root, options = sys.argv[1], json.loads(sys.argv[2])
start = time.perf_counter()
report = arrowidx.build(root, options or None, progress=False)
print(json.dumps({"s": time.perf_counter() - start, "indexed": len(report.indexed), "lake_index": report.lake_index_bytes}))
"""


def _index_folder(root: Path) -> Path:
    """Where the lake at ``root`` keeps its index files: the sidecar beside it, or
    ``_arrowidx/`` inside where a lake cached before the sidecar has it."""
    inside = root / "_arrowidx"
    return inside if inside.exists() else root.parent / f"_{root.name}.arrowidx"


def _meta_files(root: Path) -> dict[str, int]:
    meta = _index_folder(root)
    return {str(p.relative_to(meta)): p.stat().st_size for p in meta.rglob("*") if p.is_file()} if meta.exists() else {}


def _build_child(root: Path, options: dict | None) -> dict:
    out = subprocess.run([PY, "-c", COMMIT_CHILD, str(root), json.dumps(options or {})], capture_output=True, text=True,
                         check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": SRC}).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def commit(files: int, rounds: int) -> None:
    print(f"\n## a build adding one file to the {files:,}-file lake, against a full build")
    base, _ = local_lake(files)
    work = DATA / f"scale-commit-{files}"
    rng = np.random.default_rng(5)
    adds, fulls = [], []
    for r in range(rounds):
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(work.parent / f"_{work.name}.arrowidx", ignore_errors=True)
        subprocess.run(["cp", "-al", str(base), str(work)], check=True)  # data files are never written: links
        if not (work / "_arrowidx").exists():  # arrowidx's own files (the sidecar): real copies
            shutil.copytree(_index_folder(base), work.parent / f"_{work.name}.arrowidx")
        for meta in (work / "_arrowidx").rglob("*"):  # arrowidx's own files: real copies
            if meta.is_file():
                data = meta.read_bytes()
                meta.unlink()
                meta.write_bytes(data)
        # (linking changed every data file's change time: a build first notes the new stamps, as
        # a lake at rest has them, so the measured build adds one file and changes nothing else)
        _build_child(work, None)
        before = _meta_files(work)
        ids = np.arange(files * ROWS + r * ROWS, files * ROWS + (r + 1) * ROWS, dtype=np.int64)
        pq.write_table(lake_table(1, 0, ids, rng), work / f"part-new-{r}.parquet")
        got = _build_child(work, None)
        after = _meta_files(work)
        written = sum(size for name, size in after.items() if before.get(name) != size or name == "LATEST")
        adds.append((got["s"], written, got["indexed"], got["lake_index"]))
        if r == 0:
            shutil.rmtree(_index_folder(work))
            full = _build_child(work, OPTIONS)
            fulls.append((full["s"], sum(_meta_files(work).values()), full["indexed"], full["lake_index"]))
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(work.parent / f"_{work.name}.arrowidx", ignore_errors=True)
    print(f"{'case':52} {'time':>28} {'bytes written':>16} {'of which lake index':>20}")
    row_text = [("add 1 file, incremental build", adds), ("full build", fulls)]
    for label, runs in row_text:
        seconds = [x[0] for x in runs]
        print(f"{label:52} {_ms(seconds):>28} {statistics.median(x[1] for x in runs):16,.0f}"
              f" {statistics.median(x[3] for x in runs):20,.0f}   ({runs[0][2]:,} file(s) indexed)", flush=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="local,s3,commit")
    parser.add_argument("--sizes", default="200,2000,20000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--s3-files", default="1000,10000")
    parser.add_argument("--s3-deletes", type=int, default=6, help="deletes in a row on the smallest S3 lake")
    args = parser.parse_args()
    only = set(args.only.split(","))
    subprocess.run([PY, "-m", "compileall", "-q", SRC], check=True)  # (bytecode, as an installed package has it)
    print(machine())
    sizes = [int(s) for s in args.sizes.split(",")]
    if "local" in only:
        local(sizes, args.rounds)
    if "s3" in only:
        s3([int(s) for s in args.s3_files.split(",")], args.rounds, args.s3_deletes)
    if "commit" in only:
        commit(max(sizes), max(1, args.rounds // 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
