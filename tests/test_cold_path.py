"""The cold path's imports: ``arrowidx.literals.scalar`` makes the Scalar ``pa.scalar`` makes
without importing pandas, a Polars needle imports no pandas, a read no writer module.

Reference: ``pa.scalar(value, type)`` itself."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal

import pyarrow as pa
import pytest

from arrowidx.literals import scalar

CASES = [
    (5, pa.int8()), (-128, pa.int8()), (2**63 - 1, pa.int64()), (-(2**63), pa.int64()), (2**64 - 1, pa.uint64()),
    (7, pa.uint16()), (1.5, pa.float64()), (-0.0, pa.float64()), (float("nan"), pa.float32()), (3, pa.float64()),
    (True, pa.bool_()), (False, pa.bool_()), ("", pa.string()), ("日本", pa.large_string()), (b"\x00x", pa.binary()),
    (b"", pa.large_binary()), (19000, pa.date32()), (86_399_999, pa.time32("ms")), (5, pa.time64("ns")),
    (1_709_208_000_000_000_001, pa.timestamp("ns")), (-1, pa.timestamp("ms", tz="UTC")), (12, pa.duration("s")),
    (Decimal("17.35"), pa.decimal128(10, 2)), (Decimal("-0.5"), pa.decimal128(5, 3)), (42, pa.decimal128(38, 0)),
    (None, pa.int32()), (None, pa.string()),
]  # fmt: skip


@pytest.mark.parametrize("value, type", CASES, ids=[f"{t}-{v!r}" for v, t in CASES])
def test_the_scalar_equals_pyarrows(value, type):
    got, want = scalar(value, type), pa.scalar(value, type)
    assert got.type == want.type
    if isinstance(value, float) and value != value:
        assert got.as_py() != got.as_py()
    else:
        assert got.equals(want) and repr(got.as_py()) == repr(want.as_py())


@pytest.mark.parametrize("value, type", [(300, pa.int8()), (-1, pa.uint8()), (Decimal("1.234"), pa.decimal128(5, 2))])
def test_what_does_not_fit_fails_as_pyarrow_does(value, type):
    with pytest.raises((pa.ArrowInvalid, OverflowError)) as want:
        pa.scalar(value, type)
    with pytest.raises(want.type):
        scalar(value, type)


def test_no_pandas_is_imported():
    code = ("import sys, pyarrow as pa; from arrowidx.literals import scalar; "
            "[scalar(v, t) for v, t in [(5, pa.int64()), ('x', pa.string()), (True, pa.bool_()), (1.5, pa.float32())]]; "
            "print('pandas' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_read_imports_no_writer_and_a_polars_needle_no_pandas(tmp_path):
    """A needle's process imports neither the writers (``arrowidx.lake.build``, ``delete``,
    ``vacuum``) nor, through ``arrowidx.polars.scan``, pandas (a lake of several files: the
    lake index rules files out, their stats compared in Arrow with no Python value given
    to pyarrow), nor ``numpy.ma`` (``np.unique`` imports it: ~10 ms of a first query; the
    lake has a deletion vector, in another file than the needle's)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for i in range(4):
        pq.write_table(pa.table({"id": list(range(i * 25, (i + 1) * 25))}), str(tmp_path / f"part-{i}.parquet"))
    import arrowidx

    arrowidx.build(str(tmp_path), {"file-index.bloom-filter.columns": "id"}, progress=False)
    arrowidx.delete(str(tmp_path), pc.field("id") == 60, progress=False)
    code = (
        "import sys, arrowidx, arrowidx.polars, polars as pl\n"
        f"n = arrowidx.polars.scan({str(tmp_path)!r}).filter(pl.col('id') == 5).select('id').collect().height\n"
        "import pyarrow.compute as pc\n"
        "m = arrowidx.dataset(" + repr(str(tmp_path)) + ").to_table(filter=pc.field('id') == 7).num_rows\n"
        "print(n, m, sorted(k for k in sys.modules if k in ('arrowidx.lake.build', 'arrowidx.lake.delete', 'arrowidx.lake.vacuum')))"
    )
    polars_only = code.split("import pyarrow.compute")[0] + "print(n, 'pandas' in sys.modules, 'numpy.ma' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", polars_only], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-3:] == ["1", "False", "False"]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1 1 []"


_PROGRAM = ("import atexit, sys\n"
            "atexit.register(lambda: print('pandas imported:', 'pandas' in sys.modules, file=sys.stderr))\n"
            "sys.argv = ['arrowidx', *sys.argv[1:]]\n"
            "from arrowidx.cli import run\n"
            "run()\n")  # fmt: skip


