"""The demo (``make demo``): its timing compares both readers under the same load, and a
small run of it ends with every answer agreeing."""

from __future__ import annotations

from arrowidx import demo


def test_side_by_side_timing_interleaves_the_two_readers():
    calls: list[str] = []

    def plain():
        calls.append("plain")
        return f"plain {len(calls)}"

    def ours():
        calls.append("ours")
        return f"ours {len(calls)}"

    (plain_ms, plain_lo, plain_hi, plain_result), (ours_ms, _, _, ours_result) = demo.timed_side_by_side(plain, ours, runs=4)
    # one warm-up each, then 4 rounds, the first call of each round alternating
    assert calls == ["plain", "ours"] + ["plain", "ours", "ours", "plain"] * 2
    assert plain_result == "plain 10" and ours_result == "ours 9"  # each side's last result
    assert plain_lo <= plain_ms <= plain_hi and ours_ms >= 0


def test_a_small_demo_run_agrees_with_the_plain_readers(tmp_path, capsys):
    assert demo.main(["--rows", "40000", "--files", "2", "--runs", "1", "--dir", str(tmp_path), "--no-spark"]) == 0
    out = capsys.readouterr().out
    assert "all answers agree with plain readers" in out
    assert "DIFFERENT" not in out and " NO\n" not in out


def test_spark_start_up_output_goes_to_the_log_not_the_terminal(tmp_path, capfd):
    """What the JVM writes to standard error while the session is made (its WARN lines)
    lands in the log file; standard error is the terminal's again afterwards."""
    import os

    class FakeSpark:
        @staticmethod
        def local_session(master, name):
            os.write(2, b"26/11/29 WARN Utils: Your hostname resolves to a loopback address\n")
            return "session"

    log = tmp_path / "spark.log"
    assert demo._quiet_session(FakeSpark, log) == "session"
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert "WARN" not in err and "after" in err
    assert "WARN Utils" in log.read_text()


def test_a_slower_polars_row_says_why(tmp_path):
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401 (pa.compute)
    import pyarrow.parquet as pq

    import arrowidx

    root = tmp_path / "lake"
    root.mkdir()
    pq.write_table(pa.table({"id": list(range(1000)), "amount": [float(i) for i in range(1000)]}), root / "part-0.parquet")
    arrowidx.build(root, {"file-index.range-bitmap.columns": "id"}, progress=False)
    assert "the indexes rule nothing out here" in demo._why_slower(root, pl.col("amount") > 3)
    assert "the indexes keep 0 of 1,000 rows" in demo._why_slower(root, pl.col("id") == 5000)
    arrowidx.delete(root, pa.compute.field("id") < 10, progress=False)
    assert "drops the 10 deleted rows by position" in demo._why_slower(root, pl.col("amount") > 3)
