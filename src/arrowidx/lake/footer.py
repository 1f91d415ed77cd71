"""A Parquet file's footer, read once, and the content hashes arrowidx identifies it by.

Two, recorded in each manifest entry:

* :func:`content_xxh64`, the XXH64 of the whole file: what a data file's identity is when
  its change stamp is not the one indexed (a copied lake, a ``touch``, a rewrite). It is
  computed when a file is indexed (its bytes are read anyway) and, by a reader, only for a
  file whose stamp changed (once per process). A rewrite is caught whatever it keeps: the
  size, the modification time (``cp -p``, ``rsync -t``), the footer (no statistics,
  fixed-width data), the last pages.
* :func:`fingerprint`, the size and the XXH64 of the file's tail (the last 64 KiB, or all of
  a smaller file, or the footer when larger): free with the footer read, it is the identity
  only where nothing better exists (entries indexed before content hashes, and a store
  without change stamps whose modification time is unchanged: see docs/reliability.md).

One read of the file's tail gets both the metadata and the fingerprint; a second read only
when the footer is larger than that tail.
"""

from __future__ import annotations

import posixpath
import struct
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from ..errors import ArrowIdxError, CorruptIndexError, NotParquetError
from ..storage import Store

MAGIC = b"PAR1"
TAIL_BYTES = 64 * 1024  # what pyarrow itself reads first for a footer
CONTENT_CHUNK = 8 << 20  # bytes per read while hashing a whole file


@dataclass(frozen=True)
class Footer:
    """A data file's parsed Parquet footer, its size and its content fingerprint."""

    metadata: pq.FileMetaData
    size: int
    fingerprint: str

    @property
    def num_rows(self) -> int:
        return self.metadata.num_rows


def fingerprint(tail_bytes: bytes, size: int) -> str:
    """``"<size>:<xxh64 of the file's tail>"``: how a manifest names one data file's content.

    The tail is the last 64 KiB read anyway to find the footer (the whole file when it is
    smaller), or the footer itself when it is larger: every data file's footer is covered,
    and a small file's every byte."""
    return f"{size}:{xxhash.xxh64_hexdigest(tail_bytes)}"


#: What a dataset reads, for messages about a folder without data files.
NO_DATA_FILES = "its folder holds no files but hidden ones (names starting with '_' or '.')"


def stray_file_hint(path: str) -> str:
    """Advice for a file of a dataset folder that is not Parquet (``README.txt``): every file
    under the folder is a data file, as for ``pyarrow.dataset`` and Spark, except hidden ones."""
    name = posixpath.basename(path)
    if name.endswith(".parquet"):
        return ""
    return (f"; every file under a dataset folder is read as Parquet, except names starting with '_' or '.'"
            f" (as _SUCCESS): move {name} out of the folder or rename it to _{name}")  # fmt: skip


def read_footer(store: Store, path: str, size: int | None = None) -> Footer:
    """Read and parse the footer of the Parquet file at ``path``.

    Raises :class:`~arrowidx.errors.CorruptIndexError` naming the file when it is not a
    Parquet file (too short, wrong magic, a footer length past the start of the file, a
    footer that does not parse). The footer may start at the file's first byte (no leading
    ``PAR1``): pyarrow and Polars read such a file's metadata too (its schema and row
    counts are whole; reading its data is the reader's to judge).
    """
    if size is None:
        info = store.stat([path])[0]
        if info is None:
            raise FileNotFoundError(path)
        size = info.size
    if size < 12:
        raise NotParquetError(f"not a Parquet file ({size} bytes){stray_file_hint(path)}", source=path)
    start = max(0, size - TAIL_BYTES)
    tail = store.get_range(path, start, size - start, "data file")
    if tail[-4:] != MAGIC:
        raise NotParquetError(f"not a Parquet file (no PAR1 magic at the end){stray_file_hint(path)}", source=path)
    (length,) = struct.unpack("<I", tail[-8:-4])
    if length + 8 > size:
        raise CorruptIndexError(f"Parquet footer length {length} is past the start of the file", source=path)
    if length + 8 > len(tail):
        tail = store.get_range(path, size - length - 8, length + 8, "data file")
    footer = tail[-(length + 8) :]
    try:
        metadata = pq.read_metadata(pa.BufferReader(MAGIC + footer))
    except (OSError, pa.ArrowException) as e:
        raise CorruptIndexError(f"unreadable Parquet footer: {e}", source=path) from None
    return Footer(metadata, size, fingerprint(tail, size))


def content_xxh64(store: Store, path: str, size: int) -> str:
    """The XXH64 (16 hex digits) of the whole file at ``path`` of ``size`` bytes, read in
    chunks of :data:`CONTENT_CHUNK` (never all in memory). A file that is not ``size`` bytes
    long any more changed while it was read: :class:`~arrowidx.errors.ArrowIdxError` naming it."""
    digest = xxhash.xxh64()
    position = 0
    while position < size:
        length = min(CONTENT_CHUNK, size - position)
        chunk = store.get_range(path, position, length, "data file")
        if len(chunk) != length:
            raise ArrowIdxError(f"{path}: the file changed while it was read ({size} bytes expected); read it again")
        digest.update(chunk)
        position += length
    return digest.hexdigest()
