"""SQL ``WHERE`` text -> a filter with DuckDB's meaning, exactly: the one place SQL becomes a
filter.

:func:`compile_where` runs four stages, one module each:

* :mod:`.parse`: the text -> a sqlglot tree (DuckDB's dialect plus Spark's spellings);
* :mod:`.bind`: names resolved, every node typed with DuckDB's rules (:mod:`.types`,
  :mod:`.functions`: implicit casts, literal types, overloads), constants folded and
  DuckDB's optimizer rewrites applied (:mod:`.fold`): the bound tree (:mod:`.tree`);
* :mod:`.to_arrow`: the conjuncts that have an exact ``pyarrow.compute.Expression`` (column
  versus constant comparisons, IN, IS NULL, LIKE, ...) become the **pushdown**, which the
  indexes and Parquet statistics prune with;
* :mod:`.to_polars`: the other conjuncts become the **residual** (:class:`Residual`),
  evaluated with Polars on the rows the pushdown reads.

The meaning is DuckDB's (the version the tests compare with: see docs/guide.md), including
NULL's three-valued logic, NaN as the largest float equal to itself, integer literals that
take the other side's type, 64-bit arithmetic that raises on overflow, and the errors DuckDB
raises for particular values (they come only from the rows read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import WhereError, where_error
from .parse import conjunct_texts, conjuncts, parse, simple_where, sql_text

if TYPE_CHECKING:  # (the bound tree and the residual load with the first clause past the shortcut)
    from .residual import Residual
    from .tree import Failure, Node

__all__ = ["Residual", "Where", "WhereError", "compile_where", "parse_where", "where_error"]

_simple_where = simple_where  # (tests replace it to compare both front ends)


def __getattr__(name: str) -> Any:
    # a plain comparison (``--where 'id = 5'``) is compiled by the shortcut of :mod:`.parse`:
    # its process never loads the bound tree, the residual or its Polars lowering
    if name == "Residual":
        from .residual import Residual

        return Residual
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Where:
    """A WHERE clause split: ``pushdown`` (a pc.Expression or None: every row) prunes and is
    read; ``residual`` (or None) is then applied to the rows read."""

    def __init__(self, pushdown: pc.Expression | None, residual: Residual | None, text: str):
        self.pushdown, self.residual, self.text = pushdown, residual, text

    def __repr__(self) -> str:
        return f"Where(pushdown={self.pushdown!r}, residual={self.residual!r})"


def compile_where(
    text: str, schema: pa.Schema, *, interface: str = "WHERE", pushdown: bool = True, time_zone: str | None = None
) -> Where:
    """Parse, bind and split a SQL ``WHERE`` clause (see the module docstring).

    Raises :class:`WhereError` for text that is not valid SQL for ``schema``: a syntax
    error, an unknown column or function, a type error, or a constant DuckDB cannot evaluate
    on any row (the message names ``interface``, says what to write, and shows a caret under
    the offending token). ``pushdown=False`` puts every conjunct in the residual (tests check
    both evaluators). ``time_zone``: the session's zone, as Spark's and DuckDB's sessions have
    one: a naive time on a column with a zone names that wall time there, and dates, hours,
    ... of zoned values are taken there (None: the column's own zone).
    """
    if not isinstance(text, str) or not text.strip():
        raise WhereError(f"{interface}: the condition is empty; write one, e.g. \"status = 'paid'\"")
    if pushdown:
        simple = _simple_where(text, schema)
        if simple is not None:
            return Where(simple, None, text)
    from .bind import Binder
    from .fold import rewrite_in_lists
    from .residual import Residual, can_throw, duckdb_order
    from .to_arrow import ArrowLowering, NoArrow
    from .tree import Constant

    tree, lists, shifts, lifted = parse(text, interface)
    binder = Binder(text, schema, interface, lists, shifts, time_zone)
    binder.lifted = lifted
    arrow = ArrowLowering(schema)
    pushed, residual, texts = [], [], []
    bound = []
    parts = conjuncts(tree)
    own = conjunct_texts(text, lifted, shifts, len(parts))
    shown = {id(p): (own[i] if own else sql_text(p)) for i, p in enumerate(parts)}
    for part in parts:
        try:
            node = binder.condition(part)
        except RecursionError:
            raise binder.error("the condition is nested too deeply") from None
        bound.extend((part, rewrite_in_lists(c)) for c in _flatten(node) if not (isinstance(c, Constant) and c.value is True))
    if any(isinstance(c, Constant) and c.value is False for _, c in bound) or _contradiction([c for _, c in bound]):
        return Where(pc.scalar(False), None, text)  # no row: nothing is evaluated (DuckDB's FilterCombiner)
    # a NULL conjunct selects nothing, after DuckDB has evaluated the others on the rows read
    bound = [(p, c) for p, c in bound if not (isinstance(c, Constant) and c.value is None)] + [
        (p, c) for p, c in bound if isinstance(c, Constant) and c.value is None
    ]
    for _, c in bound:
        planned = _planned_failure(c)
        if planned is not None:
            raise binder.error(planned.message, planned.pos)
    lowered: dict = {}
    for _, c in bound:
        failure = unconditional_failure(c)
        if failure is not None:
            raise binder.error(failure.message, failure.pos, kind="constant")
        if pushdown and not (isinstance(c, Constant) and c.value is None):
            try:
                lowered[id(c)] = arrow.lower(c)
            except (NoArrow, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
                pass
    # a conjunct DuckDB counts as one that can raise is evaluated after the ones that can raise
    # before it in DuckDB's order: kept out of the pushdown behind one the residual evaluates
    behind = False
    for c in duckdb_order([c for _, c in bound]):
        if can_throw(c):
            if behind:
                lowered.pop(id(c), None)
            behind = behind or id(c) not in lowered
    for part, c in bound:
        if id(c) in lowered:
            pushed.append(lowered[id(c)])
            continue
        residual.append(c)
        if not texts or texts[-1] is not part:
            texts.append(part)
    expr = None
    for p in pushed:
        expr = p if expr is None else expr & p
    # (the user's own text: the residual's conjuncts, or all of it where they cannot be told apart)
    shown_text = " AND ".join(shown[id(t)] for t in texts) if own else text.strip()
    rest = Residual(residual, shown_text, interface, time_zone) if residual else None
    return Where(expr, rest, text)


def _contradiction(nodes: list[Node]) -> bool:
    """Whether conjuncts compare one expression with constants that no value satisfies
    (``x BETWEEN 5 AND 3``, ``x = 1 AND x = 2``): DuckDB's FilterCombiner then reads nothing."""
    import math

    from .tree import Call, Constant, key

    def order(value):
        return (1, 0) if isinstance(value, float) and math.isnan(value) else (0, value)

    ranges: dict = {}
    for n in nodes:
        if not (isinstance(n, Call) and n.op in ("=", "<", "<=", ">", ">=") and len(n.args) == 2):
            continue
        a, b = n.args
        op = n.op
        if isinstance(a, Constant) and not isinstance(b, Constant):
            a, b, op = b, a, {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
        if isinstance(a, Constant) or not isinstance(b, Constant) or b.value is None:
            continue
        try:
            v = order(b.value)
            lo, hi = ranges.get(key(a), (None, None))
            if op in ("=", ">", ">="):
                bound = (v, op == ">")
                lo = bound if lo is None or bound > lo else lo
            if op in ("=", "<", "<="):
                bound = (v, op != "<")
                hi = bound if hi is None or bound < hi else hi
            ranges[key(a)] = (lo, hi)
            if lo is not None and hi is not None and (lo[0] > hi[0] or (lo[0] == hi[0] and (lo[1] or not hi[1]))):
                return True
        except TypeError:
            continue
    return False


def _flatten(node: Node) -> list[Node]:
    from .tree import Call

    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Call) and n.op == "and":
            stack.extend(reversed(n.args))
        else:
            out.append(n)
    return out


def _planned_failure(node: Node) -> Failure | None:
    from .tree import Call, Failure

    if isinstance(node, Failure):
        return node if node.planned else None
    for a in node.args if isinstance(node, Call) else ():
        found = _planned_failure(a)
        if found is not None:
            return found
    return None


def unconditional_failure(node: Node, select: bool = True) -> Failure | None:
    """A constant that raises and that every row evaluates (not only the rows reaching a
    CASE branch, a later COALESCE argument, or the right side of AND/OR in a filter)."""
    from .tree import Call, Failure

    if isinstance(node, Failure):
        return node
    if not isinstance(node, Call):
        return None
    op, args = node.op, node.args
    if op in ("and", "or"):
        first = unconditional_failure(args[0], select)
        return first if first is not None or select else unconditional_failure(args[1], select)
    if op == "case":
        return unconditional_failure(args[0], True) if node.extra else unconditional_failure(args[-1], False)
    if op == "coalesce":
        return unconditional_failure(args[0], False)
    for a in args:
        found = unconditional_failure(a, False)
        if found is not None:
            return found
    return None


def parse_where(text: str, schema: pa.Schema, *, interface: str = "WHERE") -> pc.Expression:
    """The ``pc.Expression`` selecting exactly the rows SQL selects for ``WHERE text``.

    For clauses with a part pyarrow cannot express exactly (a function, arithmetic, ...),
    raises :class:`WhereError`: pass the SQL text itself as ``filter=`` instead (arrowidx then
    evaluates that part on the rows read, see :func:`compile_where`).
    """
    where = compile_where(text, schema, interface=interface)
    if where.residual is not None:
        raise WhereError(
            f"{interface}: {text!r} has no pyarrow Expression with SQL's meaning (it uses functions, arithmetic"
            " or casts of columns); pass the text itself as filter=\"...\", which evaluates that part on the rows read"
        )
    return where.pushdown if where.pushdown is not None else pc.scalar(True)
