"""The one exception SQL text raises, and how its message points at the text."""

from __future__ import annotations

from ..errors import ArrowIdxError


class WhereError(ArrowIdxError, ValueError):
    """SQL ``WHERE`` text that is not valid SQL for the schema (a syntax error, an unknown
    column or function, a type error), or that DuckDB refuses to evaluate on the rows read
    (a value that does not convert, a division by zero, an overflow). The first line of the
    message is the whole reason; the next two show the text with a caret under the
    offending token.

    ``kind`` says which: ``syntax``, ``bind`` (names and types), ``constant`` (a constant
    DuckDB cannot evaluate, refused whatever the rows) or ``value`` (a value of a row read)."""

    def __init__(self, message: str, kind: str = "bind"):
        super().__init__(message)
        self.kind = kind


def where_error(interface: str, message: str, text: str, pos: int = -1, kind: str = "bind") -> WhereError:
    """An error naming ``interface`` (``--where``, ``filter=``, ``where``) with a caret under
    position ``pos`` of ``text`` (its line) when known."""
    head = f"{interface}: {message}"
    if pos < 0 or not text:
        return WhereError(head, kind)
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    return WhereError(f"{head}\n  {line}\n  {' ' * (pos - line_start)}^", kind)
