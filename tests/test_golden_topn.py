"""Golden TopN cases (``{"op": "topn", ...}``) on the containers Java wrote.

Java evaluates ``FileIndexPredicate.evaluateTopN(topN, evaluate(filter))``: the filter's result
narrows the candidates, then the range-bitmap of the first sort key picks among them. Our
answer is judged against a reference computed here with pyarrow/numpy from the dataset (never
from arrowidx), in Java's value order (floats by ``Double.compare``: -0.0 < 0.0, NaN largest):

* one sort key (strict): exactly ``min(limit, candidates)`` rows, none of the left-out
  candidates better than a kept one, and -- Java's tie-break -- among tied values the highest
  row numbers kept, NULLs the lowest;
* several sort keys: every candidate at least as good as the ``limit``-th one (all ties kept);
* no range-bitmap on the first key: the filter's result unchanged.

When no index answers the filter exactly (a column without an index, a bloom filter, floats
with NaN or -0.0 rows), the top rows of the filter's superset could miss matching rows, so we
return the filter's result and Java's narrower answer is not followed.

Then the answer is compared with Java's. Java's own answer is not a valid top-``limit`` in
one situation (a file without any non-NULL value, where it returns every row); there ours
may differ, and the test checks that Java's answer is indeed the invalid one.
"""

from __future__ import annotations

import functools
import json
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from arrowidx import FileIndex
from arrowidx.predicate import bind, is_exact

from .golden_support import (
    expected_rows,
    expression,
    golden_cases,
    index_bytes,
    load_table,
    result_rows,
)
from .java_reference import java_float_key

CASES = [
    c
    for c in golden_cases()
    if c["indexFile"] and any(p["predicate"]["op"] == "topn" for p in c["predicates"])
]


def goodness(column: pa.ChunkedArray, descending: bool, nulls_first: bool) -> np.ndarray:
    """Per row, a number that is smaller the earlier the row sorts (ties equal).

    Values take their dense rank in Java's order; NULLs sort before or after every value.
    """
    arr = column.combine_chunks()
    valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)
    if pa.types.is_floating(arr.type):
        filled = arr.fill_null(0).to_numpy(zero_copy_only=False)
        arr = pa.array(java_float_key(filled), mask=~valid)
    rank = pc.rank(arr, sort_keys="ascending", tiebreaker="dense")
    rank = rank.to_numpy(zero_copy_only=False).astype(np.float64)
    score = -rank if descending else rank
    score[~valid] = -np.inf if nulls_first else np.inf
    return score


def reference(score: np.ndarray, candidates: np.ndarray, limit: int, strict: bool) -> np.ndarray:
    """The expected row mask: Java's tie-break with one key, all ties with several."""
    rows = np.flatnonzero(candidates)
    if limit <= 0:
        return np.zeros(len(score), dtype=bool)
    if len(rows) <= limit:
        return candidates.copy()
    s = score[rows]
    null = np.isinf(s)
    # Sort by score, then ties: values keep the highest rows first, NULLs the lowest.
    tiebreak = np.where(null, rows, -rows)
    order = np.lexsort((tiebreak, s))
    out = np.zeros(len(score), dtype=bool)
    if strict:
        out[rows[order[:limit]]] = True
    else:
        out[rows[s <= s[order[limit - 1]]]] = True
    return out


def is_valid_top(
    ours: np.ndarray, score: np.ndarray, candidates: np.ndarray, limit: int, strict: bool
) -> str | None:
    """None if ``ours`` is a correct top-``limit`` of ``candidates``, else what is wrong."""
    if (ours & ~candidates).any():
        return "keeps rows that are not candidates"
    n_cand = int(candidates.sum())
    kept, left = score[ours], score[candidates & ~ours]
    if strict and ours.sum() != min(limit, n_cand):
        return f"has {int(ours.sum())} rows, expected {min(limit, n_cand)}"
    if not strict and ours.sum() < min(limit, n_cand):
        return f"has only {int(ours.sum())} rows"
    if len(kept) and len(left) and left.min() < kept.max():
        return "leaves out a candidate that sorts before a kept row"
    if not strict and len(kept) and len(left) and left.min() == kept.max():
        return "leaves out a row tied with a kept one"
    return None


def _topn_items(case: dict) -> list[dict]:
    return [p for p in case["predicates"] if p["predicate"]["op"] == "topn"]


