"""``scan_paimon``: a Polars ``LazyFrame`` over a Paimon table, with predicate and
projection pushdown into :class:`arrowidx.paimon.PaimonTable`.

The pushed-down ``pl.Expr`` is translated (``arrowidx.polars.translate``) into a
``pyarrow.compute.Expression`` that is TRUE on a superset of its rows; the table prunes and
reads with it, and the complete Polars predicate is applied to what is read, so the result
is what Polars returns over the table as Java reads it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import polars as pl
import pyarrow.fs as pafs


def scan_paimon(
    path: Any, *, snapshot: int | None = None, filesystem: pafs.FileSystem | None = None
) -> pl.LazyFrame:
    """A ``pl.LazyFrame`` over the Paimon table at ``path`` (latest snapshot or ``snapshot``)."""
    from ..paimon import PaimonTable, open_table

    table = path if isinstance(path, PaimonTable) else open_table(path, snapshot=snapshot, filesystem=filesystem)
    schema = pl.from_arrow(table.schema.empty_table()).schema

    def source(with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
        from . import translate

        columns = list(schema) if with_columns is None else list(with_columns)
        needed = list(columns)
        expr = None
        if predicate is not None:
            needed += [c for c in predicate.meta.root_names() if c in schema and c not in needed]
            expr = translate(predicate, table.schema).expression
        needed = needed or [next(iter(schema))]
        remaining = n_rows
        returned = 0
        for batch in table.to_batches(filter=expr, columns=needed):
            df = pl.from_arrow(batch)
            if predicate is not None:
                df = df.filter(predicate)
            df = df.select(columns)
            if remaining is not None:
                df = df.head(remaining)
                remaining -= df.height
            if df.height:
                returned += df.height
                yield df
            if remaining is not None and remaining <= 0:
                return
        if not returned:
            yield pl.DataFrame(schema={c: schema[c] for c in columns})

    kwargs: dict[str, Any] = {"schema": schema}
    params = inspect.signature(pl.io.plugins.register_io_source).parameters
    if "validate_schema" in params:
        kwargs["validate_schema"] = False
    return pl.io.plugins.register_io_source(source, **kwargs)
