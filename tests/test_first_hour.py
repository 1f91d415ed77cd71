"""Issue 53, the first hour without guessing: the CLI's behaviours and every message a new
user met, each asserted in the words the user needs (the argument, option, column and file
named, and what to do).

References are independent of arrowidx's own answers: ``Table.filter`` on the rows written,
``datetime.isoformat`` for timestamps, the files on disk.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.cli import PREVIEW_ROWS, build_parser, main

from .conftest import index_dir

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(root, tables: list[pa.Table]) -> pa.Table:
    """Write one Parquet file per table under ``root``; return all rows (the reference)."""
    os.makedirs(root, exist_ok=True)
    for i, t in enumerate(tables):
        pq.write_table(t, os.path.join(root, f"part-{i}.parquet"), row_group_size=100)
    return pa.concat_tables(tables)


@pytest.fixture()
def lake(tmp_path) -> tuple[str, pa.Table]:
    rng = np.random.default_rng(53)
    tables = []
    for i in range(3):
        n = 300
        tables.append(pa.table({
            "id": pa.array(np.arange(i * n, (i + 1) * n), pa.int64()),
            "status": pa.array(rng.choice(["new", "paid", "lost"], n)),
            "ts": pa.array(1_700_000_000_000_000 + np.arange(n) * 1_234_567, pa.timestamp("us", tz="Europe/Paris")),
        }))  # fmt: skip
    root = str(tmp_path / "lake")
    rows = write(root, tables)
    arrowidx.build(root, {"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id"}, progress=False)
    return root, rows


# ----------------------------------------------------------------------------------------
# The CLI
# ----------------------------------------------------------------------------------------
def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"arrowidx {arrowidx.__version__}\n"


def test_build_help_describes_every_index_flag():
    build = build_parser()._subparsers._group_actions[0].choices["build"]
    helps = {a.option_strings[0]: a.help for a in build._actions if a.option_strings}
    for flag in ("--bitmap", "--bloom-filter", "--range-bitmap", "--bsi"):
        assert helps[flag] and "columns" in helps[flag], flag


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_where_from_a_file_or_stdin(lake, tmp_path, capsys, monkeypatch, source):
    """A 100,000-value IN list is beyond the command line's length (``OSError: Argument
    list too long``): ``--where @FILE`` and ``--where -`` read it."""
    root, rows = lake
    values = list(range(-50_000, 50_000, 1)) + [5, 700]
    text = f"id IN ({', '.join(map(str, values))})"
    if source == "file":
        path = tmp_path / "where.sql"
        path.write_text(text)
        argv = ["query", root, "--where", f"@{path}", "--format", "json"]
    else:
        monkeypatch.setattr(sys, "stdin", io.StringIO(text))
        argv = ["query", root, "--where", "-", "--format", "json"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    expected = rows.filter(pc.field("id").isin(values)).column("id").to_pylist()
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == sorted(expected)


def test_where_file_that_does_not_exist(lake, capsys):
    code, _, err = run(capsys, "query", lake[0], "--where", "@nope.sql")
    assert code == 2 and "--where @nope.sql: cannot read 'nope.sql'" in err


def test_output_to_a_closed_pipe_ends_quietly(tmp_path):
    """``arrowidx ... | head`` ends as Unix tools do: no "[Errno 32] Broken pipe". The output
    (~2 MB) is far larger than a pipe's buffer, so the writer is still writing when the
    reader closes, whatever the machine's load."""
    root = str(tmp_path / "big")
    write(root, [pa.table({"id": pa.array(np.arange(200_000), pa.int64())})])
    proc = subprocess.Popen([sys.executable, "-m", "arrowidx.cli", "query", root, "--format", "csv"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": SRC})  # fmt: skip
    proc.stdout.readline()
    proc.stdout.close()  # as head does after its lines
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141
    assert "Broken pipe" not in err and "Errno" not in err and "Traceback" not in err


def test_query_shows_a_preview_on_a_terminal_and_every_row_otherwise(lake, capsys, monkeypatch):
    root, rows = lake
    assert rows.num_rows > PREVIEW_ROWS
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = run(capsys, "query", root)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 + PREVIEW_ROWS + 1  # header, rule, rows, "... more"
    assert lines[-1].startswith(f"... {rows.num_rows - PREVIEW_ROWS:,} more row(s) not shown: --all or --limit N")
    assert f"{rows.num_rows:,} row(s)" in err
    code, out, _ = run(capsys, "query", root, "--all")
    assert len(out.splitlines()) == 2 + rows.num_rows
    code, out, _ = run(capsys, "query", root, "--limit", "3")
    assert len(out.splitlines()) == 2 + 3 + 1
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)  # piped: every row
    code, out, _ = run(capsys, "query", root)
    assert len(out.splitlines()) == 2 + rows.num_rows


def test_zoned_timestamps_print_one_iso_8601_form(lake, capsys):
    root, rows = lake
    row = rows.filter(pc.field("id") == 7)
    expected = row.column("ts")[0].as_py().isoformat(timespec="microseconds")  # 2023-...T...+01:00
    assert expected.endswith(("+01:00", "+02:00"))
    _, out, _ = run(capsys, "query", root, "--where", "id = 7", "--columns", "ts", "--format", "json")
    assert json.loads(out)["ts"] == expected
    _, out, _ = run(capsys, "query", root, "--where", "id = 7", "--columns", "ts", "--format", "csv")
    assert out.splitlines()[1].strip('"') == expected
    _, out, _ = run(capsys, "query", root, "--where", "id = 7", "--columns", "ts")
    assert out.splitlines()[2].strip() == expected


# ----------------------------------------------------------------------------------------
# Messages that make the user guess
# ----------------------------------------------------------------------------------------
def test_vacuum_older_than_names_the_argument(lake):
    root, _ = lake
    with pytest.raises(arrowidx.OptionError, match=r"older_than='seven days' is not a duration: .*'7d'"):
        arrowidx.vacuum(root, older_than="seven days")
    assert arrowidx.vacuum(root, older_than="7d", dry_run=True).dry_run


def test_vacuum_cli_names_the_flag(lake, capsys):
    code, _, err = run(capsys, "vacuum", lake[0], "--older-than", "soon")
    assert code == 2 and "--older-than='soon' is not a duration" in err


def test_options_given_as_a_string_say_to_write_a_dict(lake):
    with pytest.raises(arrowidx.OptionError, match=r"not a string; write \{'file-index.bitmap.columns': 'status'\}"):
        arrowidx.build(lake[0], "file-index.bitmap.columns=status")
    with pytest.raises(arrowidx.OptionError, match="write_file_index: options are a dict"):
        arrowidx.write_file_index(pa.table({"a": [1]}), "file-index.bitmap.columns=a")


def test_a_bad_option_value_names_the_key(lake, capsys):
    code, _, err = run(capsys, "build", lake[0], "--option", "file-index.bloom-filter.id.fpp=abc")
    assert code == 2 and "file-index.bloom-filter.id.fpp: 'abc' is not a number" in err
    code, _, err = run(capsys, "build", lake[0], "--option", "file-index.bloom-filter.id.items=many")
    assert code == 2 and "file-index.bloom-filter.id.items: 'many' is not a whole number" in err


def test_a_misspelt_columns_key_gets_a_did_you_mean(lake, capsys):
    code, _, err = run(capsys, "build", lake[0], "--option", "file-index.bitmap.colums=status")
    assert code == 2 and "did you mean 'file-index.bitmap.columns'?" in err


def test_dictionary_and_unsigned_columns_are_indexed_as_their_values(tmp_path):
    """What pandas' ``category`` writes (dictionary strings) and ``uint32`` are indexed as
    their values (STRING, BIGINT): the answers are ``Table.filter``'s, and the index bytes
    are those of the same values as plain strings / int64 (the format Java reads)."""
    rng = np.random.default_rng(1)
    tables = []
    for _ in range(3):
        n = 500
        words = rng.choice(["a", "b", "c", "zz"], n)
        tables.append(pa.table({
            "cat": pa.array(words).dictionary_encode(),
            "u32": pa.array(rng.integers(0, 2**32 - 1, n, dtype=np.uint64).astype(np.uint32)),
            "u16": pa.array(rng.integers(0, 60_000, n).astype(np.uint16)),
        }))  # fmt: skip
    root = str(tmp_path / "typed")
    rows = write(root, tables)
    options = {"file-index.bitmap.columns": "cat,u16", "file-index.range-bitmap.columns": "u32,cat",
               "file-index.bloom-filter.columns": "u32"}  # fmt: skip
    arrowidx.build(root, options, progress=False)
    data = arrowidx.dataset(root)
    some = rows.column("u32")[17].as_py()
    filters = [pc.field("cat") == "zz", pc.field("cat").isin(["b", "q"]), pc.field("cat") == "q",
               pc.field("u32") == some, pc.field("u32") > 2**31, pc.field("u32") == -1, pc.field("u32") < 2**33,
               pc.field("u16") == int(rows.column("u16")[3].as_py())]  # fmt: skip
    for f in filters:
        assert data.to_table(filter=f).equals(rows.filter(f)), f
    assert data.explain(pc.field("cat") == "q").files_skipped == 3  # the indexes prune
    plain = rows.slice(0, 500).cast(pa.schema([("cat", pa.string()), ("u32", pa.int64()), ("u16", pa.int32())]))
    assert arrowidx.write_file_index(rows.slice(0, 500), options) == arrowidx.write_file_index(plain, options)


def test_types_no_index_holds_name_the_column_and_the_file(tmp_path, capsys):
    root = str(tmp_path / "t")
    write(root, [pa.table({"ts": pa.array([1, 2], pa.timestamp("ns")), "big": pa.array([1, 2], pa.uint64())})])
    code, _, err = run(capsys, "build", root, "--range-bitmap", "ts")
    assert code == 2 and "part-0.parquet: range-bitmap index on column 'ts' (timestamp[ns])" in err
    assert "precision up to 6" in err and "cast the column to microseconds" in err
    code, _, err = run(capsys, "build", root, "--bitmap", "big")
    assert code == 2 and "part-0.parquet: bitmap index on column 'big' (uint64)" in err and "cast the column to int64" in err


def test_an_empty_folder_says_it_holds_no_data_files(tmp_path, capsys):
    root = str(tmp_path / "empty")
    os.makedirs(root)
    code, out, _ = run(capsys, "build", root, "--bitmap", "status")
    assert code == 0 and "no data files to index" in out and "names starting with '_' or '.'" in out
    code, _, err = run(capsys, "query", root)
    assert code == 1 and "has no data files" in err and "run arrowidx.build first" not in err


def test_a_stray_file_in_the_folder_says_how(lake, capsys):
    root, _ = lake
    with open(os.path.join(root, "README.txt"), "w") as f:
        f.write("my lake\n")
    for argv in (["build", root], ["query", root, "--where", "id = 1"]):
        code, _, err = run(capsys, *argv)
        assert code == 1 and "README.txt" in err
        assert "move README.txt out of the folder or rename it to _README.txt" in err, argv


def _index_file(root: str, rel: str) -> str:

    from arrowidx.lake.commit import load_manifest
    from arrowidx.lake.layout import join, physical
    from arrowidx.lake.source import open_lake

    store, root, _ = open_lake(root)
    return physical(store, join(root, load_manifest(store, root).files[rel].index.file))


def test_inspect_checks_index_bytes_and_counts_stale_files(lake, capsys):
    root, _ = lake
    arrowidx.delete(root, pc.field("status") == "lost", progress=False)
    with open(_index_file(root, "part-0.parquet"), "r+b") as f:
        f.truncate(100)
    os.remove(_index_file(root, "part-1.parquet"))
    t = pq.read_table(os.path.join(root, "part-2.parquet"))
    pq.write_table(t.slice(0, 250), os.path.join(root, "part-2.parquet"))  # rows deleted from it before
    arrowidx.facts.clear()
    code, out, _ = run(capsys, "inspect", root)
    assert code == 0
    states = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("part-")}
    assert "DAMAGED INDEX" in states["part-0.parquet"] and "MISSING INDEX" in states["part-1.parquet"]
    assert "STALE DELETIONS" in states["part-2.parquet"] and " 250 " in states["part-2.parquet"]
    total = next(line for line in out.splitlines() if line.strip().startswith("total"))
    assert "0 indexed, 1 stale (1 with deletions)" in total and "2 with a damaged or missing index" in total
    problems = out[out.index("problems:"):]
    assert problems.count("rebuild with arrowidx build") == 2 and "index file is missing" in problems
    _, out, _ = run(capsys, "inspect", root, "--json")
    totals = json.loads(out)["totals"]
    assert totals["files_stale"] == 1 and totals["files_stale_deletions"] == 1 and totals["files_damaged"] == 2