@pytest.mark.parametrize("where, expr", [
    ("id = 5", lambda f: f("id") == 5),
    ("id IN (3, 250, 999) OR tag = 'b'", lambda f: f("id").isin([3, 250, 999]) | (f("tag") == "b")),
    ("tag IS NULL AND id < 40", lambda f: f("tag").is_null() & (f("id") < 40)),
])  # fmt: skip
def test_the_program_imports_no_pandas_and_answers_as_pyarrow(tmp_path, where, expr):
    """``arrowidx query`` in a process of its own (``cli.run``) never imports pandas (pyarrow
    imports it when ``pyarrow.dataset`` is imported), and its rows are pyarrow's:
    ``Table.filter`` of the files as ``pq.read_table`` reads them. Mutation: ``run()``
    without ``_load_pyarrow_dataset_without_pandas()`` fails every case."""
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    import arrowidx

    lake = tmp_path / "lake"
    lake.mkdir()
    for i in range(4):
        ids = list(range(i * 250, (i + 1) * 250))
        pq.write_table(pa.table({"id": ids, "tag": [None if v % 7 == 0 else "abc"[v % 3] for v in ids]}),
                       str(lake / f"part-{i}.parquet"))  # fmt: skip
    arrowidx.build(str(lake), {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "tag"}, progress=False)
    out = subprocess.run([sys.executable, "-c", _PROGRAM, "query", str(lake), "--where", where, "--columns", "id",
                          "--format", "csv"], capture_output=True, text=True, check=True)  # fmt: skip
    assert "pandas imported: False" in out.stderr
    got = pcsv.read_csv(pa.py_buffer(out.stdout.encode())).column("id").to_pylist() if out.stdout.strip() else []
    want = pq.read_table(str(lake)).filter(expr(pc.field)).column("id").to_pylist()
    assert sorted(got) == sorted(want) and want


def test_the_program_leaves_pyarrows_pandas_alone_when_called_as_a_function(tmp_path):
    """``cli.main`` called inside another program (a test, a notebook) changes nothing of how
    pyarrow converts pandas objects afterwards (reference: a categorical Series becomes a
    dictionary array, as pyarrow makes it in a process without arrowidx)."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1, 2]}), str(tmp_path / "part-0.parquet"))
    code = (f"from arrowidx.cli import main; main(['query', {str(tmp_path)!r}, '--where', 'id = 1', '--format', 'csv'])\n"
            "import pandas as pd, pyarrow as pa\n"
            "print(pa.array(pd.Series(pd.Categorical(['a', 'b']))).type)")  # fmt: skip
    want = subprocess.run([sys.executable, "-c", code.split("\n", 1)[1]], capture_output=True, text=True, check=True)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == want.stdout.strip() == "dictionary<values=string, indices=int8, ordered=0>"


def _needle_process(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()


def test_a_pyarrow_needle_loads_only_what_its_answer_needs(tmp_path):
    """A needle through ``arrowidx.dataset`` with a ``pc.Expression`` on a bloom-filter column
    of a local lake that also has bitmap and range-bitmap indexes: its process never loads the
    SQL compiler, the object-store module, ``difflib`` (error hints), or the formats of the
    indexes it does not ask (bitmap, BSI, range bitmap); its rows are ``Table.filter``'s minus
    the deleted ones. A SQL needle (``filter="id = 7"``, the shortcut for plain comparisons)
    loads the SQL front end but not its bound tree, residual or Polars lowering."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import arrowidx

    tables = [pa.table({"id": list(range(i * 100, (i + 1) * 100)), "status": ["a", "b"] * 50,
                        "ts": list(range(100))}) for i in range(3)]  # fmt: skip
    for i, t in enumerate(tables):
        pq.write_table(t, str(tmp_path / f"part-{i}.parquet"))
    arrowidx.build(str(tmp_path), {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "status",
                                   "file-index.range-bitmap.columns": "ts"}, progress=False)  # fmt: skip
    arrowidx.delete(str(tmp_path), pc.field("id") == 151, progress=False)
    whole = pa.concat_tables(tables)
    want = sorted(whole.filter((pc.field("id") == 150) | (pc.field("id") == 151)).column("id").to_pylist())
    assert want == [150, 151]  # (151 is deleted: the answer below holds 150 alone)
    never = ["arrowidx.sql", "arrowidx.objectstore", "difflib", "arrowidx.index.bitmap", "arrowidx.index.bsi",
             "arrowidx.index.range_bitmap", "arrowidx.lake.build", "arrowidx.lake.delete", "sqlglot"]  # fmt: skip
    code = (
        "import sys, arrowidx, pyarrow.compute as pc\n"
        f"t = arrowidx.dataset({str(tmp_path)!r}).to_table(filter=pc.field('id').isin([150, 151]), columns=['id'])\n"
        "print(sorted(t.column('id').to_pylist()))\n"
        f"print(sorted(m for m in {never!r} if m in sys.modules))\n"
    )
    rows, loaded = _needle_process(code)
    assert rows == "[150]"
    assert loaded == "[]"
    sql = code.replace("filter=pc.field('id').isin([150, 151])", "filter='id = 150'")
    later = ["arrowidx.sql.residual", "arrowidx.sql.to_polars", "arrowidx.sql.tree", "arrowidx.sql.bind", "sqlglot"]
    rows, loaded = _needle_process(sql.replace(repr(never), repr(later)))
    assert rows == "[150]"
    assert loaded == "[]"


