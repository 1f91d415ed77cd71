"""Every ```python block of docs/*.md runs on its own, after its page's setup block, and says
what it prints.

* **Setup**: the ```python block right after ``<!-- docs-test: setup -->`` (at most one per
  page) runs first, in a fresh temporary working folder; then one other block, in the same
  fresh namespace. Each block is run so, alone: no example depends on another.
* **Cleanup**: a block right after ``<!-- docs-test: cleanup -->`` (the page's "when done")
  runs after each block, even a failed one (a server stopped, a session closed).
* **Output**: a block that prints is followed by a ```text block holding what it prints; an
  ``...`` in it stands for any text, in a line or for whole lines (doctest's ELLIPSIS). A
  block that prints with no such block after it fails, and so does a ```text block that
  does not match. Other assertions are the examples' own ``assert`` lines.
* A page without Python examples says why in ``<!-- docs-test: no examples: ... -->``: it is
  reported as skipped with that reason, never as passed; a page with neither fails.

docs/spark.md runs against a local Spark session its setup block starts (skipped without
pyspark or Java), docs/object-stores.md against a local S3 server its setup block starts
(moto; skipped without it), docs/paimon.md on the tables it tells its reader to copy
(``COPIED``).
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"(<!-- docs-test: (setup|cleanup) -->\s*)?```python\n(.*?)```(\s*```text\n(.*?)```)?", re.S)
NO_EXAMPLES = re.compile(r"<!-- docs-test: no examples: (.*?) -->", re.S)
NEEDS = {  # page -> (module, what a reader needs to run it), skipped with the reason when missing
    "spark.md": [("pyspark", "the 'spark' extra"), ("java", "Java 17")],
    "object-stores.md": [("moto", "moto[server] (a local S3 server)"), ("boto3", "boto3")],
    "paimon.md": [("fastavro", "the 'paimon' extra")],
}
#: what a page tells its reader to copy where they run it: (from the repository, to the folder)
COPIED = {"paimon.md": [("tests/paimon_tables/shapes-0.9.0", "shapes-0.9.0"), ("tests/paimon_tables/dv-0.9.0", "dv-0.9.0")]}


@dataclass
class Block:
    kind: str  # setup | cleanup | example
    code: str
    output: str | None  # the ```text block after it
    line: int


def blocks(text: str) -> list[Block]:
    out = []
    for m in FENCE.finditer(text):
        out.append(Block(m.group(2) or "example", m.group(3), m.group(5), text.count("\n", 0, m.start(3)) + 1))
    return out


def _examples() -> list:
    params = []
    for page in PAGES:
        found = blocks(page.read_text())
        examples = [b for b in found if b.kind == "example"]
        if not examples:
            params.append(pytest.param(page, None, id=page.name))
        for b in examples:
            params.append(pytest.param(page, b, id=f"{page.name}:{b.line}"))
    return params


def _needs(page: Path) -> None:
    for module, what in NEEDS.get(page.name, []):
        if module == "java":
            if shutil.which("java") is None:
                pytest.skip(f"{page.name}: needs {what}")
            continue
        pytest.importorskip(module, reason=f"{page.name}: needs {what}")


def matches(expected: str, got: str) -> bool:
    """doctest's comparison: ``...`` matches any text, ``<BLANKLINE>`` an empty line."""
    return doctest.OutputChecker().check_output(expected, got, doctest.ELLIPSIS)


@pytest.fixture(scope="module", autouse=True)
def _spark_stopped_after_the_pages():
    """The session docs/spark.md starts is stopped when this module is done (other suites
    of the same run start theirs with their own settings)."""
    yield
    if "pyspark.sql" in sys.modules:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        if session is not None:
            session.stop()


def run_block(page: Path, block: Block, tmp_path: Path) -> None:
    found = blocks(page.read_text())
    setup = [b for b in found if b.kind == "setup"]
    cleanup = [b for b in found if b.kind == "cleanup"]
    assert len(setup) <= 1 and len(cleanup) <= 1, f"{page.name}: one setup and one cleanup block at most"
    namespace: dict = {"__name__": "__docs__"}
    environ = dict(os.environ)  # what a block sets there (credentials of a test server) is undone
    try:
        for b in [*setup, block]:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                try:
                    exec(compile(b.code, f"{page.name}:{b.line}", "exec"), namespace)
                except Exception as e:
                    raise AssertionError(f"{page.name}, the block at line {b.line} failed: {e!r}") from e
            printed = out.getvalue()
            if b.output is None:
                assert not printed, f"{page.name}:{b.line} prints, with no ```text block after it:\n{printed}"
            else:
                assert matches(b.output, printed), (
                    f"{page.name}:{b.line} prints\n{printed}\nwhere its ```text block says\n{b.output}"
                )
    finally:
        try:
            for b in cleanup:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(b.code, f"{page.name}:{b.line}", "exec"), namespace)
        finally:
            os.environ.clear()
            os.environ.update(environ)


@pytest.mark.parametrize("page,block", _examples())
def test_example(page: Path, block: Block | None, tmp_path, monkeypatch):
    if block is None:
        reason = NO_EXAMPLES.search(page.read_text())
        assert reason, f"{page.name} has no Python example and no '<!-- docs-test: no examples: why -->'"
        pytest.skip(f"{page.name}: no Python examples ({' '.join(reason.group(1).split())})")
    _needs(page)
    for source, target in COPIED.get(page.name, []):
        shutil.copytree(DOCS.parent / source, tmp_path / target)
    monkeypatch.chdir(tmp_path)
    run_block(page, block, tmp_path)


def test_the_checker_itself(tmp_path, monkeypatch):
    """The rules above, on a page made here: a block depending on another fails, an output
    block is compared, printing without one fails."""
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: setup -->\n```python\nx = 1\n```\n"
        "```python\ny = x + 1\nprint(y)\n```\n```text\n2\n```\n"
        "```python\nprint(y)\n```\n"
        "```python\nprint('a long line')\n```\n```text\na ... line\n```\n"
        "```python\nprint(3)\n```\n```text\n4\n```\n"
    )
    found = [b for b in blocks(page.read_text()) if b.kind == "example"]
    monkeypatch.chdir(tmp_path)
    run_block(page, found[0], tmp_path)
    with pytest.raises(AssertionError, match="NameError"):
        run_block(page, found[1], tmp_path)  # y is another block's
    run_block(page, found[2], tmp_path)
    with pytest.raises(AssertionError, match="where its ```text block says"):
        run_block(page, found[3], tmp_path)
    page.write_text("```python\nprint(1)\n```\n")
    with pytest.raises(AssertionError, match="with no ```text block after it"):
        run_block(page, blocks(page.read_text())[0], tmp_path)


def test_every_page_is_covered():
    for page in PAGES:
        text = page.read_text()
        assert "docs-test: skip" not in text, f"{page.name}: pages are not skipped; examples run (see this module)"
        assert blocks(text) or NO_EXAMPLES.search(text), page.name
