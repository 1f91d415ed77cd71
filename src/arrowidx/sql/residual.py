"""The part of a WHERE clause evaluated on the rows read: Polars expressions with DuckDB's
meaning, and the errors DuckDB raises for the values it evaluates."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .errors import WhereError
from .to_polars import PolarsLowering, run
from .tree import Node, columns


class Residual:
    """The conjuncts evaluated on the rows read: :meth:`mask` of a batch holding
    :attr:`columns` (TRUE where every conjunct is TRUE). A value DuckDB cannot evaluate (a
    string that does not convert, a division by zero, an overflow) raises
    :class:`WhereError`, for the rows read only: an index may have skipped the row that
    would raise, as pyarrow's own kernels raise only for the rows they read."""

    def __init__(self, nodes: list[Node], text: str, interface: str = "WHERE", zone: str | None = None):
        self.nodes = duckdb_order(nodes)
        self.text = text
        self.interface = interface
        self.zone = zone
        self.columns = sorted({c for n in nodes for c in columns(n)})
        self._built = None

    def _build(self):
        if self._built is None:
            try:
                import polars  # noqa: F401
            except ImportError:
                raise WhereError(f"{self.interface}: evaluating {self.text!r} needs Polars (pip install polars)") from None
            lowering = PolarsLowering(self.zone, text_of=_text_of)
            out = None
            for node in self.nodes:  # each conjunct only where the ones before are TRUE (DuckDB's filter)
                reach = None if out is None else out.fill_null(False)
                e = lowering.lower(node, reach, True)
                out = e if out is None else out & e
            self._built = (out, lowering.checks)
        return self._built

    def expression(self):
        """The Polars expression (built on first use)."""
        return self._build()[0]

    def mask(self, batch: pa.RecordBatch | pa.Table) -> pa.BooleanArray:
        """TRUE where the residual is TRUE (NULL and FALSE are not selected)."""
        import polars as pl

        n = batch.num_rows
        if not n:
            return pa.array([], pa.bool_())
        expr, checks = self._build()
        frame = pl.from_arrow(batch.select(self.columns)) if self.columns else pl.DataFrame({"_": pl.zeros(n, eager=True)})
        if not isinstance(frame, pl.DataFrame):
            frame = frame.to_frame()
        try:
            result = run(frame, [expr.alias("_keep"), *(c.cond.any().alias(f"_e{i}") for i, c in enumerate(checks))])
            for i, c in enumerate(checks):
                if result[f"_e{i}"][0]:
                    shown = run(frame, [c.shown.filter(c.cond).first().cast(pl.String)]).item() if c.shown is not None else None
                    raise WhereError(f"{self.interface}: {c.message.replace('{value}', _shown(shown, c))} (in {self.text})", "value")
            keep = result["_keep"]
        except pl.exceptions.PolarsError as e:
            raise WhereError(f"{self.interface}: {self.text}: {str(e).splitlines()[0]}", "value") from None
        except BaseException as e:  # Polars panics (a pyo3 PanicException is no Exception)
            if type(e).__name__ != "PanicException":
                raise
            raise WhereError(f"{self.interface}: {self.text}: cannot evaluate it ({str(e).splitlines()[0][:120]})", "value") from None
        if keep.len() != n:  # a constant: one value for every row
            keep = pl.repeat(keep[0], n, eager=True, dtype=pl.Boolean)
        return pc.fill_null(keep.to_arrow().cast(pa.bool_()), False)

    def __repr__(self) -> str:
        return f"Residual({self.text!r})"


def _shown(value, check) -> str:
    if isinstance(value, str) and check.quote:
        return "'" + value.replace("'", "''") + "'"
    return "NULL" if value is None else str(value)


def _text_of(node: Node) -> str:
    from .fold import sql_literal
    from .tree import Column, Constant

    if isinstance(node, Column):
        return node.name
    if isinstance(node, Constant):
        return sql_literal(node)
    return "the expression"


# -- the order DuckDB evaluates conjuncts in ----------------------------------------------------------


