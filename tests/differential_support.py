"""Hypothesis strategies for the differential tests (issues 15, 38): small lakes (sorted runs in
small row groups, NaN and -0.0, single-file builds), index options, deletes and file changes,
and predicates (pyarrow Expressions with cross-type literals, float NOT / !=, IN lists and
invalid filters; Polars expressions). The truth is always the filter on the rows in memory.

Profiles: the fast one (``make test``) checks a few hundred examples in all, derandomised so a
run is repeatable; ``ARROWIDX_FUZZ=long`` (``make fuzz``) runs many random examples without a
deadline (``ARROWIDX_FUZZ_EXAMPLES`` sets how many per test).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, reject, settings
from hypothesis import strategies as st

import arrowidx

LONG = os.environ.get("ARROWIDX_FUZZ", "").lower() == "long"


def fuzz_settings(fast_examples: int):
    """Hypothesis settings: ``fast_examples`` in the fast profile; many more, random, in the long one."""
    health = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    if LONG:
        examples = int(os.environ.get("ARROWIDX_FUZZ_EXAMPLES", "20000"))
        return settings(max_examples=examples, deadline=None, suppress_health_check=health, derandomize=False, database=None)
    return settings(max_examples=fast_examples, deadline=None, suppress_health_check=health, derandomize=True, database=None)


# ------------------------------------------------------------------------------------------
# columns: a type, a pool of values (with ties, extremes, NULL, NaN, -0.0, non-ASCII)
# ------------------------------------------------------------------------------------------

NAN = float("nan")
D = decimal.Decimal
LONG_TEXT = "a" + "é" * 60


def _t(h, m, s, us=0):
    return dt.time(h, m, s, us)


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    pool: tuple
    index_types: tuple  # the index types arrowidx supports for it

    def other_literals(self) -> list[pa.Scalar]:
        """Literals of other types that pyarrow compares with this column."""
        t = self.type
        out: list[pa.Scalar] = []
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            out += [pa.scalar(v) for v in (1.5, 1.0, 2.0**53, NAN, -0.0, 0.0, float("inf"), 17.35)]
            out += [pa.scalar(v, pa.float32()) for v in (17.35, 1.0, NAN, -0.0)]
            out += [pa.scalar(v, pa.int64()) for v in (0, 1, 2**53 + 1, -(2**63))]
            out += [pa.scalar(v, pa.int8()) for v in (-1, 5)]
            out += [pa.scalar(D(v)) for v in ("17.35", "1", "-0.5", "1.00000000000000001")]
        if pa.types.is_string(t):
            out += [pa.scalar(v, pa.large_string()) for v in ("a", "é", "")]
        if pa.types.is_timestamp(t):
            out += [pa.scalar(dt.datetime(2024, 2, 29, 12, 0, 0, 1), pa.timestamp(u)) for u in ("s", "ms", "us", "ns")]
            out += [pa.scalar(1_709_208_000_000_000_001, pa.timestamp("ns"))]
        if pa.types.is_date(t):
            out += [pa.scalar(dt.datetime(2024, 2, 29), pa.timestamp("s"))]
        if pa.types.is_time(t):
            out += [pa.scalar(dt.time(0, 0, 0, 500), pa.time64("us")), pa.scalar(1, pa.time64("ns")), pa.scalar(1000, pa.time32("ms"))]
        return out


TS = dt.datetime(2024, 2, 29, 12, 0, 0)
COLUMNS = [
    Column("i", pa.int64(), (0, 1, 2, -1, 3, 100, 2**53, 2**53 + 1, 2**62, -(2**63), 2**63 - 1, None),
           ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("j", pa.int8(), (-128, 0, 1, 5, 127, None), ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("f", pa.float64(), (0.0, -0.0, NAN, 1.5, -2.0, float("inf"), float("-inf"), 17.35, 2.0**53, 1e300, None),
           ("bloom-filter", "bitmap", "range-bitmap")),
    Column("g", pa.float32(), (0.0, -0.0, NAN, 1.5, 17.35, -2.5, None), ("bloom-filter", "bitmap", "range-bitmap")),
    Column("s", pa.string(), ("", "a", "b", "é", "日本", LONG_TEXT, "zz", None), ("bloom-filter", "bitmap", "range-bitmap")),
    Column("b", pa.bool_(), (True, False, None), ("bitmap", "range-bitmap")),
    Column("d", pa.date32(), (dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1900, 1, 1), dt.date(2024, 3, 1), None),
           ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("t32", pa.time32("ms"), (_t(0, 0, 0), _t(0, 0, 1), _t(12, 30, 0, 5000), _t(23, 59, 59, 999000), None),
           ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("t64", pa.time64("us"), (_t(0, 0, 0, 100), _t(0, 0, 0, 500), _t(0, 0, 0, 900), _t(0, 0, 1), _t(23, 0, 0), None),
           ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("tn", pa.time64("ns"), (0, 1, 999, 1000, 1_000_000, 86_399_999_999_999, None),
           ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("ts", pa.timestamp("us"), (TS, TS + dt.timedelta(microseconds=1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                                      dt.datetime(1970, 1, 1), None), ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("tsn", pa.timestamp("ns"), (1_709_208_000_000_000_000, 1_709_208_000_000_000_001, 1_709_208_000_000_001_000, -1, 0, None),
           ("bloom-filter", "bitmap", "bsi")),
    Column("tz", pa.timestamp("ms", tz="UTC"), (TS.replace(tzinfo=dt.timezone.utc), dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc), None),
           ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("dec", pa.decimal128(10, 2), (D("0.00"), D("17.35"), D("-1.00"), D("99999999.99"), D("1.50"), D("17.40"), None),
           ("range-bitmap", "bsi")),
]  # fmt: skip
BY_NAME = {c.name: c for c in COLUMNS}


# ------------------------------------------------------------------------------------------
# lakes
# ------------------------------------------------------------------------------------------


@dataclass
class LakeSpec:
    columns: list[str]
    files: list[dict]  # {"rows": {col: [values]}, "row_group_size": int}
    options: dict[str, str]
    changes: list[tuple]  # ("delete", [rid...]) | ("add", file) | ("rewrite", i, file) | ("remove", i) | ("rebuild",)


@st.composite
def value_pools(draw, columns: list[str]) -> dict[str, list]:
    """Per column, the few values a lake draws from: ties, and lakes without NaN, -0.0 or NULL."""
    return {c: draw(st.lists(st.sampled_from(BY_NAME[c].pool), min_size=1, max_size=4, unique_by=repr)) for c in columns}


@st.composite
def file_rows(draw, columns: list[str], max_rows: int = 24, pools: dict | None = None) -> dict:
    """One file's rows; half of the files sorted by one column (sorted runs in small row
    groups: where row-group min/max prune most, and where they must not drop NaN rows)."""
    n = draw(st.integers(0, max_rows))
    pools = pools or {c: BY_NAME[c].pool for c in columns}
    rows = {c: draw(st.lists(st.sampled_from(pools[c]), min_size=n, max_size=n)) for c in columns}
    key = draw(st.sampled_from([None, *columns]))
    if key is not None and n:
        order = pc.array_sort_indices(pa.array(rows[key], BY_NAME[key].type), null_placement=draw(st.sampled_from(["at_start", "at_end"]))).to_pylist()
        rows = {c: [v[i] for i in order] for c, v in rows.items()}
    return {"rows": rows, "n": n, "row_group_size": draw(st.sampled_from([1, 2, 3, 5, 8, 1000]))}


@st.composite
def index_options(draw, columns: list[str]) -> dict[str, str]:
    by_type: dict[str, list[str]] = {}
    for c in columns:
        least = 1 if draw(st.integers(0, 4)) else 0  # most columns indexed
        for t in draw(st.lists(st.sampled_from(BY_NAME[c].index_types), min_size=least, max_size=2, unique=True)):
            by_type.setdefault(t, []).append(c)
    return {f"file-index.{t}.columns": ",".join(cs) for t, cs in by_type.items()}


@st.composite
def lake_specs(draw, max_files: int = 6, names: list[str] | None = None) -> LakeSpec:
    names = names or [c.name for c in COLUMNS]
    columns = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    pools = draw(value_pools(columns))
    files = draw(st.lists(file_rows(columns, pools=pools), min_size=1, max_size=max_files))
    options = draw(index_options(columns))
    if not options:  # a build needs something to index
        options = {f"file-index.{BY_NAME[columns[0]].index_types[0]}.columns": columns[0]}
    changes = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["delete", "delete", "add", "rewrite", "remove", "rebuild", "build-one"]))
        if kind == "delete":
            changes.append(("delete", draw(st.integers(0, 2**31))))
        elif kind == "add":
            changes.append(("add", draw(file_rows(columns, pools=pools))))
        elif kind == "rewrite":
            changes.append(("rewrite", draw(st.integers(0, 10)), draw(file_rows(columns, pools=pools))))
        elif kind == "remove":
            changes.append(("remove", draw(st.integers(0, 10))))
        elif kind == "build-one":
            changes.append(("build-one", draw(st.integers(0, 10))))
        else:
            changes.append(("rebuild",))
    return LakeSpec(columns, files, options, changes)


@dataclass
class Lake:
    root: str
    columns: list[str]
    schema: pa.Schema
    deleted: set[int] = field(default_factory=set)
    next_rid: int = 0

    def files(self) -> list[str]:
        return sorted(os.path.join(self.root, f) for f in os.listdir(self.root) if f.endswith(".parquet"))

    def table_of(self, spec: dict) -> pa.Table:
        n = spec["n"]
        arrays = [pa.array(range(self.next_rid, self.next_rid + n), pa.int64())]
        self.next_rid += n
        for c in self.columns:
            arrays.append(pa.array(spec["rows"][c], BY_NAME[c].type))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def write(self, name: str, spec: dict) -> None:
        pq.write_table(self.table_of(spec), os.path.join(self.root, name), row_group_size=spec["row_group_size"])

    def rows(self) -> pa.Table:
        """Every row of the lake's files, in memory, minus the deleted rows."""
        table = pa.concat_tables([pq.read_table(f, schema=self.schema) for f in self.files()]) if self.files() else self.schema.empty_table()
        if self.deleted:
            table = table.filter(pc.invert(pc.is_in(table.column("rid"), pa.array(sorted(self.deleted), pa.int64()))))
        return table

    def reference(self, expr=None) -> pa.Table:
        """What ``expr`` means: ``Table.filter`` on the rows in memory (not a file scan,
        whose statistics pruning drops NaN rows and compares literals uncast)."""
        table = self.rows()
        return table if expr is None else table.filter(expr)


