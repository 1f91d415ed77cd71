"""Differential tests (issues 15, 38): random small lakes and predicates, each answered by
arrowidx and by ``Table.filter`` on the same rows in memory, compared as multisets.

* ``FileIndex``: SKIP is never wrong, a bitmap keeps every row pyarrow selects, and an answer
  arrowidx calls exact equals pyarrow's selection row for row (string_view columns judged on
  the same strings as string: pyarrow 26 has no kernels for them); TopN keeps a true top-k
  (floats in Java's order, computed by the tests' own ``java_reference``).
* ``arrowidx.dataset``: ``to_table`` / ``count_rows`` equal ``Table.filter`` on the rows in
  memory minus deleted rows (not ``pyarrow.dataset``, whose statistics drop NaN rows and
  compare literals uncast), after deletes, added, rewritten and removed files and
  single-file builds; an invalid filter raises what the kernel raises; ``explain`` never
  reports a file holding a matching row as skipped.

Every suite prints how many of its cases were selective (some rows selected, not all) and
fails below 100 of them. Fast profile in ``make test``; ``ARROWIDX_FUZZ=long`` (``make fuzz``)
for the long one.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from hypothesis import assume, given
from hypothesis import strategies as st

import arrowidx
from arrowidx.lake import read
from arrowidx.predicate import bind, is_exact

from .differential_support import (
    BY_NAME,
    COLUMNS,
    FILTERABLE,
    TempLake,
    as_array,
    call,
    expressions,
    file_rows,
    fuzz_settings,
    index_options,
    lake_specs,
    same_rows,
    tally,
    value_pools,
)
from .java_reference import java_float_key

RANGE_COLUMNS = [c.name for c in COLUMNS if "range-bitmap" in c.index_types]


@st.composite
def indexed_tables(draw, sort_column: bool = False):
    """A table, index options and its columns (and pools: the values it draws from). With
    ``sort_column``, the first column has a range-bitmap (the index TopN asks)."""
    first = [draw(st.sampled_from(RANGE_COLUMNS))] if sort_column else []
    rest = [c.name for c in COLUMNS if c.name not in first]
    columns = first + draw(st.lists(st.sampled_from(rest), min_size=0 if first else 1, max_size=3, unique=True))
    big = draw(st.integers(0, 3)) == 0
    pools = draw(value_pools(columns, 4 if big else 1))  # a big table's pool holds rare values (skewed draws)
    spec = draw(file_rows(columns, max_rows=40, pools=pools, big=big))
    options = draw(index_options(columns))
    if sort_column:
        key = "file-index.range-bitmap.columns"
        if first[0] not in options.get(key, "").split(","):
            options[key] = ",".join(filter(None, [options.get(key), first[0]]))
    arrays = [pa.array(np.arange(spec["n"], dtype=np.int64))] + [as_array(spec["rows"][c], BY_NAME[c].type) for c in columns]
    schema = pa.schema([pa.field("rid", pa.int64())] + [pa.field(c, BY_NAME[c].type) for c in columns])
    return pa.Table.from_arrays(arrays, schema=schema), options, columns, pools


def _without_views(table: pa.Table) -> pa.Table:
    """string_view columns as string: pyarrow 26 has no comparison or filter kernels for
    string_view, so the truth for one is computed on the same strings as string."""
    if not any(pa.types.is_string_view(f.type) for f in table.schema):
        return table
    return table.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f for f in table.schema]))


def _index(table: pa.Table, options: dict) -> arrowidx.FileIndex:
    """The table's index; a value the index type cannot store (bsi: -2**63, as Java) is not a case."""
    built, error = call(arrowidx.write_file_index, table, options)
    assume(not isinstance(error, arrowidx.UnsupportedValueError))
    if error is not None:
        raise error
    return arrowidx.FileIndex(built, table.schema)


def _selected(table: pa.Table, expr) -> np.ndarray | None:
    """The mask of rows ``Table.filter`` selects (None if pyarrow raises)."""
    out, error = call(lambda: _without_views(table).filter(expr).column("rid").to_numpy())
    if error is not None:
        return None
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[out] = True
    return mask


FILE_INDEX = tally("FileIndex.evaluate")


def test_file_index_matches_pyarrow():
    FILE_INDEX.__init__(FILE_INDEX.name)
    _file_index_examples()
    FILE_INDEX.check()