def test_a_missing_index_file_says_to_rebuild(lake, capsys):
    root, _ = lake
    os.remove(_index_file(root, "part-1.parquet"))
    arrowidx.facts.clear()
    code, _, err = run(capsys, "query", root, "--where", "status = 'paid'")
    assert code == 1 and "index file is missing" in err and "rebuild with arrowidx build" in err


def test_a_damaged_newest_manifest_says_what_to_do(lake, capsys):
    root, rows = lake
    arrowidx.delete(root, pc.field("status") == "lost", progress=False)  # version 2
    newest = index_dir(root, "manifest-00000002.json")
    with open(newest, "r+b") as f:
        f.truncate(200)
    arrowidx.facts.clear()
    code, _, err = run(capsys, "query", root)
    assert code == 1 and "manifest-00000002.json" in err
    assert f"go back to version 1 (intact) by moving the file out of {index_dir(root)}/ and accepting the rollback" in err
    assert "restore the file from a backup" in err
    os.rename(newest, os.path.join(str(root), "..", "moved.json"))  # as the message says
    arrowidx.facts.clear()
    with pytest.raises(arrowidx.MissingManifestError):  # a missing newest version is refused until accepted (issue 47)
        arrowidx.dataset(root)
    assert arrowidx.accept_rollback(root).missing == [2]
    assert arrowidx.dataset(root).count_rows() == rows.num_rows  # version 1: before the delete


