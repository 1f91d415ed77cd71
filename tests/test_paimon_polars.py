"""``arrowidx.polars.scan_paimon`` against Polars over Java's full read of the same table."""

from __future__ import annotations

import pytest

pl = pytest.importorskip("polars")
pytest.importorskip("fastavro")

from arrowidx.polars import scan_paimon  # noqa: E402

from .test_paimon import ROOT, expected, pytestmark  # noqa: E402,F401


@pytest.mark.parametrize("version", ["paimon-0.9.0", "paimon-master"])
@pytest.mark.parametrize("name", ["append_idx", "pk_dv"])
def test_scan_paimon_matches_polars(version, name):
    from arrowidx.paimon import open_table

    t = open_table(ROOT / version / "db.db" / name)
    ref = pl.from_arrow(expected(version, name, t.schema)).lazy()
    lf = scan_paimon(ROOT / version / "db.db" / name)
    queries = [
        lambda f: f,
        lambda f: f.filter(pl.col("status") == "pending").select("id", "status"),
        lambda f: f.filter((pl.col("status") == "updated") | (pl.col("id") < 5)).select("id"),
        lambda f: f.filter(pl.col("name").str.starts_with("v2")),
        lambda f: f.select(pl.len()),
        lambda f: f.filter(pl.col("id") > 100).head(7).select(pl.len()),
    ]
    for q in queries:
        got = q(lf).collect()
        want = q(ref).collect()
        assert got.sort(got.columns).equals(want.sort(want.columns))
