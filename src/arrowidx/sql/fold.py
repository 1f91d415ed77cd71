"""Constants and DuckDB's rewrites: constant folding, and the optimizer rules that change
what DuckDB evaluates (so which values can raise): moving constants across a comparison
(``x + 1 > 5`` -> ``x > 4``), ``x + 0`` -> ``x``, ``x AND FALSE`` -> ``FALSE``, a comparison
with NULL -> NULL, CASE and COALESCE branches that are never taken.

A constant whose evaluation raises becomes a :class:`~.tree.Failure` (raised when the text is
compiled if every row evaluates it, else when a row read reaches it).
"""

from __future__ import annotations

import datetime as _dt
import re

import pyarrow as pa
import pyarrow.compute as pc

from . import values as V
from .tree import COMPARISONS, FLIP, Call, Column, Constant, Failure, Node, boolean, columns
from .types import (
    BOOLEAN,
    DATE,
    NULL,
    SIGNED,
    UNSIGNED,
    SqlType,
    comparison_type,
    fits,
    int_range,
    literal_type,
    to_arrow,
    type_name,
)

LAZY = ("and", "or", "case", "coalesce")


def sql_literal(node: Constant) -> str:
    """A constant as SQL text (for messages)."""
    if node.value is None:
        return "NULL"
    try:
        text = V.to_text(node.value, node.type)
    except (V.CastError, TypeError, ValueError):
        return repr(node.value)
    if node.type.id in ("VARCHAR", "BLOB"):
        return "'" + text.replace("'", "''") + "'"
    if node.type.numeric or node.type.id == "BOOLEAN":
        return text
    return f"{type_name(node.type)} '{text}'"


# -- what casts exist -------------------------------------------------------------------------------

_VALUE_TYPES = {"BOOLEAN", "VARCHAR", "BLOB", "DATE", "FLOAT", "DOUBLE", "DECIMAL", "TINYINT", "SMALLINT", "INTEGER", "BIGINT",
                "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP",
                "TIMESTAMP_NS", "TIMESTAMPTZ", "TIMESTAMPTZ_NS"}  # fmt: skip


def castable(frm: SqlType, to: SqlType) -> bool:
    """Whether arrowidx evaluates CAST(``frm`` AS ``to``) (DuckDB has the cast and it is one
    of the types a filter computes with)."""
    f = literal_type(frm.value).id if frm.id == "INTEGER_LITERAL" else ("VARCHAR" if frm.id == "STRING_LITERAL" else frm.id)
    t = to.id
    if f == t or f == "NULL":
        return t in _VALUE_TYPES or t == "NULL" or f == t
    if f not in _VALUE_TYPES or t not in _VALUE_TYPES:
        return False
    if f == "VARCHAR" or t == "VARCHAR":
        return True
    numeric = set(frm.numeric and [f] or []) | ({"BOOLEAN"} if f == "BOOLEAN" else set())
    if numeric and (to.numeric or t == "BOOLEAN"):
        return True
    if frm.temporal and to.temporal:
        return not (f in ("TIMESTAMP_NS", "TIMESTAMPTZ_NS") and t == "TIMESTAMP_S")
    return False


# -- folding ----------------------------------------------------------------------------------------


def fold(node: Node) -> Node:
    """``node`` computed now when every argument is a constant (a Failure if that raises)."""
    if not isinstance(node, Call):
        return node
    if node.op not in LAZY:
        for a in node.args:
            if isinstance(a, Failure):
                return Failure(a.message, node.type, a.pos if a.pos >= 0 else node.pos, a.planned)
    if not all(isinstance(a, Constant) for a in node.args) or node.op in ("in",) and node.extra is not None and not node.args:
        return node
    if node.op == "cast":
        (arg,) = node.args
        safe, zone = node.extra
        try:
            return Constant(V.cast_value(arg.value, arg.type, node.type, zone=zone), node.type, False, node.pos)
        except V.CastError as err:
            if safe:
                return Constant(None, node.type, False, node.pos)
            return Failure(str(err), node.type, node.pos)
    return evaluate(node)