# ----------------------------------------------------------------------------------------
# The Python API's surface
# ----------------------------------------------------------------------------------------
DOCS = os.path.join(os.path.dirname(SRC), "docs")


def _docs_text() -> str:
    return "".join(open(os.path.join(DOCS, n)).read() for n in sorted(os.listdir(DOCS)) if n.endswith(".md"))


def test_type_hints_are_shipped_for_type_checkers():
    assert os.path.exists(os.path.join(os.path.dirname(arrowidx.__file__), "py.typed"))
    with open(os.path.join(os.path.dirname(SRC), "pyproject.toml")) as f:
        assert 'arrowidx = ["py.typed"]' in f.read()  # packaged (PEP 561)


def test_dir_of_the_package_is_the_documented_names():
    import re

    names = dir(arrowidx)
    assert not {"Any", "TYPE_CHECKING", "annotations", "importlib"} & set(names)
    assert set(names) == set(arrowidx.__all__) | {"__version__", "errors", "facts", "options", "paimon", "polars", "spark", "sql"}
    for name in names:
        getattr(arrowidx, name)  # each one is there
    used = set(re.findall(r"\barrowidx\.([A-Za-z_]\w*)", _docs_text()))
    source_tree = {"lake", "index", "arrow_input", "demo", "predicate", "expression", "storage", "__file__"}  # named as modules of the source, not API (docs/architecture.md names them)
    assert used - source_tree <= set(names), used - source_tree - set(names)


