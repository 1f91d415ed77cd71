"""The seams of the lake's layers (issue 50, docs/architecture.md): files a commit writes with
its manifest, the one retry loop every writer shares, and the one store of facts and memos."""

from __future__ import annotations

import os

import pyarrow.compute as pc
import pytest

import arrowidx
from arrowidx import facts
from arrowidx.errors import CommitConflictError
from arrowidx.expression import check_expression
from arrowidx.lake.commit import commit_manifest, load_manifest, retry_on_conflict
from arrowidx.lake.source import open_lake

from .conftest import index_dir
from .test_lake import OPTIONS, write_lake


@pytest.fixture()
def lake(tmp_path) -> str:
    root = str(tmp_path / "lake")
    write_lake(root, files=2, rows=100)
    arrowidx.build(root, OPTIONS, progress=False)
    return root


def test_a_commit_writes_its_artifacts_before_the_manifest_and_a_refused_one_removes_them(lake, monkeypatch):
    from arrowidx.lake import commit as commit_module

    store, root, _ = open_lake(lake)
    first, second = load_manifest(store, root), load_manifest(store, root)
    committed = commit_manifest(store, root, first, first.version, artifacts={"_arrowidx/lakeindex/a.bin": b"first"})
    with open(index_dir(root, "lakeindex", "a.bin"), "rb") as f:
        assert f.read() == b"first"
    with pytest.raises(CommitConflictError):  # the version it planned on is gone
        commit_manifest(store, root, second, second.version, artifacts={"_arrowidx/lakeindex/b.bin": b"second"})
    # the race: the other writer commits between the version check and the exclusive create
    real = commit_module.latest_version
    checks = iter([second.version])
    monkeypatch.setattr(commit_module, "latest_version", lambda *a: next(checks, None) or real(*a))
    with pytest.raises(CommitConflictError):
        commit_manifest(store, root, second, second.version, artifacts={"_arrowidx/lakeindex/b.bin": b"second"})
    monkeypatch.setattr(commit_module, "latest_version", real)
    assert not os.path.exists(index_dir(root, "lakeindex", "b.bin"))  # referenced by no version
    assert load_manifest(store, root).version == committed.version
    with pytest.raises(ValueError, match="not under _arrowidx"):
        commit_manifest(store, root, load_manifest(store, root), committed.version, artifacts={"elsewhere.bin": b"x"})
    assert not os.path.exists(os.path.join(root, "elsewhere.bin"))
    assert load_manifest(store, root).version == committed.version  # nothing committed


def test_the_one_retry_loop_plans_again_until_a_commit_lands():
    attempts: list[int] = []

    def attempt(n: int) -> str:
        attempts.append(n)
        if n < 3:
            raise CommitConflictError("another writer committed first")
        return "committed"

    assert retry_on_conflict(attempt) == "committed" and attempts == [1, 2, 3]
    with pytest.raises(CommitConflictError):
        retry_on_conflict(lambda n: (_ for _ in ()).throw(CommitConflictError("always")), tries=2)


def test_paimon_commits_retry_through_the_lakes_loop():
    from arrowidx.paimon import commit, delete_rows, rewrite

    assert not hasattr(commit, "retry_on_conflict") and not hasattr(commit, "COMMIT_TRIES")
    assert rewrite.retry_on_conflict is retry_on_conflict and delete_rows.retry_on_conflict is retry_on_conflict


def test_facts_clear_forgets_the_memos_too(lake):
    data = arrowidx.dataset(lake)
    expr = pc.field("status") == "lost"
    check_expression(expr, data.schema)
    data.to_table(filter=expr)
    assert len(facts.VALID_FILTERS) and len(facts.PARSED)
    facts.clear()
    assert not any(len(memo) for memo in facts.MEMOS) and not any(len(cache) for cache in facts.ALL)
    assert data.to_table(filter=expr).num_rows == arrowidx.dataset(lake).to_table(filter=expr).num_rows
