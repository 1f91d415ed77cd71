"""Storage: the one narrow interface through which arrowidx reads and writes a dataset's objects.

A :class:`Store` is a filesystem or object store seen as objects: ``list``, ``stat``, ``get``,
``get_range(s)`` (the unit of I/O: a footer, one column's index, one deletion vector),
``put`` (write a complete object) and ``create`` (put-if-absent: the one atomic primitive
the commit protocol needs, :func:`arrowidx.lake.commit.commit_manifest`). Conditional reads
(``get_if_same``, ``open_if_same``) read an object only while it is the one an
:class:`ObjectInfo` describes (S3's ``If-Match`` on the ETag; on local disks the size and
change stamp of the opened descriptor), so a reader that planned from a manifest, without
listing, finds a file replaced in place when it reads it (:class:`ObjectChangedError`). Data files are
still read by pyarrow's own machinery (fragments, scanners) through :attr:`Store.fs`, the
``pyarrow.fs.FileSystem`` over the same objects.

Backends:

* :class:`LocalStore`: a local disk (``os`` calls; ``create`` is ``os.link`` of a complete
  temporary file, or ``O_CREAT|O_EXCL``). Its :attr:`ObjectInfo.stamp` is the inode and
  change time, which any write, rename or replacement changes (``cp -p`` and ``rsync -t``
  set the modification time back, not the change time).
* :class:`ArrowStore`: any other ``pyarrow.fs`` filesystem (fsspec, pyarrow's S3/GCS given
  as ``filesystem=``, in-memory). It reads; it can ``create`` only where that is atomic
  in-process (in-memory filesystems) or with ``ARROWIDX_SINGLE_WRITER=1``.
* Object stores named by URI (``s3://``, ``gs://``, ``az://``) with ``storage_options``:
  :func:`open_store` (see :mod:`arrowidx.objectstore`).

:func:`as_store` turns whatever a caller holds (a Store, or the ``pyarrow.fs`` filesystem of
one) into its Store. :func:`storage_error` classifies what a store raised: refused access,
an unreachable or throttling store, another I/O failure. None of these is damage: a file
is corrupt (:class:`~arrowidx.errors.CorruptIndexError`) only when its bytes were read and
do not parse.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import posixpath
import stat as statmod
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from . import facts
from .errors import (
    AccessDeniedError,
    ArrowIdxError,
    CommitUnsupportedError,
    DatasetNotFoundError,
    StorageError,
    StoreUnavailableError,
)

SINGLE_WRITER_ENV = "ARROWIDX_SINGLE_WRITER"  # "1": allow check-then-move commits (one writer only)


@dataclass(frozen=True)
class ObjectInfo:
    """One object (file): its path in the store, size, modification time and ``stamp``, a
    token that changes whenever the object is written or replaced (None where the store
    has none: then only the content fingerprint tells)."""

    path: str
    size: int
    mtime_ns: int | None = None
    stamp: str | None = None


class ObjectChangedError(ArrowIdxError):
    """An object is not the one a reader expected: another size or change stamp than the
    :class:`ObjectInfo` it was read against (replaced or rewritten since it was listed or
    indexed). Raised by the conditional reads (:meth:`Store.get_if_same`,
    :meth:`Store.open_if_same`); a reader catches it and reads the object as it is now."""

    def __init__(self, path: str, detail: str = "changed since it was listed or indexed"):
        self.path = path
        self.detail = detail
        super().__init__(f"{path}: {detail}")

    def __reduce__(self):
        return (type(self), (self.path, self.detail))


class FileStats:
    """Many files' stats as columns: what one listing, or one stat of every file, found.

    ``paths`` (relative to the folder listed, or as given to :meth:`Store.stat_many`) and,
    per file, its ``size`` (-1: no such file), ``mtime_ns`` and change stamp. An
    :class:`ObjectInfo` is made only for a file asked about (:meth:`info`), so a planner
    compares the stats of 20,000 files with the manifest's columns at once
    (:func:`arrowidx.lake.freshness.still_indexed`) without an object per file. On a local
    disk the stamp is kept as two columns, ``ino`` and ``ctime_ns`` (the stamp
    ``f"{ino}:{ctime_ns}"`` :class:`LocalStore` gives); other stores keep their
    :class:`ObjectInfo` list. ``folders``: a listing's folders holding files (relative, ``""``
    for the folder listed; its ``paths`` are then sorted: ``ordered``)."""

    def __init__(self, paths: list[str], size: np.ndarray, mtime_ns: np.ndarray, *, ino: np.ndarray | None = None,
                 ctime_ns: np.ndarray | None = None, infos: list[ObjectInfo | None] | None = None,
                 folders: list[str] | None = None):  # fmt: skip
        self.paths, self.size, self.mtime_ns = paths, size, mtime_ns
        self.ino, self.ctime_ns, self.infos, self.folders = ino, ctime_ns, infos, folders
        self.ordered = folders is not None  # (a listing's paths: sorted)

    @classmethod
    def of_infos(cls, paths: list[str], infos: list[ObjectInfo | None], folders: list[str] | None = None) -> FileStats:
        """The stats of ``paths`` from their :class:`ObjectInfo` (None: no such file)."""
        size = np.fromiter((-1 if i is None else i.size for i in infos), np.int64, len(infos))
        mtime = np.fromiter((-1 if i is None or i.mtime_ns is None else i.mtime_ns for i in infos), np.int64, len(infos))
        return cls(paths, size, mtime, infos=infos, folders=folders)

    @classmethod
    def of_stats(cls, paths: list[str], stats: list[os.stat_result], folders: list[str] | None = None) -> FileStats:
        """The stats of local files from ``os.stat`` results (a non-regular file: none)."""
        n = len(stats)
        size, mtime, ctime, mode = (np.fromiter(map(attrgetter(name), stats), np.int64, n)
                                    for name in ("st_size", "st_mtime_ns", "st_ctime_ns", "st_mode"))  # fmt: skip
        ino = np.fromiter(map(attrgetter("st_ino"), stats), np.uint64, n)
        size[(mode & 0o170000) != statmod.S_IFREG] = -1
        return cls(paths, size, mtime, ino=ino, ctime_ns=ctime, folders=folders)

    def __len__(self) -> int:
        return len(self.paths)

    def take(self, positions: np.ndarray) -> FileStats:
        """The stats of the files at ``positions``."""
        at = positions.tolist()
        paths = [self.paths[i] for i in at]
        if self.infos is not None:
            return FileStats.of_infos(paths, [self.infos[i] for i in at])
        return FileStats(paths, self.size[positions], self.mtime_ns[positions], ino=self.ino[positions], ctime_ns=self.ctime_ns[positions])

    def info(self, i: int, path: str) -> ObjectInfo | None:
        """The :class:`ObjectInfo` of file ``i``, at ``path`` (None: no such file)."""
        if self.infos is not None:
            found = self.infos[i]
            return found if found is None or found.path == path else dataclasses.replace(found, path=path)
        if self.size[i] < 0:
            return None
        return ObjectInfo(path, int(self.size[i]), int(self.mtime_ns[i]), f"{int(self.ino[i])}:{int(self.ctime_ns[i])}")

    def stamps(self, positions: np.ndarray) -> pa.Array:
        """The change stamps of the files at ``positions`` as Arrow strings (null: none),
        made in Arrow for every file at once on a local disk."""
        if self.infos is not None:
            return pa.array([None if (i := self.infos[p]) is None else i.stamp for p in positions.tolist()], pa.string())
        import pyarrow.compute as pc

        from .literals import scalar  # (a Python str given to pyarrow would import pandas)

        n = len(positions)
        ino = pa.Array.from_buffers(pa.uint64(), n, [None, pa.py_buffer(np.ascontiguousarray(self.ino[positions]))])
        ctime = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.ascontiguousarray(self.ctime_ns[positions]))])
        return pc.binary_join_element_wise(pc.cast(ino, pa.string()), pc.cast(ctime, pa.string()), scalar(":", pa.string()))


def same_object(info: ObjectInfo | None, expect: ObjectInfo) -> bool:
    """Whether ``info`` (what the store says now) is the object ``expect`` describes: the
    same size and change stamp (or, where either has no stamp, the same modification time)."""
    if info is None or info.size != expect.size:
        return False
    if info.stamp is not None and expect.stamp is not None:
        return info.stamp == expect.stamp
    return info.mtime_ns is None or expect.mtime_ns is None or info.mtime_ns == expect.mtime_ns


class Store:
    """A filesystem or object store as objects (see the module docstring)."""

    #: Identity of the store for the process-wide store of file facts: two Store objects
    #: with the same key see the same objects.
    key: str = ""
    #: The pyarrow filesystem over the same objects (pyarrow reads data files through it).
    fs: pafs.FileSystem
    #: ``create`` is an atomic put-if-absent here.
    can_create: bool = False
    #: :attr:`ObjectInfo.stamp` is set: a change stamp that any write or replacement changes.
    stamps: bool = False
    #: A read costs microseconds (a local disk): planning reads in the calling thread, since
    #: handing a small read to the I/O pool costs more than the read (bench/bench_cold.py:
    #: a first needle over 1,000 small files, 250 against 430 ms).
    quick_reads: bool = False
    #: Readers plan from the manifest alone (its entries are the files, with their sizes and
    #: stamps): no listing, no stat, data files read with conditional reads (object stores,
    #: where a listing of 10,000 files costs ten requests and a stat one each).
    plans_from_manifest: bool = False

    def list(self, folder: str, *, recursive: bool = True, hidden: bool = False, missing_ok: bool = False) -> list[ObjectInfo]:
        """The files under ``folder`` (not folders), sorted by path. ``hidden=False`` skips
        names starting with ``_`` or ``.`` and does not descend into such folders, as
        pyarrow.dataset's discovery does. A missing folder is ``FileNotFoundError``, or
        lists as empty with ``missing_ok``."""
        raise NotImplementedError

    def stat(self, paths: list[str]) -> list[ObjectInfo | None]:
        """Per path, its :class:`ObjectInfo`, or None when there is no such file."""
        raise NotImplementedError

    def list_stats(self, folder: str, *, hidden: bool = False) -> FileStats:
        """:meth:`list` (recursive) as columns, paths relative to ``folder``: what a reader
        lists a lake with (one listing, each file's stat with it)."""
        found = self.list(folder, hidden=hidden)
        prefix = folder.rstrip("/") + "/"
        rels = [i.path[len(prefix) :] if i.path.startswith(prefix) else posixpath.relpath(i.path, folder) for i in found]
        return FileStats.of_infos(rels, found)  # type: ignore[arg-type]

    def list_names(self, folder: str, *, hidden: bool = False) -> tuple[list[str], list[str] | None]:
        """:meth:`list_stats`' paths and folders alone (where a store lists without stats, it
        stats nothing): what opening a lake needs; a query stats the files it judges."""
        listed = self.list_stats(folder, hidden=hidden)
        return listed.paths, listed.folders

    def stat_many(self, paths: list[str]) -> FileStats:
        """:meth:`stat` of many files as columns."""
        return FileStats.of_infos(paths, self.stat(paths))

    def get(self, path: str, what: str = "file") -> bytes:
        """The whole object. ``FileNotFoundError`` when it is missing, else a
        :class:`~arrowidx.errors.StorageError` naming it (``what`` says what it is)."""
        raise NotImplementedError

    def get_range(self, path: str, start: int, length: int, what: str = "file") -> bytes:
        """``length`` bytes of the object from ``start`` (fewer at its end)."""
        return self.get_ranges(path, [(start, length)], what)[0]

    def get_ranges(self, path: str, ranges: list[tuple[int, int]], what: str = "file") -> list[bytes]:
        """Several ``(start, length)`` ranges of one object (nearby ranges in one request
        where the store charges per request)."""
        raise NotImplementedError

    def get_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> bytes:
        """The whole object, only while it is the one ``expect`` describes (a conditional
        read: :func:`same_object`), else :class:`ObjectChangedError`; ``FileNotFoundError``
        when it is gone. Here: checked once the object is opened (stores without a stamp
        compare size and modification time)."""
        with self.open_if_same(path, expect, what) as f:
            return f.read()

    def open_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> pa.NativeFile:
        """A random-access file over the object as ``expect`` describes it (for pyarrow's
        readers), else :class:`ObjectChangedError`. Here: checked once it is opened."""
        try:
            f = self.fs.open_input_file(path)
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as e:
            raise storage_error(e, path, what) from None
        if not same_object(self.stat([path])[0], expect):
            f.close()
            raise ObjectChangedError(path)
        return f

    def put(self, path: str, data: bytes) -> None:
        """Write the complete object ``path`` (replacing it): readers see the old bytes or
        the new ones, never a part (temporary file + rename on local disks)."""
        raise NotImplementedError

    def create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist (atomically): False when it
        exists. :class:`~arrowidx.errors.CommitUnsupportedError` where the store cannot."""
        raise NotImplementedError

    def require_create(self, path: str, *, own_folder: bool = False) -> None:
        """Raise :class:`~arrowidx.errors.CommitUnsupportedError` unless :meth:`create` is an
        atomic put-if-absent for ``path`` here: writers ask before they upload anything.
        ``own_folder``: ``path`` is in arrowidx's own index folder (a store may keep a probe
        object there)."""
        if not self.can_create:
            raise CommitUnsupportedError(
                f"{path}: {self.describe()} cannot create a file only if it is absent, so two writers could both"
                " commit one version and one would be lost. Name an object store by URI with storage_options"
                f" (s3://bucket/path, gs://, az://: put-if-absent), or, with exactly one writer at a time, set"
                f" {SINGLE_WRITER_ENV}=1"
            )

    def delete(self, path: str) -> bool:
        """Delete the object; False if it was not there."""
        raise NotImplementedError

    def describe(self) -> str:
        """The store in words, for messages."""
        return type(self).__name__


# ------------------------------------------------------------------------------------------
# local disks
# ------------------------------------------------------------------------------------------


def local_path(fs: pafs.FileSystem, path: str) -> str | None:
    """The OS path of ``path`` when ``fs`` is a local disk (possibly wrapped), else None."""
    if isinstance(fs, pafs.LocalFileSystem):
        return path
    if isinstance(fs, pafs.SubTreeFileSystem) and isinstance(fs.base_fs, pafs.LocalFileSystem):
        return posixpath.join(fs.base_path, path.lstrip("/"))
    inner = getattr(getattr(fs, "handler", None), "fs", None)  # fsspec wrapped by PyFileSystem
    protocol = getattr(inner, "protocol", None)
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    if "file" in protocols or "local" in protocols:
        return path
    return None


def _local_info(path: str, st: os.stat_result) -> ObjectInfo:
    return ObjectInfo(path, st.st_size, st.st_mtime_ns, f"{st.st_ino}:{st.st_ctime_ns}")


def _stat_each(paths: list[str]) -> list[os.stat_result]:
    """``os.stat`` of each of ``paths`` (OS paths) in one call; a file gone meanwhile: a
    stat of no file (:data:`_GONE`); another failure names the file."""
    try:
        return list(map(os.stat, paths))  # (one call per file, nothing else: a file gone is rare)
    except OSError:
        pass
    out = []
    for path in paths:
        try:
            out.append(os.stat(path))
        except (FileNotFoundError, NotADirectoryError):
            out.append(_GONE)
        except OSError as e:
            raise storage_error(e, path) from None
    return out


_GONE = os.stat_result((0,) * 10, {"st_atime_ns": 0, "st_mtime_ns": 0, "st_ctime_ns": 0})  # (no file: mode 0, not a regular file)


class LocalStore(Store):
    """A local disk, through ``os`` (see the module docstring). ``fs`` is the pyarrow
    filesystem the caller uses (a ``LocalFileSystem``, or a local ``SubTreeFileSystem`` or
    fsspec filesystem); store paths are that filesystem's paths."""

    can_create = True
    stamps = True
    quick_reads = True

    def __init__(self, fs: pafs.FileSystem | None = None):
        self.fs = fs if fs is not None else pafs.LocalFileSystem()
        self._plain = isinstance(self.fs, pafs.LocalFileSystem)
        self.key = "file" if self._plain else f"file:{getattr(self.fs, 'base_path', '')}:{id(self.fs)}"

    def os_path(self, path: str) -> str:
        return path if self._plain else local_path(self.fs, path)  # type: ignore[return-value]

    def list(self, folder: str, *, recursive: bool = True, hidden: bool = False, missing_ok: bool = False) -> list[ObjectInfo]:
        rels, stats, _ = self._walk(folder, recursive, hidden, missing_ok)
        prefix = folder if folder.endswith("/") else folder + "/"
        return [_local_info(prefix + rel, st) for rel, st in zip(rels, stats)]

    def list_stats(self, folder: str, *, hidden: bool = False) -> FileStats:
        rels, stats, folders = self._walk(folder, True, hidden, False)
        return FileStats.of_stats(rels, stats, folders)

    def list_names(self, folder: str, *, hidden: bool = False) -> tuple[list[str], list[str] | None]:
        rels, _, folders = self._walk(folder, True, hidden, False, stat=False)
        return rels, folders

    def _walk(self, folder: str, recursive: bool, hidden: bool, missing_ok: bool,
              stat: bool = True) -> tuple[list[str], list[os.stat_result], list[str]]:  # fmt: skip
        """The regular files under ``folder`` (paths relative to it, sorted), their stats
        (one per file: symlinks followed, as pyarrow does), and the folders holding them.
        Per folder, its names (``os.listdir``) and one ``os.stat`` of each in one call;
        nothing else is done per file in Python. ``stat=False``: no stats (an empty list),
        the kinds of the names from the folder's entries (``os.scandir``: a stat only for a
        symbolic link or a folder)."""
        top = self.os_path(folder)
        try:
            st = os.stat(top)
            seen = frozenset({(st.st_dev, st.st_ino)})
        except FileNotFoundError:
            if missing_ok:
                return [], [], []
            raise DatasetNotFoundError("no such file or directory (check the path)", path=folder) from None
        except OSError as e:
            raise storage_error(e, folder, "folder") from None
        rels: list[str] = []
        stats: list[os.stat_result] = []
        folders: list[str] = []
        pending = [("", folder, top, seen)]
        while pending:
            rel, name, real, above = pending.pop()
            try:
                if not stat:
                    with os.scandir(real) as entries:
                        found_entries = sorted((e for e in entries if hidden or e.name[0] not in "_."), key=attrgetter("name"))
                names = os.listdir(real) if stat else []
            except FileNotFoundError:
                continue
            except NotADirectoryError:
                raise
            except OSError as e:
                raise storage_error(e, name, "folder") from None
            base = real if real.endswith("/") else real + "/"
            if not stat:
                self._walk_entries(found_entries, rel, name, base, above, recursive, pending, folders, rels)
                continue
            if not hidden:
                names = [n for n in names if n[0] not in "_."]
            names.sort()
            found = _stat_each([base + n for n in names])
            kinds = np.fromiter(map(attrgetter("st_mode"), found), np.int64, len(found)) & 0o170000
            for i in np.flatnonzero(kinds == statmod.S_IFDIR).tolist():
                key = (found[i].st_dev, found[i].st_ino)
                if recursive and key not in above:  # (a folder linking to one above: a loop)
                    pending.append((f"{rel}/{names[i]}" if rel else names[i], posixpath.join(name, names[i]), base + names[i], above | {key}))
            files = kinds == statmod.S_IFREG
            if files.any():
                folders.append(rel)
                keep = files.tolist() if not files.all() else None
                rels += [f"{rel}/{n}" for n in (names if keep is None else compress(names, keep))] if rel else \
                    (names if keep is None else list(compress(names, keep)))  # fmt: skip
                stats += found if keep is None else compress(found, keep)
        if len(folders) > 1:  # (each folder's names are sorted; the lake's paths are sorted as one list)
            order = sorted(range(len(rels)), key=rels.__getitem__)
            rels, stats = [rels[i] for i in order], [stats[i] for i in order] if stats else stats
        return rels, stats, sorted(folders)

    @staticmethod
    def _walk_entries(entries: list[os.DirEntry], rel: str, name: str, base: str, above: frozenset, recursive: bool,
                      pending: list, folders: list[str], rels: list[str]) -> None:  # fmt: skip
        """One folder of :meth:`_walk` without stats: its sub-folders onto ``pending``, its
        regular files (symbolic links followed) onto ``rels``."""
        files = []
        for e in entries:
            try:
                if e.is_dir():
                    st = e.stat()
                    if recursive and (st.st_dev, st.st_ino) not in above:  # (a folder linking to one above: a loop)
                        pending.append((f"{rel}/{e.name}" if rel else e.name, posixpath.join(name, e.name), base + e.name,
                                        above | {(st.st_dev, st.st_ino)}))  # fmt: skip
                elif e.is_file():
                    files.append(e.name)
            except FileNotFoundError:
                continue  # (gone meanwhile)
            except OSError as err:
                raise storage_error(err, base + e.name) from None
        if files:
            folders.append(rel)
            rels += [f"{rel}/{n}" for n in files] if rel else files

    def stat(self, paths: list[str]) -> list[ObjectInfo | None]:
        out: list[ObjectInfo | None] = []
        for path in paths:
            try:
                st = os.stat(self.os_path(path))
            except (FileNotFoundError, NotADirectoryError):
                out.append(None)
                continue
            except OSError as e:
                raise storage_error(e, path) from None
            out.append(_local_info(path, st) if statmod.S_ISREG(st.st_mode) else None)
        return out

    def stat_many(self, paths: list[str]) -> FileStats:
        real = paths if self._plain else [self.os_path(p) for p in paths]
        return FileStats.of_stats(paths, _stat_each(real))

    def get(self, path: str, what: str = "file") -> bytes:
        try:
            with open(self.os_path(path), "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise
        except IsADirectoryError as e:
            raise storage_error(e, path, what) from None
        except OSError as e:
            raise storage_error(e, path, what) from None

    def get_ranges(self, path: str, ranges: list[tuple[int, int]], what: str = "file") -> list[bytes]:
        try:
            with open(self.os_path(path), "rb") as f:
                out = []
                for start, length in ranges:
                    f.seek(start)
                    out.append(f.read(length))
                return out
        except FileNotFoundError:
            raise
        except OSError as e:
            raise storage_error(e, path, what) from None

    def _open_same(self, path: str, expect: ObjectInfo, what: str):
        """The file opened, then checked by its descriptor (``fstat``): the bytes read from
        it are those of that inode, even if the path is replaced meanwhile."""
        try:
            f = open(self.os_path(path), "rb")
        except FileNotFoundError:
            raise
        except OSError as e:
            raise storage_error(e, path, what) from None
        st = os.fstat(f.fileno())
        if not statmod.S_ISREG(st.st_mode) or not same_object(_local_info(path, st), expect):
            f.close()
            raise ObjectChangedError(path)
        return f

    def get_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> bytes:
        with self._open_same(path, expect, what) as f:
            try:
                return f.read()
            except OSError as e:
                raise storage_error(e, path, what) from None

    def open_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> pa.NativeFile:
        return pa.PythonFile(self._open_same(path, expect, what), mode="r")

    def _write_temp(self, path: str, data: bytes) -> str:
        real = self.os_path(path)
        os.makedirs(os.path.dirname(real) or ".", exist_ok=True)
        tmp = os.path.join(os.path.dirname(real), f".tmp-{uuid.uuid4().hex}-{os.path.basename(real)}")
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        return tmp

    def put(self, path: str, data: bytes) -> None:
        tmp = self._write_temp(path, data)
        try:
            os.replace(tmp, self.os_path(path))
        except BaseException:
            _remove_quietly(tmp)
            raise

    def create(self, path: str, data: bytes) -> bool:
        tmp = self._write_temp(path, data)
        final = self.os_path(path)
        try:
            try:
                os.link(tmp, final)  # atomic put-if-absent of a complete file
                return True
            except FileExistsError:
                return False
            except OSError:  # no hard links on this disk (FAT, some network mounts)
                pass
            try:
                fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            return True
        finally:
            _remove_quietly(tmp)

    def delete(self, path: str) -> bool:
        try:
            os.remove(self.os_path(path))
            return True
        except FileNotFoundError:
            return False

    def describe(self) -> str:
        return "a local disk"


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# ------------------------------------------------------------------------------------------
# any other pyarrow filesystem
# ------------------------------------------------------------------------------------------


def _is_memory(fs: pafs.FileSystem) -> bool:
    if type(fs).__name__ == "_MockFileSystem":
        return True
    inner = getattr(getattr(fs, "handler", None), "fs", None)
    protocol = getattr(inner, "protocol", None)
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    return "memory" in protocols


_IN_PROCESS_LOCK = threading.Lock()


class ArrowStore(Store):
    """Any ``pyarrow.fs`` filesystem (see the module docstring)."""

    def __init__(self, fs: pafs.FileSystem):
        self.fs = fs
        self.memory = _is_memory(fs)
        self.key = f"{fs.type_name}:{id(fs)}"

    @property
    def can_create(self) -> bool:  # type: ignore[override]
        return self.memory or os.environ.get(SINGLE_WRITER_ENV) == "1"

    def list(self, folder: str, *, recursive: bool = True, hidden: bool = False, missing_ok: bool = False) -> list[ObjectInfo]:
        out: list[ObjectInfo] = []
        pending = [folder]
        while pending:
            current = pending.pop()
            try:
                infos = self.fs.get_file_info(pafs.FileSelector(current, allow_not_found=missing_ok or current != folder))
            except FileNotFoundError:
                raise
            except (OSError, pa.ArrowException) as e:
                raise storage_error(e, current, "folder") from None
            for info in infos:
                if not hidden and posixpath.basename(info.path).startswith(("_", ".")):
                    continue
                if info.type == pafs.FileType.Directory:
                    if recursive:
                        pending.append(info.path)
                elif info.type == pafs.FileType.File:
                    out.append(ObjectInfo(info.path, info.size or 0, info.mtime_ns))
        out.sort(key=lambda i: i.path)
        return out

    def stat(self, paths: list[str]) -> list[ObjectInfo | None]:
        try:
            infos = self.fs.get_file_info(list(paths))
        except (OSError, pa.ArrowException) as e:
            raise storage_error(e, paths[0] if paths else "", "file") from None
        return [ObjectInfo(i.path, i.size or 0, i.mtime_ns) if i.type == pafs.FileType.File else None for i in infos]

    def get(self, path: str, what: str = "file") -> bytes:
        try:
            with self.fs.open_input_stream(path) as f:
                return f.read()
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as e:
            raise storage_error(e, path, what) from None

    def get_ranges(self, path: str, ranges: list[tuple[int, int]], what: str = "file") -> list[bytes]:
        try:
            with self.fs.open_input_file(path) as f:
                return [f.read_at(length, start) for start, length in ranges]
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as e:
            raise storage_error(e, path, what) from None

    def put(self, path: str, data: bytes) -> None:
        folder = posixpath.dirname(path)
        try:
            self.fs.create_dir(folder, recursive=True)
            tmp = posixpath.join(folder, f".tmp-{uuid.uuid4().hex}-{posixpath.basename(path)}")
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            try:
                self.fs.move(tmp, path)
            except BaseException:
                self._delete_quietly(tmp)
                raise
        except (OSError, pa.ArrowException) as e:
            raise storage_error(e, path, "file") from None

    def create(self, path: str, data: bytes) -> bool:
        self.require_create(path)
        with _IN_PROCESS_LOCK:  # in-process filesystems: a lock makes check-and-write atomic
            if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                return False
            self.put(path, data)
            return True

    def delete(self, path: str) -> bool:
        try:
            self.fs.delete_file(path)
            return True
        except FileNotFoundError:
            return False

    def _delete_quietly(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except OSError:
            pass

    def describe(self) -> str:
        return f"pyarrow {type(self.fs).__name__} ({self.fs.type_name})"


# ------------------------------------------------------------------------------------------
# which Store a filesystem is
# ------------------------------------------------------------------------------------------

_LOCAL = LocalStore()


def register(store: Store) -> Store:
    """Make :func:`as_store` of ``store.fs`` return ``store`` (object stores opened from a
    URI: their pyarrow filesystem reads data, the store does the rest), for the life of the
    process (:func:`arrowidx.facts.interned`: the entry holds the filesystem, so its id
    stays its own)."""
    facts.interned(("store of a filesystem", id(store.fs)), lambda: (store.fs, store))
    return store


def as_store(fs_or_store: Store | pafs.FileSystem | None) -> Store:
    """The Store for a Store (itself), the pyarrow filesystem of a registered store, a local
    filesystem, or any other pyarrow filesystem (wrapped in an :class:`ArrowStore`, kept in
    :data:`arrowidx.facts.OPEN`). Asked where a caller hands arrowidx a filesystem; the
    layers below carry the Store itself."""
    if isinstance(fs_or_store, Store):
        return fs_or_store
    if fs_or_store is None or type(fs_or_store) is pafs.LocalFileSystem:
        return _LOCAL
    fs = fs_or_store
    found = facts.interned_peek(("store of a filesystem", id(fs)))
    if found is not None and found[0] is fs:
        return found[1]

    def wrap() -> tuple[tuple[pafs.FileSystem, Store], int]:
        store: Store = LocalStore(fs) if local_path(fs, "/") is not None else ArrowStore(fs)
        return (fs, store), 1024

    found = facts.OPEN.get(("store wrapping a filesystem", id(fs)), wrap)
    return found[1] if found[0] is fs else wrap()[0][1]


# ------------------------------------------------------------------------------------------
# what went wrong
# ------------------------------------------------------------------------------------------

# Words the stores put in their messages (AWS SDK error names and HTTP statuses, as pyarrow's
# S3 filesystem and obstore quote them; GCS and Azure use the HTTP words).
_DENIED = (
    "access denied", "accessdenied", "access_denied", "forbidden", "403", "invalidaccesskeyid",
    "signaturedoesnotmatch", "invalid_access_key", "permission denied", "unauthorized", "401",
    "expiredtoken", "invalidtoken", "no credentials", "credentials",
)  # fmt: skip
_UNAVAILABLE = (
    "timeout", "timed out", "connection refused", "connection reset", "could not connect",
    "couldn't connect", "network", "curlcode", "unreachable", "name or service not known",
    "temporary failure", "slowdown", "slow down", "throttl", "503", "500 internal", "service unavailable",
    "too many requests", "429", "requesttimeout", "broken pipe",
)  # fmt: skip


def storage_error(error: BaseException, path: str, what: str = "file") -> ArrowIdxError:
    """The arrowidx error for ``error``, raised by storage while reading or writing the
    object ``path`` (a ``what``: "index file", "manifest", ...)."""
    if isinstance(error, ArrowIdxError):
        return error
    text = str(error)
    lower = text.lower()
    if isinstance(error, PermissionError) or getattr(error, "errno", None) in (errno.EACCES, errno.EPERM):
        return AccessDeniedError(f"access denied reading or writing the {what}: {text}", path=path)
    if any(word in lower for word in _DENIED):
        return AccessDeniedError(f"the store denied access to the {what} (check the credentials and"
                                 f" permissions): {text}", path=path)  # fmt: skip
    if isinstance(error, (TimeoutError, ConnectionError)) or any(word in lower for word in _UNAVAILABLE):
        return StoreUnavailableError(f"the store could not be reached for the {what}: {text}", path=path)
    return StorageError(f"cannot read or write the {what}: {text}", path=path)


def paths_of(infos: Iterable[ObjectInfo | None]) -> list[str]:
    return [i.path for i in infos if i is not None]
