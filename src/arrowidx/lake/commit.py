"""The commit protocol: the one place a lake version is committed, and which version is current.

A version exists exactly when its manifest (``_arrowidx/manifest-<N>.json``) was created by
*one exclusive create* (:meth:`Store.create <arrowidx.storage.Store.create>`: a hard link of
a complete file on local disks, put-if-absent on object stores) from a fully written
temporary file. The newest manifest on disk is the current version; ``LATEST`` is rewritten
after each commit for people and tools. Readers never obey it (a hint never outranks the
manifests, as ``_last_checkpoint`` never outranks delta-rs's log), but when it names a
version *newer* than any on disk, that version was lost (a partial sync, a lifecycle rule,
an ``rm``) and reading the one left would undo its deletions: every read and write then
raises :class:`~arrowidx.errors.MissingManifestError` until the manifest is restored or the
rollback accepted (:func:`arrowidx.accept_rollback`, :mod:`.rollback`). A crash at any
instant leaves the previous or the new version; of two writers racing for the same version
exactly one wins, the other gets :class:`~arrowidx.errors.CommitConflictError` and plans
again on the new version (:func:`retry_on_conflict`, the loop every writer shares: build,
delete, and Paimon's commits in :mod:`arrowidx.paimon.rewrite`).

Every file a commit references is written before it, under a name no other writer uses
(index files by content and writer, deletion files by a fresh uuid), so no committed file is
ever overwritten and a writer that fails for good removes only its own files. Files written
*with* the manifest (``artifacts`` of :func:`commit_manifest`: a lake-level structure the
manifest names, a delete's deletion-vectors files) follow the same rule: written first,
removed when the commit is refused.

On an object store every request counts (docs/object-stores.md): a commit lists the index
folder twice, once before it uploads anything (nobody committed since the writer planned)
and once after its create (no version above its own: :func:`commit_manifest`), writes one
file-table segment, and reads ``LATEST`` only when its listed ETag does not say what it holds.

See docs/reliability.md for the crash and race tests.
"""

from __future__ import annotations

import os
import posixpath
import random
import re
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from .. import facts
from .._faults import fault_point
from ..errors import ArrowIdxError, CommitConflictError, CorruptManifestError, MissingManifestError
from ..storage import ObjectInfo, Store, local_path
from .layout import (
    DELETION_DIR,
    LATEST,
    META_DIR,
    ensure_inside,
    join,
    manifest_path,
    physical,
    read_bytes,
    write_atomic,
)
from .manifest import Manifest, check_fids, check_paths, entry_from_dict, stored_fields

COMMIT_TRIES = 8  # build/delete re-plan this many times when another writer commits first

_MANIFEST_NAME = re.compile(r"manifest-(\d{1,18})\.json")
T = TypeVar("T")


# --------------------------------------------------------------------------------------
# Versions: the newest committed manifest wins; LATEST is a hint
# --------------------------------------------------------------------------------------


def manifest_versions(store: Store, root: str) -> list[int]:
    """Committed manifest versions on disk, ascending."""
    return sorted(manifest_infos(store, root))


def manifest_infos(store: Store, root: str) -> dict[int, ObjectInfo]:
    """The committed manifests on disk by version, as one listing finds them (their size
    and change stamp tell a manifest edited in place from the one parsed before)."""
    return metadata_listing(store, root)[0]


def metadata_listing(store: Store, root: str) -> tuple[dict[int, ObjectInfo], ObjectInfo | None]:
    """One listing of ``_arrowidx/``: the manifests by version, and ``LATEST`` (None: absent)."""
    meta = join(root, META_DIR)
    out, latest = {}, None
    for info in store.list(meta, recursive=False, hidden=True, missing_ok=True):
        name = posixpath.basename(info.path)
        m = _MANIFEST_NAME.fullmatch(name)
        if m and int(m.group(1)) > 0:
            out[int(m.group(1))] = info
        elif name == "LATEST":
            latest = info
    return out, latest


def current_manifest(store: Store, root: str) -> tuple[int, ObjectInfo | None]:
    """The current manifest version and its listing (``(0, None)``: never indexed): the
    newest manifest on disk, unless ``LATEST`` names a newer one that is missing, which
    raises :class:`~arrowidx.errors.MissingManifestError` (reading the version left would
    silently undo the deletions of the lost one). One listing; ``LATEST`` itself is read
    only when it changed (its stamp) since this process last read it."""
    infos, latest = metadata_listing(store, root)
    newest = max(infos) if infos else 0
    if latest is not None:
        check_latest(store, root, newest, latest)
    return newest, infos.get(newest)


