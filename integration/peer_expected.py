"""The engines' own tests that may have another outcome through arrowidx, each with its reason.

Only two reasons are acceptable: the test reads Polars' query plan as text (``explain()``,
``show_graph``: an arrowidx scan is a Python IO source there, not Polars' Parquet scan node),
or Polars' verbose log (lines its own Parquet reader prints, which an IO source does not).
A difference in rows, types or the class of an error is a bug, never an entry here: those
not fixed yet are in :data:`KNOWN_GAPS`, each with what is missing (the suite's test then
reports them as an expected failure, and fails on any difference listed in neither).
"""

from __future__ import annotations

PLAN_TEXT = "plan text"
VERBOSE_LOG = "verbose log"
REASONS = (PLAN_TEXT, VERBOSE_LOG)

#: node id (as in the suite) -> (reason, what the test reads)
#: node id -> what is not done yet: a difference in rows, types or errors still to fix
KNOWN_GAPS: dict[str, str] = {
}

EXPECTED: dict[str, tuple[str, str]] = {
    **{
        f"tests/unit/io/test_parquet.py::test_multi_file_resolve_metadata_level[{p}]": (
            PLAN_TEXT, "asserts 'ESTIMATED ROWS: n' in explain(): Polars' Parquet scan node estimates rows from footers")
        for p in ("full-8", "none-6", "row_counts-8")
    },
    "tests/unit/io/test_parquet.py::test_resolve_metadata_sampled_byte_weighted": (
        PLAN_TEXT, "reads the row estimate of Polars' Parquet scan node in explain()"),
    **{
        f"tests/unit/io/test_scan.py::test_hive_pruning_str_contains_21706[{p}]": (
            VERBOSE_LOG, "asserts 'allows skipping 2 / 3' files, a line of Polars' own Parquet reader (POLARS_VERBOSE)")
        for p in ("False", "True")
    },
    **{
        f"tests/unit/io/test_scan.py::test_scan_metrics[{p}-parquet]": (
            VERBOSE_LOG, "reads the 'multi-scan' line of POLARS_LOG_METRICS, which only Polars' own scan prints")
        for p in ("False", "True")
    },
    "tests/unit/io/test_hive.py::test_hive_predicate_dates_14712": (
        VERBOSE_LOG, "asserts 'allows skipping 1 / 1' files, a line of Polars' own Parquet reader (POLARS_VERBOSE)"),
    "tests/unit/io/test_hive.py::test_hive_partitioned_predicate_pushdown_skips_correct_number_of_files": (
        VERBOSE_LOG, "asserts 'allows skipping 3 / 5' files, a line of Polars' own Parquet reader (POLARS_VERBOSE)"),
    **{
        f"tests/unit/io/test_multiscan.py::{name}": (
            PLAN_TEXT, "reads explain(): Polars' rewrite of a Hive scan into a UNION of partitions, which needs its own scan node")
        for name in ("test_hive_group_by_rewrite_pre_partition_hive_flag", "test_hive_group_by_rewrite_repeated_partition_values",
                     "test_hive_group_by_rewrite_to_partitioned_union", "test_hive_join_rewrite_left_join",
                     "test_hive_join_rewrite_pre_partition_hive_flag", "test_hive_join_rewrite_right_join",
                     "test_hive_join_rewrite_semi_join", "test_hive_join_rewrite_to_partitioned_union")
    },
    "tests/unit/io/test_multiscan.py::test_row_count_estimate_multifile": (
        PLAN_TEXT, "asserts 'ESTIMATED ROWS: 54' in explain(): Polars' Parquet scan node estimates rows from footers"),
    **{
        f"tests/unit/io/test_lazy_count_star.py::{name}": (
            VERBOSE_LOG, "counts 'project: 0' lines of Polars' own reader; select(pl.len()) through arrowidx reads no"
                         " file at all (row counts from the manifest or footers), so Polars prints none")
        for name in ("test_count_parquet[small.parquet-4]", "test_count_parquet[foods*.parquet-54]")
    },
    "tests/unit/io/test_hive.py::test_hive_filter_in_ir": (
        VERBOSE_LOG, "counts 'Predicate pushdown allows skipping 1 / 2 files' lines of Polars' own reader (POLARS_VERBOSE)"),
}
