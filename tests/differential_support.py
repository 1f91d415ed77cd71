"""Hypothesis strategies for the differential tests (issues 15, 38, 54): lakes (sorted runs in
small row groups, NaN and -0.0, single-file builds, and files crossing a Roaring container
(65,536 rows) and large row groups), columns of every type a lake can hold (indexable or
not: binary, large_string, string_view, dictionary, unsigned), index options, deletes and file
changes, and predicates (pyarrow Expressions with cross-type literals, float NOT / !=, IN
lists and invalid filters; Polars expressions) whose literals are mostly values the data
holds, so that most cases select some rows but not all. The truth is always the filter on
the rows in memory.

Each suite counts its cases and its *selective* cases (some rows selected, not all) in a
:class:`Tally`, prints them at the end of the run and checks a floor.

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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, Phase, reject, settings
from hypothesis import strategies as st

import arrowidx

LONG = os.environ.get("ARROWIDX_FUZZ", "").lower() == "long"


FAST_PHASES = (Phase.explicit, Phase.reuse, Phase.generate)  # no shrinking (see fuzz_settings)


def fuzz_settings(fast_examples: int):
    """Hypothesis settings: ``fast_examples`` in the fast profile; many more, random, in the long one.

    The fast profile does not shrink a failing example (examples hold files of 65,536+
    rows, and shrinking them took over five minutes): it reports the example as drawn, and
    ``make fuzz`` (the long profile) shrinks."""
    health = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    if LONG:
        examples = int(os.environ.get("ARROWIDX_FUZZ_EXAMPLES", "20000"))
        return settings(max_examples=examples, deadline=None, suppress_health_check=health, derandomize=False, database=None)
    return settings(max_examples=fast_examples, deadline=None, suppress_health_check=health, derandomize=True, database=None,
                    phases=FAST_PHASES)  # fmt: skip


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
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t):
            out += [pa.scalar(v, pa.large_string()) for v in ("a", "é", "")] + [pa.scalar(v, pa.string()) for v in ("a", "zz")]
        if pa.types.is_binary(t):
            out += [pa.scalar(v, pa.large_binary()) for v in (b"a", b"")] + [pa.scalar("a", pa.string())]
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
    Column("h", pa.int16(), (-32768, 0, 1, 7, 300, 32767, None), ("bloom-filter", "bitmap", "range-bitmap", "bsi")),
    Column("ls", pa.large_string(), ("", "a", "b", "é", "zz", LONG_TEXT, None), ("bloom-filter", "bitmap", "range-bitmap")),
    Column("sv", pa.string_view(), ("", "a", "b", "é", "zz", LONG_TEXT, None), ("bloom-filter", "bitmap", "range-bitmap")),
    # no Paimon index type for these: never indexed, always filtered by the engine
    Column("bin", pa.binary(), (b"", b"a", b"b", b"\x00", b"\xff\xfe", None), ()),
    Column("dict", pa.dictionary(pa.int32(), pa.string()), ("", "a", "b", "é", None), ()),
    Column("u8", pa.uint8(), (0, 1, 7, 200, 255, None), ()),
    Column("u32", pa.uint32(), (0, 1, 7, 2**31, 2**32 - 1, None), ()),
    Column("u64", pa.uint64(), (0, 1, 7, 2**53 + 1, 2**64 - 1, None), ()),
]  # fmt: skip
BY_NAME = {c.name: c for c in COLUMNS}
# pyarrow 26 has no filter or take kernel for string_view: a table holding one cannot be
# filtered at all (Table.filter, a dataset scan with a filter, a delete all refuse), so the
# pyarrow-filter suites leave it out; the index and Polars suites keep it.
FILTERABLE = [c.name for c in COLUMNS if not pa.types.is_string_view(c.type)]
INDEXABLE = [c.name for c in COLUMNS if c.index_types]


# ------------------------------------------------------------------------------------------
# counting: cases and selective cases per suite
# ------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """A suite's cases and *selective* cases (some rows selected, not all: where an index
    must pick rows rather than keep or skip a file whole)."""

    name: str
    cases: int = 0
    selective: int = 0
    refused: int = 0
    large: int = 0
    known: int = 0  # cases of a known bug (each has its own xfail test)

    def record(self, selected: int | None, total: int) -> None:
        """One case: ``selected`` of ``total`` rows (None: the filter was refused)."""
        self.cases += 1
        self.large += total >= 65_535
        if selected is None:
            self.refused += 1
        elif 0 < selected < total:
            self.selective += 1

    def __str__(self) -> str:
        return (f"{self.name}: {self.cases} cases, {self.selective} selective (some rows, not all),"
                f" {self.refused} refused filters, {self.large} on 65,535+ rows (a Roaring container's edge or past it)"
                + (f", {self.known} cases of a known bug (xfail tests)" if self.known else ""))

    def check(self, floor: int = 100) -> None:
        """At least ``floor`` selective cases in the fast profile (a ``make test`` run; the
        long one sets its own number of examples)."""
        if not LONG:
            assert self.selective >= floor, f"{self}: fewer than {floor} selective cases (the generators lost their bias)"


TALLIES: dict[str, Tally] = {}


def tally(name: str) -> Tally:
    """A fresh tally for suite ``name`` (reported at the end of the run)."""
    TALLIES[name] = Tally(name)
    return TALLIES[name]


_REPORTED: set[str] = set()


def report_tallies(terminalreporter) -> None:
    """Each suite's counts, once per run (both conftests call this)."""
    for t in TALLIES.values():
        if t.name not in _REPORTED and t.cases:
            _REPORTED.add(t.name)
            terminalreporter.write_line(f"differential {t}")


