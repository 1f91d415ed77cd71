"""pyiceberg reads the Puffin deletion-vector-v1 blobs arrowidx writes.

Skipped unless pyiceberg (>= 0.10, which has ``pyiceberg.table.deletion_vector``) is
installed. pyiceberg 0.12's ``DeletionVector.to_vector()`` cannot build its Arrow array when
the first 2**32 positions hold nothing (an empty vector, or one whose positions all lie at
2**32 or above: its first chunk is then an untyped empty list), so those shapes are left out
here; its blob parser reads them fine.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arrowidx import DeletionVector, read_puffin_deletion_vectors, write_puffin_deletion_vectors

puffin = pytest.importorskip("pyiceberg.table.puffin")
iceberg_dv = pytest.importorskip("pyiceberg.table.deletion_vector")

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden"


def _iceberg_positions(data: bytes) -> dict[str, np.ndarray]:
    vectors = iceberg_dv.deletion_vectors_from_puffin_file(puffin.PuffinFile(data))
    return {v.referenced_data_file: np.sort(v.to_vector().to_numpy()) for v in vectors}


def test_pyiceberg_reads_what_we_write():
    rng = np.random.default_rng(4)
    vectors = {
        "s3://bucket/t/data/a.parquet": np.array([0, 5, 7, 65_535, 65_536, 2**31 - 1]),
        "b.parquet": np.arange(1_000, 200_000),
        "c.parquet": np.flatnonzero(rng.random(300_000) < 0.2),
        "d.parquet": np.array([3, 2**32 + 3, 3 * 2**32 + 1]),  # keys 0..3, key 2 empty
    }
    data, ranges = write_puffin_deletion_vectors(
        {name: DeletionVector.from_positions(p, bitmap64=True) for name, p in vectors.items()}
    )
    got = _iceberg_positions(data)
    assert set(got) == set(vectors)
    for name, positions in vectors.items():
        np.testing.assert_array_equal(got[name], np.unique(positions))
    # the blob ranges are what an Iceberg manifest entry records
    footer = puffin.PuffinFile(data).footer
    for blob in footer.blobs:
        name = blob.properties["referenced-data-file"]
        assert (blob.offset, blob.length) == ranges[name]
        assert blob.properties["cardinality"] == str(np.unique(vectors[name]).size)
        assert blob.snapshot_id == -1 and blob.sequence_number == -1
    back = read_puffin_deletion_vectors(data)
    for name, positions in vectors.items():
        np.testing.assert_array_equal(back[name].positions(), np.unique(positions))


def test_pyiceberg_reads_java_paimon_64bit_records():
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    cases = [
        c
        for c in manifest["deletionVectorCases"]
        if c["bitmap64"] and c["file"] and c["cardinality"] and c["positionRuns"][0][0] < 2**32
    ]
    blobs = {
        c["id"]: DeletionVector.from_puffin_blob((GOLDEN / c["file"]).read_bytes()) for c in cases
    }
    data, _ = write_puffin_deletion_vectors(blobs)
    got = _iceberg_positions(data)
    for c in cases:
        expected = np.concatenate([np.arange(a, b) for a, b in c["positionRuns"]])
        np.testing.assert_array_equal(got[c["id"]], expected)
    # the blob inside the Puffin file is Java's record, byte for byte
    pf = puffin.PuffinFile(data)
    for blob in pf.footer.blobs:
        java = (GOLDEN / f"dv/{blob.properties['referenced-data-file']}.dv").read_bytes()
        assert pf.get_blob_payload(blob) == java
