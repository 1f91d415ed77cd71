"""The predicate model: parsing pyarrow Expressions, binding, and what is never an error."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from arrowidx import FileIndex, write_file_index
from arrowidx.predicate import Compare, Const, IsIn, IsNull, Not, Opaque, bind


def test_bind_reads_the_expression_tree():
    schema = pa.schema([("a", pa.int32()), ("s", pa.string())])
    node = bind((pc.scalar(5) < pc.field("a")) & ~pc.field("s").isin(["x", None]), schema)
    (left, right) = node.children
    assert left == Compare("gt", "a", pa.scalar(5, pa.int32()))
    assert isinstance(right, Not) and isinstance(right.child, IsIn)
    assert right.child.null_in_set and right.child.values.to_pylist() == ["x"]
    assert bind(pc.field("a").is_valid(), schema) == Not(IsNull("a"))
    assert bind(pc.field("a") == None, schema) == Const(None)  # noqa: E711 - a null literal
    for opaque in (pc.field("a") == 2.5, pc.field("a") == 2**40, pc.field("zz") == 1,
                   pc.field("a") == pc.field("a"), pc.starts_with(pc.field("s"), "x"),
                   pc.field("a").cast(pa.int64()) == 1):  # fmt: skip
        assert isinstance(bind(opaque, schema), Opaque), opaque


def test_literal_beyond_a_long_on_decimal38_is_remain_not_an_error():
    table = pa.table({"d": pa.array([decimal.Decimal("1.5"), None], pa.decimal128(38, 10))})
    index = FileIndex(write_file_index(table, {"file-index.bsi.columns": "d"}), table.schema)
    huge = pa.scalar(decimal.Decimal("12345678901234567890.5"), pa.decimal128(38, 10))
    assert index.evaluate(pc.field("d") == huge).kind == "remain"
    assert index.evaluate(pc.field("d") == pa.scalar(decimal.Decimal("1.5"), pa.decimal128(38, 10))).bitmap == BitMap([0])


def test_top_n_ignores_a_filter_no_index_answers_exactly():
    """The top rows of a superset of the matching rows could miss matching rows."""
    rng = np.random.default_rng(3)
    table = pa.table({"score": pa.array(rng.integers(0, 1000, 500), pa.int32()), "s": rng.choice(["a", "b"], 500)})
    options = {"file-index.range-bitmap.columns": "score", "file-index.bloom-filter.columns": "s"}
    index = FileIndex(write_file_index(table, options), table.schema)
    top = index.evaluate_top_n([("score", "descending")], 5)
    assert len(top.bitmap) == 5
    inexact = index.evaluate_top_n([("score", "descending")], 5, filter=pc.field("s") == "a")
    assert inexact.kind == "remain"  # bloom answers are supersets: no TopN pruning
    exact = index.evaluate_top_n([("score", "descending")], 5, filter=pc.field("score") < 500)
    matching = table.filter(pc.field("score") < 500)
    expected = matching.take(pc.select_k_unstable(matching, 5, [("score", "descending")]))
    assert len(exact.bitmap) == 5
    picked = table.take(pa.array(sorted(exact.bitmap))).column("score").to_pylist()
    assert sorted(picked) == sorted(expected.column("score").to_pylist())


def test_one_bound_predicate_answers_every_files_index():
    """A scan binds a predicate once per index schema and evaluates it against every file's
    index (the lowered key predicate is cached on the bound leaf): each file still gets
    its own answer: the one a freshly bound predicate gets, holding every row pyarrow
    selects."""
    import pyarrow.dataset as ds

    rng = np.random.default_rng(5)
    expr = (pc.field("c") == 5) | (pc.field("c") > 200) | pc.field("c").isin([2, 9]) | pc.field("c").is_null()
    for arrow_type in [pa.int32(), pa.int64(), pa.float64()]:
        node = bind(expr, pa.schema([("c", arrow_type)]))
        exact = "range-bitmap" if arrow_type == pa.float64() else "bsi"  # BSI: integers only
        for options in [{"file-index.bitmap.columns": "c"}, {f"file-index.{exact}.columns": "c"}]:
            for _ in range(4):
                values = pa.array(rng.integers(0, 260, 50), arrow_type, mask=rng.random(50) < 0.1)
                table = pa.table({"c": values, "row": range(50)})
                want = BitMap(ds.dataset(table).to_table(filter=expr).column("row").to_pylist())
                index = FileIndex(write_file_index(table, options), table.schema)
                got, fresh = index.evaluate(node), index.evaluate(bind(expr, table.schema))
                assert (got.kind, got.bitmap if got.kind == "bitmap" else None) == (
                    fresh.kind, fresh.bitmap if fresh.kind == "bitmap" else None
                ), (arrow_type, options)
                assert got.remain and (got.kind != "bitmap" or want <= got.bitmap)
                if exact in str(options):  # BSI and range-bitmap answer all four leaves exactly
                    assert got.kind == "bitmap" and got.bitmap == want


def test_a_bound_predicate_asked_of_an_index_of_another_column_type_is_remain():
    """The keys a bound leaf looks up are remembered per index schema. Asked of an index
    whose column has another type (timestamp[ms] against a literal bound as
    timestamp[us]), the leaf must not reuse the keys of the first type: those are
    microseconds, the ms index holds milliseconds, and it would rule the matching row
    out. No index can answer it, so the answer is REMAIN."""
    import datetime

    instant = datetime.datetime(2024, 1, 1, 0, 0, 1)
    expr = pc.field("ts") == pa.scalar(instant, pa.timestamp("us"))
    micros = pa.table({"ts": pa.array([instant, instant.replace(second=2)], pa.timestamp("us"))})
    millis = pa.table({"ts": pa.array([instant, instant.replace(second=3)], pa.timestamp("ms"))})
    for kind in ["bitmap", "bloom-filter", "range-bitmap"]:
        options = {f"file-index.{kind}.columns": "ts"}
        node = bind(expr, micros.schema)
        first = FileIndex(write_file_index(micros, options), micros.schema).evaluate(node)
        assert first.remain and (first.kind != "bitmap" or first.bitmap == BitMap([0])), kind
        other = FileIndex(write_file_index(millis, options), millis.schema).evaluate(node)
        assert other.kind == "remain", (kind, other)