def evaluate(node: Call, zone: str | None = None) -> Node:
    """A call on constants, computed by the Polars lowering on one row."""
    import polars as pl

    from .polars_casts import stamp_ints
    from .to_polars import PolarsLowering, run

    lowering = PolarsLowering(zone)
    expr = lowering.lower(node, None, True)
    t = node.type
    if t.stamp:
        expr = stamp_ints(expr, t)
    elif t.id == "DATE":
        expr = expr.cast(pl.Int32)
    columns = [expr.alias("v")] + [c.cond.alias(f"e{i}") for i, c in enumerate(lowering.checks)]
    try:
        frame = run(pl.DataFrame({"_": [0]}), columns)
    except pl.exceptions.PolarsError:
        return node  # left to the rows (it is evaluated there with the same rules)
    except BaseException as e:  # a Polars panic (a pyo3 PanicException is no Exception)
        if type(e).__name__ != "PanicException":
            raise
        return node
    for i, c in enumerate(lowering.checks):
        if frame[f"e{i}"][0]:
            shown = run(pl.DataFrame({"_": [0]}), [c.shown.cast(pl.String)]).item() if c.shown is not None else None
            return Failure(c.message.replace("{value}", repr(shown) if c.quote else str(shown)), t, node.pos)
    value = frame["v"][0]
    if isinstance(value, float) and t.id == "FLOAT":
        value = V.float32(value)
    if t.id == "DECIMAL" or t.id == "HUGEINT":
        value = None if value is None else int(value)
    return Constant(value, t, False, node.pos)


# -- DuckDB's rewrites ---------------------------------------------------------------------------------


def _is_true(n: Node) -> bool:
    return isinstance(n, Constant) and n.value is True


def _is_false(n: Node) -> bool:
    return isinstance(n, Constant) and n.value is False


def _is_null(n: Node) -> bool:
    return isinstance(n, Constant) and n.value is None


def plain(node: Node) -> Node:
    """``node`` as an operand DuckDB does not type as a literal (a folded constant)."""
    if isinstance(node, Constant) and node.literal:
        return Constant(node.value, node.type, False, node.pos, node.text)
    return node


# operations that are NULL when any argument is NULL: DuckDB answers NULL for a constant NULL
# argument without evaluating the others
_NOT_STRICT = {"and", "or", "not", "is_null", "is_not_null", "distinct", "not_distinct", "case", "coalesce", "in", "constant_or_null"}


def simplify(node: Node) -> Node:
    """DuckDB's optimizer rules that decide what is evaluated (then folding)."""
    if not isinstance(node, Call):
        return node
    nulls = [a for a in node.args if _is_null(a)]
    if node.op not in _NOT_STRICT and not (node.op == "concat" and node.extra) and nulls:
        # DuckDB's function binder makes a function of a NULL argument a NULL constant (typed as
        # a literal: ``lower(NULL) > d`` compares a string literal with a date), unless the
        # argument reads columns (``left(CASE 'a' WHEN 'b' THEN s END, 1)``)
        bound = any(not a.reads for a in nulls)
        return Constant(None, node.type, bound and node.op not in COMPARISONS and node.op != "cast", node.pos, reads=not bound)
    out = plain(_simplify(node))
    if isinstance(out, Constant) and node.op == "case" and not out.reads and columns(node):
        out = Constant(out.value, out.type, False, out.pos, out.text, reads=True)
    return out