def test_the_index_registry_imports_a_format_on_first_lookup():
    """``arrowidx.index.INDEX_TYPES`` is a mapping of every known type name to its class
    (the classes themselves, by their ``name``), importing a format's module at its first lookup."""
    code = (
        "import sys\n"
        "from arrowidx.index import INDEX_TYPES\n"
        "print(sorted(INDEX_TYPES), len(INDEX_TYPES), 'bitmap' in INDEX_TYPES, 'nope' in INDEX_TYPES, INDEX_TYPES.get('nope'))\n"
        "print(sorted(m for m in sys.modules if m.startswith('arrowidx.index.') and m not in ('arrowidx.index.base',)))\n"
        "cls = INDEX_TYPES['bloom-filter']\n"
        "from arrowidx.index.bloom import BloomFilterIndex\n"
        "print(cls is BloomFilterIndex, cls.name, 'arrowidx.index.bitmap' in sys.modules)\n"
        "print(all(INDEX_TYPES[n].name == n for n in INDEX_TYPES), dict(INDEX_TYPES.items()) == {n: INDEX_TYPES[n] for n in INDEX_TYPES})\n"
        "try:\n    INDEX_TYPES['nope']\nexcept KeyError:\n    print('KeyError')\n"
    )
    names, before, bloom, every, unknown = _needle_process(code)
    assert names == "['bitmap', 'bloom-filter', 'bsi', 'range-bitmap'] 4 True False None"
    assert before == "[]"
    assert bloom == "True bloom-filter False"
    assert every == "True True"
    assert unknown == "KeyError"


def test_a_few_planning_reads_on_a_local_disk_start_no_thread(tmp_path):
    """Index windows above the average that goes to the I/O pool (120 kB each) but few (3 files,
    360 kB in all) are read in the planning thread: a needle's process starts no
    ``arrowidx-io`` thread (starting them cost a first needle ~4 ms); the rows are
    ``Table.filter``'s. (A float column: the lake index keys no float, so every file's own
    index is read, as on a lake of large files.)"""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import arrowidx
    from arrowidx.lake import files

    tables = [pa.table({"x": [float(v) for v in range(i * 1000, (i + 1) * 1000)]}) for i in range(3)]
    for i, t in enumerate(tables):
        pq.write_table(t, str(tmp_path / f"part-{i}.parquet"))
    arrowidx.build(str(tmp_path), {"file-index.bloom-filter.columns": "x", "file-index.bloom-filter.x.items": "200000"},
                   progress=False)  # fmt: skip
    opened = arrowidx.dataset(str(tmp_path))
    windows = [opened.manifest.files[f"part-{i}.parquet"].index.layout["x"]["bloom-filter"][1] for i in range(3)]
    assert min(windows) > files.QUICK_READ_BYTES and sum(windows) < files.QUICK_TOTAL_BYTES  # (the case named)
    want = pa.concat_tables(tables).filter(pc.field("x") == 1500.0).column("x").to_pylist()
    code = (
        "import threading, arrowidx, pyarrow.compute as pc\n"
        f"t = arrowidx.dataset({str(tmp_path)!r}).to_table(filter=pc.field('x') == 1500.0)\n"
        "print(t.column('x').to_pylist())\n"
        "print(sorted(t.name for t in threading.enumerate() if t.name.startswith('arrowidx-io')))\n"
    )
    rows, threads = _needle_process(code)
    assert rows == str(want) == "[1500.0]"
    assert threads == "[]"
