"""Conditional reads (``Store.get_if_same`` / ``open_if_same``) on a local disk: an object is
read only while it is the file a listing or a manifest described (size and change stamp of
the opened descriptor); a file replaced or rewritten in place since is
``ObjectChangedError``, and the bytes read are those of the file that was checked.

References: the bytes written to the file, and ``os.stat``."""

from __future__ import annotations

import copy
import os
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.storage import LocalStore, ObjectChangedError, as_store, same_object


def test_a_file_as_listed_is_read_and_a_rewritten_one_is_refused(tmp_path):
    store = LocalStore()
    path = str(tmp_path / "a.bin")
    with open(path, "wb") as f:
        f.write(b"first version")
    (info,) = store.stat([path])
    assert store.get_if_same(path, info) == b"first version"
    with store.open_if_same(path, info) as f:
        assert f.read_at(5, 6) == b"versi"
    with open(path, "wb") as f:  # rewritten in place, same size: the change time moves
        f.write(b"other version")
    os.utime(path, ns=(info.mtime_ns, info.mtime_ns))  # even with the old modification time
    with pytest.raises(ObjectChangedError, match="a.bin"):
        store.get_if_same(path, info)
    with pytest.raises(ObjectChangedError):
        store.open_if_same(path, info)
    os.replace(str(tmp_path / "a.bin"), str(tmp_path / "b.bin"))
    with pytest.raises(FileNotFoundError):
        store.get_if_same(path, info)


def test_the_bytes_read_are_those_of_the_file_checked(tmp_path):
    """A file replaced (renamed over) after it was opened and checked is read as checked:
    the descriptor holds the old inode."""
    store = LocalStore()
    path = str(tmp_path / "part.parquet")
    pq.write_table(pa.table({"x": list(range(100))}), path)
    (info,) = store.stat([path])
    f = store.open_if_same(path, info)
    pq.write_table(pa.table({"x": list(range(5))}), str(tmp_path / "new.parquet"))
    os.replace(str(tmp_path / "new.parquet"), path)
    assert pq.read_table(f).num_rows == 100
    assert not same_object(store.stat([path])[0], info)


def test_an_unstamped_store_compares_size_and_time():
    """Any other pyarrow filesystem (no change stamp): the size and modification time."""
    store = as_store(pa.fs.PyFileSystem(pa.fs.FSSpecHandler(_memory())))
    store.put("/x/a.bin", b"12345")
    (info,) = store.stat(["/x/a.bin"])
    assert info.stamp is None and store.get_if_same("/x/a.bin", info) == b"12345"
    store.put("/x/a.bin", b"123456")
    with pytest.raises(ObjectChangedError):
        store.get_if_same("/x/a.bin", info)


def _memory():
    fsspec = pytest.importorskip("fsspec")
    return fsspec.filesystem("memory")


def test_the_error_crosses_process_boundaries():
    e = ObjectChangedError("bucket/lake/part-1.parquet")
    for again in (pickle.loads(pickle.dumps(e)), copy.copy(e)):
        assert isinstance(again, arrowidx.ArrowIdxError) and str(again) == str(e) and again.path == e.path