def duckdb_order(nodes: list[Node]) -> list[Node]:
    """Conjuncts in the order DuckDB evaluates them, which decides the rows a conjunct that can
    raise sees: those that cannot raise first (DuckDB pushes them below the others), then
    those that can, in the order DuckDB's FilterCombiner gives them back: first those it
    cannot combine (IS [NOT] DISTINCT FROM, IS NULL, OR, NOT, ...), as written, then the
    comparisons of an expression with a constant (or two expressions equal), grouped by
    expression in the order the expressions first appear."""
    from .tree import COMPARISONS, Call, Constant, key

    def combined(n) -> object:
        if not (isinstance(n, Call) and n.op in COMPARISONS and len(n.args) == 2):
            return None
        a, b = n.args
        if isinstance(a, Constant) != isinstance(b, Constant):
            return key(b if isinstance(a, Constant) else a)
        if n.op == "=" and not isinstance(a, Constant):
            return key(a)
        return None

    throwing = [n for n in nodes if can_throw(n)]
    groups: dict = {}
    for n in throwing:
        k = combined(n)
        if k is not None:
            groups.setdefault(k, []).append(n)
    rest = [n for n in throwing if combined(n) is None]
    return [n for n in nodes if not can_throw(n)] + rest + [n for g in groups.values() for n in g]


# DuckDB 2.0.1's functions that can raise (FunctionErrors), as its filter pushdown shows: the
# date parts of a date or timestamp from year down to day, week and weekday (of a
# TIMESTAMPTZ, every part), abs, left and right, round of a DECIMAL, arithmetic except
# DOUBLE division and DECIMAL addition, subtraction and negation
_THROWING = {"*", "//", "%", "abs", "like_error", "left", "right", "year", "month", "day", "quarter", "dayofweek", "dayofyear", "week",
             "isodow", "date_trunc"}  # fmt: skip
_ZONED_THROWING = {"hour", "minute", "second", "millisecond", "microsecond", "epoch"}


def can_throw(node: Node) -> bool:
    """DuckDB's Expression::CanThrow: a function that can raise or a cast that can fail
    (BoundCastExpression::CastCanThrow), anywhere in the tree."""
    from .tree import Call, Failure

    if isinstance(node, Failure):
        return True
    if not isinstance(node, Call):
        return False
    op, args = node.op, node.args
    if op in _THROWING or (op == "like" and node.extra[1] is not None):
        return True
    if op in _ZONED_THROWING and args and args[0].type.zoned:
        return True
    if op in ("+", "-", "neg") and (node.type.id != "DECIMAL" or (node.extra and node.extra.get("check"))):
        return True
    if op == "round" and args[0].type.id == "DECIMAL":
        return True
    if op == "regexp" and not _regexp_rewritten(*node.extra):
        return True
    if op == "cast" and not node.extra[0] and _cast_can_throw(args[0].type, node.type):
        return True
    return any(can_throw(a) for a in args)


def _cast_can_throw(frm, to) -> bool:
    from .types import int_range, try_max_type

    if frm == to or to.id == "VARCHAR":
        return False
    if frm.id == "VARCHAR":
        return True
    if to.id == "DECIMAL":  # unless every value fits
        if frm.integral:
            lo, hi = int_range(frm.id)
            return max(abs(lo), hi) >= 10 ** (to.width - to.scale)
        return not (frm.id == "DECIMAL" and to.scale >= frm.scale and to.width - to.scale >= frm.width - frm.scale)
    if to.stamp:  # DATE or a timestamp to a timestamp: only across a time zone
        return frm.zoned != to.zoned if frm.stamp else frm.id != "DATE"
    if frm.stamp and frm.zoned and to.id == "DATE":
        return True
    return try_max_type(frm, to) != to


_META = set(".^$|?*+()[]{}\\")


def _regexp_rewritten(pattern: str, options: str) -> bool:
    """Whether DuckDB's RegexOptimizationRule turns ``regexp_matches(x, pattern)`` into
    contains / prefix / suffix / LIKE, which cannot raise (regexp_matches can): a plain
    literal, or one anchored with ``^`` / ``$`` that has no ``%`` or ``_`` (RE2's ``.`` does
    not match a newline, so a pattern with ``.`` stays a regular expression)."""
    if "i" in options.replace("c", "") and options.rfind("i") > options.rfind("c"):
        return False
    body, begin, end = pattern, False, False
    if body.startswith("^"):
        body, begin = body[1:], True
    if body.endswith("$") and not body.endswith("\\$"):
        body, end = body[:-1], True
    literal, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) and not body[i + 1].isalnum():
            literal.append(body[i + 1])
            i += 2
        elif ch == "[" and i + 2 < len(body) and body[i + 2] == "]" and body[i + 1] not in _META and body[i + 1] != "^":
            literal.append(body[i + 1])
            i += 3
        elif ch in _META:
            return False
        else:
            literal.append(ch)
            i += 1
    text = "".join(literal)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return False
    if not begin and not end:
        return text != ""
    return "%" not in text and "_" not in text
