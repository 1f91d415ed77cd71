"""``arrowidx.dataset`` takes ``pyarrow.dataset.dataset``'s arguments as pyarrow takes them
(issue 49, part 3); the reference is pyarrow's own dataset of the same files."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.errors import OptionError


@pytest.fixture
def hive(tmp_path):
    root = tmp_path / "t"
    for n, (day, region) in enumerate([("2024-01-01", "eu"), ("2024-01-02", "us"), ("2024-01-02", "eu")]):
        folder = root / f"day={day}" / f"region={region}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(n * 10, n * 10 + 10)), "k": [n] * 10}), folder / "part.parquet")
    arrowidx.build(root, {"file-index.bitmap.columns": "k"}, progress=False)
    return str(root)


def test_format_filesystem_uri_and_scan_settings_as_pyarrow_takes_them(hive):
    want = ds.dataset(hive, format="parquet", filesystem="file:///").to_table(use_threads=False, batch_size=7)
    got = arrowidx.dataset(hive, format="parquet", filesystem="file:///", partitioning=None)
    assert got.to_table(use_threads=False, batch_size=7).sort_by("id").equals(want.sort_by("id"))
    assert got.count_rows(use_threads=True) == want.num_rows
    assert arrowidx.dataset(hive, format=ds.ParquetFileFormat()).count_rows() == want.num_rows
    with pytest.raises(OptionError, match="format='csv'"):
        arrowidx.dataset(hive, format="csv")
    options = ds.ParquetFragmentScanOptions(pre_buffer=False)  # (issue 49: taken, as pyarrow takes it)
    assert got.to_table(fragment_scan_options=options).sort_by("id").equals(want.sort_by("id"))
    with pytest.raises(TypeError, match="batch_sise"):
        got.to_table(batch_sise=7)


def test_a_partitioning_factory_discovers_as_pyarrow_does(hive):
    for factory in (ds.partitioning(flavor="hive"), ds.HivePartitioning.discover(infer_dictionary=True)):
        want = ds.dataset(hive, partitioning=factory)
        got = arrowidx.dataset(hive, partitioning=factory)
        assert got.schema == want.schema  # pyarrow's types (day a string here, not a date)
        where = (pc.field("region") == "eu") & (pc.field("k") == 2)
        assert got.to_table(filter=where).sort_by("id").equals(want.to_table(filter=where).sort_by("id"))


def test_get_fragments_is_pyarrows(hive):
    where = pc.field("region") == "us"
    want = sorted(f.path for f in ds.dataset(hive, partitioning="hive").get_fragments(filter=where))
    got = sorted(f.path for f in arrowidx.dataset(hive).get_fragments(filter=where))
    assert got == want and len(got) == 1


def test_pickled_and_rooted_filesystem_uri_as_pyarrow(hive, tmp_path):
    import pickle

    data = arrowidx.dataset(hive, partitioning=None)
    again = pickle.loads(pickle.dumps(data))
    assert again.to_table().sort_by("id").equals(data.to_table().sort_by("id")) and again.filesystem is not None
    pq.write_table(pa.table({"v": [1, 2, 3]}), tmp_path / "one.parquet")
    uri = (tmp_path).as_uri()
    want = ds.dataset("one.parquet", filesystem=uri).to_table()
    assert arrowidx.dataset("one.parquet", filesystem=uri).to_table().equals(want)
