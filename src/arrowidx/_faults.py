"""Test hooks: named write points where a test process can be killed or paused.

The one place fault injection lives (the crash and race tests of
``integration/test_reliability.py`` use it); production modules only call
:func:`fault_point` at their write points, a no-op unless ``ARROWIDX_FAULTS`` is set.
"""

from __future__ import annotations

import os
import signal
import time

FAULTS_ENV = "ARROWIDX_FAULTS"  # "point=kill", "point=kill@2", "point=sleep:0.3", "point=wait:/path", "point=touch:/path"

_fault_hits: dict[str, int] = {}


def fault_point(name: str) -> None:
    """A named write point. With ``ARROWIDX_FAULTS="name=kill"`` (or ``kill@N`` for the N-th
    time, ``sleep:SECONDS``, ``wait:PATH``: until that file exists, or ``touch:PATH``: create
    that file) the process is killed with SIGKILL, paused or says it got there; several
    items for one point run in order (``p=touch:/a,p=wait:/b``: a rendezvous of two
    processes). Used by the crash and race tests in ``integration/``; a no-op otherwise."""
    spec = os.environ.get(FAULTS_ENV)
    if not spec:
        return
    for item in spec.split(","):
        point, _, action = item.partition("=")
        if point.strip() != name:
            continue
        _fault_hits[name] = hits = _fault_hits.get(name, 0) + 1
        action = action.strip()
        if action.startswith("sleep:"):
            time.sleep(float(action[6:]))
        elif action.startswith("touch:"):
            with open(action[6:], "a"):
                pass
        elif action.startswith("wait:"):  # until the file exists (another process says go), at most 120 s
            deadline = time.monotonic() + 120
            while not os.path.exists(action[5:]) and time.monotonic() < deadline:
                time.sleep(0.02)
        elif action.startswith("kill"):
            _, _, nth = action.partition("@")
            if hits == int(nth or 1):
                os.kill(os.getpid(), signal.SIGKILL)
