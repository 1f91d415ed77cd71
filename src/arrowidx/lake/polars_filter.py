"""A pyarrow filter as the Polars predicate of exactly the same meaning, where there is one:
what lets Polars' Parquet reader filter a file the indexes kept whole (:mod:`.read`)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .. import facts
from ..predicate import And, Compare, IsIn, Node, Not, Visitor, bind

_POLARS_OPS = {"eq": "__eq__", "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}


def polars_filter(expr, schema: pa.Schema):
    """``expr`` as a Polars predicate selecting exactly the rows pyarrow's filter selects,
    or None: a top-level AND of comparisons (and their NOT) and IN lists without NULL, each
    between an integer or string column of ``schema`` and literals. Only there do the two
    agree row for row: a comparison is NULL for a NULL value in both, and at the top of a
    filter NULL and FALSE both drop the row (floats, whose NaN rules differ, and nested
    boolean logic, where NULL and FALSE part ways under a NOT, are left to pyarrow).

    The last answer is remembered (a query repeated asks again): found only for an equal
    expression (``Expression.equals``: typed literals) and an equal schema, and a Polars
    expression is immutable (:data:`arrowidx.facts.POLARS_FILTERS`)."""
    if not isinstance(expr, pc.Expression):
        return _polars_filter(expr, schema)
    held = facts.POLARS_FILTERS.find(
        lambda key: (key[0] is expr or key[0].equals(expr)) and (key[1] is schema or key[1].equals(schema))
    )
    if held is None:
        held = (_polars_filter(expr, schema),)  # (a tuple: None is an answer too)
        facts.POLARS_FILTERS.add((expr, schema), held)
    return held[0]


def _polars_filter(expr, schema: pa.Schema):
    parts = _PolarsTerms(schema).visit(bind(expr, schema))
    if not parts or any(p is None for p in parts):
        return None
    import polars as pl

    return pl.all_horizontal(parts) if len(parts) > 1 else parts[0]


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t):
        return "integer"
    return "string" if pa.types.is_string(t) or pa.types.is_large_string(t) else None


class _PolarsTerms(Visitor[list]):
    """The conjuncts of a top-level AND as Polars predicates of the same meaning (None for a
    conjunct that has none): comparisons (and their NOT) and IN lists without NULL between an
    integer or string column and values of its kind."""

    def __init__(self, schema: pa.Schema, negated: bool = False):
        self.schema, self.negated = schema, negated

    def default(self, node: Node) -> list:
        return [None]

    def conjunction(self, node: And) -> list:
        if self.negated:
            return [None]
        return [term for child in node.children for term in self.visit(child)]

    def negation(self, node: Not) -> list:
        if self.negated:
            return [None]
        (term,) = _PolarsTerms(self.schema, negated=True).visit(node.child)
        return [None if term is None else ~term]

    def _plain(self, column: str, t: pa.DataType) -> bool:
        """An integer or string column, and values of its kind (cast to it by ``bind``)."""
        return _kind(self.schema.field(column).type) is not None and _kind(t) == _kind(self.schema.field(column).type)

    def compare(self, node: Compare) -> list:
        if not (node.literal.is_valid and self._plain(node.column, node.literal.type)):
            return [None]
        import polars as pl

        return [getattr(pl.col(node.column), _POLARS_OPS[node.op])(pl.lit(node.literal.as_py()))]

    def is_in(self, node: IsIn) -> list:
        if self.negated or node.null_in_set or not self._plain(node.column, node.values.type):
            return [None]
        import polars as pl

        return [pl.col(node.column).is_in(pl.Series(node.values).implode())]
