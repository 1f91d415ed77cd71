"""A pytest plugin that runs the engines' own tests (``../shared/peer-suites/``) twice in one
pytest run: as published, and with their scans routed through arrowidx.

Loaded into a pytest run of the extracted suite by ``integration/test_peer_suites.py``
(``-p peer_plugin``). Every collected test gets a twin right after it, ``<name>@arrowidx``,
run the same way except that

* ``pl.scan_parquet(source, ...)`` (also as called by ``pl.read_parquet``) on local files is
  ``arrowidx.build(source, <a bitmap on every column it can index>)`` followed by
  ``arrowidx.polars.scan(source, ...)`` with the same arguments;
* ``pyarrow.dataset.dataset(source, ...)`` on local Parquet files, called from the suite's
  own code, is ``arrowidx.build`` followed by ``arrowidx.dataset(source, ...)``, with
  pyarrow's default ``partitioning=None`` given when the call gives none: arrowidx's own
  default discovers Hive folders (documented in docs/guide.md, as issue 49 allows); given
  the argument, arrowidx follows pyarrow exactly, which is what this checks.

Bytes, file objects, object-store URIs and calls made by arrowidx itself reach the engine
unchanged. The twin runs only when the test made such a call when run as published (a test
without one would run the same code twice). After each twin, the indexes its builds wrote
are removed, so the next test sees its folders as published.

Where the indexes go: beside the data folder (its sidecar ``_<folder>.arrowidx/``), as a
user's build puts them, except where that sidecar lands inside the test's ``tmp_path`` (the
folder indexed is a subfolder of the test's data). There the test's next scan of the parent
folder by Polars or pyarrow themselves (Polars walks every file below a folder, with no
hidden-file rule; a test listing files with Polars' ``_expand_paths``) would read the index
files as data. A user who scans both a folder and its parent does what a user with
read-only data does: gives ``index_root=`` outside the data. The twin does the same: such a
build gets ``index_root=`` (a folder of the twin's own per lake root, outside the test's
tree, removed after the twin), and ``scan`` / ``dataset`` get the same ``index_root=``. The indexes are built and used as before, and the test's folders hold
exactly the files it wrote: the outcomes compare the engines' answers on the same data,
never arrowidx's files.

Each test's outcome (passed, failed, skipped, xfailed, xpassed, error; the exception class
of a failure) is written to the JSON file ``$ARROWIDX_PEER_RESULTS``::

    {"<nodeid>": {"plain": [outcome, exception], "arrowidx": [outcome, exception] | null,
                  "calls": <routed calls>, "message": <first line of the twin's failure>}}

The dispatchers replace ``pl.scan_parquet`` and ``pyarrow.dataset.dataset`` when the plugin
is configured (before the suite is imported), so a test parametrized with
``pl.scan_parquet`` holds the dispatcher, and ``scan_func is pl.scan_parquet`` still holds.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from typing import Any

import pytest

SUFFIX = "@arrowidx"
_STATE: dict[str, Any] = {
    "mode": "plain",  # "plain": the engine as published; "arrowidx": routed
    "calls": 0,  # routable calls of the current test
    "built": set(),  # index locations written by the current twin's builds
    "build_errors": [],
    "item": None,  # the test running
    "index_base": None,  # the current twin's folder of index roots (outside the test's tree)
}
_RESULTS: dict[str, dict] = {}
_ROUTABLE: dict[str, int] = {}  # nodeid of a test run as published -> its routable calls
_SUITE_DIRS: list[str] = []


# -- what is routed ---------------------------------------------------------------------------


def _called_from_suite(depth: int) -> bool:
    """Whether the frame ``depth`` levels up, skipping the engine's own frames (Polars'
    ``read_parquet`` calls ``scan_parquet``), belongs to the suite's code."""
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.split(".")[0] not in ("polars", "functools"):
            break
        frame = frame.f_back
    if frame is None:
        return False
    path = os.path.abspath(frame.f_code.co_filename)
    return any(path.startswith(d) for d in _SUITE_DIRS)


