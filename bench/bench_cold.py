"""The first query wins too (issue 39): a new process, a new dataset object, a warm object.

Every case runs arrowidx and the engine alone side by side, alternating, and prints the
medians and their ratio (engine alone / arrowidx: above 1 means arrowidx is faster):

* a whole new Python process: import + ``arrowidx.dataset(p).to_table(filter, columns)``
  against the same script with ``pyarrow.dataset``; the same with Polars
  (``arrowidx.polars.scan`` against ``pl.scan_parquet``); the CLI against the pyarrow script;
* the first query of a new process, imports done (timed inside the child);
* ``import arrowidx`` against ``import pyarrow.dataset``; ``import arrowidx.polars`` against
  ``import polars``;
* a new dataset object per query in one process, and a warm object;
* requests and bytes read for one query (a counting filesystem wrapper,
  :class:`CountingFS`), arrowidx against pyarrow.dataset, cold.

Lakes: ``issue`` (8 files x 250,000 rows: bloom filters on ``user_id`` and ``id``, a bitmap
on ``status``, a range bitmap on ``ts``, rows deleted in every file; the lake of issue 39),
``demo`` (the ``make demo`` lake), ``many`` (1,000 small files, for the counts).

    .venv/bin/python bench/bench_cold.py [--rounds 7] [--only issue,demo,many] [--scale 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from arrowidx.storage import LocalStore

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "bench-data"
sys.path.insert(0, str(HERE))
from common import machine  # noqa: E402

PY = sys.executable
STATUSES = ["NEW", "PAID", "SHIPPED", "DELIVERED", "RETURNED", "LOST"]
WEIGHTS = [0.2, 0.3, 0.25, 0.2, 0.0499, 0.0001]


def issue_lake(scale: float) -> tuple[Path, dict]:
    rows = int(250_000 * scale)
    root = DATA / f"cold-issue-8x{rows}"
    if not ((root.parent / f"_{root.name}.arrowidx" / "LATEST").exists() or (root / "_arrowidx" / "LATEST").exists()):
        import pyarrow.compute as pc

        import arrowidx

        root.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(39)
        ids = rng.permutation(8 * rows)
        for i in range(8):
            n = rows
            t = pa.table({
                "id": pa.array(ids[i * n:(i + 1) * n].astype(np.int64)),
                "user_id": pa.array(rng.integers(0, 50_000_000, n, dtype=np.int64)),
                "status": pa.array(np.array(STATUSES)[rng.choice(6, n, p=WEIGHTS)]),
                "amount": pa.array(rng.gamma(2.0, 20.0, n)),
                "ts": pa.array(np.sort(rng.integers(0, 10**9, n)) + i * 10**9, pa.int64()),
            })  # fmt: skip
            pq.write_table(t, root / f"part-{i}.parquet", row_group_size=50_000)
        arrowidx.build(root, {"file-index.bloom-filter.columns": "user_id,id", "file-index.bitmap.columns": "status",
                              "file-index.range-bitmap.columns": "ts"}, progress=False)  # fmt: skip
        arrowidx.delete(root, pc.field("amount") > 150.0, progress=False)  # ~0.5 % of the rows, in every file
    first = pq.read_table(sorted(root.glob("*.parquet"))[3], columns=["user_id", "id"])
    return root, {"user_id": first.column("user_id")[1234].as_py(), "id": first.column("id")[4321].as_py()}


def many_lake(scale: float) -> tuple[Path, dict]:
    files, rows = 1000, max(100, int(2_000 * scale))
    root = DATA / f"cold-many-{files}x{rows}"
    if not ((root.parent / f"_{root.name}.arrowidx" / "LATEST").exists() or (root / "_arrowidx" / "LATEST").exists()):
        import arrowidx

        root.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(1000)
        for i in range(files):
            t = pa.table({"id": pa.array(np.arange(i * rows, (i + 1) * rows, dtype=np.int64)),
                          "user_id": pa.array(rng.integers(0, 50_000_000, rows, dtype=np.int64)),
                          "amount": pa.array(rng.gamma(2.0, 20.0, rows))})  # fmt: skip
            pq.write_table(t, root / f"part-{i:05d}.parquet")
        arrowidx.build(root, {"file-index.bloom-filter.columns": "user_id", "file-index.range-bitmap.columns": "id"}, progress=False)
    t = pq.read_table(root / "part-00500.parquet", columns=["user_id"])
    return root, {"user_id": t.column("user_id")[7].as_py(), "id": 500 * rows + 7}


def demo_lake(scale: float) -> tuple[Path, dict]:
    import arrowidx
    from arrowidx.demo import demo_options, generate

    rows = int(10_000_000 * scale)
    root = generate(DATA / f"scan-demo-{rows}", rows, 20)
    arrowidx.build(root, demo_options(), progress=False)
    first = pq.read_table(sorted(Path(root).glob("*.parquet"))[0], columns=["user_id"])
    return Path(root), {"user_id": first.column("user_id")[1234].as_py()}


# ------------------------------------------------------------------------------------------
# child processes
# ------------------------------------------------------------------------------------------

SCRIPTS = {
    "arrowidx": """
        import time; t0 = time.perf_counter()
        import arrowidx, pyarrow.dataset, pyarrow.compute as pc
        arrowidx.dataset  # (its modules load on first use: part of the imports here)
        t1 = time.perf_counter()
        n = arrowidx.dataset({root!r}).to_table(filter=pc.field({col!r}) == {value!r}, columns=["id"]).num_rows
    """,
    "pyarrow": """
        import time; t0 = time.perf_counter()
        import pyarrow.dataset as ds, pyarrow.compute as pc
        t1 = time.perf_counter()
        n = ds.dataset({root!r}, format="parquet").to_table(filter=pc.field({col!r}) == {value!r}, columns=["id"]).num_rows
    """,
    "arrowidx.polars": """
        import time; t0 = time.perf_counter()
        import arrowidx.polars, polars as pl
        t1 = time.perf_counter()
        n = arrowidx.polars.scan({root!r}).filter(pl.col({col!r}) == {value!r}).select("id").collect().height
    """,
    "polars": """
        import time; t0 = time.perf_counter()
        import polars as pl
        t1 = time.perf_counter()
        n = pl.scan_parquet({root!r} + "/**/*.parquet").filter(pl.col({col!r}) == {value!r}).select("id").collect().height
    """,
}
END = """
        t2 = time.perf_counter()
        import json, sys; print(json.dumps({{"import": t1 - t0, "query": t2 - t1, "rows": n, "modules": sorted(m for m in ("polars", "pandas", "pyspark") if m in sys.modules)}}))