def _simplify(node: Call) -> Node:
    op, args = node.op, node.args
    if op in ("and", "or"):
        a, b = args
        absorbing, neutral = (_is_false, _is_true) if op == "and" else (_is_true, _is_false)
        if absorbing(a) or absorbing(b):
            return Constant(op == "or", BOOLEAN, False, node.pos)
        if neutral(a):
            return b
        if neutral(b):
            return a
        if isinstance(a, Constant) and isinstance(b, Constant):
            return Constant(None, BOOLEAN, False, node.pos)  # NULL with NULL
        return node
    if op == "not":
        (a,) = args
        if isinstance(a, Constant):
            return Constant(None if a.value is None else not a.value, BOOLEAN, False, node.pos)
        return fold(node)
    if op in COMPARISONS or op in ("distinct", "not_distinct"):
        a, b = args
        if op in COMPARISONS and (_is_null(a) or _is_null(b)):
            return Constant(None, BOOLEAN, False, node.pos)
        if op in ("distinct", "not_distinct") and (_is_null(a) or _is_null(b)) and not (isinstance(a, Constant) and isinstance(b, Constant)):
            other = b if _is_null(a) else a
            return simplify(boolean("is_not_null" if op == "distinct" else "is_null", other, pos=node.pos))
        moved = uncast(node) or move_constants(node) or move_unary_minus(node)
        if moved is not None:
            return simplify(moved)
        return fold(node)
    if op in ("is_null", "is_not_null"):
        (a,) = args
        if isinstance(a, Constant):
            return Constant((a.value is None) == (op == "is_null"), BOOLEAN, False, node.pos)
        return node
    if op == "in":
        if _is_null(args[0]):
            return Constant(None, BOOLEAN, False, node.pos)
        return fold(node)
    if op == "case":
        n = node.extra
        conds, values = list(args[:n]), list(args[n:])
        keep_c, keep_v = [], []
        for c, v in zip(conds, values):
            if _is_false(c) or _is_null(c):
                continue
            if _is_true(c) and not keep_c:
                return v
            keep_c.append(c)
            keep_v.append(v)
            if _is_true(c):
                return Call("case", (*keep_c, *keep_v[:-1], v), node.type, len(keep_c) - 1, node.pos) if len(keep_c) > 1 else v
        if not keep_c:
            return values[-1]
        return Call("case", (*keep_c, *keep_v, values[-1]), node.type, len(keep_c), node.pos)
    return fold(node)


def _chain_link(node: Node, op: str) -> bool:
    return isinstance(node, Call) and node.op == op and node.type.integral and len(node.args) == 2 and all(a.type.integral for a in node.args)


def _foldable(node: Node) -> bool:
    return not isinstance(node, Column) and all(_foldable(a) for a in getattr(node, "args", ()))


def order_constants(node: Call) -> Node:
    """DuckDB's ConstantOrderNormalizationRule: a chain of integer ``+`` (or ``*``) is rebuilt
    with its constants first (so they fold into one); a lone constant of a ``*`` chain goes
    last. ``(b + 9223372036854775807) + -10`` is then ``9223372036854775797 + b``: which
    values overflow follows the rebuilt chain."""
    if not _chain_link(node, node.op) or node.op not in ("+", "*"):
        return node
    leaves: list[Node] = []

    def collect(n: Node) -> None:
        if _chain_link(n, node.op):
            for a in n.args:
                collect(a)
        else:
            leaves.append(n)

    collect(node)
    constants = [i for i, leaf in enumerate(leaves) if _foldable(leaf)]
    if not constants:
        return node
    if len(constants) == 1:
        if node.op != "*" or constants[-1] == len(leaves) - 1:
            return node
        ordered = [x for x in leaves if x is not leaves[constants[0]]] + [leaves[constants[0]]]
    else:
        if constants[-1] == len(constants) - 1:
            return node
        ordered = [leaves[i] for i in constants] + [x for i, x in enumerate(leaves) if i not in constants]
    built = ordered[0]
    for leaf in ordered[1:]:
        built = rewrite_arithmetic(Call(node.op, (built, leaf), node.type, node.extra, node.pos))
    return built


def rewrite_arithmetic(node: Call) -> Node:
    """An arithmetic call as DuckDB's expression rewriter leaves it."""
    node = order_constants(node)
    return simplify(simplify_arithmetic(node)) if isinstance(node, Call) else node