def check_latest(store: Store, root: str, newest: int, latest: ObjectInfo | None = None) -> None:
    """Raise :class:`~arrowidx.errors.MissingManifestError` when ``LATEST`` names a version
    above ``newest`` (the newest listed) whose manifest is not on disk. A version committed
    after the listing was made is not missing (its manifest exists when looked at)."""
    named = _latest_named(store, root, latest, newest)
    if named is None or named <= newest:
        return
    if store.stat([join(root, manifest_path(named))])[0] is not None:
        return  # committed after our listing: this reader reads the version it listed
    raise MissingManifestError(
        f"names manifest version {named}, but {posixpath.basename(manifest_path(named))} is not on disk (the"
        f" newest there is version {newest}): reading version {newest} would bring back every row deleted after"
        f" it. Restore the missing manifest(s) (a backup, the rest of a sync), or accept the rollback to version"
        f" {newest}: arrowidx.accept_rollback({root!r}) (CLI: arrowidx accept-rollback {root}), which says which"
        " deletions it undoes",
        source=join(root, LATEST), version=named, newest=newest,
    )  # fmt: skip


def _latest_named(store: Store, root: str, info: ObjectInfo | None, newest: int | None = None) -> int | None:
    """The version ``LATEST`` names (None: missing or not a version number), read once per
    change stamp of the file where the store gives stamps; not read at all when its listed
    stamp proves what it holds (:func:`_named_by_stamp`)."""
    if newest and (named := _named_by_stamp(info, newest)) is not None:
        return named
    key = ("LATEST", store.key, root, info.size, info.mtime_ns, info.stamp) if info is not None and info.stamp else None
    return facts.MANIFESTS.get(key, lambda: (latest_hint(store, root), 64))


def _named_by_stamp(info: ObjectInfo | None, newest: int) -> int | None:
    """The version ``LATEST`` holds when its listed stamp proves it is ``newest`` or the one
    before (what a commit finds after its create, before it rewrites ``LATEST``), else None.
    An S3 ETag of a single PUT is the MD5 of the bytes, so an ETag equal to the MD5 of
    ``str(version)`` (and the size to match) is that content; stamps that are not an MD5
    (GCS, Azure, multipart or encrypted uploads, local disks) never match: then it is read."""
    import hashlib

    stamp = (info.stamp or "").strip('"').lower() if info is not None else ""
    if len(stamp) != 32:
        return None
    for version in (newest, newest - 1):
        text = str(version).encode()
        if version > 0 and info.size == len(text) and stamp == hashlib.md5(text, usedforsecurity=False).hexdigest():
            return version
    return None


