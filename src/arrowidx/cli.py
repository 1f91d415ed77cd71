"""The ``arrowidx`` command line: build, inspect, query and delete.

    arrowidx build PATH --bitmap status,region --bloom-filter id --range-bitmap amount
    arrowidx inspect PATH                 # a dataset: files, indexes, staleness, deletions
    arrowidx inspect FILE.index --data FILE.parquet
    arrowidx query PATH --where "status = 'PENDING' AND amount > 100" --columns id,amount --explain
    arrowidx delete PATH --where "status = 'CANCELLED'"

``--where`` is a SQL boolean expression, parsed by Polars (``polars.sql_expr``) and
translated to a ``pyarrow.compute.Expression``. Exit codes: 0 success, 1 an arrowidx error
(corrupt file, ...), 2 a usage error (bad option, unknown column, unsupported SQL).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ArrowIdxError, OptionError, UnsupportedTypeError

INDEX_FLAGS = {"bitmap": "bitmap", "bloom_filter": "bloom-filter", "range_bitmap": "range-bitmap", "bsi": "bsi"}


class UsageError(Exception):
    """A command line the user should fix (exit code 2)."""


def parse_where(text: str, schema: pa.Schema, *, exact: bool = True):
    """SQL ``WHERE`` text -> ``(pyarrow Expression or None, polars Expr, exact?)``.

    Parsed by Polars (``polars.sql_expr``), translated by :mod:`arrowidx.polars`. With
    ``exact=True`` a clause that does not translate exactly is a usage error; otherwise the
    translation may be a superset (used for pruning) and the Polars expression finishes it.
    """
    try:
        import polars as pl

        from .polars import translate
    except ImportError as e:
        raise UsageError(f"--where needs Polars (pip install 'arrowidx[cli]'): {e}") from None
    try:
        expr = pl.sql_expr(text)
        names = expr.meta.root_names()
    except Exception as e:  # polars raises several exception types for bad SQL
        raise UsageError(f"cannot parse --where {text!r}: {e}") from None
    unknown = [n for n in names if schema.get_field_index(n) < 0]
    if unknown:
        raise UsageError(f"--where names unknown column(s) {', '.join(unknown)}; columns are {', '.join(schema.names)}")
    translated = translate(expr, schema)
    if exact and (translated.expression is None or not translated.exact):
        parts = "; ".join(translated.dropped) or text
        raise UsageError(f"--where {text!r}: arrowidx cannot evaluate this exactly yet ({parts})")
    return translated.expression, expr, translated.exact


def _options(args) -> dict[str, str]:
    options: dict[str, str] = {}
    for flag, index_type in INDEX_FLAGS.items():
        columns = getattr(args, flag)
        if columns:
            options[f"file-index.{index_type}.columns"] = columns
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--option {item!r}: expected KEY=VALUE, e.g. file-index.bloom-filter.id.fpp=0.01")
        options[key.strip()] = value.strip()
    if not any(k.endswith(".columns") for k in options):
        raise UsageError("nothing to index: give --bitmap, --bloom-filter, --range-bitmap or --bsi columns")
    return options


def cmd_build(args) -> int:
    from .lake import build

    report = build(args.path, _options(args), progress=not args.quiet, incremental=not args.full)
    print(report)
    return 0


def cmd_inspect(args) -> int:
    path = args.path
    if os.path.isdir(path):
        return _inspect_dataset(path, args.json)
    return _inspect_container(path, args.data, args.json)


def _inspect_dataset(path: str, as_json: bool) -> int:
    from .errors import StaleDeletionError
    from .lake import dataset
    from .lake.layout import entry_is_fresh

    data = dataset(path)
    manifest = data.manifest
    rows = []
    for rel in data.files:
        entry = manifest.files.get(rel)
        info = data._info(rel)
        row = {"file": rel, "rows": entry.rows if entry else data.row_count(rel), "state": "ok"}
        if entry is None:
            row["state"] = "not indexed"
        else:
            try:
                fresh = entry_is_fresh(entry, info, data.read_footer(rel))  # by content, not mtime
            except StaleDeletionError:
                fresh, row["state"] = False, "STALE DELETIONS"
            if not fresh and row["state"] == "ok":
                row["state"] = "stale"
        if entry and entry.index:
            row["index"] = f"{entry.index.size:,} B " + ("embedded" if entry.index.embedded else "file")
            index = data.file_index(entry) if row["state"] == "ok" else None
            row["columns"] = index.columns if index else {}
        if entry and entry.deletion:
            row["deleted"] = entry.deletion.cardinality
        rows.append(row)
    if as_json:
        print(json.dumps({"version": manifest.version, "options": manifest.options, "files": rows}, indent=1))
        return 0
    print(f"{path}: manifest v{manifest.version}, {len(rows)} data file(s)")
    for key, value in sorted(manifest.options.items()):
        print(f"  {key} = {value}")
    for row in rows:
        cols = "; ".join(f"{c}: {'+'.join(t)}" for c, t in row.get("columns", {}).items())
        print(f"  {row['file']:40} {row['rows']:>10,} rows  {row['state']:11} {row.get('index', '-'):>22}  deleted {row.get('deleted', 0):>8,}  {cols}")
    return 0


def _inspect_container(path: str, data_file: str | None, as_json: bool) -> int:
    from .file_index import FileIndex

    schema = _schema_for(path, data_file)
    index = FileIndex(path, schema)
    rows = index.describe()
    if as_json:
        print(json.dumps(rows, indent=1, default=str))
        return 0
    print(f"{path}: {len(rows)} index(es)")
    for row in rows:
        extra = ", ".join(f"{k} {v}" for k, v in row.items() if k not in ("column", "index", "bytes", "empty"))
        print(f"  {row['column']:20} {row['index']:14} {row['bytes']:>12,} bytes  {'empty ' if row['empty'] else ''}{extra}")
    return 0


def _schema_for(index_path: str, data_file: str | None) -> pa.Schema:
    """The data file schema for a container: ``--data``, or the file it sits beside."""
    if data_file is None:
        parts = os.path.abspath(index_path).split(os.sep)
        if "_arrowidx" in parts and index_path.endswith(".index"):
            at = parts.index("_arrowidx")
            candidate = re.sub(r"(\.[0-9a-f]{16})?\.index$", "", os.sep.join(parts[:at] + parts[at + 2 :]))
            data_file = candidate if os.path.exists(candidate) else None
        elif index_path.endswith(".index") and os.path.exists(index_path[: -len(".index")]):
            data_file = index_path[: -len(".index")]
    if data_file is None:
        raise UsageError(f"cannot tell the column types of {index_path}: pass --data <the Parquet data file>")
    return pq.read_schema(data_file)


def cmd_query(args) -> int:
    from .lake import dataset

    data = dataset(args.path)
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    if columns:
        unknown = [c for c in columns if data.schema.get_field_index(c) < 0]
        if unknown:
            raise UsageError(f"unknown column(s) {', '.join(unknown)}; columns are {', '.join(data.schema.names)}")
    expr, polars_expr, exact = parse_where(args.where, data.schema, exact=False) if args.where else (None, None, True)
    if args.explain:
        print(data.explain(expr))
        print()
    start = time.perf_counter()
    if exact:
        table = data.to_table(filter=expr, columns=columns)
    else:  # prune with the translatable part, let Polars apply the rest exactly
        import polars as pl

        needed = None if columns is None else list(dict.fromkeys(columns + polars_expr.meta.root_names()))
        frame = pl.from_arrow(data.to_table(filter=expr, columns=needed)).filter(polars_expr)
        table = (frame.select(columns) if columns else frame).to_arrow()
    elapsed = time.perf_counter() - start
    shown = table.slice(0, args.limit) if args.limit is not None else table
    if args.format == "json":
        for row in shown.to_pylist():
            print(json.dumps(row, default=str))
    elif args.format == "csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(shown, sys.stdout.buffer)
    else:
        _print_table(shown)
    print(f"{table.num_rows:,} row(s) in {elapsed * 1000:.1f} ms", file=sys.stderr)
    return 0


def _print_table(table: pa.Table) -> None:
    try:
        import polars as pl

        with pl.Config(tbl_rows=table.num_rows, tbl_cols=-1, tbl_width_chars=200):
            print(pl.from_arrow(table))
    except ImportError:
        print(table.to_string(preview_cols=20))


def cmd_delete(args) -> int:
    from .lake import dataset, delete

    data = dataset(args.path)
    expr, _, _ = parse_where(args.where, data.schema)
    options = {"deletion-vectors.bitmap64": "true"} if args.bitmap64 else {}
    print(delete(args.path, expr, options=options, progress=not args.quiet))
    return 0


def _duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``12h`` or ``7d``."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        return float(number) * units[unit]
    except ValueError:
        raise UsageError(f"--older-than {text!r}: expected a duration such as 3600, 30m, 12h or 7d") from None


def cmd_vacuum(args) -> int:
    from .lake import vacuum

    print(vacuum(args.path, _duration(args.older_than), dry_run=args.dry_run))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arrowidx", description="Paimon-compatible file indexes and deletion vectors for Parquet datasets.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="index every Parquet file of a dataset (incremental)")
    p.add_argument("path")
    p.add_argument("--bitmap", metavar="COLS", help="comma-separated columns for a bitmap index")
    p.add_argument("--bloom-filter", metavar="COLS", dest="bloom_filter")
    p.add_argument("--range-bitmap", metavar="COLS", dest="range_bitmap")
    p.add_argument("--bsi", metavar="COLS")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="any Paimon file-index option, repeatable")
    p.add_argument("--full", action="store_true", help="re-index every file, not only new or changed ones")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("inspect", help="show a dataset's manifest or one index container")
    p.add_argument("path", help="a dataset directory or a .index container")
    p.add_argument("--data", help="the Parquet data file a container belongs to (for column types)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("query", help="read the rows matching a SQL WHERE clause, pruned by the indexes")
    p.add_argument("path")
    p.add_argument("--where", help="SQL boolean expression, e.g. \"status = 'PENDING' AND amount > 100\"")
    p.add_argument("--columns", help="comma-separated columns to return")
    p.add_argument("--explain", action="store_true", help="print what each file's index decided")
    p.add_argument("--limit", type=int, help="print at most N rows")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("delete", help="delete rows matching a SQL WHERE clause (deletion vectors)")
    p.add_argument("path")
    p.add_argument("--where", required=True)
    p.add_argument("--bitmap64", action="store_true", help="write 64-bit (Iceberg-compatible) vectors")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("vacuum", help="remove manifests, index and deletion files no retained version references")
    p.add_argument("path")
    p.add_argument("--older-than", default="7d", help="retention: 3600, 30m, 12h, 7d (default 7d)")
    p.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    p.set_defaults(func=cmd_vacuum)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "path", None) and "://" not in args.path and not os.path.exists(args.path):
        print(f"arrowidx: {args.path}: no such file or directory", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (UsageError, OptionError, UnsupportedTypeError) as e:
        print(f"arrowidx: {e}", file=sys.stderr)
        return 2
    except ArrowIdxError as e:
        print(f"arrowidx: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"arrowidx: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
