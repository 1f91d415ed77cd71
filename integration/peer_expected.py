"""The engines' own tests that may have another outcome through arrowidx, each with its reason.

Only two reasons are acceptable: the test reads Polars' query plan as text (``explain()``,
``show_graph``: an arrowidx scan is a Python IO source there, not Polars' Parquet scan node),
or Polars' verbose log (lines its own Parquet reader prints, which an IO source does not).
A difference in rows, types or the class of an error is a bug, never an entry here.
"""

from __future__ import annotations

PLAN_TEXT = "plan text"
VERBOSE_LOG = "verbose log"
REASONS = (PLAN_TEXT, VERBOSE_LOG)

#: node id (as in the suite) -> (reason, what the test reads)
EXPECTED: dict[str, tuple[str, str]] = {}
