"""Paimon's manifest statistics: may a data file hold a row where the predicate is TRUE?

:func:`may_match` judges a bound predicate against a file's min/max/null-count statistics
(``_VALUE_STATS`` and partition values) conservatively; :func:`rename_columns` maps a
predicate on the latest schema to a file's own column names (by field id).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..predicate import And, Compare, Const, IsIn, IsNull, Node, Not, Opaque, Or, Rewriter, Visitor
from .metadata import UNKNOWN


@dataclass(frozen=True)
class ColumnStats:
    min: Any
    max: Any
    nulls: int | None
    rows: int


def _comparable(s: ColumnStats) -> bool:
    if s.min is None or s.max is None or s.min is UNKNOWN or s.max is UNKNOWN:
        return False
    if isinstance(s.min, float) and (s.min != s.min or s.max != s.max):
        return False
    return True


def _in_range(s: ColumnStats, op: str, v: Any) -> bool:
    if v is None or (isinstance(v, float) and v != v):
        return True
    if op == "eq":
        return s.min <= v <= s.max
    if op == "lt":
        return s.min < v
    if op == "le":
        return s.min <= v
    if op == "gt":
        return s.max > v
    if op == "ge":
        return s.max >= v
    return True


def may_match(node: Node, stats: dict[str, ColumnStats]) -> tuple[bool, bool]:
    """``(may be TRUE, may be FALSE)`` for some row of a file with ``stats``; conservative."""
    return _MayMatch(stats).visit(node)


class _MayMatch(Visitor[tuple[bool, bool]]):
    """``(may be TRUE, may be FALSE)`` of a node for some row of a file with ``stats``."""

    def __init__(self, stats: dict[str, ColumnStats]):
        self.stats = stats

    def default(self, node: Node) -> tuple[bool, bool]:
        return True, True  # (Opaque, and anything not known: both may be)

    def constant(self, node: Const) -> tuple[bool, bool]:
        return (node.value is True, node.value is False)

    def negation(self, node: Not) -> tuple[bool, bool]:
        t, f = self.visit(node.child)
        return f, t

    def conjunction(self, node: And) -> tuple[bool, bool]:
        parts = [self.visit(c) for c in node.children]
        return all(t for t, _ in parts), any(f for _, f in parts)

    def disjunction(self, node: Or) -> tuple[bool, bool]:
        parts = [self.visit(c) for c in node.children]
        return any(t for t, _ in parts), all(f for _, f in parts)

    def is_null(self, node: IsNull) -> tuple[bool, bool]:
        s = self.stats.get(node.column)
        if s is None or s.nulls is None:
            return True, True
        return s.nulls > 0, s.nulls < s.rows

    def compare(self, node: Compare) -> tuple[bool, bool]:
        s = self._comparable(node.column, null_in_set=False)
        if not isinstance(s, ColumnStats):
            return s
        try:
            return _in_range(s, node.op, node.literal.as_py()), True
        except TypeError:
            return True, True

    def is_in(self, node: IsIn) -> tuple[bool, bool]:
        s = self._comparable(node.column, null_in_set=node.null_in_set)
        if not isinstance(s, ColumnStats):
            return s
        if node.null_in_set:
            return True, True
        try:
            return any(_in_range(s, "eq", v) for v in node.values.to_pylist()), True
        except TypeError:
            return True, True

    def _comparable(self, column: str, *, null_in_set: bool) -> ColumnStats | tuple[bool, bool]:
        """The column's statistics when min/max can judge a comparison, else the answer."""
        s = self.stats.get(column)
        if s is None:
            return True, True
        if s.nulls is not None and s.nulls >= s.rows and not null_in_set:
            return False, False  # every value NULL: the comparison is never TRUE nor FALSE
        if not _comparable(s):
            return True, True
        return s


def rename_columns(node: Node, mapping: dict[str, str | None]) -> Node:
    """``node`` with columns renamed by ``mapping``; a column mapped to None (absent from
    an old file, or of another type there) makes its leaf Opaque."""
    return _Rename(mapping).visit(node)


class _Rename(Rewriter):
    def __init__(self, mapping: dict[str, str | None]):
        self.mapping = mapping

    def leaf(self, node: Compare | IsIn | IsNull) -> Node:
        new = self.mapping.get(node.column, node.column)
        if new is None:
            return Opaque(f"{node.column} not in this file's schema")
        return dataclasses.replace(node, column=new) if new != node.column else node
