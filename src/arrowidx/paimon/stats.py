"""Paimon's manifest statistics: may a data file hold a row where the predicate is TRUE?

:func:`may_match` judges a bound predicate against a file's min/max/null-count statistics
(``_VALUE_STATS`` and partition values) conservatively; :func:`rename_columns` maps a
predicate on the latest schema to a file's own column names (by field id).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..predicate import And, Compare, Const, IsIn, IsNull, Node, Not, Opaque, Or
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
    if isinstance(node, Const):
        return (node.value is True, node.value is False)
    if isinstance(node, Not):
        t, f = may_match(node.child, stats)
        return f, t
    if isinstance(node, And):
        parts = [may_match(c, stats) for c in node.children]
        return all(t for t, _ in parts), any(f for _, f in parts)
    if isinstance(node, Or):
        parts = [may_match(c, stats) for c in node.children]
        return any(t for t, _ in parts), all(f for _, f in parts)
    if isinstance(node, IsNull):
        s = stats.get(node.column)
        if s is None or s.nulls is None:
            return True, True
        return s.nulls > 0, s.nulls < s.rows
    if isinstance(node, (Compare, IsIn)):
        s = stats.get(node.column)
        if s is None:
            return True, True
        if s.nulls is not None and s.nulls >= s.rows and not (isinstance(node, IsIn) and node.null_in_set):
            return False, False  # every value NULL: the comparison is never TRUE nor FALSE
        if not _comparable(s):
            return True, True
        try:
            if isinstance(node, Compare):
                return _in_range(s, node.op, node.literal.as_py()), True
            if node.null_in_set:
                return True, True
            return any(_in_range(s, "eq", v) for v in node.values.to_pylist()), True
        except TypeError:
            return True, True
    return True, True


def rename_columns(node: Node, mapping: dict[str, str | None]) -> Node:
    """``node`` with columns renamed by ``mapping``; a column mapped to None (absent from
    an old file, or of another type there) makes its leaf Opaque."""
    if isinstance(node, (Compare, IsIn, IsNull)):
        new = mapping.get(node.column, node.column)
        if new is None:
            return Opaque(f"{node.column} not in this file's schema")
        return dataclasses.replace(node, column=new) if new != node.column else node
    if isinstance(node, Not):
        return Not(rename_columns(node.child, mapping))
    if isinstance(node, And):
        return And(tuple(rename_columns(c, mapping) for c in node.children))
    if isinstance(node, Or):
        return Or(tuple(rename_columns(c, mapping) for c in node.children))
    return node
