"""Differential tests (issues 15, 38): random small lakes and predicates, each answered by
arrowidx and by ``Table.filter`` on the same rows in memory, compared as multisets.

* ``FileIndex``: SKIP is never wrong, a bitmap keeps every row pyarrow selects, and an answer
  arrowidx calls exact equals pyarrow's selection row for row; TopN keeps a true top-k.
* ``arrowidx.dataset``: ``to_table`` / ``count_rows`` equal ``Table.filter`` on the rows in
  memory minus deleted rows (not ``pyarrow.dataset``, whose statistics drop NaN rows and
  compare literals uncast), after deletes, added, rewritten and removed files and
  single-file builds; an invalid filter raises what the kernel raises; ``explain`` never
  reports a file holding a matching row as skipped.

Fast profile in ``make test``; ``ARROWIDX_FUZZ=long`` (``make fuzz``) for the long one.
"""

from __future__ import annotations

from unittest import mock

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
    TempLake,
    call,
    expressions,
    file_rows,
    fuzz_settings,
    index_options,
    lake_specs,
    multiset,
    value_pools,
)


@st.composite
def indexed_tables(draw):
    columns = draw(st.lists(st.sampled_from([c.name for c in COLUMNS]), min_size=1, max_size=4, unique=True))
    pools = draw(st.none() | value_pools(columns))
    spec = draw(file_rows(columns, max_rows=40, pools=pools))
    options = draw(index_options(columns))
    arrays = [pa.array(range(spec["n"]), pa.int64())] + [pa.array(spec["rows"][c], BY_NAME[c].type) for c in columns]
    schema = pa.schema([pa.field("rid", pa.int64())] + [pa.field(c, BY_NAME[c].type) for c in columns])
    return pa.Table.from_arrays(arrays, schema=schema), options, columns


def _index(table: pa.Table, options: dict) -> arrowidx.FileIndex:
    """The table's index; a value the index type cannot store (bsi: -2**63, as Java) is not a case."""
    built, error = call(arrowidx.write_file_index, table, options)
    assume(not isinstance(error, arrowidx.UnsupportedValueError))
    if error is not None:
        raise error
    return arrowidx.FileIndex(built, table.schema)


def _selected(table: pa.Table, expr) -> set[int] | None:
    """The row ids ``Table.filter`` selects (None if pyarrow raises)."""
    out, error = call(lambda: table.filter(expr).column("rid").to_pylist())
    return None if error is not None else set(out)


@fuzz_settings(250)
@given(indexed_tables(), st.data())
def test_file_index_matches_pyarrow(case, data):
    table, options, columns = case
    index = _index(table, options)
    for _ in range(3):
        expr = data.draw(expressions(columns))
        expected = _selected(table, expr)
        if expected is None:
            continue  # pyarrow refuses it (the datasets' tests check arrowidx refuses it too)
        result = index.evaluate(expr)
        kept = set(range(table.num_rows)) if result.kind == "remain" else set(result.to_mask(table.num_rows).to_numpy(zero_copy_only=False).nonzero()[0].tolist())
        assert expected <= kept, f"{expr}: rows {sorted(expected - kept)} dropped; options {options}"
        if result.kind == "bitmap" and is_exact(bind(expr, table.schema), table.schema, index.readers):
            assert kept == expected, f"{expr}: called exact but keeps {sorted(kept - expected)}; options {options}"


def _sort_key_values(table: pa.Table, column: str, order: str, placement: str, k: int) -> list:
    if table.num_rows == 0:
        return []
    indices = pc.sort_indices(table, sort_keys=[(column, order, placement)])
    return [repr(v) for v in table.column(column).take(indices[:k]).to_pylist()]


@fuzz_settings(120)
@given(indexed_tables(), st.data())
def test_top_n_keeps_a_true_top_k(case, data):
    """Sorting the rows evaluate_top_n keeps (that match the filter) gives pyarrow's top-k keys.

    Float columns are left out: TopN follows Java's order (NaN largest, -0.0 < 0.0), which
    pyarrow's sort does not (NaN last either way, -0.0 == 0.0)."""
    table, options, columns = case
    candidates = [c for c in columns if not pa.types.is_floating(BY_NAME[c].type) and any(c in v.split(",") for k, v in options.items() if "range-bitmap" in k)]
    if not candidates:
        return
    index = _index(table, options)
    column = data.draw(st.sampled_from(candidates))
    order = data.draw(st.sampled_from(["ascending", "descending"]))
    placement = data.draw(st.sampled_from(["at_start", "at_end"]))
    limit = data.draw(st.integers(1, 6))
    expr = data.draw(st.none() | expressions(columns))
    matching = table if expr is None else call(lambda: table.filter(expr))[0]
    if matching is None:
        return
    sort_keys = [(column, order)] + ([("rid", "ascending")] if data.draw(st.booleans()) else [])
    result = index.evaluate_top_n(sort_keys, limit, null_placement=placement, filter=expr)
    if result.kind == "remain":
        kept = matching
    else:
        mask = result.to_mask(table.num_rows)
        ids = pc.filter(table.column("rid"), mask)
        kept = matching.filter(pc.is_in(matching.column("rid"), ids))
    expected = _sort_key_values(matching, column, order, placement, limit)
    got = _sort_key_values(kept, column, order, placement, limit)
    assert got == expected, f"top {limit} of {column} {order} {placement} where {expr}; options {options}"


def _same_error(got, error) -> bool:
    """``got`` is pyarrow's class of ``error``: the same class, or an arrowidx error that is
    also one (an unknown column is ``UnknownColumnError``, an ``ArrowInvalid``: issue 47)."""
    return type(got) is type(error) or (isinstance(got, type(error)) and isinstance(got, arrowidx.ArrowIdxError))


def _check_lake(lake, expr) -> None:
    expected, error = call(lake.reference, expr)
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
    assert multiset(got) == multiset(expected), f"{expr}: arrowidx {got.num_rows} rows, pyarrow {expected.num_rows}"
    assert data.count_rows(filter=expr) == expected.num_rows, str(expr)
    projected = [c for c in lake.columns[:1]] + ["rid"]
    got_projected = data.to_table(filter=expr, columns=projected)
    assert multiset(got_projected) == multiset(expected.select(projected)), f"{expr} projected"
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


@fuzz_settings(60)
@given(lake_specs(), st.data())
def test_dataset_matches_pyarrow_dataset(spec, data):
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
        assert multiset(arrowidx.dataset(lake.root).to_table()) == multiset(lake.reference())
        opened[0].refresh()  # a dataset opened before the changes, refreshed, reads them
        assert multiset(opened[0].to_table()) == multiset(lake.reference())
        for _ in range(4):
            _check_lake(lake, data.draw(expressions(lake.columns)))