def simplify_arithmetic(node: Call) -> Node:
    """DuckDB's ArithmeticSimplificationRule (integer results): x + 0, 0 + x, x - 0, x * 1,
    1 * x, x // 1 are x."""
    if node.op not in ("+", "-", "*", "//") or not node.type.integral or len(node.args) != 2:
        return node
    a, b = node.args
    for const, other, right in ((b, a, True), (a, b, False)):
        if not isinstance(const, Constant) or isinstance(other, Constant) or const.value is None:
            continue
        v = const.value
        if (node.op == "+" and v == 0) or (node.op == "-" and right and v == 0) or (node.op == "*" and v == 1) or (node.op == "//" and right and v == 1):
            return other
    return node


def invertible(frm: SqlType, to: SqlType) -> bool:
    """DuckDB's BoundCastExpression::CastIsInvertible."""
    ids = {frm.id, to.id}
    if ids & {"BOOLEAN", "DECIMAL"}:  # (DuckDB 2.0 keeps casts to and from DECIMAL)
        return False
    if frm.floating or to.floating:  # (2.0.1) an integer type the float holds exactly; a constant must come back unchanged
        exact = ("TINYINT", "SMALLINT", "UTINYINT", "USMALLINT") + (("INTEGER", "UINTEGER") if to.id == "DOUBLE" else ())
        return frm.id in exact and to.floating
    if frm.id == "DATE" or to.id == "DATE":  # only DATE -> TIMESTAMP, where a midnight comes back unchanged
        return frm.id == "DATE" and to.id == "TIMESTAMP"
    order = {"TIMESTAMP_S": 17, "TIMESTAMP_MS": 18, "TIMESTAMP": 19, "TIMESTAMP_NS": 20, "TIMESTAMPTZ": 32, "TIMESTAMPTZ_NS": 33}
    if frm.id in order:
        if to.id in ("TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"):
            return order[frm.id] <= order[to.id]
        if to.id in ("DATE", "TIME"):
            return False
        if to.id == "TIMESTAMPTZ":
            return frm.id == "TIMESTAMPTZ"
        if to.id == "TIMESTAMPTZ_NS":
            return frm.id in ("TIMESTAMPTZ", "TIMESTAMPTZ_NS")
    if frm.id == "VARCHAR":
        return False
    if to.id == "VARCHAR":
        return frm.id == "DATE" or frm.id in order or frm.id.startswith("TIME")
    if frm.id in SIGNED and to.id in UNSIGNED:
        return False
    if frm.integral and to.integral:  # (DuckDB 2.0 keeps narrowing casts, which can overflow)
        lo, hi = int_range(frm.id)
        tlo, thi = int_range(to.id)
        return tlo <= lo and hi <= thi
    return True


def uncast(cmp: Call) -> Node | None:
    """DuckDB's ComparisonSimplificationRule: ``CAST(x AS T) op c`` -> ``x op CAST(c AS S)`` where
    both casts are invertible and ``c`` converts (a DATE against a TIMESTAMP at midnight too)."""
    a, b = cmp.args
    if isinstance(a, Call) and a.op == "cast" and isinstance(b, Constant):
        cast, const, left = a, b, True
    elif isinstance(b, Call) and b.op == "cast" and isinstance(a, Constant):
        cast, const, left = b, a, False
    else:
        return None
    if cast.extra[0] or const.value is None:
        return None
    (child,) = cast.args
    s, t = child.type, cast.type
    if not invertible(s, t):
        return None
    try:
        value = V.cast_value(const.value, t, s, zone=cast.extra[1])
    except V.CastError:
        return None
    if not invertible(t, s):  # then only where the constant comes back unchanged
        try:
            if V.cast_value(value, s, t, zone=cast.extra[1]) != const.value:
                return None
        except V.CastError:
            return None
    new = Constant(value, s, False, const.pos)
    return Call(cmp.op, (child, new) if left else (new, child), BOOLEAN, cmp.extra, cmp.pos)