"""


def child(kind: str, root: Path, col: str, value) -> tuple[float, dict]:
    """(wall seconds of the whole process, what the child measured inside)."""
    code = textwrap.dedent(SCRIPTS[kind].format(root=str(root), col=col, value=value) + END.format())
    start = time.perf_counter()
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    wall = time.perf_counter() - start
    return wall, json.loads(out.strip().splitlines()[-1])


def cli(root: Path, col: str, value) -> float:
    start = time.perf_counter()
    subprocess.run([PY, "-m", "arrowidx.cli", "query", str(root), "--where", f"{col} = {value}", "--columns", "id",
                    "--format", "csv"], capture_output=True, check=True, cwd=ROOT)  # fmt: skip
    return time.perf_counter() - start


def imports(module: str) -> float:
    start = time.perf_counter()
    subprocess.run([PY, "-c", f"import {module}"], check=True, cwd=ROOT)
    return time.perf_counter() - start


def _median(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def _spread(xs: list[float]) -> str:
    return f"{min(xs) * 1000:,.0f}-{max(xs) * 1000:,.0f}"


def row(label: str, ours: list[float], theirs: list[float], engine: str) -> None:
    a, b = _median(ours), _median(theirs)
    print(f"{label:58} {a:9,.1f} ms ({_spread(ours):>13}) {b:9,.1f} ms ({_spread(theirs):>13})  {b / a:5.2f}x  vs {engine}", flush=True)


def processes(root: Path, col: str, value, rounds: int, polars: bool) -> None:
    pairs = [("arrowidx", "pyarrow")] + ([("arrowidx.polars", "polars")] if polars else [])
    for ours, theirs in pairs:
        walls: dict[str, list[float]] = {ours: [], theirs: []}
        firsts: dict[str, list[float]] = {ours: [], theirs: []}
        rows = {}
        for _ in range(rounds):
            for kind in (ours, theirs):
                wall, inside = child(kind, root, col, value)
                walls[kind].append(wall)
                firsts[kind].append(inside["query"])
                rows[kind] = (inside["rows"], inside["modules"])
        row(f"new process, whole: {ours} needle {col}", walls[ours], walls[theirs], theirs)
        row(f"new process, first query (imports done): {ours}", firsts[ours], firsts[theirs], theirs)
        print(f"   rows: {rows[ours][0]} (arrowidx, deleted rows dropped) / {rows[theirs][0]} ({theirs});"
              f" modules loaded by {ours}: {rows[ours][1] or 'none of polars, pandas, pyspark'}")
    ours_cli, theirs_py = [], []
    for _ in range(rounds):
        ours_cli.append(cli(root, col, value))
        theirs_py.append(child("pyarrow", root, col, value)[0])
    row(f"CLI: arrowidx query --where '{col} = X' (new process)", ours_cli, theirs_py, "the pyarrow script")


def import_times(rounds: int) -> None:
    a, b, c, d = [], [], [], []
    for _ in range(rounds):
        a.append(imports("arrowidx"))
        b.append(imports("pyarrow.dataset"))
        c.append(imports("arrowidx.polars"))
        d.append(imports("polars, pyarrow.dataset"))
    row("import arrowidx (new process)", a, b, "import pyarrow.dataset")
    row("import arrowidx.polars (new process)", c, d, "import polars, pyarrow.dataset")


def in_process(root: Path, col: str, value, rounds: int) -> None:
    import polars as pl
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    import arrowidx
    import arrowidx.polars

    expr = pc.field(col) == value
    warm = arrowidx.dataset(root)
    plain_warm = ds.dataset(root, format="parquet")
    cases = {
        "new dataset object per query": (lambda: arrowidx.dataset(root).to_table(filter=expr, columns=["id"]),
                                         lambda: ds.dataset(root, format="parquet").to_table(filter=expr, columns=["id"]), "pyarrow.dataset"),
        "new arrowidx.polars.scan per query": (lambda: arrowidx.polars.scan(root).filter(pl.col(col) == value).select("id").collect(),
                                               lambda: pl.scan_parquet(str(root) + "/**/*.parquet").filter(pl.col(col) == value).select("id").collect(), "pl.scan_parquet"),
        "a warm object, same query": (lambda: warm.to_table(filter=expr, columns=["id"]),
                                      lambda: plain_warm.to_table(filter=expr, columns=["id"]), "pyarrow.dataset"),
    }  # fmt: skip
    for label, (ours, theirs, engine) in cases.items():
        ours(), theirs()
        a, b = [], []
        for _ in range(rounds * 2):
            for fn, out in ((ours, a), (theirs, b)):
                start = time.perf_counter()
                fn()
                out.append(time.perf_counter() - start)
        row(f"{label}: needle {col}", a, b, engine)


class CountingFS(pafs.FileSystemHandler):
    """A local filesystem that counts opens (requests on an object store: one per open or
    ranged read), reads and bytes read."""

    def __init__(self):
        self.fs = pafs.LocalFileSystem()
        self.requests = 0
        self.bytes = 0

    def get_type_name(self): return "counting"  # noqa: E704
    def normalize_path(self, path): return path  # noqa: E704
    def __eq__(self, other): return self is other  # noqa: E704
    def __ne__(self, other): return self is not other  # noqa: E704

    def get_file_info(self, paths):
        self.requests += len(paths)
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector):
        self.requests += 1
        return self.fs.get_file_info(selector)

    def open_input_file(self, path):
        return pa.PythonFile(_CountingReader(self.fs.open_input_file(path), self), mode="r")

    def open_input_stream(self, path):
        return self.open_input_file(path)

    def create_dir(self, *a): raise NotImplementedError  # noqa: E704
    def delete_dir(self, *a): raise NotImplementedError  # noqa: E704
    def delete_dir_contents(self, *a, **k): raise NotImplementedError  # noqa: E704
    def delete_root_dir_contents(self): raise NotImplementedError  # noqa: E704
    def delete_file(self, *a): raise NotImplementedError  # noqa: E704
    def move(self, *a): raise NotImplementedError  # noqa: E704
    def copy_file(self, *a): raise NotImplementedError  # noqa: E704
    def open_output_stream(self, *a): raise NotImplementedError  # noqa: E704
    def open_append_stream(self, *a): raise NotImplementedError  # noqa: E704


class CountingStore(LocalStore):
    """arrowidx's own reads of a local lake, counted into the same :class:`CountingFS`
    (one request per listing, stat, whole read or ranged read, as on an object store);
    pyarrow's reads of the data go through the counting filesystem itself."""

    def __init__(self, handler: CountingFS):
        super().__init__(pafs.PyFileSystem(handler))
        self.handler = handler
        self.key = f"counting:{id(self)}"

    def os_path(self, path: str) -> str:
        return path

    def list(self, folder, **kw):
        self.handler.requests += 1
        return super().list(folder, **kw)

    def list_stats(self, folder, **kw):
        self.handler.requests += 1
        return super().list_stats(folder, **kw)

    def list_names(self, folder, **kw):
        self.handler.requests += 1
        return super().list_names(folder, **kw)

    def stat(self, paths):
        self.handler.requests += len(paths)
        return super().stat(paths)

    def stat_many(self, paths):
        self.handler.requests += len(paths)
        return super().stat_many(paths)

    def get_ranges(self, path, ranges, what="file"):
        out = super().get_ranges(path, ranges, what)
        # one request per span of ranges less than 1 MiB apart, as object stores' clients
        # coalesce them (obstore's get_ranges)
        spans, end = 0, None
        for start, length in sorted(ranges):
            if end is None or start - end > 1 << 20:
                spans += 1
            end = max(end or 0, start + length)
        self.handler.requests += spans
        self.handler.bytes += sum(len(b) for b in out)
        return out

    def get(self, path, what="file"):
        out = super().get(path, what)
        self.handler.requests += 1
        self.handler.bytes += len(out)
        return out


