"""sqlglot tree -> the bound tree (:mod:`.tree`): names resolved, every node typed and every
implicit cast put in, with DuckDB's rules (:mod:`.types`, :mod:`.functions`); constants are
folded as they are made (:mod:`.fold`).

Errors name the interface, say what to write and point at the token (``Binder.error``).
"""

from __future__ import annotations

import difflib
import re

import pyarrow as pa

from . import fold as folding
from .errors import WhereError, where_error
from .functions import PART_FUNCTIONS, STRING_FUNCTIONS, SUPPORTED, NoMatch, btype, choose  # noqa: F401 (re-exported)
from .parse import MARKER, original_position
from .tree import Call, Column, Constant, Failure, Node, boolean
from .types import (
    BOOLEAN,
    DECIMAL,
    DOUBLE,
    NULL,
    VARCHAR,
    SqlType,
    T,
    comparison_type,
    decimal_props,
    from_arrow,
    literal_type,
    try_max_type,
    type_name,
)

_CMP = {"EQ": "=", "NEQ": "!=", "LT": "<", "LTE": "<=", "GT": ">", "GTE": ">="}
_ARITH = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "IntDiv": "//", "Mod": "%"}

# sqlglot's type names -> DuckDB's
_TYPES = {
    "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INTEGER", "BIGINT": "BIGINT", "INT128": "HUGEINT",
    "UTINYINT": "UTINYINT", "USMALLINT": "USMALLINT", "UINT": "UINTEGER", "UBIGINT": "UBIGINT", "UINT128": "UHUGEINT",
    "FLOAT": "FLOAT", "DOUBLE": "DOUBLE", "BOOLEAN": "BOOLEAN", "TEXT": "VARCHAR", "VARCHAR": "VARCHAR", "CHAR": "VARCHAR",
    "NCHAR": "VARCHAR", "NVARCHAR": "VARCHAR", "DATE": "DATE", "TIMESTAMP": "TIMESTAMP", "TIMESTAMPNTZ": "TIMESTAMP",
    "DATETIME": "TIMESTAMP", "TIMESTAMPTZ": "TIMESTAMPTZ", "TIMESTAMPLTZ": "TIMESTAMPTZ", "TIMESTAMP_S": "TIMESTAMP_S",
    "TIMESTAMP_MS": "TIMESTAMP_MS", "TIMESTAMP_NS": "TIMESTAMP_NS", "VARBINARY": "BLOB", "BINARY": "BLOB", "BLOB": "BLOB",
    "TIME": "TIME", "INTERVAL": "INTERVAL", "HUGEINT": "HUGEINT",
}  # fmt: skip

_PARTS = {"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "QUARTER", "DOW", "DOY", "WEEK", "EPOCH", "DAYOFWEEK", "DAYOFYEAR",
          "ISODOW", "MILLISECOND", "MICROSECOND", "MILLISECONDS", "MICROSECONDS"}  # fmt: skip
