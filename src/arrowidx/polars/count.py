"""Counting rows without reading a column: what ``lf.select(pl.len())`` asks of a scan.

Polars gives an IO source no empty projection: when a query needs no column of the scan
(``select(pl.len())``, ``with_row_index().select("index")`` aside), it asks for the first
column of the source's schema. So the source declares one more column first,
:data:`COUNT_COLUMN` (type Null, never read), and :func:`arrowidx.polars.scan` returns the
source with the dataset's own columns selected over it (the frame's schema is the
dataset's). A query needing no column then asks for that one alone, and the source answers
it from the files' row counts (the manifest's, else the footers') minus the deleted rows:
no data page is read, as Polars' own Parquet scan answers ``pl.len()`` from footers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

#: the column a scan declares first so that a query needing no column asks for it (never read)
COUNT_COLUMN = "__arrowidx_len"


def source_schema(schema: dict[str, pl.DataType]) -> dict[str, pl.DataType]:
    """The schema the IO source declares: :data:`COUNT_COLUMN`, then the dataset's columns
    (the dataset's alone if it has a column of that name: a count then reads a column)."""
    return schema if COUNT_COLUMN in schema else {COUNT_COLUMN: pl.Null(), **schema}


def asked_for(with_columns: list[str] | None, schema: dict[str, pl.DataType]) -> tuple[int | None, list[str] | None]:
    """``(where Polars wants COUNT_COLUMN among the columns it asked for (None: not at
    all), the dataset's columns it asked for)``; the second is None when Polars asked for
    every column (it gives no list then)."""
    if COUNT_COLUMN in schema:  # (the dataset's own column: see source_schema)
        return None, with_columns
    if with_columns is None:
        return 0, None
    if COUNT_COLUMN not in with_columns:
        return None, list(with_columns)
    return list(with_columns).index(COUNT_COLUMN), [c for c in with_columns if c != COUNT_COLUMN]


def nulls(height: int) -> pl.Series:
    """The :data:`COUNT_COLUMN` of a frame of ``height`` rows (a Null column holds no buffer)."""
    return pl.repeat(None, height, dtype=pl.Null, eager=True).alias(COUNT_COLUMN)


def with_count_column(frames: Iterator[pl.DataFrame], at: int | None) -> Iterator[pl.DataFrame]:
    """``frames`` with :data:`COUNT_COLUMN` inserted at ``at`` (None: as they are)."""
    if at is None:
        yield from frames
        return
    for df in frames:
        yield df.insert_column(at, nulls(df.height))


def count_frames(rows: int) -> Iterator[pl.DataFrame]:
    """``rows`` rows of no column, as one frame (Polars' batch size hint is not followed: a
    frame of no column holds no data, and slicing it costs ~0.1 ms a slice, 7 ms for 4M rows)."""
    yield nulls(rows).to_frame().drop(COUNT_COLUMN)


def live_rows(data: Any, planned: Any, n_rows: int | None) -> int:
    """The live rows of ``data`` (the first ``n_rows``): with no plans (``planned.plans``
    None: nothing deleted), the files' row counts, the manifest's or else their footers';
    otherwise each planned file's rows minus its deletion vector's (``planned.vectors``)."""
    rows = 0
    if planned.plans is None:
        manifest = data.manifest.files
        for rel in data.lake.files:
            entry = manifest.get(rel)
            rows += entry.rows if entry is not None and entry.rows else data.lake.row_count(rel)
            if n_rows is not None and rows >= n_rows:
                break
    else:
        for plan in planned.plans:
            dv = planned.vectors.get(plan.path)
            rows += plan.rows - (dv.cardinality if dv is not None else 0)
            if n_rows is not None and rows >= n_rows:
                break
    return rows if n_rows is None else min(rows, n_rows)