# ------------------------------------------------------------------------------------------
# lakes
# ------------------------------------------------------------------------------------------


@dataclass
class LakeSpec:
    columns: list[str]
    files: list[dict]  # {"rows": {col: [values] or pa.Array}, "n": int, "row_group_size": int}
    options: dict[str, str]
    changes: list[tuple]  # ("delete", [rid...]) | ("add", file) | ("rewrite", i, file) | ("remove", i) | ("rebuild",)
    pools: dict[str, list] = field(default_factory=dict)  # per column, the values the files draw from


@st.composite
def value_pools(draw, columns: list[str], min_values: int = 1) -> dict[str, list]:
    """Per column, the few values a lake draws from: ties, and lakes without NaN, -0.0 or NULL."""
    return {c: draw(st.lists(st.sampled_from(BY_NAME[c].pool), min_size=min(min_values, len(BY_NAME[c].pool)), max_size=5,
                             unique_by=repr)) for c in columns}  # fmt: skip


# Files this large cross a Roaring container (65,536 rows) and fill large row groups (the
# scan core's row takes and Polars filters work on those only, as shipped).
BIG_ROWS = [65_535, 65_536, 65_537, 70_001, 131_073]
BIG_ROW_GROUPS = [4_096, 65_536, 1 << 20]


def _skew(k: int) -> np.ndarray:
    weights = 4.0 ** -np.arange(k)
    return weights / weights.sum()


def take(array: pa.Array, indices) -> pa.Array:
    """``array.take(indices)``, also for string_view (pyarrow 26 has no take kernel for it)."""
    if pa.types.is_string_view(array.type):
        return array.cast(pa.string()).take(indices).cast(array.type)
    return array.take(indices)


@st.composite
def file_rows(draw, columns: list[str], max_rows: int = 24, pools: dict | None = None, big: bool = False, min_rows: int = 0) -> dict:
    """One file's rows; half of the files sorted by one column (sorted runs in small row
    groups: where row-group min/max prune most, and where they must not drop NaN rows).
    ``big``: sometimes a file of :data:`BIG_ROWS` rows in large row groups, its values drawn
    from the pools by numpy (never per row)."""
    pools = pools or {c: BY_NAME[c].pool for c in columns}
    if big and draw(st.integers(0, 3)) == 0:
        n = draw(st.sampled_from(BIG_ROWS))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        # skewed: each value of a pool four times rarer than the one before it, so that rare
        # values leave sparse (array) containers on both sides of row 65,536
        rows = {c: take(pa.array(pools[c], BY_NAME[c].type), rng.choice(len(pools[c]), n, p=_skew(len(pools[c])))) for c in columns}
        row_group_size = draw(st.sampled_from(BIG_ROW_GROUPS))
    else:
        n = draw(st.integers(min_rows, max_rows))
        rows = {c: draw(st.lists(st.sampled_from(pools[c]), min_size=n, max_size=n)) for c in columns}
        row_group_size = draw(st.sampled_from([1, 2, 3, 5, 8, 1000]))
    key = draw(st.sampled_from([None, *columns]))
    if key is not None and n:
        order = pc.array_sort_indices(as_array(rows[key], BY_NAME[key].type).cast(_sortable(BY_NAME[key].type)),
                                      null_placement=draw(st.sampled_from(["at_start", "at_end"])))  # fmt: skip
        rows = {c: take(as_array(v, BY_NAME[c].type), order) for c, v in rows.items()}
    return {"rows": rows, "n": n, "row_group_size": row_group_size}


