"""A snapshot's data files as one query found them (:class:`Seen`): the stats of a listing,
or of one stat of every file, kept as columns (:class:`~arrowidx.storage.FileStats`), the
:class:`~arrowidx.storage.ObjectInfo` made of them only for the files a query asks about,
and the files stat'ed again since (whose own stat then decides).

:class:`~arrowidx.lake.files.LakeFiles` holds one per query (a new one when a query stats
anew); a view of some of its files (a partition filter's) holds a copy.
"""

from __future__ import annotations

import bisect

import numpy as np

from ..storage import FileStats, ObjectInfo

#: What :meth:`Seen.known` gives for a file the query has no stat of.
UNSEEN = object()


class Seen:
    """The files ``files`` (relative paths) with their stats ``stats`` (aligned to them; both
    None: nothing stat'ed yet this query)."""

    def __init__(self, files: list[str] | None = None, stats: FileStats | None = None):
        self.files, self.stats = files, stats
        self.infos: dict[str, ObjectInfo | None] = {}  # per path: made from stats when asked, or stat'ed alone
        self.restated: set[str] = set()  # stat'ed again after stats (their infos decide)
        self._where: dict[str, int] | None = None  # position of each of files

    def use(self, files: list[str], stats: FileStats) -> None:
        """Take ``stats`` of ``files`` (one stat of every file, or taken from a listing)."""
        self.files, self.stats, self._where = files, stats, None

    def position(self, rel: str) -> int | None:
        """Where ``rel`` is in :attr:`stats` (None: not among them)."""
        if self.files is None:
            return None
        if self.stats.ordered:  # (a listing: its paths sorted, no map of them made)
            paths = self.stats.paths
            at = bisect.bisect_left(paths, rel)
            return at if at < len(paths) and paths[at] == rel else None
        if self._where is None:
            self._where = dict(zip(self.files, range(len(self.files))))
        return self._where.get(rel)

    def known(self, rel: str, path: str) -> ObjectInfo | None | object:
        """The file (at ``path``) as this query found it, nothing stat'ed: its info (None:
        gone), or :data:`UNSEEN`."""
        if rel in self.infos:
            return self.infos[rel]
        at = self.position(rel)
        if at is None:
            return UNSEEN
        found = self.infos[rel] = self.stats.info(at, path)
        return found

    def restat(self, infos: dict[str, ObjectInfo | None]) -> None:
        """Files stat'ed again now, alone: what was found decides for them."""
        self.infos.update(infos)
        self.restated.update(infos)

    def aligned(self, files: list[str]) -> FileStats | None:
        """The stats of ``files`` in their order (taken from a wider listing for a view of
        some of them); None when some file has none."""
        if self.files is files:
            return self.stats
        if self.stats is None:
            return None
        at = list(map(self.position, files))
        if None in at:
            return None
        self.use(files, self.stats.take(np.array(at, np.int64)))
        return self.stats
