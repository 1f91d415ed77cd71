"""A pyarrow filesystem whose data-file reads are conditional (issue 51).

Planning from the manifest (an object store: no listing, no stat), a data file is read as
the object the manifest recorded: every open goes through
:meth:`Store.open_if_same <arrowidx.storage.Store.open_if_same>` with the size and ETag
the reader expects (S3's ``If-Match`` on each ranged GET), so a file replaced in place
since it was indexed raises :class:`~arrowidx.storage.ObjectChangedError` instead of
being read under the old file's plan. The reader then stats it and plans again
(:meth:`arrowidx.lake.scan.IndexedDataset.object_changed`). pyarrow's fragments and
scanners keep their paths; only how a file is opened changes.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.fs as pafs

from ..storage import ObjectInfo, Store


class ConditionalHandler(pafs.FileSystemHandler):
    """Reads through ``store``; a file ``expected(path)`` describes is opened only while it
    is that object. Read-only: writes go through the store itself."""

    def __init__(self, store: Store, expected: Callable[[str], ObjectInfo | None]):
        self.store = store
        self.expected = expected

    def get_type_name(self) -> str:
        return "arrowidx-conditional"

    def equals(self, other) -> bool:
        return other is self

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths):
        return self.store.fs.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.store.fs.get_file_info(selector)

    def open_input_file(self, path: str) -> pa.NativeFile:
        info = self.expected(path)
        if info is None:
            return self.store.fs.open_input_file(path)
        return self.store.open_if_same(path, info, "data file")

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def _read_only(self, *args, **kwargs):
        raise NotImplementedError("arrowidx reads data files through this filesystem; it writes nothing")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only


def conditional_filesystem(store: Store, expected: Callable[[str], ObjectInfo | None]) -> pafs.FileSystem:
    """A ``pyarrow.fs.PyFileSystem`` over ``store`` reading conditionally (see the module)."""
    return pafs.PyFileSystem(ConditionalHandler(store, expected))
