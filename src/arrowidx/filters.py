"""A user's filter as the scan reads it: the one normalisation every public read calls first.

A filter is one of

* ``None``: every row;
* a ``pyarrow.compute.Expression``: pyarrow's meaning, passed on unchanged;
* ``str``: SQL ``WHERE`` text, SQL's meaning (:mod:`arrowidx.sql`), split into a pushdown
  Expression (the indexes and Parquet statistics prune with it) and a residual evaluated
  exactly on the rows read.

:func:`user_filter` turns any of them, with the dataset schema, into a :class:`Filter`;
a read then asks for :meth:`Filter.read_columns` (its columns plus the residual's), reads
with :attr:`Filter.pushdown`, and passes what it read through :meth:`Filter.apply` (the
residual's mask, then the projection). A :class:`Filter` given again is returned as it is.

Two more rules every entry point shares: :func:`require_delete_filter`, which every delete
calls first (a filter never set is not "every row"), and :func:`user_columns`, the
normalisation of ``columns=`` (one name is one column; an unknown name is an error naming it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import MissingFilterError

if TYPE_CHECKING:  # (the SQL compiler loads with the first SQL text: a pyarrow Expression never needs it)
    from .sql import Residual

__all__ = ["Filter", "require_delete_filter", "user_columns", "user_filter"]


@dataclass(frozen=True)
class Filter:
    """A normalised filter: ``pushdown`` (an Expression, or None for every row) and the
    ``residual`` (None when the pushdown is exact on its own)."""

    pushdown: pc.Expression | None
    residual: Residual | None = None
    text: str | None = None  # the SQL text it came from, if any

    def read_columns(self, columns: list[str] | None) -> list[str] | None:
        """``columns`` plus the residual's (None: every column)."""
        if self.residual is None or columns is None:
            return columns
        return list(dict.fromkeys([*columns, *self.residual.columns]))

    def apply(self, batches: Iterable[pa.RecordBatch], columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        """The rows of ``batches`` where the residual is TRUE, projected to ``columns``."""
        for batch in batches:
            batch = self._keep(batch)
            if columns is not None and batch.schema.names != list(columns):
                batch = batch.select(list(columns))
            yield batch

    def apply_table(self, table: pa.Table, columns: list[str] | None) -> pa.Table:
        """:meth:`apply` for a whole table."""
        table = self._keep(table)
        return table.select(list(columns)) if columns is not None and table.column_names != list(columns) else table

    def _keep(self, data):
        if self.residual is None or not data.num_rows:
            return data
        return data.filter(self.residual.mask(data))

    def describe(self, pushdown_text: str) -> str:
        """How explain() shows the filter: the pushdown, and what is applied after it."""
        if self.residual is None:
            return pushdown_text
        return f"{pushdown_text}; then on the rows read: {self.residual.text}"


_EVERY_ROW = Filter(None)
# SQL text naming the current date or time is compiled afresh for every query
_VOLATILE = re.compile(r"current_|now\s*\(|today|localtimestamp", re.IGNORECASE)


def user_filter(filter, schema: pa.Schema | Callable[[], pa.Schema], interface: str = "filter=", time_zone: str | None = None) -> Filter:
    """``filter`` (None, a ``pc.Expression``, SQL text or a :class:`Filter`) for ``schema``
    (or a function giving it, called only for SQL text).

    SQL text that is not valid SQL for the schema raises
    :class:`~arrowidx.sql.WhereError` naming ``interface`` (``filter=``, ``--where``, ...).
    ``time_zone``: the session's zone for naive times on zoned columns (Spark passes its
    ``spark.sql.session.timeZone``; None: each column's own zone).
    """
    if filter is None:
        return _EVERY_ROW
    if isinstance(filter, Filter):
        return filter
    if isinstance(filter, pc.Expression):
        return Filter(filter)
    if isinstance(filter, str):
        if callable(schema):  # (a dataset's schema is read only for SQL text)
            schema = schema()
        if _VOLATILE.search(filter):
            return _compile(filter, schema, interface, time_zone)
        return _compiled(filter, schema, interface, time_zone)
    from .arrow_input import UnsupportedInputError  # (an ArrowIdxError and a TypeError)

    raise UnsupportedInputError(f"{interface} takes a pyarrow.compute.Expression or SQL text (str), not {type(filter).__name__}")


def _compile(text: str, schema: pa.Schema, interface: str, time_zone: str | None = None) -> Filter:
    from .sql import compile_where

    where = compile_where(text, schema, interface=interface, time_zone=time_zone)
    return Filter(where.pushdown, where.residual, text)


@functools.lru_cache(maxsize=128)
def _compiled(text: str, schema: pa.Schema, interface: str, time_zone: str | None = None) -> Filter:
    """Compiled SQL, remembered per text and schema: a query repeated costs a lookup."""
    return _compile(text, schema, interface, time_zone)


def require_delete_filter(where: Any, *, call: str = "arrowidx.delete", argument: str = "where") -> Any:
    """``where`` unchanged when it says which rows to delete, else
    :class:`~arrowidx.errors.MissingFilterError`: the one refusal every delete calls first
    (``arrowidx.delete``, the CLI's ``delete --where``, Paimon deletes).

    A filter that was never set (``None``, a :class:`Filter` made from ``None``) or empty SQL
    text does not mean "every row", as it would for a read: a variable left unassigned, a
    config without the entry, must not empty a table. Deleting every row takes an explicit
    TRUE: ``"TRUE"`` or ``pc.scalar(True)`` (a ``pc.Expression``, any SQL text, any Filter
    with a condition passes). ``call`` and ``argument`` name the interface the user called
    (``"arrowidx delete"`` and ``"--where"`` for the CLI) in the message.
    """
    unset = where is None or (
        isinstance(where, Filter) and where.pushdown is None and where.residual is None and not where.text
    )
    empty = isinstance(where, str) and not where.strip()
    if unset or empty:
        every = f"{argument} TRUE" if argument.startswith("-") else f"{argument}='TRUE' (or pc.scalar(True))"
        state = "is empty" if empty else "is None (no filter)"
        raise MissingFilterError(
            f"{call}: {argument} {state}; a delete needs a condition saying which rows to delete."
            f" To delete every row, say so: {every}"
        )
    return where


def user_columns(columns: str | Sequence[str] | None, schema: pa.Schema, where: str, argument: str = "columns=") -> list[str] | None:
    """``columns`` as a list of column names of ``schema`` (None: every column).

    One name given as a ``str`` is that one column (never its characters). A name that is
    not a column raises :class:`~arrowidx.expression.UnknownColumnError` (also pyarrow's
    ``ArrowInvalid``, as ``pyarrow.dataset`` raises) naming it, the closest column and the
    columns; ``where`` (a dataset root, a table path) and ``argument`` say where it was given.
    """
    if columns is None:
        return None
    from .arrow_input import UnsupportedInputError  # (an ArrowIdxError and a TypeError)

    if isinstance(columns, str):
        names = [columns]
    elif isinstance(columns, Mapping):
        raise UnsupportedInputError(f"{where}: {argument} takes a list of column names, not a dict of expressions")
    else:
        try:
            names = list(columns)
        except TypeError:
            raise UnsupportedInputError(f"{where}: {argument} takes a list of column names, not {type(columns).__name__}") from None
    known = schema.names
    for name in names:
        if not isinstance(name, str):
            raise UnsupportedInputError(f"{where}: {argument} takes column names (str), got {type(name).__name__} {name!r}")
        if name not in known:
            from .expression import UnknownColumnError

            raise UnknownColumnError.naming(name, known, where, argument)
    return names