def latest_hint(store: Store, root: str) -> int | None:
    """What ``LATEST`` says (None if missing or unreadable): a hint only, never obeyed."""
    try:
        text = read_bytes(store, join(root, LATEST)).decode("ascii").strip()
    except (ArrowIdxError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and len(text) < 19 else None


def latest_version(store: Store, root: str) -> int:
    """The current manifest version: the newest on disk (0 when never indexed). ``LATEST``
    is a hint that cannot roll the dataset back; naming a newer version that is missing, it
    raises :class:`~arrowidx.errors.MissingManifestError` (:func:`current_manifest`)."""
    return current_manifest(store, root)[0]


def load_manifest(store: Store, root: str) -> Manifest:
    """The current manifest, validated, or an empty one (version 0) if there is none: a
    writer's own copy, to change.

    The newest manifest is the current one even when it does not validate: then this raises
    :class:`~arrowidx.errors.CorruptManifestError` rather than silently returning an older
    version (which would bring deleted rows back).
    """
    version = latest_version(store, root)
    if version == 0:
        return Manifest()
    manifest = read_manifest(store, root, version)
    if manifest.table is not None:  # entries copied when the writer reads them (the table is shared)
        manifest.files = manifest.copy().files
    return manifest


def read_manifest(store: Store, root: str, version: int) -> Manifest:
    """Manifest ``version``, validated (errors name the file and the field, and for the
    newest version what to do)."""
    path = join(root, manifest_path(version))
    ensure_inside(store, root, path, "manifest")
    try:
        manifest = Manifest.from_json(read_bytes(store, path, "manifest"), path, expect_version=version)
        return open_files(store, root, manifest) if manifest.segments else manifest
    except CorruptManifestError as e:
        if e.field == "format_version":  # written by a newer arrowidx: not damaged (never advise a rollback)
            raise
        advice = _damaged_manifest_advice(store, root, version)
        if not advice:
            raise
        message = e.detail[len(e.field) + 2 :] if e.field and e.detail.startswith(f"{e.field}: ") else e.detail
        raise CorruptManifestError(f"{message}; {advice}", source=e.source, field=e.field) from None


def open_files(store: Store, root: str, manifest: Manifest) -> Manifest:
    """``manifest`` (format 4) with ``files`` the file table its segments hold: the segments
    read and checked against their size and XXH64 (a segment that is not the one named is a
    :class:`~arrowidx.errors.CorruptIndexError` naming it), their vector columns checked for
    every file at once (paths distinct, fids below ``next_fid``); each entry is validated
    when it is first asked for, as a format-3 manifest's entries are."""
    from .structure import open_table

    source, schemas = manifest.source, {}

    def entry_of(d: dict):
        return entry_from_dict(d, source, f"files[{d.get('path')!r}]", True, schemas)

    table = open_table(store, root, manifest.segments, entry_of)
    check_paths(table.table.column("path"), source)
    if manifest.lake_index is not None:
        check_fids(table.fids, manifest.next_fid, source)
    manifest.files, manifest.table = table, table
    return manifest


def _damaged_manifest_advice(store: Store, root: str, version: int) -> str:
    """What to do when the newest manifest does not validate (the lake cannot be read: an
    older version would bring deleted rows back, so none is read in its place)."""
    versions = manifest_versions(store, root)
    if not versions or versions[-1] != version:
        return ""
    older = [v for v in versions if v < version]
    if not older:
        return (f"the dataset's only manifest version is damaged: restore {manifest_path(version)} from a backup,"
                f" or move it out of {join(root, META_DIR)}/, accept the rollback (arrowidx.accept_rollback({root!r}), CLI:"
                f" arrowidx accept-rollback {root}) and run arrowidx build again (deleted rows then come back)")  # fmt: skip
    previous = older[-1]
    try:
        Manifest.from_json(read_bytes(store, join(root, manifest_path(previous)), "manifest"), "", expect_version=previous)
    except ArrowIdxError:
        return f"version {previous} is damaged too: restore {manifest_path(version)} from a backup"
    return (f"the dataset cannot be read while its newest version ({version}) is damaged: restore the file"
            f" from a backup, or go back to version {previous} (intact) by moving the file out of {join(root, META_DIR)}/ and"
            f" accepting the rollback (arrowidx.accept_rollback({root!r}), CLI: arrowidx accept-rollback {root});"
            f" what version {version} committed, a build or a delete, is then undone: run it again")  # fmt: skip


def load_manifest_shared(store: Store, root: str) -> Manifest:
    """The current manifest of ``root``: its version listed now, its content parsed once
    per process (a manifest version is created once and never rewritten). Readers only:
    writers load their own copy (:func:`load_manifest`) to change. A version ``LATEST``
    names that is missing raises :class:`~arrowidx.errors.MissingManifestError`
    (:func:`current_manifest`)."""
    infos, latest = metadata_listing(store, root)
    version = max(infos) if infos else 0
    pending = None
    if latest is not None:  # (read beside the manifest where a read is a round trip)
        if store.quick_reads:
            check_latest(store, root, version, latest)
        else:
            pending = facts.executor().submit(check_latest, store, root, version, latest)
    try:
        if not version:
            return Manifest()
        info = infos[version]
        key = ("manifest", store.key, root, version, info.size, info.mtime_ns, info.stamp)

        def make() -> tuple[Manifest, int]:
            manifest = read_manifest(store, root, version)
            return manifest, 512 + 400 * len(manifest.files)

        return facts.MANIFESTS.get(key, make)
    finally:
        if pending is not None:
            pending.result()  # a missing newer version raises here, whatever was read


# --------------------------------------------------------------------------------------
# Committing
# --------------------------------------------------------------------------------------


def _conflict(root: str, base_version: int) -> CommitConflictError:
    return CommitConflictError(
        f"{join(root, META_DIR)}: another build or delete committed version {base_version + 1} first;"
        " nothing was lost: run it again (build and delete retry by themselves)"
    )


def commit_manifest(store: Store, root: str, manifest: Manifest, base_version: int, *,
                    artifacts: Mapping[str, bytes] | None = None) -> Manifest:  # fmt: skip
    """Commit ``manifest`` as version ``base_version + 1`` with one exclusive create
    (:meth:`Store.create <arrowidx.storage.Store.create>`: a hard link of a complete file on
    local disks, put-if-absent on object stores).

    ``artifacts``: files to write with the manifest (``{path relative to the root: bytes}``,
    under ``_arrowidx/``, names no other writer uses: a structure the manifest names, a
    delete's deletion vectors), each written completely before the exclusive create, after
    the check that no other writer committed since ``base_version`` (one listing), and
    removed again when the commit is refused.

    Raises :class:`CommitConflictError` if another writer committed after ``base_version``
    was read (their work is kept; :func:`retry_on_conflict` plans again), and
    :class:`~arrowidx.errors.CommitUnsupportedError` where the store cannot create a file
    only if it is absent.
    """
    meta = join(root, META_DIR)
    if local_path(store.fs, physical(store, meta)) is not None:  # (the index root: layout.index_root_of)
        os.makedirs(local_path(store.fs, physical(store, meta)), exist_ok=True)
        ensure_inside(store, root, meta, "folder")
    if latest_version(store, root) != base_version:
        raise _conflict(root, base_version)
    manifest.version = base_version + 1
    manifest.created_ms = int(time.time() * 1000)
    final = join(root, manifest_path(manifest.version))
    written = []
    try:
        for rel, blob in (artifacts or {}).items():
            if not rel.startswith(META_DIR + "/"):
                raise ValueError(f"commit_manifest: artifact {rel!r} is not under {META_DIR}/")
            write_atomic(store, join(root, rel), blob, root=root)
            written.append(join(root, rel))
            fault_point("deletion-written" if rel.startswith(DELETION_DIR + "/") else "artifact-written")
        for rel, blob in commit_segments(store, root, manifest).items():
            write_atomic(store, join(root, rel), blob, root=root)
            written.append(join(root, rel))
            fault_point("segment-written")
        data = manifest.to_json().encode()
        fault_point("before-commit")
        if not store.create(final, data):
            raise _conflict(root, base_version)
        fault_point("committed")
        newest = latest_version(store, root)
        if newest != manifest.version:  # a version above ours existed (ours was vacuumed below it)
            store.delete(final)
            raise _conflict(root, base_version)
    except CommitConflictError:
        _remove_quietly(store, written)  # referenced by no committed manifest
        raise
    manifest.source = final
    manifest.table = None  # (its entries are what the new segments hold: a later commit of this object writes them all)
    try:
        store.put(join(root, LATEST), str(manifest.version).encode())
    except (OSError, ArrowIdxError):
        pass  # only a hint: readers never need it
    fault_point("latest-written")
    return manifest


def commit_segments(store: Store, root: str, manifest: Manifest) -> dict[str, bytes]:
    """Set ``manifest.segments`` to the file-table segments of its entries, and return the
    segments to write first (``{path relative to the root: bytes}``): the segments of the
    version it was copied from plus one of the entries it changed and the paths it removed,
    merged as :mod:`.filetable` says. A manifest not read from segments (format 3, or made
    anew) writes all its entries in one segment (the upgrade)."""
    import uuid

    from .filetable import FileOverlay, update_segments
    from .structure import open_segment

    files, table = manifest.files, manifest.table
    if table is None or not manifest.segments:
        base_refs, changed, removed = [], list(files.values()), []
    elif isinstance(files, FileOverlay) and files.base is table:
        base_refs = manifest.segments
        changed, removed = files.changes(lambda a, b: a == b)
    else:  # every entry compared with the version read
        base_refs = manifest.segments
        changed = [e for rel, e in files.items() if rel not in table or table[rel] != e]
        removed = [rel for rel in table.paths if rel not in files]
    base = [open_segment(store, root, ref) for ref in base_refs]
    artifacts: dict[str, bytes] = {}
    if not changed and not removed and not base_refs:
        manifest.segments = []
        return artifacts
    update = update_segments(list(base_refs), base, [stored_fields(e) for e in changed], removed, uuid.uuid4().hex[:8],
                             artifacts.__setitem__)  # fmt: skip
    manifest.segments = update.refs
    return artifacts


def _remove_quietly(store: Store, paths: list[str]) -> None:
    for path in paths:
        try:
            store.delete(path)
        except (OSError, ArrowIdxError):
            pass  # vacuum removes it later


def require_commit(store: Store, root: str) -> None:
    """Raise :class:`~arrowidx.errors.CommitUnsupportedError` unless the store can commit a
    manifest version (put-if-absent): asked by writers before they upload anything."""
    store.require_create(join(root, manifest_path(1)))


def retry_on_conflict(attempt: Callable[[int], T], tries: int = COMMIT_TRIES) -> T:
    """``attempt(n)`` (plan + write + commit; ``n`` counts from 1) run again, after a short
    random pause, when another writer committed first (:class:`CommitConflictError`), at
    most ``tries`` times: the one retry loop of every writer (lake builds and deletes,
    Paimon's schema and snapshot commits)."""
    for i in range(1, tries + 1):
        try:
            return attempt(i)
        except CommitConflictError:
            if i == tries:
                raise
            time.sleep(random.uniform(0.01, 0.05) * i)
    raise AssertionError("unreachable")


def with_commit_retries(attempt: Callable[[], T], tries: int = COMMIT_TRIES) -> T:
    """:func:`retry_on_conflict` of an attempt that does not need its number."""
    return retry_on_conflict(lambda _: attempt(), tries)