def move_unary_minus(cmp: Call) -> Node | None:
    """DuckDB's MoveUnaryMinusRule: ``-x op c`` -> ``x flip(op) -c`` (signed numbers; a FLOAT or
    DOUBLE column keeps NaN where it was: ``OR isnan(x)`` / ``AND NOT isnan(x)``)."""
    from .tree import Column

    a, b = cmp.args
    if isinstance(a, Call) and a.op == "neg" and isinstance(b, Constant):
        neg, outer, op = a, b, cmp.op
    elif isinstance(b, Call) and b.op == "neg" and isinstance(a, Constant):
        neg, outer, op = b, a, FLIP.get(cmp.op, cmp.op)
    else:
        return None
    t = neg.type
    if not t.numeric or t.id.startswith("U"):
        return None
    (child,) = neg.args
    if outer.value is None:
        return None if cmp.op in ("distinct", "not_distinct") else Constant(None, BOOLEAN, False, cmp.pos)
    ordered = op in ("<", "<=", ">", ">=")
    flipped = FLIP.get(op, op)
    guard = None
    if outer.type.floating:
        if ordered:
            if not isinstance(child, Column):
                return None
            isnan = Call("isnan", (child,), BOOLEAN, None, cmp.pos)
            guard = ("or", isnan) if op in (">", ">=") else ("and", Call("not", (isnan,), BOOLEAN, None, cmp.pos))
        value = -outer.value
    elif outer.type.id == "DECIMAL":
        value = -outer.value
    else:
        value = -outer.value
        if not fits(value, outer.type.id):
            if op in ("=", "!="):
                return Call("constant_or_null", (child,), BOOLEAN, op == "!=", cmp.pos)
            return None
    moved = Call(flipped, (child, Constant(value, outer.type, False, outer.pos)), BOOLEAN, None, cmp.pos)
    if guard is not None:
        return Call(guard[0], (moved, guard[1]), BOOLEAN, None, cmp.pos)
    return moved


