"""The bound predicate tree: typed nodes over a schema, and the one visitor base the
lowerings (:mod:`.to_arrow`, :mod:`.to_polars`) and the rewrites (:mod:`.fold`) derive from.

Every node has its final SQL type (:class:`~.types.SqlType`): the binder has already put in
the casts DuckDB puts in, so a lowering never decides a type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .types import BOOLEAN, SqlType


class Node:
    type: SqlType
    pos: int = -1  # where in the text (for carets)


@dataclass(eq=False)
class Column(Node):
    name: str
    type: SqlType
    pos: int = -1


@dataclass(eq=False)
class Constant(Node):
    """A value of ``type`` (see :mod:`.values` for how each type's values are held).
    ``literal``: written as a literal in the text (DuckDB types such constants as
    INTEGER_LITERAL / STRING_LITERAL while binding); ``text``: its spelling, for messages."""

    value: Any
    type: SqlType
    literal: bool = False
    pos: int = -1
    text: str = ""
    reads: bool = False  # folded from an expression that reads columns (DuckDB binds that expression, no constant)

    @property
    def is_null(self) -> bool:
        return self.value is None


@dataclass(eq=False)
class Failure(Node):
    """A constant whose evaluation raises (``CAST('x' AS INT)``, ``1 // 0``): DuckDB raises
    when it evaluates it; arrowidx raises when the text is compiled if every row evaluates
    it, else when a row read does."""

    message: str
    type: SqlType
    pos: int = -1
    planned: bool = False  # DuckDB raises when it plans the filter (an invalid regular expression)


@dataclass(eq=False)
class Call(Node):
    """An operation: ``op`` names it, ``extra`` holds its constants (a cast's target, a
    LIKE pattern, a date part)."""

    op: str
    args: tuple
    type: SqlType
    extra: Any = None
    pos: int = -1


COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "distinct": "distinct", "not_distinct": "not_distinct"}
NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
ARITHMETIC = ("+", "-", "*", "/", "//", "%")

# what a visitor's method is called for each op (anything else: ``function``)
_METHOD = {
    **{op: "comparison" for op in COMPARISONS},
    **{op: "arithmetic" for op in ARITHMETIC},
    "distinct": "distinct", "not_distinct": "distinct", "and": "conjunction", "or": "conjunction", "not": "negation",
    "is_null": "is_null", "is_not_null": "is_null", "in": "in_list", "like": "like", "regexp": "regexp",
    "cast": "cast", "case": "case", "coalesce": "coalesce", "neg": "negate_number",
}  # fmt: skip

R = TypeVar("R")


class Visitor(Generic[R]):
    """Dispatch on a node's kind: ``column``, ``constant``, ``failure``, and for a call the
    method its op names (``comparison``, ``arithmetic``, ``conjunction``, ``negation``,
    ``distinct``, ``is_null``, ``in_list``, ``like``, ``regexp``, ``cast``, ``case``,
    ``coalesce``, ``negate_number``; every other function goes to ``function``). A method a
    subclass does not define falls back to :meth:`default`."""

    def visit(self, node: Node, *args, **kwargs) -> R:
        if isinstance(node, Column):
            return self.column(node, *args, **kwargs)
        if isinstance(node, Constant):
            return self.constant(node, *args, **kwargs)
        if isinstance(node, Failure):
            return self.failure(node, *args, **kwargs)
        method = getattr(self, _METHOD.get(node.op, "function"))
        return method(node, *args, **kwargs)

    def default(self, node: Node, *args, **kwargs) -> R:
        raise NotImplementedError(f"{type(self).__name__} has no rule for {getattr(node, 'op', type(node).__name__)}")

    def column(self, node: Column, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def constant(self, node: Constant, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def failure(self, node: Failure, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def comparison(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def arithmetic(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def distinct(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def conjunction(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def negation(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def is_null(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def in_list(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def like(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def regexp(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def cast(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def case(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def coalesce(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def negate_number(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)

    def function(self, node: Call, *args, **kwargs) -> R:
        return self.default(node, *args, **kwargs)


def columns(node: Node) -> set[str]:
    """The columns a tree reads."""
    if isinstance(node, Column):
        return {node.name}
    if isinstance(node, Call):
        out: set[str] = set()
        for a in node.args:
            out |= columns(a)
        return out
    return set()


def is_constant(node: Node) -> bool:
    return isinstance(node, (Constant, Failure))


def boolean(op: str, *args: Node, extra: Any = None, pos: int = -1) -> Call:
    return Call(op, tuple(args), BOOLEAN, extra, pos)


def key(node: Node):
    """A node's structure, for telling equal expressions apart from their positions."""
    if isinstance(node, Column):
        return ("col", node.name)
    if isinstance(node, Constant):
        return ("const", node.type, repr(node.value))
    if isinstance(node, Failure):
        return ("fail", node.message)
    return (node.op, node.type, repr(node.extra), tuple(key(a) for a in node.args))


def walk(node: Node):
    yield node
    if isinstance(node, Call):
        for a in node.args:
            yield from walk(a)
