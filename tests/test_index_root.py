"""Where a lake's indexes live (issue 49, part 1; docs/guide.md, "Layout on disk").

The sidecar ``_<folder>.arrowidx/`` beside the data folder (nothing is written inside it, so
Polars, which reads every file below a folder, still reads it); ``index_root=`` for
read-only data; old lakes with ``<root>/_arrowidx/`` read, written and migrated by one
command. References: the files written, ``Table.filter`` on the rows written, Polars' own
``pl.scan_parquet`` of the folder.
"""

from __future__ import annotations

import os
import shutil
import stat
import warnings

import polars as pl
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
import arrowidx.facts
from arrowidx.cli import main
from arrowidx.errors import ArrowIdxError, OptionError

from .conftest import tables_equal
from .test_lake import OPTIONS, write_lake

NEEDLE = pc.field("status") == "lost"


def _data_files(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def _expected(root: str, files: list[str], deleted=None):
    """The rows written (Table.filter), minus the rows ``deleted`` matched."""
    import pyarrow as pa

    table = pa.concat_tables([pq.read_table(os.path.join(root, f)) for f in files])
    if deleted is None:
        return table
    gone = table.filter(deleted)  # the rows the delete's filter selects (Table.filter: null is not selected)
    return table.filter(~pc.field("id").isin(gone["id"]))


def _old_layout(root: str) -> None:
    """A lake as arrowidx laid it out before the sidecar: the same files under ``<root>/_arrowidx``."""
    os.rename(os.path.join(os.path.dirname(root), f"_{os.path.basename(root)}.arrowidx"), os.path.join(root, "_arrowidx"))
    arrowidx.facts.clear()


@pytest.fixture
def lake(tmp_path):
    root = str(tmp_path / "lake")
    write_lake(root, files=3)
    return root, _data_files(root)


def test_build_and_delete_write_nothing_inside_the_data_folder(lake):
    root, files = lake
    arrowidx.build(root, OPTIONS, progress=False)
    arrowidx.delete(root, NEEDLE, progress=False)
    assert _data_files(root) == files  # only the data written
    sidecar = os.path.join(os.path.dirname(root), "_lake.arrowidx")
    assert sorted(os.listdir(sidecar))[:1] == ["LATEST"] and os.path.isdir(os.path.join(sidecar, "deletion"))
    assert pl.scan_parquet(root).collect().height == _expected(root, files).num_rows  # Polars reads the folder
    got = arrowidx.dataset(root).to_table().sort_by("id")
    assert tables_equal(got, _expected(root, files, NEEDLE).sort_by("id"))


def test_index_root_for_read_only_data(lake, tmp_path):
    root, files = lake
    elsewhere = str(tmp_path / "indexes" / "lake")
    os.chmod(root, stat.S_IRUSR | stat.S_IXUSR)  # read-only data folder
    try:
        arrowidx.build(root, OPTIONS, progress=False, index_root=elsewhere)
        arrowidx.delete(root, NEEDLE, progress=False, index_root=elsewhere)
    finally:
        os.chmod(root, stat.S_IRWXU)
    assert _data_files(root) == files and os.path.exists(os.path.join(elsewhere, "LATEST"))
    assert not os.path.exists(os.path.join(os.path.dirname(root), "_lake.arrowidx"))
    want = _expected(root, files, NEEDLE).sort_by("id")
    assert tables_equal(arrowidx.dataset(root, index_root=elsewhere).to_table().sort_by("id"), want)
    assert arrowidx.polars.scan(root, index_root=elsewhere).collect().height == want.num_rows
    # without index_root nothing points at the indexes: the folder reads unindexed, every row
    assert arrowidx.dataset(root).to_table().num_rows == _expected(root, files).num_rows
    assert main(["query", root, "--where", "status = 'lost'", "--index-root", elsewhere, "--format", "csv"]) == 0


def test_a_copy_of_both_folders_keeps_its_indexes_and_deletions(lake, tmp_path):
    root, files = lake
    arrowidx.build(root, OPTIONS, progress=False)
    arrowidx.delete(root, NEEDLE, progress=False)
    copy = str(tmp_path / "copy" / "lake2")
    shutil.copytree(root, copy)
    shutil.copytree(os.path.join(os.path.dirname(root), "_lake.arrowidx"), os.path.join(os.path.dirname(copy), "_lake2.arrowidx"))
    data = arrowidx.dataset(copy)
    assert tables_equal(data.to_table().sort_by("id"), _expected(root, files, NEEDLE).sort_by("id"))
    assert {p.status for p in data.explain(pc.field("status") == "zzz").files} == {"skipped"}  # the indexes came along


def test_an_old_lake_is_read_written_with_a_warning_and_migrated(lake, capsys):
    root, files = lake
    arrowidx.build(root, OPTIONS, progress=False)
    _old_layout(root)
    assert arrowidx.dataset(root).manifest.version == 1  # read where it is
    with pytest.warns(UserWarning, match="arrowidx migrate"):
        arrowidx.delete(root, NEEDLE, progress=False)
    assert os.path.exists(os.path.join(root, "_arrowidx", "manifest-00000002.json"))  # written where it is
    with pytest.raises(Exception):  # noqa: B017 - Polars' own refusal of the folder: why the layout moved
        pl.scan_parquet(root).collect()

    assert main(["migrate", root, "--dry-run"]) == 0 and os.path.isdir(os.path.join(root, "_arrowidx"))
    assert main(["migrate", root]) == 0
    assert _data_files(root) == files  # _arrowidx/ gone
    assert "nothing to migrate" in str(arrowidx.migrate(root))
    arrowidx.facts.clear()
    want = _expected(root, files, NEEDLE).sort_by("id")
    data = arrowidx.dataset(root)
    assert data.manifest.version == 2 and tables_equal(data.to_table().sort_by("id"), want)  # deletions kept
    assert pl.scan_parquet(root).collect().height == _expected(root, files).num_rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the sidecar: no warning
        arrowidx.build(root, OPTIONS, progress=False)


def test_both_layouts_at_once_are_refused_naming_migrate(lake):
    root, _ = lake
    arrowidx.build(root, OPTIONS, progress=False)
    shutil.copytree(os.path.join(os.path.dirname(root), "_lake.arrowidx"), os.path.join(root, "_arrowidx"))
    arrowidx.facts.clear()
    with pytest.raises(ArrowIdxError, match="arrowidx migrate"):
        arrowidx.dataset(root)


def test_migrate_refuses_a_target_holding_other_files(lake, tmp_path):
    root, _ = lake
    arrowidx.build(root, OPTIONS, progress=False)
    _old_layout(root)
    os.makedirs(os.path.join(os.path.dirname(root), "_lake.arrowidx"))
    open(os.path.join(os.path.dirname(root), "_lake.arrowidx", "stranger"), "w").write("x")
    with pytest.raises(ArrowIdxError, match="already holds"):
        arrowidx.migrate(root)
    assert os.path.exists(os.path.join(root, "_arrowidx", "manifest-00000001.json"))  # nothing removed


def test_a_hive_partition_folder_is_not_indexed_on_its_own(tmp_path):
    root = tmp_path / "table" / "dt=2024-01-01"
    write_lake(str(root), files=1)
    with pytest.raises(OptionError, match="index the table's folder"):
        arrowidx.build(str(root), OPTIONS, progress=False)
    assert not os.listdir(tmp_path / "table") == ["dt=2024-01-01", "_dt=2024-01-01.arrowidx"]
    assert sorted(os.listdir(tmp_path / "table")) == ["dt=2024-01-01"]