def move_constants(cmp: Call) -> Node | None:
    """DuckDB's MoveConstantsRule: ``x + c1 op c2`` -> ``x op c2 - c1`` (and ``-``, ``*``) on
    integers, where the moved constant fits the comparison's type."""
    a, b = cmp.args
    if isinstance(a, Constant) and isinstance(b, Call):
        outer, arith, flip = a, b, True
    elif isinstance(b, Constant) and isinstance(a, Call):
        outer, arith, flip = b, a, False
    else:
        return None
    if arith.op not in ("+", "-", "*") or not arith.type.integral or len(arith.args) != 2:
        return None
    x, y = arith.args
    if isinstance(y, Constant) and not isinstance(x, Constant):
        inner, child, child_left = y, x, True
    elif isinstance(x, Constant) and not isinstance(y, Constant):
        inner, child, child_left = x, y, False
    else:
        return None
    if not (inner.type.integral and child.type.integral and outer.type.integral):
        return None
    if inner.value is None or outer.value is None:
        return Constant(None, BOOLEAN, False, cmp.pos)
    op = FLIP[cmp.op] if flip else cmp.op  # as "arith op outer"
    o, i = outer.value, inner.value
    t = outer.type
    hmin, hmax = -(2**127), 2**127 - 1

    def constant_or_null(value: bool) -> Node:
        return Call("constant_or_null", (child,), BOOLEAN, value, cmp.pos)

    if arith.op == "+" or (arith.op == "-" and child_left):
        new = o - i if arith.op == "+" else o + i
        if not hmin <= new <= hmax:
            return None
        if not fits(new, t.id):
            return constant_or_null(False) if op == "=" else None
    elif arith.op == "-":  # c - x op o  ->  x flip(op) c - o
        new = i - o
        if not hmin <= new <= hmax:
            return None
        if not fits(new, t.id):
            return constant_or_null(False) if op == "=" else None
        op = FLIP[op]
    else:
        if i == 0:
            return None
        if (o == hmin and i == -1) or o % abs(i) != 0 or (o % i != 0):
            if op in ("=", "!="):
                return constant_or_null(op == "!=")
            return None
        if i < 0:
            op = FLIP[op]
        new = int(o / i) if abs(o) < 2**52 else (abs(o) // abs(i)) * (1 if (o < 0) == (i < 0) else -1)
        if not fits(new, t.id):
            return constant_or_null(False)
    return Call(op, (child, Constant(new, t, False, outer.pos)), BOOLEAN, None, cmp.pos)


# -- DuckDB's IN rewriter -----------------------------------------------------------------------------

# nodes whose children DuckDB 2.0.1's IN rewriter reaches only through the first one (a
# conjunction, CASE and its operators), unlike a function's or a comparison's (all of them)
_FIRST_ONLY = ("and", "or", "case", "coalesce", "not", "is_null", "is_not_null")


def rewrite_in_lists(node: Node, reached: bool = True) -> Node:
    """DuckDB 2.0.1's IN rewriter on one conjunct of a filter: ``x IN (a, b)`` it reaches
    becomes ``x = a OR x = b`` (evaluated lazily: ``b`` only for rows where ``x = a`` is not
    TRUE) when the list has at most four items or an item that is not a constant; every other
    IN list is evaluated whole (every item for every row that reaches it). It reaches the
    conjunct's own IN lists, but below a conjunction, CASE, COALESCE, NOT or IS NULL only the
    first operand's (``b OR x IN (...)`` keeps its list whole)."""
    if not isinstance(node, Call):
        return node
    if node.op == "in" and node.extra is None:
        arg, *items = (rewrite_in_lists(a, reached) for a in node.args)
        if reached and (len(items) <= 4 or not all(_foldable(i) for i in items)):
            if isinstance(arg, Constant) and arg.value is not None:  # (DuckDB folds the chain's constant comparisons)
                if any(isinstance(i, Constant) and _same(arg.value, i.value) for i in items):
                    return Constant(True, BOOLEAN, False, node.pos)
                items = [i for i in items if not isinstance(i, Constant) or i.value is None]
            chain = None
            for item in items:
                cmp = boolean("=", arg, item, pos=node.pos)
                chain = cmp if chain is None else boolean("or", chain, cmp, pos=node.pos)
            return chain
        return fold(Call("in", (arg, *items), BOOLEAN, None, node.pos))
    first_only = node.op in _FIRST_ONLY and node.extra != "between"
    args = tuple(rewrite_in_lists(a, reached and (i == 0 or not first_only)) for i, a in enumerate(node.args))
    if all(a is b for a, b in zip(args, node.args)):
        return node
    if node.op == "not" and isinstance(args[0], Constant):
        return Constant(None if args[0].value is None else not args[0].value, BOOLEAN, False, node.pos)
    return Call(node.op, args, node.type, node.extra, node.pos)


def _same(a, b) -> bool:
    import math

    if a is None or b is None:
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True  # (DuckDB: NaN equals NaN)
    return a == b


# -- LIKE, regular expressions ---------------------------------------------------------------------------


def like(arg: Node, pattern: Node, escape: Node | None, ilike: bool, pos: int) -> Node:
    if isinstance(pattern, Failure):
        return pattern
    if pattern.value is None or (escape is not None and escape.value is None):
        return Constant(None, BOOLEAN, False, pos)
    esc = escape.value if escape is not None else None
    if esc is not None and len(esc.encode()) > 1:
        return fold(Call("like_error", (arg,), BOOLEAN, "the ESCAPE string must be empty or one character", pos))
    esc = esc or None
    text = pattern.value
    if esc is not None:
        i = 0
        while i < len(text):
            if text[i] == esc:
                if i + 1 == len(text):  # (DuckDB's matcher raises on the strings it matches, not on NULL)
                    return fold(Call("like_error", (arg,), BOOLEAN, f"the LIKE pattern {text!r} ends with its escape character {esc!r}", pos))
                i += 2
            else:
                i += 1
    if ilike:
        text = pc.utf8_lower(pa.scalar(text)).as_py()
    return fold(Call("like", (arg,), BOOLEAN, (text, esc, ilike), pos))


def regexp(arg: Node, pattern: str, options: str, pos: int, binder) -> Node:
    import polars as pl

    if set(options) - set("ics"):
        raise binder.error(f"regexp_matches option {options!r} is not supported (use 'i' or 'c')", pos)
    try:
        pl.select(pl.lit("").str.contains(pattern))
    except pl.exceptions.PolarsError as err:
        reason = [line.strip() for line in str(err).strip().splitlines() if line.strip().startswith("error:")]
        # DuckDB compiles the pattern when it prepares the filter: an error whatever the rows,
        # unless a rewrite has dropped the call (``regexp_matches(s, '(') OR TRUE``)
        return Failure(f"invalid regular expression {pattern!r}: {reason[-1][7:] if reason else 'cannot read it'}", BOOLEAN, pos, True)
    return fold(Call("regexp", (arg,), BOOLEAN, (pattern, options), pos))


# -- long IN lists --------------------------------------------------------------------------------------


def long_in_list(binder, arg: Node, raw, pos: int) -> Node:
    """``arg IN (many literals)``: the list's type found as DuckDB finds it (from the kinds of
    literal in it), its values converted in bulk."""
    from .functions import btype

    texts, nulls, kind = raw
    t = btype(arg)
    if kind == "str":
        t = comparison_type(t, SqlType("STRING_LITERAL"), equality=True)
    else:
        t = _number_list_type(t, texts)
    if nulls:
        t = comparison_type(t, NULL, equality=True)
    t = binder.normal(t)
    if t.id in ("INTERVAL", "TIME", "TIME_NS", "BIGNUM", "UHUGEINT"):
        raise binder.error(f"IN lists of {type_name(t)} values are not supported in a filter", pos)
    array = _convert(texts, kind, t, binder, pos)
    cast_arg = binder.cast(arg, t, None)
    return simplify(Call("in", (cast_arg,), BOOLEAN, (array, bool(nulls)), pos))


def _number_list_type(t: SqlType, texts: pa.Array) -> SqlType:
    from .types import DECIMAL, DOUBLE, integer_literal

    ints = pc.match_substring_regex(texts, r"^-?\d+$")
    reps: list[SqlType] = []
    int_texts = texts.filter(ints)
    if len(int_texts):
        values = [int(v) for v in (pc.min(pc.cast(int_texts, pa.float64())).as_py(), pc.max(pc.cast(int_texts, pa.float64())).as_py())]
        exact = [int(x) for x in int_texts.to_pylist()] if len(int_texts) < 64 or max(abs(v) for v in values) >= 2**53 else values
        reps += [integer_literal(min(exact)), integer_literal(max(exact))]
    others = texts.filter(pc.invert(ints))
    seen = set()
    for text in others.to_pylist():
        body = text.lstrip("+-")
        if "e" in body.lower():
            key = ("DOUBLE",)
        else:
            whole, _, frac = body.partition(".")
            width = len(whole) + len(frac)
            key = ("DOUBLE",) if width > 38 else ("DECIMAL", max(width, 1), len(frac))
        if key not in seen:
            seen.add(key)
            reps.append(DOUBLE if key[0] == "DOUBLE" else DECIMAL(key[1], key[2]))
    for r in reps:
        t = comparison_type(t, r, equality=True)
    return t


def _convert(texts: pa.Array, kind: str, t: SqlType, binder, pos: int) -> pa.Array:
    """The list's items as values of ``t`` (an Arrow array of the Polars-ready form)."""
    import polars as pl

    from .polars_casts import pl_type
    from .to_polars import PolarsLowering, run

    if t.id == "VARCHAR":
        return texts if kind == "str" else pa.array([str(V._number_text(x)) for x in texts.to_pylist()])
    if kind == "num" and t.integral and t.id in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT"):
        try:  # plain integers that fit: Arrow reads them as DuckDB does
            if pc.all(pc.match_substring_regex(texts, r"^-?\d{1,19}$")).as_py():
                return pc.cast(texts, to_arrow(t))
        except pa.ArrowInvalid:
            pass  # out of range: the cast below says which value
    lowering = PolarsLowering(binder.time_zone)
    source = SqlType("VARCHAR")
    if kind == "num" and t.numeric:
        source = SqlType("DOUBLE") if t.floating else source
    series = pl.Series("x", texts if source.id == "VARCHAR" else pc.cast(texts, pa.float64()))
    expr = lowering.lower_cast(pl.col("x"), source, t, False, None, "IN list")
    frame = run(pl.DataFrame({"x": series}), [expr.alias("v")] + [c.cond.any().alias(f"e{i}") for i, c in enumerate(lowering.checks)])
    for i, c in enumerate(lowering.checks):
        if frame[f"e{i}"][0]:
            bad = run(pl.DataFrame({"x": series}), [c.shown.filter(c.cond).first()]).item() if c.shown is not None else None
            raise binder.error(c.message.replace("{value}", repr(bad) if c.quote else str(bad)), pos, kind="constant")
    return frame["v"].cast(pl_type(t)).to_arrow() if t.id not in ("DECIMAL",) else frame["v"]


# -- INTERVAL, dates ---------------------------------------------------------------------------------------

_UNITS = {"year": (12, 0, 0), "quarter": (3, 0, 0), "month": (1, 0, 0), "week": (0, 7, 0), "day": (0, 1, 0),
          "hour": (0, 0, 3600_000_000), "minute": (0, 0, 60_000_000), "second": (0, 0, 1_000_000),
          "millisecond": (0, 0, 1000), "microsecond": (0, 0, 1)}  # fmt: skip


def _unit(word: str):
    w = word.lower().rstrip("s") if word.lower() not in ("ms", "us") else word.lower()
    w = {"yr": "year", "y": "year", "mon": "month", "d": "day", "h": "hour", "hr": "hour", "min": "minute", "m": "minute",
         "sec": "second", "ms": "millisecond", "msec": "millisecond", "us": "microsecond", "usec": "microsecond"}.get(w, w)  # fmt: skip
    return _UNITS.get(w)


def parse_interval(text: str, unit: str) -> V.Interval | None:
    """DuckDB's INTERVAL literal: ``INTERVAL 1 DAY``, ``INTERVAL '2 hours'``, ``INTERVAL
    '1 month 2 days'``, ``INTERVAL '1:30:00'``; a fraction of a unit is dropped."""
    months = days = micros = 0
    text = text.strip()
    if unit:
        scale = _unit(unit)
        if scale is None or not re.fullmatch(r"[+-]?\d+(\.\d*)?", text):
            return None
        n = int(float(text)) if "." in text else int(text)
        return V.Interval(n * scale[0], n * scale[1], n * scale[2])
    pos = 0
    for m in re.finditer(r"\s*([+-]?\d+(?:\.\d+)?)\s*([A-Za-z]+)|\s*([+-]?\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?", text):
        if m.start() != pos:
            return None
        pos = m.end()
        if m.group(1) is not None:
            scale = _unit(m.group(2))
            if scale is None:
                return None
            n = int(float(m.group(1)))
            months, days, micros = months + n * scale[0], days + n * scale[1], micros + n * scale[2]
        else:
            sign = -1 if m.group(3).startswith("-") else 1
            h = abs(int(m.group(3)))
            total = ((h * 60 + int(m.group(4))) * 60 + int(m.group(5) or 0)) * 1_000_000 + int((m.group(6) or "").ljust(6, "0") or 0)
            micros += sign * total
    if pos != len(text) or pos == 0:
        return None
    return V.Interval(months, days, micros)


def current_date(pos: int) -> Constant:
    return Constant((_dt.date.today() - _dt.date(1970, 1, 1)).days, DATE, False, pos)


def current_timestamp(pos: int) -> Constant:
    now = _dt.datetime.now(_dt.timezone.utc)
    micros = int((now - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) / _dt.timedelta(microseconds=1))
    return Constant(micros, SqlType("TIMESTAMPTZ"), False, pos)
