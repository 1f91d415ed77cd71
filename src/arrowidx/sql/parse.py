"""SQL text -> a sqlglot tree (DuckDB's dialect plus Spark's spellings), with syntax errors
of our own, and the two shortcuts that keep common clauses cheap: long ``IN`` lists of
literals are read by a regular expression, and plain comparisons joined by ``AND`` become a
pushdown Expression without sqlglot (whose import costs ~0.25 s)."""

from __future__ import annotations

import functools
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import WhereError, where_error


@functools.cache
def dialect():
    from sqlglot.dialects.duckdb import DuckDB
    from sqlglot.tokens import TokenType

    class WhereDialect(DuckDB):
        """DuckDB's SQL plus Spark's spellings: backquoted identifiers, ``X'..'`` binary
        literals, ``TIMESTAMP_NTZ`` / ``TIMESTAMP_LTZ`` and ``DIV``."""

        class Tokenizer(DuckDB.Tokenizer):
            IDENTIFIERS = ['"', "`"]
            HEX_STRINGS = [("x'", "'"), ("X'", "'")]
            KEYWORDS = {
                **DuckDB.Tokenizer.KEYWORDS,
                "TIMESTAMP_NTZ": TokenType.TIMESTAMPNTZ,
                "TIMESTAMP_LTZ": TokenType.TIMESTAMPLTZ,
                "DIV": TokenType.DIV,
            }

    return WhereDialect()


# -- long IN lists ---------------------------------------------------------------------------------

