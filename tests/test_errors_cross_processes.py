"""Every arrowidx exception crosses a process boundary whole (issue 47, item 4): pickle (Spark
executors, multiprocessing, concurrent.futures) and ``copy`` rebuild it with its message and
attributes. The classes are discovered by importing every arrowidx module, so a new class is
covered without touching this test (``../shared/repro/16.py``)."""

from __future__ import annotations

import concurrent.futures
import copy
import importlib
import inspect
import multiprocessing
import pickle
import pkgutil

import pytest

import arrowidx
from arrowidx.errors import StaleDeletionError, StorageError


def _all_exception_classes() -> list[type[BaseException]]:
    for module in pkgutil.walk_packages(arrowidx.__path__, "arrowidx."):
        importlib.import_module(module.name)
    seen: dict[str, type] = {}
    pending = [BaseException]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            pending.append(sub)
            if sub.__module__.split(".")[0] == "arrowidx":
                seen[f"{sub.__module__}.{sub.__qualname__}"] = sub
    return [seen[k] for k in sorted(seen)]


CLASSES = _all_exception_classes()
VALUES = {"offset": 17, "version": 7, "newest": 5, "columns": ["id", "status"], "column": "stauts"}


def make(cls: type[BaseException]) -> BaseException:
    """An instance with every constructor argument given (keyword-only ones included)."""
    args, kwargs = [], {}
    init = cls.__init__
    params = [] if init in (BaseException.__init__, Exception.__init__) else list(inspect.signature(init).parameters.values())[1:]
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        value = VALUES.get(p.name, f"<{p.name}>")
        if p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    if not params or all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        args = ["the message"]
    return cls(*args, **kwargs)


def test_the_classes_the_issue_names_are_discovered():
    names = {c.__name__ for c in CLASSES}
    assert {"StorageError", "AccessDeniedError", "StoreUnavailableError", "StaleDeletionError", "CorruptManifestError",
            "MissingManifestError", "MissingFilterError", "UnknownColumnError", "WhereError", "UsageError"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
@pytest.mark.parametrize("how", ["pickle", "copy", "deepcopy"])
def test_round_trip_keeps_message_and_attributes(cls, how):
    error = make(cls)
    again = {"pickle": lambda e: pickle.loads(pickle.dumps(e)), "copy": copy.copy, "deepcopy": copy.deepcopy}[how](error)
    assert type(again) is cls
    assert str(again) == str(error)
    assert again.args == error.args
    assert vars(again) == vars(error)


def test_storage_error_keeps_its_path():
    error = StorageError("connection reset", path="s3://bucket/lake/p.parquet")
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.path) == ("s3://bucket/lake/p.parquet: connection reset", "s3://bucket/lake/p.parquet")
    assert isinstance(again, OSError)


def _raise_stale(path: str) -> None:
    raise StaleDeletionError("changed since 3 row(s) were deleted from it", path=path)


def test_raised_in_a_worker_process_arrives_whole():
    """What a multiprocessing / concurrent.futures / Spark worker does with an exception it raises."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(StaleDeletionError) as info:
            pool.submit(_raise_stale, "/lake/part-0.parquet").result()
    assert str(info.value) == "/lake/part-0.parquet: changed since 3 row(s) were deleted from it"
    assert info.value.path == "/lake/part-0.parquet"