@fuzz_settings(160)
@given(indexed_tables(), st.data())
def _file_index_examples(case, data):
    table, options, columns, pools = case
    index = _index(table, options)
    for _ in range(4):
        expr = data.draw(expressions(columns, pools))
        expected = _selected(table, expr)
        FILE_INDEX.record(None if expected is None else int(expected.sum()), table.num_rows)
        if expected is None:
            continue  # pyarrow refuses it (the datasets' tests check arrowidx refuses it too)
        result = index.evaluate(expr)
        kept = np.ones(table.num_rows, bool) if result.kind == "remain" else result.to_mask(table.num_rows).to_numpy(zero_copy_only=False)
        dropped = expected & ~kept
        assert not dropped.any(), f"{expr}: rows {np.flatnonzero(dropped)[:10].tolist()} dropped; options {options}"
        if result.kind == "bitmap" and is_exact(bind(expr, table.schema), table.schema, index.readers):
            extra = kept & ~expected
            assert not extra.any(), f"{expr}: called exact but keeps {np.flatnonzero(extra)[:10].tolist()}; options {options}"


def _sort_keys(column: pa.Array) -> pa.Array:
    """Values that sort as the index's TopN sorts ``column``: floats in Java's order
    (``Double.compare``: NaN largest, -0.0 < 0.0, from the tests' own java_reference),
    string_view as its strings, anything else as pyarrow sorts it."""
    if pa.types.is_floating(column.type):
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        return pa.array(java_float_key(column.fill_null(0).to_numpy(zero_copy_only=False)), mask=~valid)
    if pa.types.is_string_view(column.type):
        return column.cast(pa.string())
    return column


def _top_keys(table: pa.Table, column: str, order: str, placement: str, k: int) -> list:
    """The sort keys of the first ``k`` rows of ``table`` sorted by ``column``."""
    if table.num_rows == 0:
        return []
    keys = _sort_keys(table.column(column).combine_chunks())
    indices = pc.array_sort_indices(keys, order=order, null_placement=placement)
    return [repr(v) for v in keys.take(indices[:k]).to_pylist()]


TOP_N = tally("FileIndex.evaluate_top_n")


def test_top_n_keeps_a_true_top_k():
    """Sorting the rows evaluate_top_n keeps (that match the filter) gives the true top-k
    keys, in the order the index sorts (Java's for floats). Every example asks a column
    with a range-bitmap; selective: the index kept fewer rows than match."""
    TOP_N.__init__(TOP_N.name)
    _top_n_examples()
    TOP_N.check()


@fuzz_settings(100)
@given(indexed_tables(sort_column=True), st.data())
def _top_n_examples(case, data):
    table, options, columns, pools = case
    index = _index(table, options)
    column = columns[0]  # a range-bitmap on it
    plain = _without_views(table)  # the reference's rows (string_view as string)
    for _ in range(3):
        order = data.draw(st.sampled_from(["ascending", "descending"]))
        placement = data.draw(st.sampled_from(["at_start", "at_end"]))
        limit = data.draw(st.integers(1, 6))
        expr = data.draw(st.none() | expressions(columns, pools))
        matching = plain if expr is None else call(plain.filter, expr)[0]
        if matching is None:  # pyarrow refuses the filter: ask without one
            expr, matching = None, plain
        sort_keys = [(column, order)] + ([("rid", "ascending")] if data.draw(st.booleans()) else [])
        result = index.evaluate_top_n(sort_keys, limit, null_placement=placement, filter=expr)
        if result.kind == "remain":
            kept = matching
        else:
            ids = pc.filter(table.column("rid"), result.to_mask(table.num_rows))
            kept = matching.filter(pc.is_in(matching.column("rid"), ids))
        TOP_N.record(kept.num_rows, matching.num_rows)
        expected = _top_keys(matching, column, order, placement, limit)
        got = _top_keys(kept, column, order, placement, limit)
        assert got == expected, f"top {limit} of {column} {order} {placement} where {expr}; options {options}"


def _same_error(got, error) -> bool:
    """``got`` is pyarrow's class of ``error``: the same class, or an arrowidx error that is
    also one (an unknown column is ``UnknownColumnError``, an ``ArrowInvalid``: issue 47)."""
    return type(got) is type(error) or (isinstance(got, type(error)) and isinstance(got, arrowidx.ArrowIdxError))


DATASET = tally("arrowidx.dataset")