class Binder:
    def __init__(self, text: str, schema: pa.Schema, interface: str, lists, shifts, time_zone: str | None = None):
        self.text, self.schema, self.interface = text, schema, interface
        self.lists, self.shifts = lists, shifts
        self.time_zone = time_zone  # the session's zone (None: each zoned column's own)

    # -- errors -------------------------------------------------------------------------------------
    def error(self, message: str, pos: int = -1, kind: str = "bind") -> WhereError:
        return where_error(self.interface, message, self.text, original_position(self.shifts, pos) if pos >= 0 else -1, kind)

    @staticmethod
    def position(e) -> int:
        from sqlglot import exp

        best = -1
        for n in e.walk() if isinstance(e, exp.Expr) else ():
            start = n.meta.get("start") if n.meta else None
            if start is not None and (best < 0 or start < best):
                best = start
        return best

    def typed_name(self, e, fallback: str) -> str:
        """The function name as the user typed it (sqlglot renames: lcase -> Lower)."""
        pos = self.position(e)
        lifted = getattr(self, "lifted", self.text)
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", lifted[pos:]) if pos >= 0 else None
        return m.group(0) if m else fallback

    def describe(self, node: Node) -> str:
        if isinstance(node, Column):
            return node.name
        if isinstance(node, Constant):
            if node.text:
                return node.text
            if node.value is None:
                return "NULL"
            return folding.sql_literal(node)
        return "the expression"

    # -- entry ----------------------------------------------------------------------------------------
    def condition(self, e) -> Node:
        """A WHERE clause (or one of its conjuncts), cast to BOOLEAN as DuckDB casts it."""
        return self.to_boolean(self.bind(e), e)

    def to_boolean(self, node: Node, e) -> Node:
        t = node.type
        if t.id in ("BOOLEAN", "NULL"):
            return node
        if t.numeric or t.id == "VARCHAR":
            return self.cast(node, BOOLEAN, e)
        raise self.error(f"a condition must be a boolean, not {type_name(t)}: compare it, e.g. ... = ...", self.position(e))

    # -- nodes ---------------------------------------------------------------------------------------
    def bind(self, e) -> Node:  # noqa: C901 - one dispatch over sqlglot's node classes
        from sqlglot import exp

        name = type(e).__name__
        pos = self.position(e)
        if isinstance(e, (exp.Subquery, exp.Select, exp.Exists)):
            raise self.error("subqueries (SELECT ...) are not supported in a filter: write the value itself", pos)
        if isinstance(e, exp.Paren):
            return self.bind(e.this)
        if isinstance(e, exp.Column):
            if e.table:
                raise self.error(f"a filter reads one table: write the column {e.name!r} without {e.table}.", pos)
            return self.column(e.this, pos)
        if isinstance(e, exp.Identifier):
            return self.column(e, pos)
        if isinstance(e, exp.Literal):
            return self.literal(e, pos)
        if isinstance(e, exp.Boolean):
            return Constant(bool(e.this), BOOLEAN, True, pos, "TRUE" if e.this else "FALSE")
        if isinstance(e, exp.Null):
            return Constant(None, NULL, True, pos, "NULL")
        if isinstance(e, exp.HexString):
            try:
                value = bytes.fromhex(e.this if len(e.this) % 2 == 0 else "0" + e.this)
            except ValueError:
                raise self.error(f"X'{e.this}' is not a hexadecimal binary literal", pos) from None
            return Constant(value, T("BLOB"), False, pos, f"X'{e.this}'")
        if isinstance(e, (exp.And, exp.Or)):
            op = "and" if isinstance(e, exp.And) else "or"
            return folding.simplify(boolean(op, self.condition(e.this), self.condition(e.expression), pos=pos))
        if isinstance(e, exp.Not):
            if isinstance(e.this, exp.In):  # x NOT IN (...): DuckDB's NOT IN operator, not NOT over IN
                return self.in_list(e.this, pos, negated=True)
            return folding.simplify(boolean("not", self.condition(e.this), pos=pos))
        if name in _CMP:
            return self.compare(_CMP[name], self.bind(e.this), self.bind(e.expression), e)
        if isinstance(e, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            op = "distinct" if isinstance(e, exp.NullSafeNEQ) else "not_distinct"
            return self.compare(op, self.bind(e.this), self.bind(e.expression), e)
        if isinstance(e, exp.Is):
            arg = self.bind(e.this)
            target = e.expression
            if isinstance(target, exp.Null):
                return folding.simplify(boolean("is_null", arg, pos=pos))
            if isinstance(target, exp.Boolean):  # x IS TRUE: x IS NOT DISTINCT FROM TRUE
                return self.compare("not_distinct", arg, Constant(bool(target.this), BOOLEAN, True, pos), e)
            raise self.error("IS must be followed by NULL, TRUE, FALSE or [NOT] DISTINCT FROM", pos)
        if isinstance(e, exp.In):
            return self.in_list(e, pos)
        if isinstance(e, exp.Between):
            return self.between(e, pos)
        if isinstance(e, exp.Escape):
            escape = self.bind(e.expression)
            if not (isinstance(escape, Constant) and escape.type.id == "VARCHAR"):
                raise self.error("ESCAPE takes a character in quotes, e.g. ESCAPE '!'", pos)
            return self.like(e.this, escape)
        if isinstance(e, (exp.Like, exp.ILike)):
            return self.like(e, None)
        if isinstance(e, (exp.Glob, exp.SimilarTo)):
            raise self.error(f"{'GLOB' if isinstance(e, exp.Glob) else 'SIMILAR TO'} is not supported in a filter: write LIKE or regexp_matches", pos)
        if isinstance(e, exp.RegexpLike):
            return self.regexp(e, pos)
        if isinstance(e, exp.Neg):
            return self.negate(e, pos)
        if name in _ARITH:
            return self.arithmetic(_ARITH[name], [self.bind(e.this), self.bind(e.expression)], e)
        if isinstance(e, exp.DPipe):
            return self.concat([self.bind(e.this), self.bind(e.expression)], e, skip_nulls=False)
        if isinstance(e, exp.Concat):
            return self.concat([self.bind(a) for a in e.expressions], e, skip_nulls=True)
        if isinstance(e, (exp.Cast, exp.TryCast)):
            target = self.data_type(e.args["to"], e)
            return self.cast(self.bind(e.this), target, e, explicit=True, safe=isinstance(e, exp.TryCast) or bool(e.args.get("safe")))
        if isinstance(e, exp.Interval):
            return self.interval(e, pos)
        if isinstance(e, exp.Case):
            return self.case(e)
        if isinstance(e, exp.If):
            cond = self.condition(e.this)
            other = self.bind(e.args["false"]) if e.args.get("false") is not None else Constant(None, NULL, True, pos)
            return self.make_case([(cond, self.bind(e.args["true"]))], other, e)
        if isinstance(e, exp.Coalesce):
            return self.coalesce([self.bind(a) for a in [e.this, *e.expressions]], e)
        if isinstance(e, exp.Nullif):
            a, b = self.bind(e.this), self.bind(e.expression)
            result = self.type_of(a)
            return self.make_case([(self.compare("=", a, b, e), Constant(None, NULL, True, pos))], a, e, result_type=result)
        if isinstance(e, exp.CurrentDate):
            return folding.current_date(pos)
        if isinstance(e, exp.CurrentTimestamp) or (isinstance(e, exp.Anonymous) and str(e.this).upper() in ("NOW", "GET_CURRENT_TIMESTAMP")):
            return folding.current_timestamp(pos)
        from .bind_functions import bind_function

        return bind_function(self, e, pos)

    def type_of(self, node: Node) -> SqlType:
        t = btype(node)
        return literal_type(t.value) if t.id == "INTEGER_LITERAL" else (VARCHAR if t.id == "STRING_LITERAL" else t)

    def column(self, ident, pos: int) -> Column:
        name = ident.this if hasattr(ident, "this") else str(ident)
        names = self.schema.names
        if name not in names:
            folded = [n for n in names if n.lower() == name.lower()]
            if len(folded) != 1:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                if self._double_quoted(pos):
                    hint += f"strings take single quotes ('{name}'); double quotes name a column "
                raise self.error(f"unknown column {name!r}; {hint}(columns: {', '.join(names)})", pos)
            name = folded[0]
        t = from_arrow(self.schema.field(name).type)
        if t is None:
            raise self.error(f"column {name!r} has type {self.schema.field(name).type}, which a filter cannot read", pos)
        return Column(name, t, pos)

    def _double_quoted(self, pos: int) -> bool:
        lifted = getattr(self, "lifted", self.text)
        return 0 <= pos < len(lifted) and lifted[pos] == '"'

    def literal(self, e, pos: int) -> Node:
        if e.is_string:
            m = re.fullmatch(MARKER.format(r"(\d+)"), e.this)
            if m:
                raise self.error("a long list of values is only read after IN", pos)
            return Constant(e.this, VARCHAR, True, pos, e.sql())
        return self.number(e.this, pos)

    def number(self, text: str, pos: int, negative: bool = False) -> Constant:
        shown = ("-" if negative else "") + text
        if re.fullmatch(r"\d+", text):
            value = -int(text) if negative else int(text)
            t = literal_type(value)
            if t is None or t.id == "UHUGEINT":
                raise self.error(f"the number {shown} is too large (integers up to 2**127 - 1 are supported)", pos)
            return Constant(value, t, True, pos, shown)
        if "e" in text.lower():
            return Constant(-float(text) if negative else float(text), DOUBLE, True, pos, shown)
        whole, _, frac = text.partition(".")
        width, scale = len(whole) + len(frac), len(frac)
        if width > 38:
            return Constant(-float(text) if negative else float(text), DOUBLE, True, pos, shown)
        unscaled = int((whole + frac) or "0")
        return Constant(-unscaled if negative else unscaled, DECIMAL(max(width, 1), scale), True, pos, shown)

    def negate(self, e, pos: int) -> Node:
        from sqlglot import exp

        inner = e.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal) and not inner.is_string:  # -3 is a literal (DuckDB's parser folds it)
            return self.number(inner.this, pos, negative=True)
        arg = self.bind(e.this)
        if isinstance(arg, Constant) and arg.literal and arg.value is not None and arg.type.numeric and not arg.type.id.startswith("U"):
            return Constant(-arg.value, arg.type, True, pos, "-" + (arg.text or ""))
        return self.call("neg", [arg], e, display="-")

    # -- casts ---------------------------------------------------------------------------------------
    def cast(self, node: Node, target: SqlType, e, *, explicit: bool = False, safe: bool = False) -> Node:
        """``node`` cast to ``target`` (folded when it is a constant)."""
        if node.type == target:
            return folding.plain(node) if explicit else node
        if not folding.castable(node.type, target):
            raise self.error(f"cannot CAST {self.describe(node)} ({type_name(node.type)}) AS {type_name(target)}", node.pos if node.pos >= 0 else self.position(e))
        call = Call("cast", (node,), target, (safe, self.time_zone), node.pos if not explicit else self.position(e))
        return folding.simplify(call)

    def data_type(self, dt, e) -> SqlType:
        from sqlglot import exp

        kind = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
        if kind in ("DECIMAL", "NUMERIC"):
            params = [int(p.this.this if hasattr(p.this, "this") else p.this) for p in dt.expressions] if dt.expressions else []
            width = params[0] if params else 18
            scale = params[1] if len(params) > 1 else (3 if not params else 0)
            if not 1 <= width <= 38 or not 0 <= scale <= width:
                raise self.error(f"DECIMAL({width},{scale}) is not a valid type (width 1 to 38, scale 0 to width)", self.position(e))
            return DECIMAL(width, scale)
        if kind in _TYPES:
            t = T(_TYPES[kind])
            if t.id == "UHUGEINT":
                raise self.error("UHUGEINT is not supported in a filter", self.position(e))
            return t
        raise self.error(f"unknown or unsupported type {dt.sql() if isinstance(dt, exp.Expr) else dt}", self.position(e))

    # -- comparisons ---------------------------------------------------------------------------------
    def compare(self, op: str, left: Node, right: Node, e) -> Node:
        lt, rt = btype(left), btype(right)
        t = comparison_type(lt, rt, equality=op in ("=", "!=", "distinct", "not_distinct"))
        if t is None:
            raise self.incomparable(left, right, e)
        if t.id in ("INTERVAL", "TIME", "TIME_NS", "TIMETZ", "BIGNUM", "UHUGEINT"):
            raise self.error(f"comparing {type_name(t)} values is not supported in a filter", self.position(e))
        node = boolean(op, self.compared(left, right, t, e), self.compared(right, left, t, e), pos=self.position(e))
        return folding.simplify(node)

    def compared(self, node: Node, other: Node, t: SqlType, e) -> Node:
        """``node`` cast to the comparison's type ``t``, with a message that says what to write
        where the cast cannot succeed."""
        cast = self.cast(node, t, e)
        if isinstance(cast, Failure) and isinstance(node, Constant) and node.literal:
            what = ("a number" if t.numeric else "a valid date" if t.id == "DATE" else "a valid timestamp" if t.stamp
                    else "a boolean (write TRUE or FALSE)" if t.id == "BOOLEAN" else f"a valid {type_name(t)}")  # fmt: skip
            return Failure(f"{node.text or self.describe(node)} is not {what} ({self.describe(other)} is {type_name(other.type)})", t, cast.pos)
        if isinstance(cast, Call) and cast.op == "cast" and isinstance(node, Column) and node.type.id == "VARCHAR" and isinstance(other, Constant) and other.literal and t.id != "VARCHAR":
            hint = f"{self.describe(node)} = {other.text or self.describe(other)} compares {self.describe(node)} as {type_name(t)}: quote the value: {self.describe(node)} = '{other.text or self.describe(other)}'"
            return Call("cast", cast.args, cast.type, cast.extra + (hint,), cast.pos)
        return cast

    def incomparable(self, left: Node, right: Node, e) -> WhereError:
        bad = right if isinstance(right, Constant) else left
        other = left if bad is right else right
        hint = ""
        if isinstance(bad, Constant) and other.type.temporal:
            hint = f"; write a quoted date: {self.describe(other)} > '2024-06-01'"
        elif bad.type.id == "BOOLEAN" or other.type.id == "BOOLEAN":
            hint = "; compare a boolean with TRUE or FALSE, or CAST the other side"
        return self.error(
            f"cannot compare {self.describe(other)} ({type_name(other.type)}) with {self.describe(bad)} ({type_name(btype(bad))}){hint}",
            bad.pos if bad.pos >= 0 else self.position(e),
        )

    def in_list(self, e, pos: int, negated: bool = False) -> Node:
        """``x [NOT] IN (...)``: the list's type found as DuckDB finds it; which lists become
        ``x = a OR x = b ...`` is decided later (:func:`.fold.rewrite_in_lists`)."""
        from sqlglot import exp

        arg = self.bind(e.this)
        if e.args.get("query") is not None or any(isinstance(x, (exp.Select, exp.Subquery)) for x in e.expressions):
            raise self.error("subqueries (SELECT ...) are not supported in a filter: list the values, x IN (1, 2)", pos)
        items = e.expressions
        if len(items) == 1 and isinstance(items[0], exp.Literal) and items[0].is_string:
            m = re.fullmatch(MARKER.format(r"(\d+)"), items[0].this)
            if m:
                node = folding.long_in_list(self, arg, self.lists[int(m.group(1))], pos)
                return folding.simplify(boolean("not", node, pos=pos)) if negated else node
        values = [self.bind(x) for x in items]
        t = btype(arg)
        for v in values:
            t = comparison_type(t, btype(v), equality=True)
        if t.id in ("INTERVAL", "TIME", "TIME_NS", "BIGNUM", "UHUGEINT"):
            raise self.error(f"IN lists of {type_name(t)} values are not supported in a filter", pos)
        arg = self.cast(arg, t, e)
        values = [self.cast(v, t, e) for v in values]
        whole = boolean("in", arg, *values, pos=pos)
        if isinstance(arg, Constant) and all(isinstance(v, Constant) for v in values):  # folded whole, as DuckDB folds it
            folded = folding.evaluate(whole)
            if isinstance(folded, Constant):
                return folding.simplify(boolean("not", folded, pos=pos)) if negated else folded
        # left whole: DuckDB's IN rewriter, after its other rewrites, makes OR chains of some
        # (folding.rewrite_in_lists)
        return boolean("not", whole, pos=pos) if negated else whole

    def between(self, e, pos: int) -> Node:
        from sqlglot import exp

        for bound in (e.args["low"], e.args["high"]):
            if isinstance(bound, exp.Not):
                raise self.error("syntax error: a NOT in a BETWEEN bound needs parentheses, e.g. BETWEEN (NOT b) AND c", self.position(bound), kind="syntax")
        arg, low, high = self.bind(e.this), self.bind(e.args["low"]), self.bind(e.args["high"])
        t = comparison_type(btype(arg), btype(low), equality=False)
        if t is None:
            raise self.incomparable(arg, low, e)
        t2 = comparison_type(t, btype(high), equality=False)
        if t2 is None:
            raise self.incomparable(arg, high, e)
        arg = self.cast(arg, t2, e)
        # (DuckDB folds the two comparisons back into one BETWEEN before moving constants across them)
        lo = folding.fold(boolean(">=", arg, self.cast(low, t2, e), pos=pos))
        hi = folding.fold(boolean("<=", arg, self.cast(high, t2, e), pos=pos))
        return folding.simplify(boolean("and", lo, hi, extra="between", pos=pos))

    # -- strings -----------------------------------------------------------------------------------
    def like(self, e, escape: Constant | None) -> Node:
        from sqlglot import exp

        pos = self.position(e)
        ilike = isinstance(e, exp.ILike)
        word = "ILIKE" if ilike else "LIKE"
        arg, pattern = self.bind(e.this), self.bind(e.expression)
        for side in (arg, pattern):
            if btype(side).id not in ("VARCHAR", "STRING_LITERAL", "NULL"):
                raise self.error(f"{self.describe(side)} is {type_name(side.type)}, not text: {word} compares strings; CAST it, e.g. CAST(x AS VARCHAR) {word} ...", side.pos if side.pos >= 0 else pos)
        if not isinstance(pattern, (Constant, Failure)):
            raise self.error(f"{word} takes a quoted pattern (a pattern computed from columns is not supported)", self.position(e.expression))
        arg = self.cast(arg, VARCHAR, e)
        node = folding.like(arg, pattern, escape, ilike, pos)
        return folding.simplify(boolean("not", node, pos=pos)) if e.args.get("negate") else node

    def regexp(self, e, pos: int) -> Node:
        arg, pattern = self.bind(e.this), self.bind(e.expression)
        flags = self.bind(e.args["flag"]) if e.args.get("flag") is not None else None
        for side in (arg, pattern) + ((flags,) if flags is not None else ()):
            if btype(side).id not in ("VARCHAR", "STRING_LITERAL", "NULL"):
                raise self.error(f"regexp_matches takes text, not {type_name(side.type)} ({self.describe(side)})", side.pos if side.pos >= 0 else pos)
        if not isinstance(pattern, Constant) or (flags is not None and not isinstance(flags, Constant)):
            raise self.error("a regular expression must be a quoted literal", self.position(e.expression))
        if pattern.value is None or (flags is not None and flags.value is None):
            return Constant(None, BOOLEAN, False, pos)
        options = flags.value if flags is not None else ""
        return folding.regexp(self.cast(arg, VARCHAR, e), pattern.value, options, pos, self)

    def concat(self, parts: list[Node], e, *, skip_nulls: bool) -> Node:
        if not parts:
            raise self.error("concat() needs at least one argument", self.position(e))
        args = []
        for node in parts:
            if node.type.id not in ("VARCHAR", "NULL"):
                node = self.cast(node, VARCHAR, e)
            args.append(node)
        return folding.simplify(Call("concat", tuple(args), VARCHAR, skip_nulls, self.position(e)))

    # -- arithmetic and functions ---------------------------------------------------------------------
    def arithmetic(self, op: str, args: list[Node], e) -> Node:
        return self.call(op, args, e, display=op)

    def call(self, name: str, args: list[Node], e, display: str | None = None, extra=None, keep: int | None = None) -> Node:
        """A function or operator of DuckDB's: the overload chosen as DuckDB chooses it, the
        arguments cast to its parameters, DECIMAL results sized as DuckDB sizes them. Only
        the first ``keep`` arguments become the node's (the rest only choose the overload)."""
        params, ret, check = self.resolve(name, args, e, display)
        kept = args if keep is None else args[:keep]
        cast_args = tuple(self.cast(a, p, e) if p.id not in ("ANY", "INTERVAL") else a for a, p in zip(kept, params))
        if check:
            extra = {"check": True}
        node = Call(name, cast_args, ret, extra, self.position(e))
        return folding.rewrite_arithmetic(node)

    def resolve(self, name: str, args: list[Node], e, display: str | None = None):
        """(parameter types, result type, overflow-checked) of DuckDB's overload of ``name``."""
        types = [btype(a) for a in args]
        shown = display or name
        listed = ", ".join(type_name(t) for t in types)
        try:
            params, ret = choose(name, types)
        except NoMatch as err:
            if err.ambiguous:
                raise self.error(f"{shown}({listed}) is ambiguous (DuckDB cannot choose between its overloads): CAST an argument", self.position(e)) from None
            raise self.error(f"{shown} does not take ({listed}): CAST the arguments, e.g. CAST(x AS DOUBLE)", self.position(e)) from None
        try:
            ret, params, check = _decimal_result(name, args, params, ret)
        except _Refuse as err:
            raise self.error(str(err), self.position(e)) from None
        ids = {p.id for p in params} | {ret.id}
        if ids & {"BIGNUM", "TIMETZ", "UHUGEINT", "BIT", "TIME", "TIME_NS"} or (ret.id == "INTERVAL") or ("INTERVAL" in ids and name not in ("+", "-")):
            raise self.error(f"{shown}({listed}) is not supported in a filter", self.position(e))
        return params, ret, check

    def interval(self, e, pos: int) -> Node:
        from sqlglot import exp

        value = e.this
        unit = e.args.get("unit")
        text = value.this if isinstance(value, exp.Literal) else None
        if text is None:
            raise self.error("INTERVAL takes a quoted or plain number, e.g. INTERVAL 1 DAY", pos)
        unit_name = (unit.name if unit is not None else "").upper()
        parsed = folding.parse_interval(str(text), unit_name)
        if parsed is None:
            raise self.error(f"cannot read INTERVAL {value.sql()} {unit_name}".rstrip(), pos)
        return Constant(parsed, T("INTERVAL"), False, pos, f"INTERVAL {value.sql()} {unit_name}".strip())

    # -- CASE, COALESCE ------------------------------------------------------------------------------
    def case(self, e) -> Node:
        operand = self.bind(e.this) if e.this is not None else None
        whens = []
        for w in e.args.get("ifs") or []:
            cond = self.compare("=", operand, self.bind(w.this), w) if operand is not None else self.condition(w.this)
            whens.append((cond, self.bind(w.args["true"])))
        default = e.args.get("default")
        other = self.bind(default) if default is not None else Constant(None, NULL, True, self.position(e))
        return self.make_case(whens, other, e)

    def make_case(self, whens: list[tuple[Node, Node]], other: Node, e, result_type: SqlType | None = None) -> Node:
        t = result_type
        if t is None:
            t = btype(other)
            for _, v in whens:
                merged = try_max_type(t, btype(v))
                if merged is None:
                    raise self.error(f"CASE mixes {type_name(t)} and {type_name(btype(v))} ({self.describe(v)}): CAST one of them", v.pos if v.pos >= 0 else self.position(e))
                t = merged
            t = self.normal(t)
        conds = tuple(self.to_boolean(c, e) for c, _ in whens)
        values = tuple(self.cast(v, t, e) for v in [*(v for _, v in whens), other])
        return folding.simplify(Call("case", (*conds, *values), t, len(conds), self.position(e)))

    def coalesce(self, args: list[Node], e) -> Node:
        t = btype(args[0])
        for a in args[1:]:
            merged = try_max_type(t, btype(a))
            if merged is None:
                raise self.error(f"coalesce mixes {type_name(t)} and {type_name(btype(a))} ({self.describe(a)}): CAST one of them", a.pos if a.pos >= 0 else self.position(e))
            t = merged
        t = self.normal(t)
        return folding.simplify(Call("coalesce", tuple(self.cast(a, t, e) for a in args), t, None, self.position(e)))

    @staticmethod
    def normal(t: SqlType) -> SqlType:
        if t.id == "INTEGER_LITERAL":
            return literal_type(t.value)
        return VARCHAR if t.id == "STRING_LITERAL" else t


