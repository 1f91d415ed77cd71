"""A local disk that notes every read of a Parquet file (for tests that show how a build reads
its data: which column chunks, how many times). The log is a file, appended by whichever
process reads (Spark's Python workers too), one ``path offset length`` line per read."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq


class _Logged:
    """A file object over a pyarrow file that logs each read's offset and length."""

    def __init__(self, f, path: str, log: str):
        self.f, self.path, self.log = f, path, log
        self.closed = False

    def read(self, nbytes: int = -1) -> bytes:
        at = self.f.tell()
        data = self.f.read() if nbytes is None or nbytes < 0 else self.f.read(nbytes)
        with open(self.log, "a") as out:
            out.write(f"{self.path} {at} {len(data)}\n")
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.f.seek(pos, whence)

    def tell(self) -> int:
        return self.f.tell()

    def size(self) -> int:
        return self.f.size()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self.f.close()


class CountingReads(pafs.FileSystemHandler):
    """The local filesystem, with reads of ``*.parquet`` files logged to ``log``."""

    def __init__(self, log: str):
        self.log = log
        self.fs = pafs.LocalFileSystem()

    def __reduce__(self):
        return (CountingReads, (self.log,))

    def get_type_name(self): return "counting-reads"  # noqa: E704
    def normalize_path(self, path): return path  # noqa: E704
    def __eq__(self, other): return isinstance(other, CountingReads) and other.log == self.log  # noqa: E704
    def __ne__(self, other): return not self == other  # noqa: E704
    def get_file_info(self, paths): return self.fs.get_file_info(paths)  # noqa: E704
    def get_file_info_selector(self, selector): return self.fs.get_file_info(selector)  # noqa: E704
    def create_dir(self, path, recursive): return self.fs.create_dir(path, recursive=recursive)  # noqa: E704
    def delete_dir(self, path): return self.fs.delete_dir(path)  # noqa: E704
    def delete_dir_contents(self, path, missing_dir_ok=False): return self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)  # noqa: E704
    def delete_root_dir_contents(self): raise NotImplementedError  # noqa: E704
    def delete_file(self, path): return self.fs.delete_file(path)  # noqa: E704
    def move(self, src, dest): return self.fs.move(src, dest)  # noqa: E704
    def copy_file(self, src, dest): return self.fs.copy_file(src, dest)  # noqa: E704
    def open_input_stream(self, path): return self.fs.open_input_stream(path)  # noqa: E704
    def open_output_stream(self, path, metadata=None): return self.fs.open_output_stream(path)  # noqa: E704
    def open_append_stream(self, path, metadata=None): return self.fs.open_append_stream(path)  # noqa: E704

    def open_input_file(self, path):
        f = self.fs.open_input_file(path)
        if not path.endswith(".parquet"):
            return f
        return pa.PythonFile(_Logged(f, path, self.log), mode="r")


def reads(log: str) -> list[tuple[str, int, int]]:
    """``(path, offset, length)`` of every logged read, in order."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [(p, int(a), int(n)) for p, a, n in (line.split() for line in f if line.strip())]


def chunk_reads(log: str, path: str) -> dict[tuple[int, str], int]:
    """How many times each column chunk ``(row group, column)`` of the Parquet file ``path``
    was read (a read overlapping a chunk counts for it; reads of the footer, up to the end of
    the file, for none); raises if one read spans two chunks."""
    meta = pq.ParquetFile(path).metadata
    spans = []
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page and col.dictionary_page_offset else col.data_page_offset
            spans.append(((g, col.path_in_schema), start, start + col.total_compressed_size))
    counts = {key: 0 for key, _, _ in spans}
    size = os.path.getsize(path)
    for p, at, n in reads(log):
        if os.path.realpath(p) != os.path.realpath(path) or n == 0 or at + n == size:
            continue  # (a read up to the end is the footer's, which may take the last chunk's tail)
        hit = [key for key, a, b in spans if at < b and at + n > a]
        assert len(hit) <= 1, f"one read of {n} bytes at {at} spans the column chunks {hit}"
        for key in hit:
            counts[key] += 1
    return counts