def _local_path(item: Any) -> str | None:
    """``item`` as a local path, or None (bytes, file objects, object-store URIs)."""
    if isinstance(item, (str, os.PathLike)):
        text = os.fspath(item)
        if not isinstance(text, str):
            return None
        if text.startswith("file://"):
            return text
        return None if "://" in text else text
    return None


def _local_sources(source: Any) -> list[str] | None:
    """The local paths of a source (a path or a list of paths), or None."""
    if isinstance(source, (list, tuple)):
        if not source:
            return None
        paths = [_local_path(s) for s in source]
        return None if any(p is None for p in paths) else paths
    path = _local_path(source)
    return None if path is None else [path]


def _index_options(paths: list[str]) -> dict[str, str]:
    """A bitmap on every top-level column of the first readable Parquet file under ``paths``
    that a bitmap can index (the most exercised index: exact answers, row-level pruning)."""
    import pyarrow.parquet as pq

    from arrowidx.errors import ArrowIdxError
    from arrowidx.index.bitmap import BitmapIndex
    from arrowidx.types import paimon_type

    for path in _files_under(paths):
        try:
            schema = pq.read_schema(path)
        except Exception:  # noqa: BLE001 - not a Parquet file: try the next
            continue
        columns = []
        for field in schema:
            if "," in field.name or not field.name.strip():
                continue
            try:
                BitmapIndex.check_type(paimon_type(field.type))
            except ArrowIdxError:
                continue
            columns.append(field.name)
        return {"file-index.bitmap.columns": ",".join(columns)} if columns else {}
    return {}


def _files_under(paths: list[str], limit: int = 8):
    import glob

    seen = 0
    for p in paths:
        p = p[len("file://") :] if p.startswith("file://") else p
        candidates = sorted(glob.glob(p, recursive=True)) if any(c in p for c in "*?[") else [p]
        for c in candidates:
            if os.path.isdir(c):
                for folder, dirs, files in os.walk(c):
                    dirs.sort()
                    for f in sorted(files):
                        yield os.path.join(folder, f)
                        seen += 1
                        if seen >= limit:
                            return
            elif os.path.isfile(c):
                yield c
                seen += 1
                if seen >= limit:
                    return


def _test_tree() -> str | None:
    """The running test's ``tmp_path`` (None when it has none)."""
    item = _STATE["item"]
    tmp = getattr(item, "funcargs", {}).get("tmp_path") if item is not None else None
    return None if tmp is None else os.path.abspath(os.fspath(tmp))


def _index_root(source: Any) -> dict[str, str]:
    """``{"index_root": folder}`` when the sidecar of the folder a build of ``source``
    indexes would lie inside the test's tree (see the module docstring): a folder per source
    outside it; else ``{}`` (the sidecar beside the data, where a user's build puts it)."""
    tree = _test_tree()
    if tree is None:
        return {}
    from arrowidx.lake.layout import sidecar_of
    from arrowidx.lake.source import resolve

    try:
        root = resolve(source)[1]
    except Exception:  # noqa: BLE001 - the build meets it (and records it)
        return {}
    side = sidecar_of(root)
    if side is None or not os.path.abspath(side).startswith(tree + os.sep):
        return {}
    import hashlib
    import tempfile

    if _STATE["index_base"] is None:
        _STATE["index_base"] = tempfile.mkdtemp(prefix="arrowidx-peer-index-")
    key = hashlib.sha1(repr(root).encode()).hexdigest()[:16]
    return {"index_root": os.path.join(_STATE["index_base"], key)}


