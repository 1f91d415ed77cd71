"""Key directories: which files of a lake hold a key, so a needle over many small files plans
without asking every file's index.

Planning ``id == 42`` asks each file's range bitmap for its dictionary code of 42: about
10 µs of Python a file, 10 ms over 1,000 files, where reading the one matching row takes
1 ms. A key directory lists, per file, every distinct key of one column's range bitmap (the
order values its dictionary holds, fixed-width keys only), end to end in one array. A
needle then finds the files holding its key with one binary search run over all the files
at once (numpy), and the other files are skipped without asking their indexes.

It answers exactly what the files' own range bitmaps answer (a file whose dictionary lacks
every key of ``column == v`` / ``column IN (...)`` has no matching row), and only for the
files it was built from while they are unchanged: the scan plans any other file one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ArrowIdxError

if TYPE_CHECKING:  # (the range-bitmap code loads with its index type: arrowidx.index)
    from ..index.rangebitmap.dictionary import KeyCodec

# A directory is built for a column when at least this many files are covered (below it,
# asking each file's index costs under a millisecond) ...
DIRECTORY_MIN_FILES = 64
# ... and their dictionaries hold at most this many keys in all (8 bytes each) and this
# many per file on average: building costs about a file's planning plus ~10 ns a key, so
# files of many distinct keys (which a scan reads slowly anyway) gain too little for it.
DIRECTORY_MAX_KEYS = 8_000_000
DIRECTORY_MAX_KEYS_PER_FILE = 20_000
# IN lists longer than this are matched with one pass over all keys instead of a search per key.
_SEARCHED_KEYS = 16


@dataclass(frozen=True)
class Member:
    """A file a directory covers, as it was when the directory was built."""

    path: str  # relative to the dataset root
    identity: tuple  # (path, size, mtime_ns): the data file it was built from
    entry: object  # the manifest entry (compared by identity)
    index: object  # the file's opened FileIndex


class KeyDirectory:
    """Every distinct key of one column's exact index, per covered file (see the module)."""

    def __init__(self, column: str, codec: KeyCodec | None, members: list[Member], keys: list[np.ndarray]):
        self.column = column
        self.codec = codec
        self.members = members
        self.paths = [m.path for m in members]
        self.identities = [m.identity for m in members]
        self.lengths = np.array([len(k) for k in keys], np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)
        self.keys = np.concatenate(keys) if keys else np.empty(0, np.int64)
        self._steps = int(self.lengths.max()).bit_length() if len(keys) else 0

    def __len__(self) -> int:
        return len(self.members)

    def holding(self, keys: tuple) -> np.ndarray:
        """Per member, True when its index holds one of ``keys`` (literal keys, as a reader's
        ``answer`` gets them)."""
        found = np.zeros(len(self.members), bool)
        if not len(self.keys) or self.codec is None:
            return found
        ordered = [v for v in (self.codec.order_of(k) for k in keys) if -(1 << 63) <= v < 1 << 63]
        if len(ordered) > _SEARCHED_KEYS:
            hit = np.concatenate(([0], np.cumsum(np.isin(self.keys, np.array(ordered, np.int64)))))
            return hit[self.starts + self.lengths] > hit[self.starts]
        for v in ordered:
            found |= self._lookup(v)
        return found

    def _lookup(self, v: int) -> np.ndarray:
        """A lower-bound binary search in every member's sorted run at once: True where the
        run holds ``v``."""
        last = len(self.keys) - 1
        lo, n = self.starts.copy(), self.lengths.copy()
        for _ in range(self._steps):
            half = n >> 1
            mid = lo + half
            right = (n > 0) & (self.keys[np.minimum(mid, last)] < v)
            lo = np.where(right, mid + 1, lo)
            n = np.where(right, n - half - 1, half)
        return (lo < self.starts + self.lengths) & (self.keys[np.minimum(lo, last)] == v)


def build_directory(column: str, candidates: list[tuple[Member, object]]) -> KeyDirectory | None:
    """A directory over ``(member, reader)`` pairs (readers that list their keys), or None
    when too few files are covered or they hold too many keys to be worth listing. A file
    whose keys cannot be read is left out (planned one by one, where its error is met)."""
    total = sum(getattr(r, "cardinality", 0) for _, r in candidates)
    if len(candidates) < DIRECTORY_MIN_FILES or total > min(DIRECTORY_MAX_KEYS, DIRECTORY_MAX_KEYS_PER_FILE * len(candidates)):
        return None
    codecs = {r.codec for _, r in candidates if getattr(r, "codec", None) is not None}
    if len(codecs) > 1:
        return None  # one key encoding per directory (its members share an index schema)
    members, keys = [], []
    for member, reader in candidates:
        try:
            found = reader.distinct_keys()
        except ArrowIdxError:
            continue
        if found is not None:
            members.append(member)
            keys.append(found)
    if len(members) < DIRECTORY_MIN_FILES:
        return None
    return KeyDirectory(column, next(iter(codecs), None), members, keys)
