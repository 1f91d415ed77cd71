"""Reading the Java golden vectors: datasets as Arrow tables, predicates as Expressions, and
the rule every answer must meet.

Three independent references judge an answer:

* ``pyarrow``: the rows ``Table.filter(expr)`` selects (SQL three-valued logic, IEEE floats);
* ``java_rows``: the rows Paimon's own ``Predicate.test`` selects (NULL never matches, floats
  ordered by ``Double.compare``), recomputed here with pyarrow and checked against the
  manifest's ``rowFilterCardinality``;
* ``expected``: the answer Java's index reader gave.

An answer is *sound* when it keeps every pyarrow and every Java row-filter row, and *not
wider than Java* when every row it keeps outside those is also in Java's answer.
"""

from __future__ import annotations

import base64
import decimal
import json
import math
from functools import cache, reduce
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from arrowidx.types import parse_paimon_sql_type

from .conftest import GOLDEN, golden_manifest
from .java_reference import java_float_key


def arrow_type(paimon_sql: str) -> pa.DataType:
    """The Arrow type a user would have for a Paimon column type."""
    t = parse_paimon_sql_type(paimon_sql)
    simple = {
        "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
        "BOOLEAN": pa.bool_(), "STRING": pa.string(), "DATE": pa.date32(), "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
    }  # fmt: skip
    if t.root in simple:
        return simple[t.root]
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = "s" if t.precision == 0 else "ms" if t.precision <= 3 else "us" if t.precision <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if t.root == "TIMESTAMP_LTZ" else None)
    if t.root == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    raise ValueError(paimon_sql)


def _float(v):
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0.0": -0.0}[v]
    return float(v)


def convert_value(v, typ: pa.DataType):
    """A JSON value (see golden README) as a Python value for ``typ``."""
    if v is None:
        return None
    if pa.types.is_floating(typ):
        return _float(v)
    if pa.types.is_decimal(typ):
        return decimal.Decimal(v)
    if pa.types.is_timestamp(typ):
        return v  # epoch micros; see arrow_array
    return v