def _build(source: Any, paths: list[str], **kwargs: Any) -> None:
    """``arrowidx.build`` as a user would call it before scanning; a failure is recorded
    (the scan then reads the data unindexed, as for a folder nobody indexed)."""
    import arrowidx

    options = _index_options(paths)
    try:
        arrowidx.build(source, options, progress=False, **kwargs)
    except Exception as e:  # noqa: BLE001
        _STATE["build_errors"].append(f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
    for location in _index_locations(paths):
        _STATE["built"].add(location)


def _index_locations(paths: list[str]) -> list[str]:
    """Where arrowidx keeps the indexes of each folder a build may have indexed."""
    out = []
    for p in paths:
        p = p[len("file://") :] if p.startswith("file://") else p
        p = os.path.abspath(p)
        folders = {p if os.path.isdir(p) else os.path.dirname(p)}
        if any(c in p for c in "*?["):
            folders = {os.path.dirname(p.split("*")[0].split("?")[0].split("[")[0].rstrip("/")) or "/"}
        for folder in folders:
            out.extend(_locations_of(folder))
    return out


def _locations_of(folder: str) -> list[str]:
    try:
        from arrowidx.lake import source as lake_source

        where = getattr(lake_source, "index_locations", None)
        if where is not None:
            return list(where(folder))
    except ImportError:
        pass
    return [os.path.join(folder, "_arrowidx")]


def _remove_built() -> None:
    for location in sorted(_STATE["built"], reverse=True):
        if os.path.isdir(location):
            shutil.rmtree(location, ignore_errors=True)
    _STATE["built"] = set()
    if _STATE["index_base"] is not None:
        shutil.rmtree(_STATE["index_base"], ignore_errors=True)
        _STATE["index_base"] = None


def _polars_dispatcher(original: Callable) -> Callable:
    @functools.wraps(original)
    def scan_parquet(source: Any, *args: Any, **kwargs: Any):
        paths = _local_sources(source) if not args else None
        if paths is None or not _called_from_suite(2):
            return original(source, *args, **kwargs)
        _STATE["calls"] += 1
        if _STATE["mode"] != "arrowidx":
            return original(source, *args, **kwargs)
        from arrowidx import polars as apl

        where = _index_root(source)
        _build(source, paths, **where)
        return apl.scan(source, **kwargs, **where)

    scan_parquet.__peer_original__ = original  # type: ignore[attr-defined]
    return scan_parquet


def _pyarrow_dispatcher(original: Callable) -> Callable:
    @functools.wraps(original)
    def dataset(source: Any, *args: Any, **kwargs: Any):
        paths = _local_sources(source) if not args else None
        fmt = kwargs.get("format")
        parquet = fmt is None or fmt == "parquet" or type(fmt).__name__ == "ParquetFileFormat"
        filesystem = kwargs.get("filesystem")
        local = filesystem is None or type(filesystem).__name__ == "LocalFileSystem" or isinstance(filesystem, str)
        if paths is None or not parquet or not local or not _called_from_suite(2):
            return original(source, *args, **kwargs)
        _STATE["calls"] += 1
        if _STATE["mode"] != "arrowidx":
            return original(source, *args, **kwargs)
        import arrowidx

        where = _index_root(source) if filesystem is None else {}
        _build(source, paths, **({"filesystem": filesystem} if filesystem is not None else {}), **where)
        return arrowidx.dataset(source, **{"partitioning": None, **kwargs}, **where)  # (pyarrow's default: see the docstring)

    dataset.__peer_original__ = original  # type: ignore[attr-defined]
    return dataset


def _install() -> None:
    try:
        import polars as pl
        import polars.io
        import polars.io.parquet.functions as plf
    except ImportError:
        pl = None
    if pl is not None and not hasattr(pl.scan_parquet, "__peer_original__"):
        routed = _polars_dispatcher(pl.scan_parquet)
        for module in (pl, polars.io, plf, sys.modules.get("polars.io.parquet")):
            if module is not None and hasattr(module, "scan_parquet"):
                module.scan_parquet = routed
    import pyarrow.dataset as ds

    if not hasattr(ds.dataset, "__peer_original__"):
        ds.dataset = _pyarrow_dispatcher(ds.dataset)


# -- twins --------------------------------------------------------------------------------------


class RoutedFunction(pytest.Function):
    """The twin of a test function: the same function, fixtures and parameters."""

    def _getobj(self):
        instance = self.instance
        parent_obj = instance if instance is not None else self.parent.obj
        return getattr(parent_obj, self.originalname[: -len(SUFFIX)])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--peer-results", default=os.environ.get("ARROWIDX_PEER_RESULTS"),
                     help="write each test's outcome with and without arrowidx to this JSON file")  # fmt: skip
    parser.addoption("--peer-suite-dir", action="append", default=[],
                     help="folders whose code's calls are routed (default: the rootdir)")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    dirs = config.getoption("--peer-suite-dir") or [str(config.rootpath)]
    _SUITE_DIRS[:] = [os.path.abspath(d) + os.sep for d in dirs]
    _install()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    out = []
    for item in items:
        out.append(item)
        if type(item) is not pytest.Function:
            continue
        callspec = getattr(item, "callspec", None)
        twin = RoutedFunction.from_parent(
            item.parent,
            name=item.name,
            callspec=callspec,
            fixtureinfo=item._fixtureinfo,
            keywords={callspec.id: True} if callspec is not None and callspec._idlist else None,
            originalname=item.originalname + SUFFIX,
        )
        out.append(twin)
    items[:] = out


