"""The lake index against per-file planning, on random lakes (issue 51's differential).

Each lake of the differential suite (``lake_specs``: random columns, index types, files,
then deletes, added, rewritten and removed files and rebuilds) is mirrored by a lake index
kept commit by commit as a manifest keeps it: every new content of a file gets a new fid
and a run of its keys; files that left are dropped. Then for random filters and for
needles of the lake's own values:

* a file holding a matching row (``Table.filter`` of its rows) is never ruled out;
* a covered file the lake index keeps is one its own index keeps (``plan_file``, what
  planning asks without the lake index): it can only narrow;
* for a needle on a column with an exact index (bitmap, range bitmap), the same files.
"""

from __future__ import annotations

import os
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash
from hypothesis import given
from hypothesis import strategies as st

import arrowidx
from arrowidx.lake import lakeindex
from arrowidx.lake.lakeindex import FileKeys, Keyed, LakeIndex, new_schema
from arrowidx.options import parse_index_options
from arrowidx.storage import LocalStore

from .differential_support import BY_NAME, TempLake, expressions, fuzz_settings, lake_specs


class Mirror:
    """A lake index kept for the files of a lake folder, commit by commit."""

    def __init__(self, root: str, options: dict):
        self.root = root
        self.store = LocalStore()
        self.keyed = sorted({s.column for s in parse_index_options(options)})
        self.exact = {s.column for s in parse_index_options(options) if s.index_type in ("bitmap", "range-bitmap")}
        self.fids: dict[tuple[str, str], int] = {}  # (path, content hash) -> fid
        self.next_fid = 0
        self.index: LakeIndex | None = None

    def sync(self) -> None:
        names = sorted(f for f in os.listdir(self.root) if f.endswith(".parquet"))
        live, added = {}, []
        for name in names:
            path = os.path.join(self.root, name)
            with open(path, "rb") as f:
                ident = (name, xxhash.xxh64_hexdigest(f.read()))
            fid = self.fids.get(ident)
            if fid is None:
                fid = self.fids[ident] = self.next_fid
                self.next_fid += 1
                table = pq.read_table(path, columns=self.keyed)
                keys = FileKeys(table.schema, [c for c in self.keyed if lakeindex.keyable(table.schema.field(c).type)])
                keys.add(table)
                added.append(Keyed(fid, keys.finish(), {c: table.schema.field(c).type for c in self.keyed}))
            live[name] = fid
        self.live = live
        schema = new_schema({c: BY_NAME[c].type for c in self.keyed})
        write = self.store.put
        self.index = lakeindex.update(self.store, self.root, self.index, schema, added,
                                      np.array(sorted(live.values()), np.int64), "test", write).index  # fmt: skip


def _needles(lake, data) -> list:
    out = []
    for name in lake.columns:
        column = BY_NAME[name]
        values = [v for v in lake.rows().column(name).to_pylist() if v is not None][:6] or [v for v in column.pool if v is not None]
        v = data.draw(st.sampled_from(values), label=f"needle on {name}")
        out.append((pc.field(name) == pa.scalar(v, column.type), name))
        out.append((pc.field(name).isin(pa.array(data.draw(st.lists(st.sampled_from(values), max_size=3)), column.type)), name))
    return out


@fuzz_settings(25)
@given(lake_specs(names=["i", "j", "s", "b", "d", "t64", "tsn", "tz", "dec", "f"]), st.data())
def test_the_lake_index_keeps_what_per_file_planning_keeps_and_no_less_than_the_rows(spec, data):
    mirrors = []

    def first_state(root: str) -> None:
        mirror = Mirror(root, spec.options)
        mirror.sync()
        mirrors.append(mirror)

    with mock.patch.object(lakeindex, "BLOCK", 4), TempLake(spec, first_state) as lake:  # (windows of a few blocks)
        mirror = mirrors[0]
        mirror.sync()  # the changes after the first build, as the next commit would see them
        dataset = arrowidx.dataset(lake.root)
        files = sorted(mirror.live)
        fids = np.array([mirror.live[f] for f in files], np.int64)
        tables = {f: pq.read_table(os.path.join(lake.root, f), schema=lake.schema) for f in files}
        exprs = _needles(lake, data) + [(data.draw(expressions(lake.columns)), None) for _ in range(3)]
        for expr, column in exprs:
            kept = mirror.index.may_hold(expr, lake.schema, fids, mirror.store, lake.root)
            if kept is None:
                continue
            try:
                truth = [tables[f].filter(expr).num_rows > 0 for f in files]
            except (pa.ArrowException, TypeError, ValueError):
                continue  # an invalid filter: planning meets the error, not the lake index
            for f, k, t in zip(files, kept.tolist(), truth):
                assert k or not t, f"{expr}: the lake index rules out {f}, which holds matching rows"
            plans = [dataset.plan_file(f, expr, statistics=False) for f in files]
            per_file = [not p.skipped for p in plans]
            # (a file added or rewritten since the last build has no index to compare with)
            indexed = [p.status not in ("no index", "stale", "fallback") for p in plans]
            if column is not None:  # a bare needle on that column
                covered = mirror.index.covered(column, fids)
                exact = column in mirror.exact
                for f, k, p, c in zip(files, kept.tolist(), per_file, (covered & indexed).tolist()):
                    if c:
                        assert p or not k, f"{expr}: {f} kept by the lake index, ruled out by its own index"
                        if exact:
                            assert k == p, f"{expr}: {f}: lake index {k}, its exact index {p}"