def test_the_dataset_object_shows_only_documented_names(lake):
    from arrowidx.lake.scan import IndexedDataset

    text = open(os.path.join(DOCS, "guide.md")).read()
    public = [n for n in dir(IndexedDataset) if not n.startswith("_")]
    undocumented = [n for n in public if f"`{n}`" not in text and f"`{n}(" not in text and f".{n}(" not in text]
    assert not undocumented, undocumented
    assert {"forget_file_infos", "footers_from_fragments", "read_footer", "bind_columns"}.isdisjoint(public)


def test_reprs_are_short_and_say_what_it_is(lake):
    root, rows = lake
    manifest = arrowidx.dataset(root).manifest
    text = repr(manifest)
    assert len(text) < 400 and text.startswith("Manifest(version 1 ") and "3 file(s), 3 indexed" in text


def test_paimon_table_repr():
    pytest.importorskip("fastavro")
    from arrowidx import paimon

    path = os.path.join(os.path.dirname(SRC), "tests", "paimon_tables", "shapes-0.9.0", "db.db", "evolve")
    newest = max(int(n.split("-")[1]) for n in os.listdir(os.path.join(path, "snapshot")) if n.startswith("snapshot-"))
    text = repr(paimon.open_table(path))
    assert text.startswith(f"PaimonTable({path!r}, snapshot {newest}, schema ") and "full_name" in text and len(text) < 300
