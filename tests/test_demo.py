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
