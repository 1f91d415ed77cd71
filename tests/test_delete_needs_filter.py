"""A delete needs a filter (issue 47, item 1): ``None`` (a filter never set), a filter made from
``None`` or empty text is refused by every delete; deleting every row takes an explicit TRUE.

Expected rows are the rows written (``pyarrow.parquet.read_table``), never arrowidx's output."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.cli import main
from arrowidx.errors import MissingFilterError
from arrowidx.filters import require_delete_filter, user_filter

from .conftest import index_dir

IDS = list(range(10))


@pytest.fixture
def lake(tmp_path):
    root = str(tmp_path)
    pq.write_table(pa.table({"id": pa.array(IDS, pa.int64())}), os.path.join(root, "p.parquet"))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    return root


def live_ids(root) -> list[int]:
    return sorted(arrowidx.dataset(root).to_table(columns=["id"]).column("id").to_pylist())


NONE_MESSAGE = (
    "arrowidx.delete: where is None (no filter); a delete needs a condition saying which rows to delete."
    " To delete every row, say so: where='TRUE' (or pc.scalar(True))"
)
EMPTY_MESSAGE = (
    "arrowidx.delete: where is empty; a delete needs a condition saying which rows to delete."
    " To delete every row, say so: where='TRUE' (or pc.scalar(True))"
)


@pytest.mark.parametrize("dry_run", [False, True])
def test_none_is_refused_and_nothing_is_deleted(lake, dry_run):
    where = None  # e.g. read from a config that had no entry (../shared/repro/14.py)
    with pytest.raises(MissingFilterError) as info:
        arrowidx.delete(lake, where, progress=False, dry_run=dry_run)
    assert str(info.value) == NONE_MESSAGE
    assert isinstance(info.value, ValueError) and isinstance(info.value, arrowidx.ArrowIdxError)
    assert live_ids(lake) == IDS
    assert len([n for n in os.listdir(index_dir(lake)) if n.startswith("manifest-")]) == 1  # nothing committed


@pytest.mark.parametrize("where", ["", "   ", "\n"])
def test_empty_text_is_refused(lake, where):
    with pytest.raises(MissingFilterError) as info:
        arrowidx.delete(lake, where, progress=False)
    assert str(info.value) == EMPTY_MESSAGE
    assert live_ids(lake) == IDS


def test_a_filter_made_from_none_is_refused(lake):
    unset = user_filter(None, arrowidx.dataset(lake).schema)  # what a read makes of None: every row
    with pytest.raises(MissingFilterError) as info:
        arrowidx.delete(lake, unset, progress=False)
    assert str(info.value) == NONE_MESSAGE
    assert live_ids(lake) == IDS


@pytest.mark.parametrize("every", ["TRUE", "true", pc.scalar(True)], ids=["TRUE", "true", "pc.scalar(True)"])
def test_an_explicit_true_deletes_every_row(lake, every):
    report = arrowidx.delete(lake, every, progress=False)
    assert report.rows_deleted == len(IDS)
    assert live_ids(lake) == []


def test_a_filter_still_deletes_its_rows(lake):
    assert arrowidx.delete(lake, pc.field("id") < 3, progress=False).rows_deleted == 3
    assert live_ids(lake) == IDS[3:]


def test_cli_refuses_an_empty_where(lake, capsys):
    assert main(["delete", lake, "--where", " ", "--yes"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "arrowidx: delete: --where is empty; a delete needs a condition saying which rows to delete."
        " To delete every row, say so: --where TRUE\n"
    )
    assert live_ids(lake) == IDS
    assert main(["delete", lake, "--where", "TRUE", "--yes"]) == 0
    assert live_ids(lake) == []


def test_the_one_refusal_names_the_interface():
    """Every delete calls :func:`require_delete_filter` (the Paimon delete too): it names the
    call and argument it is given."""
    with pytest.raises(MissingFilterError) as info:
        require_delete_filter(None, call="arrowidx.paimon.delete", argument="where")
    assert str(info.value).startswith("arrowidx.paimon.delete: where is None (no filter);")
    assert require_delete_filter("id = 1") == "id = 1"
    expr = pc.field("id") == 1
    assert require_delete_filter(expr) is expr