def _decimal_result(name: str, args: list[Node], params, ret: SqlType):
    """DuckDB's DECIMAL bind rules (BindDecimalAddSubtract, BindDecimalMultiply,
    BindDecimalModulo; abs/floor/ceil/round/neg keep the input's): the result type, the
    parameter types, and whether the result is checked for overflow."""
    if not any(p.id == "DECIMAL" for p in params):
        return ret, params, False
    props = [decimal_props(a.type if a.type.id != "NULL" else DECIMAL(18, 3)) for a in args]
    if name in ("+", "-", "%"):
        max_width = max(w for w, _ in props)
        max_scale = max(s for _, s in props)
        max_over = max(w - s for w, s in props)
        width = max(max_scale + max_over, max_width) + (1 if name != "%" else 0)
        check = width > 38
        if check and name == "%":  # computed in DOUBLE, but a zero divisor still raises
            return DOUBLE, (DOUBLE, DOUBLE), True
        t = DECIMAL(min(width, 38), max_scale)
        return t, (t,) * len(args), check
    if name == "*":
        width = sum(w for w, _ in props)
        scale = sum(s for _, s in props)
        if scale > 38:
            raise _Refuse(f"a multiplication needs scale {scale}, beyond DECIMAL's 38: CAST to DOUBLE or to a smaller scale")
        check = False
        if width > 18 and max(w for w, _ in props) <= 18 and scale < 18:
            width, check = 18, True
        if width > 38:
            width, check = 38, True
        return DECIMAL(width, scale), tuple(DECIMAL(w, s) for w, s in props), check
    w, s = props[0]  # abs, round, neg: the argument's own DECIMAL; floor and ceil: its integer part
    return DECIMAL(w, 0 if name in ("floor", "ceil") else s), (DECIMAL(w, s),) + tuple(params[1:]), False


class _Refuse(Exception):
    pass


__all__ = ["Binder", "SUPPORTED", "btype"]