# A long list of plain literals after IN is read here, not by sqlglot (which takes ~18 ms
# per 1,000 values): the 10,000-value IN list must parse in well under 50 ms.
LONG_LIST = 64
_SCAN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|\bIN\s*\(", re.IGNORECASE | re.DOTALL)
_ITEM = r"\s*(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|'(?:[^']|'')*'|NULL)\s*"
_LIST = re.compile(rf"(?:{_ITEM},){{{LONG_LIST - 1},}}{_ITEM}\)", re.IGNORECASE)
_QUOTED = re.compile(r"('(?:[^']|'')*')|(NULL)|([^,\s]+)", re.IGNORECASE)
MARKER = "__arrowidx_in_list_{}__"


def lift_long_lists(text: str) -> tuple[str, list[tuple[pa.Array, int, str]], list[tuple[int, int]]]:
    """``text`` with each long IN list of plain literals replaced by one marker string, the
    lists (their items' texts as an Arrow array, the number of NULLs, and ``str`` for quoted
    items or ``num`` for numbers), and the shifts that map a position back."""
    if len(text) < 4 * LONG_LIST:
        return text, [], []
    out, lists, shifts = [], [], []
    pos = 0
    for m in _SCAN.finditer(text):
        if m.start() < pos or not m.group(0)[:2].upper() == "IN":
            continue
        body = _LIST.match(text, m.end())
        if body is None:
            continue
        inner = text[m.end() : body.end() - 1]
        if "'" in inner:
            found = _QUOTED.findall(inner)
            if any(other for _, _, other in found):
                continue  # numbers mixed with strings: sqlglot reads the list
            nulls = sum(1 for _, n, _ in found if n)
            values = pa.array([q[1:-1].replace("''", "'") for q, n, _ in found if not n], pa.string())
            lists.append((values, nulls, "str"))
        else:
            items = [x.strip() for x in inner.split(",")]
            nulls = sum(1 for x in items if x.upper() == "NULL")
            values = pa.array([x.lstrip("+") for x in items if x.upper() != "NULL"], pa.string())
            lists.append((values, nulls, "num"))
        marker = "'" + MARKER.format(len(lists) - 1) + "')"
        out.append(text[pos : m.end()])
        out.append(marker)
        shifts.append((sum(len(p) for p in out), body.end() - m.end() - len(marker)))
        pos = body.end()
    if not lists:
        return text, [], []
    out.append(text[pos:])
    return "".join(out), lists, shifts


def original_position(shifts: list[tuple[int, int]], pos: int) -> int:
    for at, shift in shifts:
        if pos >= at:
            pos += shift
    return pos


# -- parsing ------------------------------------------------------------------------------------------


def parse(text: str, interface: str):
    """The sqlglot tree of one condition, the long lists and the position shifts (see
    :func:`lift_long_lists`). Raises :class:`WhereError` for text that is not SQL."""
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    lifted, lists, shifts = lift_long_lists(text)

    def fail(message: str, pos: int = -1) -> WhereError:
        return where_error(interface, message, text, original_position(shifts, pos) if pos >= 0 else -1, "syntax")

    try:
        trees = dialect().parse(lifted)
    except ParseError as e:
        info = e.errors[0] if e.errors else {}
        start = info.get("start_context", "")
        pos = len(start) if start or info.get("highlight") else -1
        what = re.sub(r" for <class '[^']*'>", "", str(info.get("description") or "syntax error"))
        what = what.replace("Required keyword: 'expression' missing", "a value or column is missing").replace("Invalid expression / Unexpected token", "unexpected token")
        highlight = info.get("highlight") or ""
        raise fail(f"syntax error at {highlight!r}: {what}" if highlight else f"syntax error: {what}", pos) from None
    except TokenError as e:
        quote = unclosed_quote(lifted)
        if quote is not None:
            raise fail(f"the quote {lifted[quote]} is never closed", quote) from None
        raise fail(f"cannot read the text: {e}") from None
    except (RecursionError, ValueError, TypeError, KeyError, IndexError) as e:  # sqlglot's own failures
        raise fail(f"cannot read the text: {type(e).__name__}") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise fail("one condition expected (no ';')")
    tree = trees[0]
    statements = tuple(c for c in (getattr(exp, n, None) for n in ("Select", "Query", "Command", "DDL", "DML")) if c is not None)
    if isinstance(tree, statements):
        raise fail("a filter is one condition, not a statement: write only what follows WHERE", 0)
    return tree, lists, shifts, lifted


def unclosed_quote(text: str) -> int | None:
    """Where a quote that is never closed opens, if one does."""
    pattern = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|['\"`]", re.DOTALL)
    pos = 0
    while pos < len(text):
        m = pattern.search(text, pos)
        if m is None:
            return None
        if len(m.group(0)) == 1:
            return m.start()
        pos = m.end()
    return None


def conjuncts(e) -> list:
    """The conjuncts of a sqlglot tree's top-level AND (through parentheses)."""
    from sqlglot import exp

    out = []
    stack = [e]
    while stack:
        e = stack.pop()
        while isinstance(e, exp.Paren):
            e = e.this
        if isinstance(e, exp.And):
            stack.append(e.expression)
            stack.append(e.this)
        else:
            out.append(e)
    return out


def sql_text(e) -> str:
    """A conjunct's text as sqlglot writes it (when the user's own cannot be found)."""
    text = re.sub(r"'__arrowidx_in_list_\d+__'", "...", e.sql(dialect=dialect()))
    return text if len(text) <= 200 else text[:197] + "..."


def conjunct_texts(text: str, lifted: str, shifts, count: int) -> list[str] | None:
    """The user's own text of each top-level conjunct (split at the ANDs that join them, not
    BETWEEN's), or None when that split does not give ``count`` of them."""
    from sqlglot.tokens import TokenType

    try:
        tokens = dialect().tokenize(lifted)
    except Exception:  # noqa: BLE001 - the text parsed, so this is only a nicety
        return None
    if not tokens:
        return None
    depth, between, spans, start = 0, {}, [], 0
    base = 0
    while base < len(tokens) // 2 and tokens[base].token_type == TokenType.L_PAREN and _closes_at_end(tokens, base):
        base += 1
    start = base
    for i, tok in enumerate(tokens[base : len(tokens) - base], base):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif tok.token_type == TokenType.BETWEEN:
            between[depth] = between.get(depth, 0) + 1
        elif tok.token_type == TokenType.AND and depth == 0:
            if between.get(0):
                between[0] -= 1
                continue
            spans.append((start, i - 1))
            start = i + 1
    spans.append((start, len(tokens) - base - 1))
    if len(spans) != count:
        return None
    out = []
    for a, b in spans:
        lo, hi = original_position(shifts, tokens[a].start), original_position(shifts, tokens[b].end)
        part = text[lo : hi + 1].strip()
        out.append(part if len(part) <= 200 else part[:197] + "...")
    return out


def _closes_at_end(tokens, i: int) -> bool:
    """Whether the parenthesis at ``tokens[i]`` closes at the matching end position."""
    from sqlglot.tokens import TokenType

    depth = 0
    for j in range(i, len(tokens) - i):
        if tokens[j].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[j].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j == len(tokens) - 1 - i
    return False


# -- the shortcut for plain comparisons -------------------------------------------------------------

# The commonest clauses, read without sqlglot: comparisons of an integer or string column,
# named exactly, with a plain literal of its type, joined by AND. The Expression is the one
# the full front end makes for the same text (tests/test_sql.py compares them).
_SIMPLE_PART = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|<>|!=|<=|>=|<|>)\s*(-?[0-9]{1,19}|'[^'\\]*')\s*")
_SIMPLE_AND = re.compile(r"(?i)\s+AND\s+")
_SIMPLE_OPS = {"=": "equal", "<>": "not_equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_SQL_WORDS = {"true", "false", "null", "not", "and", "or", "is", "in", "like", "between", "current_date"}


def simple_where(text: str, schema: pa.Schema) -> pc.Expression | None:
    """``text`` as its pushdown Expression when it is only simple comparisons (see above)."""
    if len(text) > 2000 or "--" in text or "/*" in text:
        return None
    expr = None
    for part in _SIMPLE_AND.split(text.strip()):
        m = _SIMPLE_PART.fullmatch(part)
        if m is None:
            return None
        name, op, literal = m.groups()
        if name.lower() in _SQL_WORDS or schema.get_field_index(name) < 0:
            return None
        t = schema.field(name).type
        if literal.startswith("'"):
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                return None
            value = pa.scalar(literal[1:-1], t)
        else:
            if not pa.types.is_integer(t):
                return None
            number = int(literal)
            info = np.iinfo(t.to_pandas_dtype())
            if not info.min <= number <= info.max:
                return None
            value = pa.scalar(number, t)
        part_expr = pc.Expression._call(_SIMPLE_OPS[op], [pc.field(name), pc.scalar(value)])
        expr = part_expr if expr is None else expr & part_expr
    return expr