def _check_lake(lake, expr, total: int) -> None:
    expected, error = call(lake.reference, expr)
    DATASET.record(None if error is not None else expected.num_rows, total)
    data = arrowidx.dataset(lake.root)
    got, got_error = call(data.to_table, filter=expr)
    if error is not None:  # pyarrow's kernel refuses the filter
        if _refused_for_any_data(lake.schema, expr) and lake.rows().num_rows:
            # for its types, whatever the values: so must arrowidx, whether or not indexes decide
            assert _same_error(got_error, error), f"{expr}: pyarrow raises {error!r}, arrowidx {got_error!r}"
            _, count_error = call(data.count_rows, filter=expr)
            assert _same_error(count_error, error), f"{expr}: count_rows {count_error!r}, pyarrow {error!r}"
        else:  # for a value some row holds (an int beyond float32's exact range): only that row's read raises
            assert got_error is None or _same_error(got_error, error), f"{expr}: {got_error!r}, pyarrow {error!r}"
        return
    assert got_error is None, f"{expr}: arrowidx raised {got_error!r} where Table.filter answers"
    assert got.schema == expected.schema, f"{expr}: schema {got.schema} where the lake's is {expected.schema}"
    assert same_rows(got, expected), f"{expr}: arrowidx {got.num_rows} rows, pyarrow {expected.num_rows}"
    assert data.count_rows(filter=expr) == expected.num_rows, str(expr)
    projected = [c for c in lake.columns[:1]] + ["rid"]
    got_projected = data.to_table(filter=expr, columns=projected)
    assert same_rows(got_projected, expected.select(projected)), f"{expr} projected"
    explain = data.explain(expr)
    str(explain)
    holding = {p.path for p in explain.files if p.skipped or p.status == "pruned"}
    rids = set(expected.column("rid").to_pylist())
    for path in holding:
        in_file = ds.dataset(f"{lake.root}/{path}").to_table(columns=["rid"]).column("rid").to_pylist()
        assert not rids & set(in_file), f"{expr}: explain says {path} is skipped but it holds matching rows"


def _refused_for_any_data(schema: pa.Schema, expr) -> bool:
    """pyarrow refuses ``expr`` on a row of NULLs of ``schema`` (types, not values)."""
    return call(lambda: pa.Table.from_arrays([pa.nulls(1, f.type) for f in schema], schema=schema).filter(expr))[1] is not None


def test_dataset_matches_pyarrow_dataset():
    DATASET.__init__(DATASET.name)
    _dataset_examples()
    DATASET.check()


@fuzz_settings(45)
@given(lake_specs(names=FILTERABLE), st.data())
def _dataset_examples(spec, data):
    opened = []
    # half the examples have Polars take every row a mask keeps (as shipped, it takes them
    # only from large row groups, which these small lakes never have)
    polars_takes = data.draw(st.booleans(), label="Polars takes every kept row")
    # and half have Polars filter every file the index keeps whole (as shipped, only files
    # of at least FILTER_MIN_ROWS kept rows)
    polars_filters = data.draw(st.booleans(), label="Polars filters every file kept whole")
    # and half have pyarrow read dictionary-encoded strings as dictionaries under a mask (as
    # shipped, only scans of at least DICTIONARY_MIN_ROWS rows)
    dictionaries = data.draw(st.booleans(), label="masked scans read dictionaries")
    patches = (mock.patch.object(read, "TAKE_MIN_ROWS", 0 if polars_takes else read.TAKE_MIN_ROWS),
               mock.patch.object(read, "TAKE_SHARE", 1 if polars_takes else read.TAKE_SHARE),
               mock.patch.object(read, "TAKE_MIN_BYTES", 0 if polars_takes else read.TAKE_MIN_BYTES),
               mock.patch.object(read, "FILTER_MIN_ROWS", 0 if polars_filters else read.FILTER_MIN_ROWS),
               mock.patch.object(read, "DICTIONARY_MIN_ROWS", 0 if dictionaries else read.DICTIONARY_MIN_ROWS))  # fmt: skip
    with patches[0], patches[1], patches[2], patches[3], patches[4], TempLake(spec, lambda root: opened.append(arrowidx.dataset(root))) as lake:
        everything = lake.reference()
        assert same_rows(arrowidx.dataset(lake.root).to_table(), everything)
        opened[0].refresh()  # a dataset opened before the changes, refreshed, reads them
        assert same_rows(opened[0].to_table(), everything)
        for _ in range(8):
            _check_lake(lake, data.draw(expressions(lake.columns, spec.pools)), everything.num_rows)