def _build(root: str, options: dict) -> None:
    """arrowidx.build; a value the index type cannot store (bsi: -2**63, as Java) is not a case."""
    try:
        arrowidx.build(root, options, progress=False)
    except arrowidx.UnsupportedValueError:
        reject()


def make_lake(spec: LakeSpec, root: str, before_changes=None) -> Lake:
    """Write the files, build the indexes, call ``before_changes(root)`` (to open and cache
    readers on the first state), then apply the deletes and file changes."""
    schema = pa.schema([pa.field("rid", pa.int64())] + [pa.field(c, BY_NAME[c].type) for c in spec.columns])
    lake = Lake(root, spec.columns, schema)
    for i, f in enumerate(spec.files):
        lake.write(f"part-{i}.parquet", f)
    _build(root, spec.options)
    if before_changes is not None:
        before_changes(root)
    added = len(spec.files)
    for change in spec.changes:
        files = lake.files()
        if change[0] == "delete":
            live = lake.reference().column("rid").to_pylist()
            if not live:
                continue
            seed = change[1]
            chosen = [r for k, r in enumerate(live) if (seed >> (k % 31)) & 1]
            arrowidx.delete(root, pc.field("rid").isin(chosen), progress=False)
            lake.deleted.update(chosen)
        elif change[0] == "add":
            lake.write(f"part-{added}.parquet", change[1])
            added += 1
        elif change[0] == "rewrite" and files:
            path = files[change[1] % len(files)]
            held = set(pq.read_table(path, columns=["rid"]).column("rid").to_pylist())
            if held & lake.deleted:
                continue  # rewriting a file with deleted rows is refused on read (StaleDeletionError), by design
            lake.write(os.path.basename(path), change[2])
        elif change[0] == "remove" and len(files) > 1:
            os.remove(files[change[1] % len(files)])
        elif change[0] == "rebuild":
            _build(root, spec.options)
        elif change[0] == "build-one" and files:
            # one file named alone, with the dataset's own options: the other entries (and
            # every deletion) stay; a file rewritten after a delete refuses, by design
            path = files[change[1] % len(files)]
            try:
                arrowidx.build([path], progress=False)
            except (arrowidx.UnsupportedValueError, arrowidx.StaleDeletionError):
                pass
    return lake


