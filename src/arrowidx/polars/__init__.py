"""Polars lazy scans of indexed datasets, with predicate pushdown (``arrowidx.polars``).

    import polars as pl
    from arrowidx import polars as apl

    apl.scan("lake/").filter(pl.col("user_id") == 42).select("amount").collect()

:func:`scan` registers an IO source with ``polars.io.plugins.register_io_source``. When a
query runs, Polars hands the source the projection, a row limit and the predicate it pushed
down (a ``pl.Expr``). The source

1. translates the predicate into a ``pyarrow.compute.Expression`` (:func:`translate`) that
   is TRUE on a superset of the rows where the Polars predicate is TRUE, and lets the
   dataset's indexes rule out files and row groups with it (``IndexedDataset.plan_file``);
2. reads what is left with Polars' own Parquet reader (local files; any other ``pyarrow``
   filesystem is read with pyarrow), dropping the rows of the deletion vectors;
3. always applies the **complete Polars predicate** to what it yields, so the translation
   only decides what is *read*, never what is *returned*: Polars does not filter again
   after a source that accepted the predicate.

The result equals ``pl.scan_parquet(<the same files>)`` with the same query, minus deleted
rows, in the same order (files in path order, rows in file order).

Reading the ``pl.Expr``
-----------------------
The expression tree is read through public, documented ``Expr.meta`` calls only:
``meta.pop()`` gives a node's inputs, ``meta.is_column()``/``meta.is_literal()`` recognise
leaves, and a node's operator is identified by rebuilding candidates from its inputs with
the public builders (``a > b``, ``a.is_in(b)``, ``a.is_between(lo, hi, closed=...)``, ...)
and comparing them with ``meta.eq`` (structural equality; on Polars 1.x, whose ``meta.eq``
misses some equal function nodes, byte-equal serialisations also count, compared and never
read). Literal values are evaluated with ``pl.select``. Nothing parses Polars'
serialisation formats (``meta.serialize`` JSON changes between releases) or the display
strings of ``meta.tree_format``, so a Polars release that renames internals still matches;
a node this code does not recognise simply gives no pruning. Tested with Polars 1.30.0,
1.44.2, 2.0.0 and 2.1.0 (:data:`TESTED_POLARS`).
"""

from .explain import ScanReport, explain
from .paimon import scan_paimon
from .source import scan
from .translate import Translation, to_arrow_expression, translate

__all__ = [
    "ScanReport",
    "Translation",
    "explain",
    "scan",
    "scan_paimon",
    "to_arrow_expression",
    "translate",
]

#: The Polars releases this module is tested with (also pinned in ``pyproject.toml``).
TESTED_POLARS = ">=1.30,<2.2"
