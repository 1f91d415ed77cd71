"""Deletion-vector benchmark: arrowidx beside the Java RoaringBitmap figures of seed 004.

Run:  .venv/bin/python bench/bench_deletion.py            (full: 2M and 20M positions, 10M-row table)
      .venv/bin/python bench/bench_deletion.py --quick    (2M positions, 2M-row table, fewer repeats)

Seed 004 measured Java's RoaringBitmap with 20 % of the positions of a file deleted: add,
serialise, deserialise, file size and contains for every position. Here, for the same shapes:

* add         ``DeletionVector.from_positions(array)`` from a numpy int64 array of the deleted
              positions (random 20 %, ascending as a scan finds them);
* serialise   ``dv.serialize()``: run-optimise + portable bitmap + length, magic and CRC32;
* deserialise ``DeletionVector.deserialize(bytes)``: CRC check, header validation, bitmap;
* contains    ``dv.is_deleted(np.arange(n))``: membership of every position, as a numpy bool array;
* apply       a 20 % vector on a 10,000,000-row table: ``dv.apply(table)`` (keep mask from the
              bitmap's containers + ``Table.filter``) against a plain ``Table.filter`` with a
              precomputed mask, and the same per batch with ``apply_deletion_vector``.

Times are the best of several runs (after one warm-up), in milliseconds.
"""

from __future__ import annotations

import argparse
import gc
import platform
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowidx import DeletionVector, apply_deletion_vector

# Seed 004, "20% / 2,000,000" and "20% / 20,000,000" rows (ms, MB).
JAVA = {
    2_000_000: {"add": 43, "serialise": 5, "deserialise": 26, "contains": 7, "size_mb": 0.24},
    20_000_000: {"add": 450, "serialise": 13, "deserialise": 247, "contains": 49, "size_mb": 2.4},
}


def best_ms(fn, repeat: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def bitmap_rows(n: int, repeat: int, rng: np.random.Generator) -> list[tuple]:
    positions = np.flatnonzero(rng.random(n) < 0.2).astype(np.int64)
    everything = np.arange(n, dtype=np.int64)
    rows = []
    for bitmap64 in (False, True):
        dv = DeletionVector.from_positions(positions, bitmap64=bitmap64)
        data = dv.serialize()
        assert DeletionVector.deserialize(data) == dv
        assert int(dv.is_deleted(everything).sum()) == positions.size
        add = best_ms(
            lambda b=bitmap64: DeletionVector.from_positions(positions, bitmap64=b), repeat
        )
        ser = best_ms(dv.serialize, repeat)
        de = best_ms(lambda d=data: DeletionVector.deserialize(d), repeat)
        con = best_ms(lambda d=dv: d.is_deleted(everything), repeat)
        rows.append((n, bitmap64, add, ser, de, len(data) / 1e6, con))
    return rows


def table_of(n: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "value": rng.random(n),
            "category": pc.cast(pa.array(ids % 100_000), pa.string()),
            "qty": pa.array((ids % 1000).astype(np.int32)),
        }
    )


def apply_rows(n: int, repeat: int, rng: np.random.Generator) -> list[tuple[str, float]]:
    table = table_of(n, rng)
    deleted = rng.random(n) < 0.2
    dv = DeletionVector.from_positions(np.flatnonzero(deleted))
    mask = pa.array(~deleted)
    assert dv.apply(table).equals(table.filter(mask))
    batches = table.to_batches(max_chunksize=65_536)
    starts = np.cumsum([0] + [b.num_rows for b in batches])
    masks = [mask.slice(int(s), b.num_rows) for s, b in zip(starts, batches)]
    plain = best_ms(lambda: table.filter(mask), repeat)
    ours = best_ms(lambda: dv.apply(table), repeat)
    keep = best_ms(lambda: dv.keep_mask(0, n), repeat)
    plain_b = best_ms(lambda: [b.filter(m) for b, m in zip(batches, masks)], repeat)
    ours_b = best_ms(lambda: list(apply_deletion_vector(batches, dv)), repeat)
    return [
        ("plain Table.filter(precomputed mask)", plain, None),
        ("dv.apply(table): keep_mask + filter", ours, ours / plain),
        ("  of which dv.keep_mask(0, n)", keep, keep / plain),
        (f"plain filter of {len(batches)} batches (precomputed)", plain_b, None),
        ("apply_deletion_vector(batches, dv)", ours_b, ours_b / plain_b),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2M positions only, fewer repeats")
    args = parser.parse_args()
    sizes = [2_000_000] if args.quick else [2_000_000, 20_000_000]
    table_rows = 2_000_000 if args.quick else 10_000_000
    repeat = 3 if args.quick else 7
    rng = np.random.default_rng(20240404)
    print(
        f"arrowidx deletion vectors, 20 % deleted; best of {repeat} runs; "
        f"python {platform.python_version()}, pyarrow {pa.__version__}, numpy {np.__version__}"
    )
    print("Java = seed 004's RoaringBitmap figures; x = Java time / arrowidx time\n")
    header = f"{'rows':>12} {'kind':>6} | {'add':>20} | {'serialise':>20} | {'deserialise':>20} | {'contains (all)':>20} | {'size MB':>11}"
    print(header)
    print(f"{'':>12} {'':>6} | " + " | ".join(["   ours  Java      x"] * 4) + " |  ours  Java")
    print("-" * len(header))
    for n in sizes:
        java = JAVA[n]
        for n_, bitmap64, add, ser, de, size, con in bitmap_rows(n, repeat, rng):
            cells = []
            for ours, key in (
                (add, "add"),
                (ser, "serialise"),
                (de, "deserialise"),
                (con, "contains"),
            ):
                cells.append(f"{ours:7.2f} {java[key]:5d} {java[key] / ours:5.1f}x")
            print(
                f"{n_:>12,} {'64-bit' if bitmap64 else '32-bit':>6} | "
                + " | ".join(cells)
                + f" | {size:5.2f} {java['size_mb']:5.2f}"
            )
    print(f"\napplying a 20 % deletion vector to a {table_rows:,}-row table")
    print("(columns: int64 id, float64 value, string category, int32 qty)")
    for label, ms, ratio in apply_rows(table_rows, repeat, rng):
        extra = "" if ratio is None else f"   {ratio:4.2f}x plain"
        print(f"  {label:<44} {ms:8.2f} ms{extra}")


if __name__ == "__main__":
    main()
