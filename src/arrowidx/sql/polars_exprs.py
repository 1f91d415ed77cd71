"""Polars expressions of DuckDB's value semantics that the lowering (:mod:`.to_polars`), the
casts (:mod:`.polars_casts`) and the functions (:mod:`.polars_functions`) share: lower and
upper case as DuckDB's Unicode tables have them, rounding, and IEEE division."""

from __future__ import annotations

import numpy as np

UPPER_FIX = "\u019b\u0264\u0277\u027c\ua7d3\ua7d5\uab4b\uab4c"  # their upper case is newer than DuckDB's Unicode


def lower_text(x):
    """DuckDB's lower(): Unicode's simple lower case (pyarrow's utf8_lower is the same)."""
    import polars as pl
    import pyarrow.compute as pc

    return x.map_batches(lambda s: pl.from_arrow(pc.utf8_lower(s.to_arrow())), return_dtype=pl.String, is_elementwise=True)


def upper_text(x):
    """DuckDB's upper(): Unicode's simple upper case as of DuckDB's utf8proc (pyarrow's is
    newer for eight letters, which are left as they are)."""
    import polars as pl
    import pyarrow.compute as pc

    def run(s: pl.Series) -> pl.Series:
        arr = s.cast(pl.String).to_arrow()
        if pc.any(pc.match_substring_regex(arr, f"[{UPPER_FIX}]")).as_py():
            marks = [chr(0xF0000 + i) for i in range(len(UPPER_FIX))]
            for ch, mark in zip(UPPER_FIX, marks):
                arr = pc.replace_substring(arr, ch, mark)
            arr = pc.utf8_upper(arr)
            for ch, mark in zip(UPPER_FIX, marks):
                arr = pc.replace_substring(arr, mark, ch)
            return pl.from_arrow(arr)
        return pl.from_arrow(pc.utf8_upper(arr))

    return x.map_batches(run, return_dtype=pl.String, is_elementwise=True)


def round_half_away(x):
    """``x`` rounded to an integer, halves away from zero (C's ``round``), exactly: Polars'
    ``round(mode=...)`` loses its mode where the rounded expression is shared (Polars 2.1)."""
    import polars as pl

    t = pl.when(x >= 0).then(x.floor()).otherwise(x.ceil())
    d = (x - t).abs()
    return pl.when(d >= 0.5).then(t + pl.when(x > 0).then(1.0).otherwise(-1.0)).otherwise(t)


def round_half_even(x):
    """``x`` rounded to an integer, halves to even (C's ``nearbyint``)."""
    import polars as pl

    t = pl.when(x >= 0).then(x.floor()).otherwise(x.ceil())
    d = (x - t).abs()
    step = pl.when(x > 0).then(1.0).otherwise(-1.0)
    odd = (t % 2.0) != 0.0
    return pl.when((d > 0.5) | ((d == 0.5) & odd)).then(t + step).otherwise(t)


def true_divide(a, b, dtype=None):
    """``a / b`` in IEEE arithmetic (Polars divides by a constant with its reciprocal, which
    is not the correctly rounded quotient DuckDB computes)."""
    import polars as pl

    def run_divide(series):
        x, y = series
        n = max(x.len(), y.len())
        if x.len() != n:
            x = pl.repeat(x[0], n, eager=True, dtype=x.dtype)
        if y.len() != n:
            y = pl.repeat(y[0], n, eager=True, dtype=y.dtype)
        kind = np.float32 if x.dtype == pl.Float32 and y.dtype == pl.Float32 else np.float64
        xv = x.cast(pl.Float32 if kind is np.float32 else pl.Float64).to_numpy(allow_copy=True).astype(kind)
        yv = y.cast(pl.Float32 if kind is np.float32 else pl.Float64).to_numpy(allow_copy=True).astype(kind)
        with np.errstate(all="ignore"):
            out = pl.Series(x.name, np.divide(xv, yv))
        nulls = x.is_null() | y.is_null()
        return out.set(nulls, None) if nulls.any() else out

    return pl.map_batches([a, b], run_divide, return_dtype=dtype or pl.Float64, is_elementwise=True)