class _CountingReader:
    """A file whose every read (a ranged GET on an object store) is counted."""

    def __init__(self, raw, counter: CountingFS):
        self.raw, self.counter = raw, counter
        self.closed = False

    def read(self, n=-1):
        data = self.raw.read() if n is None or n < 0 else self.raw.read(n)
        self.counter.requests += 1
        self.counter.bytes += len(data)
        return data

    def seek(self, pos, whence=0):
        return self.raw.seek(pos, whence)

    def tell(self):
        return self.raw.tell()

    def size(self):
        return self.raw.size()

    def close(self):
        self.closed = True
        self.raw.close()

    def readable(self):
        return True

    def seekable(self):
        return True


def counted(root: Path, col: str, value) -> None:
    """Requests and bytes read by one cold query (a new dataset object in a fresh child)."""
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(HERE)!r})
        import pyarrow.fs as pafs, pyarrow.compute as pc, pyarrow.dataset as ds
        from bench_cold import CountingFS
        kind = sys.argv[1]
        from bench_cold import CountingStore
        from arrowidx.storage import register
        handler = CountingFS()
        store = register(CountingStore(handler))  # arrowidx's own reads counted too
        fs = store.fs
        expr = pc.field({col!r}) == {value!r}
        if kind == "arrowidx":
            import arrowidx
            n = arrowidx.dataset({str(root)!r}, filesystem=fs).to_table(filter=expr, columns=["id"]).num_rows
        else:
            n = ds.dataset({str(root)!r}, format="parquet", filesystem=fs).to_table(filter=expr, columns=["id"]).num_rows
        print(json.dumps({{"requests": handler.requests, "bytes": handler.bytes, "rows": n}}), flush=True)
        import os
        os._exit(0)  # (pyarrow's Python-filesystem threads can abort the interpreter's exit)
    """)
    got = {}
    for kind in ("arrowidx", "pyarrow"):
        out = subprocess.run([PY, "-c", code, kind], capture_output=True, text=True, check=True, cwd=ROOT).stdout
        got[kind] = json.loads(out.strip().splitlines()[-1])
    files = len(list(root.rglob("*.parquet")))
    a, b = got["arrowidx"], got["pyarrow"]
    print(f"counted I/O, one cold needle {col} over {files} files: arrowidx {a['requests']:,} requests,"
          f" {a['bytes'] / 1e6:,.2f} MB; pyarrow.dataset {b['requests']:,} requests, {b['bytes'] / 1e6:,.2f} MB"
          " (a request: a stat, a listing or a read call)", flush=True)


def compile_bytecode() -> None:
    """Write arrowidx's bytecode, as an installed package has it (this checkout's environment
    may set PYTHONDONTWRITEBYTECODE: every new process would then compile ~0.5 s of source)."""
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "src" / "arrowidx")], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="issue,demo,many")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--no-polars", action="store_true")
    args = parser.parse_args()
    only = set(args.only.split(","))
    compile_bytecode()
    print(machine())
    print(f"{'case':58} {'arrowidx':>12} {'(spread)':>15} {'engine alone':>12} {'(spread)':>15}  ratio")
    import_times(args.rounds)
    lakes = {"issue": issue_lake, "demo": demo_lake, "many": many_lake}
    for name in ("issue", "demo", "many"):
        if name not in only:
            continue
        root, needles = lakes[name](args.scale)
        col = "user_id"
        print(f"\n{name} lake: {root}", flush=True)
        processes(root, col, needles[col], args.rounds, not args.no_polars and name != "many")
        in_process(root, col, needles[col], args.rounds)
        counted(root, col, needles[col])
    return 0


if __name__ == "__main__":
    sys.exit(main())
