"""Issue 53, Paimon index maintenance: ``arrowidx paimon rewrite-index`` adds by default
(forgetting nothing), drops and sets only on request; per-column options Java accepts are
accepted with a warning; bloom filters without ``items`` are sized for each file's rows.

References: the schema files the rewrite commits (JSON read here), the rows of each data file
(its manifest entry, read by Java when it wrote the table) and Java's ``BloomFilter64`` sizing
formula, written out below. Java reading such filters back: ``integration/test_paimon_rewrite_java.py``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import warnings
from pathlib import Path

import pytest

pytest.importorskip("fastavro")

from arrowidx import FileIndex, paimon
from arrowidx.cli import main
from arrowidx.options import OptionWarning

EVOLVE = Path(__file__).resolve().parent / "paimon_tables" / "shapes-0.9.0" / "db.db" / "evolve"
# the table's options as Java wrote them (schema/schema-1 of the fixture)
BEFORE = {"file-index.bloom-filter.columns": "id,full_name", "file-index.bitmap.columns": "status",
          "file-index.bloom-filter.id.items": "600", "file-index.bloom-filter.full_name.items": "600"}  # fmt: skip


@pytest.fixture()
def table(tmp_path) -> str:
    dst = tmp_path / "evolve"
    shutil.copytree(EVOLVE, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return str(dst)


def index_options(path: str) -> dict[str, str]:
    """The file-index.<type> options of the table's newest schema file, read as JSON."""
    newest = max((p for p in Path(path, "schema").iterdir()), key=lambda p: int(p.name.split("-")[1]))
    options = json.loads(newest.read_text())["options"]
    return {k: v for k, v in options.items() if k.startswith("file-index.") and k != "file-index.in-manifest-threshold"}


def columns(options: dict[str, str], index_type: str) -> set[str]:
    return set(filter(None, options.get(f"file-index.{index_type}.columns", "").split(",")))


def test_fixture_options_as_written():
    assert index_options(str(EVOLVE)) == BEFORE


def test_an_index_flag_adds_and_forgets_nothing(table, capsys):
    assert main(["paimon", "rewrite-index", table, "--bitmap", "p", "--quiet"]) == 0
    after = index_options(table)
    assert columns(after, "bitmap") == {"status", "p"}  # status kept (it was dropped before issue 53)
    assert columns(after, "bloom-filter") == {"id", "full_name"}
    assert after["file-index.bloom-filter.full_name.items"] == "600"


def test_drop_removes_one_index_and_its_options(table, capsys):
    assert main(["paimon", "rewrite-index", table, "--drop", "full_name:bloom-filter", "--quiet"]) == 0
    after = index_options(table)
    assert columns(after, "bloom-filter") == {"id"} and columns(after, "bitmap") == {"status"}
    assert "file-index.bloom-filter.full_name.items" not in after
    code = main(["paimon", "rewrite-index", table, "--drop", "nope"])
    assert code == 2 and "drop 'nope': no such index" in capsys.readouterr().err


def test_set_keeps_only_the_given_indexes(table, capsys):
    assert main(["paimon", "rewrite-index", table, "--set", "--bitmap", "p", "--quiet"]) == 0
    assert index_options(table) == {"file-index.bitmap.columns": "p"}


def test_a_per_column_option_java_keeps_is_accepted_with_a_warning(table, capsys):
    """Listing only ``id`` leaves ``file-index.bloom-filter.full_name.items``: Java keeps the key
    and ignores it; so does arrowidx, with a warning (it used to refuse the call)."""
    with pytest.warns(OptionWarning, match=r"'file-index.bloom-filter.full_name.items' .*ignored"):
        report = paimon.rewrite_file_index(table, {"file-index.bloom-filter.columns": "id"})
    assert report.committed
    after = index_options(table)
    assert after["file-index.bloom-filter.full_name.items"] == "600" and columns(after, "bloom-filter") == {"id"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["paimon", "rewrite-index", table, "--bitmap", "p", "--quiet"]) == 0  # the CLI prints it
    assert "arrowidx: warning: option 'file-index.bloom-filter.full_name.items'" in capsys.readouterr().err


def java_bloom_bits(items: int, fpp: float) -> int:
    """``BloomFilter64(items, fpp)``'s bit count (Paimon's ``BloomFilter64`` constructor)."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    return nb + (8 - nb % 8)


def test_a_bloom_filter_without_items_is_sized_for_its_file(table):
    """Java's default of 1,000,000 items makes a ~600 KB filter of every file; without
    ``items`` each file's filter is sized for its rows (0.1 false positives, the default)."""
    report = paimon.rewrite_file_index(table, {"file-index.bloom-filter.columns": "id,full_name,status",
                                               "file-index.in-manifest-threshold": "64kb"})  # fmt: skip
    assert report.committed
    t = paimon.open_table(table)
    for f in t.files:
        assert f.embedded_index, f.name  # (below the threshold: in the manifest entry)
        index = FileIndex(f.embedded_index, t.schema)
        bits = {r.describe()["bits"] for r in index.readers("status") if r.index_type == "bloom-filter"}
        assert bits == {java_bloom_bits(max(f.rows, 1), 0.1)}, f.name
    assert len(t.files) > 5
    assert report.index_bytes < 64 * 1024  # against ~600 KB per file with Java's default
