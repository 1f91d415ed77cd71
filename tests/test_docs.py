"""Every ```python block in docs/*.md runs (blocks of one page share a namespace).

A page that needs services the unit tests do not start (Spark) opts out with an HTML
comment ``<!-- docs-test: skip -->``; its examples run in the integration tests instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if "<!-- docs-test: skip -->" not in p.read_text())


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    namespace: dict = {"__name__": "__docs__"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{page.name}[block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{page.name}, example {i + 1} failed: {e!r}") from e
