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


@pytest.mark.parametrize("name", ["types", "dyn_pk", "dv_level0"])
def test_scan_paimon_more_shapes_match_polars(name):
    """Every primitive type, a dynamic-bucket compacted table, level-0 files of a
    deletion-vector table (tests/test_paimon_shapes.py): as Polars over Java's read."""
    import datetime

    from arrowidx.paimon import open_table

    from .test_paimon_shapes import MORE
    from .test_paimon_shapes import expected as more_expected

    t = open_table(MORE / "db.db" / name)
    ref = pl.from_arrow(more_expected(name, t.schema)).lazy()
    lf = scan_paimon(MORE / "db.db" / name)
    queries = [lambda f: f, lambda f: f.select(pl.len())]
    if name == "types":
        queries += [
            lambda f: f.filter(pl.col("c") == "c7").select("id", "c", "ts9"),
            lambda f: f.filter(pl.col("ts3") == datetime.datetime(2020, 9, 13, 12, 26, 41)),
            lambda f: f.filter(pl.col("t") < -95).select("id", "d38", "tm", "ltz"),
            lambda f: f.filter(pl.col("vb") == bytes.fromhex("1f00")).select("id"),
        ]
    else:
        queries.append(lambda f: f.filter(pl.col("id") > 500).select("id", "name"))
    for q in queries:
        got = q(lf).collect()
        want = q(ref).collect()
        assert got.height and got.sort(got.columns).equals(want.sort(want.columns))