def _original_id(nodeid: str) -> str:
    return nodeid.replace(SUFFIX, "", 1)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _STATE["calls"] = 0
    _STATE["build_errors"] = []
    _STATE["item"] = item
    if isinstance(item, RoutedFunction):
        if not _ROUTABLE.get(_original_id(item.nodeid)):
            pytest.skip("peer: no scan to route (the test run as published made none)")
        _STATE["mode"] = "arrowidx"
    else:
        _STATE["mode"] = "plain"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.excinfo is not None:
        report.peer_exception = call.excinfo.type.__name__  # type: ignore[attr-defined]
        if isinstance(item, RoutedFunction):
            text = str(call.excinfo.value).strip().splitlines()
            report.peer_message = text[0][:300] if text else ""  # type: ignore[attr-defined]
    return report


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem) -> None:
    if isinstance(item, RoutedFunction):
        _remove_built()
    else:
        _ROUTABLE[item.nodeid] = _STATE["calls"]
    _STATE["mode"] = "plain"


def _phase(report: pytest.TestReport) -> list:
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    else:
        outcome = report.outcome
    return [outcome, getattr(report, "peer_exception", None) if report.failed else None]


def _outcome(phases: dict[str, list]) -> list | None:
    """One test's outcome from its phases: a setup that did not pass decides; then the call;
    a failing teardown after a passing call is an error."""
    setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
    if setup is None:
        return None
    if setup[0] == "failed":
        return ["error", setup[1]]
    if setup[0] != "passed":
        return setup
    if call is None:
        return None
    if call[0] in ("passed", "xpassed") and teardown is not None and teardown[0] == "failed":
        return ["error", teardown[1]]
    return call


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    routed = SUFFIX in report.nodeid
    nodeid = _original_id(report.nodeid)
    if routed and report.skipped and "peer: no scan to route" in str(report.longrepr):
        return
    entry = _RESULTS.setdefault(nodeid, {"plain": None, "arrowidx": None, "calls": 0, "message": "", "phases": {}})
    key = "arrowidx" if routed else "plain"
    phases = entry["phases"].setdefault(key, {})
    phases[report.when] = _phase(report)
    entry[key] = _outcome(phases)
    if routed:
        if getattr(report, "peer_message", None) and not entry["message"]:
            entry["message"] = report.peer_message
    elif report.when == "teardown":
        entry["calls"] = _ROUTABLE.get(nodeid, 0)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--peer-results")
    if not path:
        return
    try:
        results = {k: {f: v[f] for f in ("plain", "arrowidx", "calls", "message")} for k, v in _RESULTS.items()}
        with open(path, "w") as f:
            json.dump(results, f, indent=0, sort_keys=True)
    except OSError:
        traceback.print_exc()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    routed = {k: v for k, v in _RESULTS.items() if v["arrowidx"] is not None}
    different = {k: v for k, v in routed.items() if v["arrowidx"] != v["plain"]}
    terminalreporter.section("arrowidx peer comparison")
    terminalreporter.line(
        f"{len(_RESULTS)} tests, {len(routed)} routed through arrowidx, {len(routed) - len(different)} same outcome,"
        f" {len(different)} different"
    )
    for nodeid, v in sorted(different.items()):
        terminalreporter.line(f"  {nodeid}: plain {v['plain']} arrowidx {v['arrowidx']} {v['message'][:160]}")
