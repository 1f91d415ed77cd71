"""Progress bars for the writers (build, delete, the Paimon rewrite and delete) on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable


def show_progress(progress: bool | None) -> bool:
    """``progress=None`` (the default everywhere): a bar only when stderr is a terminal."""
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    return bool(progress)


def progress_bar(total: int, enabled: bool | None, what: str) -> Callable[[], None]:
    """A tick per unit of work done (``total`` of them, ``what`` names the work): a tqdm bar on
    stderr where :func:`show_progress` says so, else a function doing nothing."""
    if not show_progress(enabled) or total == 0:
        return lambda: None
    try:
        from tqdm import tqdm
    except ImportError:
        return lambda: None
    bar = tqdm(total=total, unit="file", desc=what, leave=False)
    return bar.update