class TempLake:
    """A lake in a fresh temporary folder (hypothesis cannot use function-scoped fixtures)."""

    def __init__(self, spec: LakeSpec, before_changes=None):
        self.spec = spec
        self.before_changes = before_changes

    def __enter__(self) -> Lake:
        self._dir = tempfile.TemporaryDirectory(prefix="arrowidx-diff-")
        try:
            return make_lake(self.spec, self._dir.name, self.before_changes)
        except BaseException:
            self._dir.cleanup()
            raise

    def __exit__(self, *exc) -> None:
        self._dir.cleanup()


# ------------------------------------------------------------------------------------------
# pyarrow predicates
# ------------------------------------------------------------------------------------------

_OPS = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}  # fmt: skip
_CALLS = ["and", "or", "and_kleene", "or_kleene", "and_not", "and_not_kleene", "xor"]


@st.composite
def literals(draw, column: Column) -> pa.Scalar:
    if draw(st.integers(0, 3)) == 0 and column.other_literals():
        return draw(st.sampled_from(column.other_literals()))
    return pa.scalar(draw(st.sampled_from(column.pool)), column.type)


@st.composite
def leaves(draw, columns: list[str]) -> pc.Expression:
    column = BY_NAME[draw(st.sampled_from(columns))]
    f = pc.field(column.name)
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "cmp", "cmp", "cmp", "is_in", "is_in", "is_null", "is_valid", "const", "bare", "invalid"]))
    if kind == "cmp":
        op = _OPS[draw(st.sampled_from(sorted(_OPS)))]
        literal = pc.scalar(draw(literals(column)))
        return op(literal, f) if draw(st.booleans()) else op(f, literal)
    if kind == "is_in":
        values = draw(st.lists(st.sampled_from(column.pool), max_size=4))
        value_set = pa.array(values, column.type)
        if draw(st.integers(0, 4)) == 0 and (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
            value_set = pa.array([1.5, NAN, None, 0.0, -0.0][: draw(st.integers(0, 5))], pa.float64())
        return pc.is_in(f, value_set=value_set, skip_nulls=draw(st.booleans()))
    if kind == "is_null":
        return pc.is_null(f, nan_is_null=draw(st.booleans()))
    if kind == "is_valid":
        return f.is_valid()
    if kind == "bare" and pa.types.is_boolean(column.type):
        return f
    if kind == "invalid":  # an error in pyarrow's kernel, whatever the data (and the indexes)
        return draw(st.sampled_from(_invalid(column)))
    return pc.scalar(pa.scalar(draw(st.sampled_from([True, False, None])), pa.bool_()))


def _invalid(column: Column) -> list[pc.Expression]:
    """Filters pyarrow refuses on this column: no kernel for the types, a time zone against
    none, a column that does not exist."""
    f, t = pc.field(column.name), column.type
    out = [pc.field("no_such_column") == 1]
    if pa.types.is_string(t):
        out += [f < 1, f == 5]
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        out += [f == "5"]
    elif pa.types.is_timestamp(t):
        out += [f != pa.scalar(5, pa.timestamp("ms", tz="UTC" if t.tz is None else None))]
    return out


def expressions(columns: list[str]) -> st.SearchStrategy:
    def extend(children):
        return st.one_of(
            children.map(lambda e: ~e),
            st.tuples(children, children).map(lambda p: p[0] & p[1]),
            st.tuples(children, children).map(lambda p: p[0] | p[1]),
            st.tuples(st.sampled_from(_CALLS), children, children).map(lambda p: pc.Expression._call(p[0], [p[1], p[2]])),
        )

    return st.one_of(leaves(columns), st.recursive(leaves(columns), extend, max_leaves=5))


# ------------------------------------------------------------------------------------------
# comparing
# ------------------------------------------------------------------------------------------


def canon(v):
    """A hashable value where NaN equals NaN and -0.0 differs from 0.0."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else repr(v)
    if isinstance(v, dict):
        return tuple(sorted((k, canon(x)) for k, x in v.items()))
    return v


def multiset(table: pa.Table) -> Counter:
    names = table.column_names
    return Counter(tuple(canon(v) for v in row) for row in zip(*(table.column(n).to_pylist() for n in names)))


def call(fn, *args, **kwargs):
    """``(result, None)`` or ``(None, exception)``."""
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001 - the caller compares outcomes
        return None, e