def as_array(values, arrow_type: pa.DataType) -> pa.Array:
    return values if isinstance(values, pa.Array) else pa.array(values, arrow_type)


def _sortable(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(t) or pa.types.is_dictionary(t):
        return pa.string()
    return t


@st.composite
def index_options(draw, columns: list[str]) -> dict[str, str]:
    by_type: dict[str, list[str]] = {}
    for c in columns:
        if not BY_NAME[c].index_types:
            continue  # no Paimon index type: never named in the options
        least = 1 if draw(st.integers(0, 4)) else 0  # most columns indexed
        for t in draw(st.lists(st.sampled_from(BY_NAME[c].index_types), min_size=least, max_size=2, unique=True)):
            by_type.setdefault(t, []).append(c)
    return {f"file-index.{t}.columns": ",".join(cs) for t, cs in by_type.items()}


@st.composite
def lake_specs(draw, max_files: int = 6, names: list[str] | None = None, big: bool = True, min_rows: int = 0,
               min_values: int = 1) -> LakeSpec:  # fmt: skip
    """A lake: files, options and changes. ``min_rows`` per file and ``min_values`` per
    column pool keep a suite that can afford few lakes off the degenerate ones."""
    names = names or [c.name for c in COLUMNS]
    columns = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    big = big and draw(st.integers(0, 5)) == 0  # one lake in six holds a file crossing a container
    # (a big file's pool holds rare values: at least four, each four times rarer than the last)
    pools = draw(value_pools(columns, 4 if big else min_values))
    files = draw(st.lists(file_rows(columns, pools=pools, min_rows=min_rows), min_size=1, max_size=max_files))
    if big:
        files[draw(st.integers(0, len(files) - 1))] = draw(file_rows(columns, pools=pools, big=True).filter(lambda f: f["n"] > 65_000))
    options = draw(index_options(columns))
    if not options:  # a build needs something to index
        indexable = [c for c in columns if BY_NAME[c].index_types]
        options = {f"file-index.{BY_NAME[indexable[0]].index_types[0]}.columns": indexable[0]} if indexable else {
            "file-index.bitmap.columns": "rid"}
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
    return LakeSpec(columns, files, options, changes, pools)


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
        arrays = [pa.array(np.arange(self.next_rid, self.next_rid + n, dtype=np.int64))]
        self.next_rid += n
        for c in self.columns:
            arrays.append(as_array(spec["rows"][c], BY_NAME[c].type))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def write(self, name: str, spec: dict) -> None:
        pq.write_table(self.table_of(spec), os.path.join(self.root, name), row_group_size=spec["row_group_size"])

    def rows(self) -> pa.Table:
        """Every row of the lake's files, in memory, minus the deleted rows."""
        table = pa.concat_tables([pq.read_table(f, schema=self.schema) for f in self.files()]) if self.files() else self.schema.empty_table()
        if self.deleted:
            alive = pc.invert(pc.is_in(table.column("rid"), pa.array(sorted(self.deleted), pa.int64())))
            views = [f.name for f in self.schema if pa.types.is_string_view(f.type)]
            if views:  # (no filter kernel for string_view: filtered as string)
                filtered = table.cast(pa.schema([f.with_type(pa.string()) if f.name in views else f for f in self.schema])).filter(alive)
                return filtered.cast(self.schema)
            table = table.filter(alive)
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
            try:
                arrowidx.delete(root, pc.field("rid").isin(chosen), progress=False)
            except pa.ArrowNotImplementedError:
                # a table holding string_view cannot be filtered by pyarrow 26: delete refuses as Table.filter does
                assert any(pa.types.is_string_view(f.type) for f in schema)
                continue
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
        try:  # the lake one folder down: its sidecar index folder is inside the temporary folder too
            root = os.path.join(self._dir.name, "lake")
            os.mkdir(root)
            return make_lake(self.spec, root, self.before_changes)
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
def literals(draw, column: Column, held: list | None = None) -> pa.Scalar:
    """Mostly a value the data holds (``held``: the lake's pool of the column), else another
    value of the column's pool or a literal of another type."""
    choice = draw(st.integers(0, 7))
    if choice <= 1 and column.other_literals():
        return draw(st.sampled_from(column.other_literals()))
    pool = held if held and choice >= 3 else column.pool
    return _scalar(draw(st.sampled_from(pool)), column.type)


def _scalar(value, arrow_type: pa.DataType) -> pa.Scalar:
    if pa.types.is_dictionary(arrow_type):  # a literal of the dictionary's value type, as users write it
        return pa.scalar(value, arrow_type.value_type)
    if pa.types.is_string_view(arrow_type):
        return pa.scalar(value, pa.string())
    return pa.scalar(value, arrow_type)


def _value_type(arrow_type: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(arrow_type):
        return arrow_type.value_type
    return pa.string() if pa.types.is_string_view(arrow_type) else arrow_type


@st.composite
def leaves(draw, columns: list[str], pools: dict | None = None) -> pc.Expression:
    column = BY_NAME[draw(st.sampled_from(columns))]
    held = (pools or {}).get(column.name)
    f = pc.field(column.name)
    kind = draw(st.sampled_from(["cmp"] * 8 + ["is_in"] * 3 + ["is_null", "is_valid", "const", "bare", "invalid"]))
    if kind == "cmp":
        op = _OPS[draw(st.sampled_from(sorted(_OPS)))]
        literal = pc.scalar(draw(literals(column, held)))
        return op(literal, f) if draw(st.booleans()) else op(f, literal)
    if kind == "is_in":
        values = draw(st.lists(st.sampled_from(held if held and draw(st.booleans()) else column.pool), max_size=4))
        value_set = pa.array(values, _value_type(column.type))
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
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_dictionary(t):
        out += [f < 1, f == 5]
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        out += [f == "5"]
    elif pa.types.is_timestamp(t):
        out += [f != pa.scalar(5, pa.timestamp("ms", tz="UTC" if t.tz is None else None))]
    return out


def expressions(columns: list[str], pools: dict | None = None) -> st.SearchStrategy:
    """Expressions on ``columns``; literals mostly from ``pools`` (the values the data holds)."""

    def extend(children):
        return st.one_of(
            children.map(lambda e: ~e),
            st.tuples(children, children).map(lambda p: p[0] & p[1]),
            st.tuples(children, children).map(lambda p: p[0] | p[1]),
            st.tuples(st.sampled_from(_CALLS), children, children).map(lambda p: pc.Expression._call(p[0], [p[1], p[2]])),
        )

    leaf = leaves(columns, pools)
    return st.one_of(leaf, leaf, st.recursive(leaf, extend, max_leaves=4))


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


def _float_bits(arr: pa.Array) -> np.ndarray:
    """The bits of a float array's values (NaN canonical, NULL slots 0): -0.0 is not 0.0."""
    width = np.float32 if arr.type == pa.float32() else np.float64
    values = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(width)
    values = np.where(np.isnan(values), width(np.nan), values).astype(width)
    bits = values.view(np.int32 if width == np.float32 else np.int64).copy()
    bits[~arr.is_valid().to_numpy(zero_copy_only=False)] = 0
    return bits


def _plain(arr: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(arr.type):
        return arr.cast(arr.type.value_type)
    if pa.types.is_string_view(arr.type):
        return arr.cast(pa.string())
    return arr


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """The same rows (as multisets, by their unique ``rid``), vectorised: floats by their
    bits (NaN equals NaN, -0.0 is not 0.0), dictionaries by their values."""
    if a.column_names != b.column_names or a.num_rows != b.num_rows:
        return False
    if "rid" not in a.column_names:
        return multiset(a) == multiset(b)

    def ordered(t: pa.Table) -> pa.Table:
        order = np.argsort(t.column("rid").to_numpy(), kind="stable")
        return pa.table({n: take(_plain(t.column(n).combine_chunks()), order) for n in t.column_names})

    x, y = ordered(a), ordered(b)
    for name in x.column_names:
        p, q = x.column(name).combine_chunks(), y.column(name).combine_chunks()
        if pa.types.is_floating(p.type) and p.type == q.type:
            if not (p.is_valid().equals(q.is_valid()) and np.array_equal(_float_bits(p), _float_bits(q))):
                return False
        elif p.type != q.type:
            if p.to_pylist() != q.to_pylist():
                return False
        elif not p.equals(q):
            return False
    return True


def call(fn, *args, **kwargs):
    """``(result, None)`` or ``(None, exception)``."""
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001 - the caller compares outcomes
        return None, e