def judge_item(table: pa.Table, index: FileIndex, item: dict) -> tuple[str, str | None]:
    """One golden TopN item judged: ``(verdict, failure or None)``. Verdicts: ``equal``
    (Java's answer), ``java_invalid`` (ours valid, Java's not a top-limit),
    ``inexact_filter`` (the filter's result returned), ``failed``."""
    n = table.num_rows
    pred, expected = item["predicate"], item["expected"]
    orders, limit = pred["orders"], pred["limit"]
    first = orders[0]
    descending, nulls_first = first["direction"] == "desc", first["nulls"] == "first"
    sort_keys = [(o["field"], "descending" if o["direction"] == "desc" else "ascending") for o in orders]
    filt = expression(pred["filter"], table.schema) if pred["filter"] else None
    result = index.evaluate_top_n(sort_keys, limit, null_placement="at_start" if nulls_first else "at_end", filter=filt)
    ours = result_rows(result, n)
    java = expected_rows(expected, n)
    filtered = index.evaluate(filt) if filt is not None else None
    candidates = np.ones(n, bool) if filtered is None or filtered.kind == "remain" else result_rows(filtered, n)
    has_range_bitmap = "range-bitmap" in index.columns.get(first["field"], [])
    unchanged = (ours is None and (filtered is None or filtered.kind == "remain")) or (
        ours is not None and (ours == candidates).all()
    )
    if filt is not None and has_range_bitmap and filtered.remain and not is_exact(bind(filt, table.schema), table.schema, index.readers):
        # No index answers the filter exactly: picking the top rows among a superset of
        # the matching rows could drop a matching row, so the filter's result comes back.
        if not unchanged:
            return "failed", f"{pred}: an inexact filter's result must come back unchanged"
        return "inexact_filter", None
    if not has_range_bitmap or (filtered is not None and not filtered.remain):
        # Nothing picks among the candidates: the filter's result comes back unchanged.
        if not unchanged:
            return "failed", f"{pred}: without a range-bitmap the filter's result must come back unchanged"
        same = (ours is None) == (java is None) and (ours is None or (ours == java).all() or not java.any() and not ours.any())
        if not same:
            return "failed", f"{pred}: differs from Java's pass-through answer"
        return "equal", None
    strict = len(orders) == 1
    score = goodness(table.column(first["field"]), descending, nulls_first)
    if ours is None:
        return "failed", f"{pred}: REMAIN, expected rows"
    problem = is_valid_top(ours, score, candidates, limit, strict)
    if problem:
        return "failed", f"{pred}: {problem}"
    want = reference(score, candidates, limit, strict)
    if not (ours == want).all():
        return "failed", f"{pred}: valid, but not Java's tie-break: {np.flatnonzero(ours ^ want)[:10]}"
    java_rows = np.ones(n, bool) if java is None else java
    if (ours == java_rows).all():
        return "equal", None
    if is_valid_top(java_rows, score, candidates, limit, strict) is not None:
        return "java_invalid", None
    return "failed", f"{pred}: differs from Java's answer, which is also valid"


@functools.cache
def judge_case(case_id: str) -> tuple[tuple[str, str | None, str], ...]:
    """Every TopN item of one golden case: ``(verdict, failure, predicate as JSON)``."""
    case = next(c for c in CASES if c["id"] == case_id)
    table = load_table(case["dataset"])
    index = FileIndex(index_bytes(case), table.schema)
    return tuple((*judge_item(table, index, item), json.dumps(item["predicate"])) for item in _topn_items(case))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_topn_java_file(case):
    failures = [failure for _, failure, _ in judge_case(case["id"]) if failure]
    assert not failures, "\n".join(failures[:20])


def test_topn_summary(capsys):
    """Every golden TopN item gets a verdict, and Java's answer is invalid only where the
    docstring says: a file whose sort column holds no non-NULL value (Java returns every
    row there). Prints the tally (failures are reported by test_topn_java_file)."""
    tally: Counter = Counter()
    items = 0
    for case in CASES:
        judged = judge_case(case["id"])
        items += len(_topn_items(case))
        assert len(judged) == len(_topn_items(case))
        tally.update(verdict for verdict, _, _ in judged)
        table = load_table(case["dataset"])
        for verdict, _, pred in judged:
            if verdict == "java_invalid":
                column = json.loads(pred)["orders"][0]["field"]
                assert table.column(column).null_count == table.num_rows, (case["id"], pred)
    assert tally["failed"] == 0, f"{tally['failed']} TopN items failed (see test_topn_java_file)"
    assert items >= 1000 and tally["equal"] >= 0.9 * items, (items, dict(tally))
    with capsys.disabled():
        print(
            f"\ngolden TopN answers ({items} items): {tally['equal']} equal to Java's,"
            f" {tally['java_invalid']} valid where Java's answer is not a top-limit,"
            f" {tally['inexact_filter']} with a filter no index answers exactly (filter result"
            " returned: Java picks among a superset there and can drop matching rows)"
        )