def arrow_array(values: list, typ: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(typ):
        mask = np.array([v is None for v in values], dtype=bool)
        micros = np.array([0 if v is None else v for v in values], dtype=np.int64)
        if typ.unit == "us":
            return pa.array(micros, mask=mask).cast(pa.timestamp("us", tz=typ.tz))
        # TIMESTAMP(p<=3) in Arrow is whole milliseconds: floor, as Java's getMillisecond().
        millis = np.floor_divide(micros, 1000)
        return pa.array(millis, mask=mask).cast(pa.timestamp("ms", tz=typ.tz))
    return pa.array([convert_value(v, typ) for v in values], type=typ)


@cache
def load_table(dataset: str) -> pa.Table:
    """A golden dataset (``datasets/<name>.json``) as an Arrow table."""
    with open(GOLDEN / dataset) as f:
        d = json.load(f)
    arrays, fields = [], []
    for col in d["columns"]:
        typ = arrow_type(col["paimonType"])
        arrays.append(arrow_array(col["values"], typ))
        fields.append(pa.field(col["name"], typ))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


@cache
def dataset_json(dataset: str) -> dict:
    with open(GOLDEN / dataset) as f:
        return json.load(f)


def _literal(v, typ: pa.DataType) -> pa.Scalar:
    if pa.types.is_timestamp(typ):
        return pa.scalar(v, pa.timestamp("us", tz=typ.tz)) if v is not None else pa.scalar(None, typ)
    return pa.scalar(convert_value(v, typ), type=typ)


def expression(pred: dict, schema: pa.Schema) -> pc.Expression:
    """A golden predicate as the ``pyarrow.compute.Expression`` a user would write."""
    op = pred["op"]
    if op in ("and", "or"):
        children = [expression(c, schema) for c in pred["children"]]
        return reduce(lambda a, b: (a & b) if op == "and" else (a | b), children)
    field = pc.field(pred["field"])
    typ = schema.field(pred["field"]).type
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        lit = _literal(pred["literal"], typ)
        return {
            "eq": field == lit, "ne": field != lit, "lt": field < lit,
            "le": field <= lit, "gt": field > lit, "ge": field >= lit,
        }[op]  # fmt: skip
    if op in ("in", "not_in"):
        values = [_literal(v, typ) for v in pred["literals"]]
        arr = pa.array([v.as_py() for v in values], type=values[0].type if values else typ)
        e = field.isin(arr)
        return ~e if op == "not_in" else e
    if op == "is_null":
        return field.is_null()
    if op == "is_not_null":
        return field.is_valid()
    if op == "between":
        return (field >= _literal(pred["lower"], typ)) & (field <= _literal(pred["upper"], typ))
    if op == "starts_with":
        return pc.starts_with(field, pattern=pred["literal"])
    raise ValueError(op)


def has_null_literal(pred: dict) -> bool:
    if pred["op"] in ("and", "or"):
        return any(has_null_literal(c) for c in pred["children"])
    if "literal" in pred and pred["literal"] is None and pred["op"] != "starts_with":
        return True
    if "literals" in pred and any(v is None for v in pred["literals"]):
        return True
    return pred["op"] == "between" and (pred["lower"] is None or pred["upper"] is None)


def pyarrow_rows(table: pa.Table, expr: pc.Expression) -> np.ndarray:
    """Row mask pyarrow selects for ``expr``: the user's reference answer."""
    indexed = table.append_column("__row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    rows = indexed.filter(expr).column("__row").to_numpy()
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[rows] = True
    return mask


# -- Java's Predicate.test, recomputed --------------------------------------------------------


def _java_domain(dataset: str, column: str) -> tuple[pa.Array, str]:
    """A column in a type whose pyarrow comparisons order values as Java does."""
    d = dataset_json(dataset)
    col = next(c for c in d["columns"] if c["name"] == column)
    ptype = parse_paimon_sql_type(col["paimonType"])
    values = col["values"]
    return _java_values(values, ptype.root, col["paimonType"]), col["paimonType"]


def _java_values(values: list, root: str, sql: str) -> pa.Array:
    if root in ("FLOAT", "DOUBLE"):
        dtype = np.float32 if root == "FLOAT" else np.float64
        arr = np.array([0.0 if v is None else _float(v) for v in values], dtype=dtype)
        mask = np.array([v is None for v in values], dtype=bool)
        return pa.array(java_float_key(arr), mask=mask)
    if root == "DECIMAL":
        t = arrow_type(sql)
        return pa.array([None if v is None else decimal.Decimal(v) for v in values], type=pa.decimal128(38, t.scale))
    if root == "STRING":
        return pa.array([None if v is None else v.encode() for v in values], pa.binary())
    if root == "BOOLEAN":
        return pa.array(values, pa.bool_()).cast(pa.int8())
    return pa.array(values, pa.int64())  # ints, DATE, TIMESTAMP micros


def java_rows(dataset: str, pred: dict) -> np.ndarray:
    """Row mask of Paimon's ``Predicate.test``: NULL fields never match, floats by Double.compare."""
    op = pred["op"]
    if op in ("and", "or"):
        masks = [java_rows(dataset, c) for c in pred["children"]]
        return reduce(np.logical_and if op == "and" else np.logical_or, masks)
    arr, sql = _java_domain(dataset, pred["field"])
    root = parse_paimon_sql_type(sql).root
    valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)

    def lit(v):
        return _java_values([v], root, sql)[0]

    def cmp(fn, v):
        return pc.fill_null(fn(arr, lit(v)), False).to_numpy(zero_copy_only=False)

    if op == "is_null":
        return ~valid
    if op == "is_not_null":
        return valid
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        fn = {"eq": pc.equal, "ne": pc.not_equal, "lt": pc.less, "le": pc.less_equal,
              "gt": pc.greater, "ge": pc.greater_equal}[op]  # fmt: skip
        return cmp(fn, pred["literal"])
    if op in ("in", "not_in"):
        hit = reduce(np.logical_or, [cmp(pc.equal, v) for v in pred["literals"]], np.zeros(len(arr), bool))
        return hit if op == "in" else valid & ~hit
    if op == "between":
        return cmp(pc.greater_equal, pred["lower"]) & cmp(pc.less_equal, pred["upper"])
    if op == "starts_with":
        prefix = pred["literal"].encode()
        return pc.fill_null(pc.starts_with(arr.cast(pa.string()), pattern=prefix.decode()), False).to_numpy(
            zero_copy_only=False
        )
    raise ValueError(op)


# -- Java's expected answer --------------------------------------------------------------------


def expected_rows(expected: dict, num_rows: int) -> np.ndarray | None:
    """Rows of Java's answer as a mask; None for REMAIN (all rows)."""
    kind = expected["kind"]
    if kind == "REMAIN":
        return None
    mask = np.zeros(num_rows, dtype=bool)
    if kind == "SKIP":
        return mask
    if "positions" in expected:
        mask[np.array(expected["positions"], dtype=np.int64)] = True
    else:
        pool = golden_manifest()["bitmapPool"]
        bm = BitMap.deserialize(base64.b64decode(pool[expected["positionsRef"]]))
        mask[np.array(bm.to_array(), dtype=np.int64)] = True
    return mask


def result_rows(result, num_rows: int) -> np.ndarray | None:
    """Rows of an arrowidx IndexResult as a mask; None for REMAIN."""
    if result.kind == "remain":
        return None
    return result.to_mask(num_rows).to_numpy(zero_copy_only=False)


def judge(ours: np.ndarray | None, java: np.ndarray | None, must_keep: np.ndarray) -> str:
    """``"equal"``, ``"narrower"`` (sound and inside Java's answer) or an error message."""
    n = len(must_keep)
    ours_all = np.ones(n, bool) if ours is None else ours
    java_all = np.ones(n, bool) if java is None else java
    dropped = must_keep & ~ours_all
    if dropped.any():
        return f"drops rows {np.flatnonzero(dropped)[:10].tolist()} that pyarrow or Java's row filter selects"
    wider = ours_all & ~java_all & ~must_keep
    if wider.any():
        return f"keeps rows {np.flatnonzero(wider)[:10].tolist()} outside Java's answer and outside the true selection"
    if not ours_all.any() and not java_all.any():
        return "equal"  # SKIP == empty bitmap
    if (ours is None) == (java is None) and (ours is None or (ours == java).all()):
        return "equal"
    return "narrower"


def golden_cases(index_types: set[str] | None = None) -> list[dict]:
    """fileIndexCases whose indexes are all among ``index_types`` (all cases if None)."""
    cases = golden_manifest()["fileIndexCases"]
    if index_types is None:
        return cases
    return [c for c in cases if {i["indexType"] for i in c["indexes"]} <= index_types]


def case_options(case: dict) -> dict[str, str]:
    """The Paimon options that build ``case``'s container."""
    options: dict[str, str] = {}
    for idx in case["indexes"]:
        key = f"file-index.{idx['indexType']}.columns"
        options[key] = ",".join(filter(None, [options.get(key), idx["column"]]))
        for k, v in idx["options"].items():
            options[f"file-index.{idx['indexType']}.{idx['column']}.{k}"] = v
    return options


def index_bytes(case: dict) -> bytes:
    return Path(GOLDEN / case["indexFile"]).read_bytes()
