"""The ``arrowidx`` command line: build, inspect, explain, query, delete and vacuum.

    arrowidx build PATH --bitmap status,region --bloom-filter id --range-bitmap amount
    arrowidx build PATH                   # rebuild with the stored options (new/changed files)
    arrowidx build PATH --drop amount:range-bitmap
    arrowidx inspect PATH [--json]        # a dataset: files, indexes, staleness, deletions, totals
    arrowidx inspect FILE.index --data FILE.parquet
    arrowidx explain PATH --where "id = 42" [--json]
    arrowidx query PATH --where "status = 'PENDING' AND amount > 100" --columns id,amount
    arrowidx delete PATH --where "status = 'CANCELLED'" [--dry-run | --yes]
    arrowidx vacuum PATH --older-than 7d [--dry-run] [--json]   # remove unreferenced old files
    arrowidx accept-rollback PATH [--dry-run] [--json]   # LATEST names a lost manifest: go back on purpose

``--where`` is a SQL boolean expression with SQL's meaning (:mod:`arrowidx.sql`): the part a
``pyarrow.compute.Expression`` expresses exactly prunes with the indexes, the rest is
evaluated on the rows read; text that is not valid SQL for the dataset is refused with a
caret under the offending token. Exit codes: 0 success, 2 a usage error (bad option, unknown column,
a condition that cannot be translated, a refused delete), 1 anything else (a corrupt file,
a commit conflict, an internal error: one line; ``--debug`` prints the traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import re
import sys
import time
import traceback

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import (
    ArrowIdxError,
    MissingFilterError,
    OptionError,
    UnsupportedTypeError,
    UnsupportedValueError,
)
from .filters import require_delete_filter, user_filter
from .sql import WhereError, parse_where

INDEX_FLAGS = {"bitmap": "bitmap", "bloom_filter": "bloom-filter", "range_bitmap": "range-bitmap", "bsi": "bsi"}

__all__ = ["UsageError", "build_parser", "main", "parse_where"]


class UsageError(Exception):
    """A command line the user should fix (exit code 2)."""


USER_ERRORS = (UsageError, WhereError, OptionError, UnsupportedTypeError, UnsupportedValueError, MissingFilterError)


def _dump(obj) -> None:
    print(json.dumps(obj, indent=1, default=str))


def _check_columns(names: list[str], schema: pa.Schema, what: str) -> None:
    for name in names:
        if schema.get_field_index(name) < 0:
            close = difflib.get_close_matches(name, schema.names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(f"{what} names unknown column {name!r}; {hint}(columns: {', '.join(schema.names)})")


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
    return options


def _storage(args) -> dict[str, str] | None:
    """``--storage-option KEY=VALUE`` (repeatable): an object store's endpoint, region,
    credentials (see docs/object-stores.md)."""
    items = getattr(args, "storage_option", None)
    if not items:
        return None
    options: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--storage-option {item.split('=', 1)[0]!r}...: expected KEY=VALUE, e.g. endpoint=http://127.0.0.1:9000")
        options[key.strip()] = value.strip()
    return options


def cmd_build(args) -> int:
    from .lake import build

    report = build(args.path, _options(args), progress=False if args.quiet else None, incremental=not args.full,
                   replace=args.replace, drop=args.drop or (), storage_options=_storage(args))  # fmt: skip
    if args.json:
        _dump(dataclasses.asdict(report))
    else:
        print(report)
        if report.changed:
            print("indexes: " + "; ".join(f"{k} = {v}" for k, v in sorted(report.options.items())))
    return 0


def cmd_inspect(args) -> int:
    path = args.path
    if os.path.isdir(path) or path.endswith(".parquet") or "://" in path:
        return _inspect_dataset(path, args.json, _storage(args))
    return _inspect_container(path, args.data, args.json)


def _inspect_dataset(path: str, as_json: bool, storage_options: dict[str, str] | None = None) -> int:
    from .errors import StaleDeletionError
    from .lake import dataset
    from .lake.layout import entry_is_fresh

    data = dataset(path, storage_options=storage_options)
    manifest = data.manifest
    rows = []
    for rel in data.files:
        entry = manifest.files.get(rel)
        info = data._info(rel)
        row = {"file": rel, "rows": entry.rows if entry else data.row_count(rel), "state": "ok",
               "index_bytes": 0, "index_embedded": None, "columns": {}, "deleted": 0}  # fmt: skip
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
            row["index_bytes"] = entry.index.size
            row["index_embedded"] = entry.index.embedded is not None
            index = data.file_index(entry) if row["state"] == "ok" else None
            row["columns"] = index.columns if index else {}
        if entry and entry.deletion and row["state"] == "ok":
            row["deleted"] = entry.deletion.cardinality
        rows.append(row)
    totals = {
        "files": len(rows),
        "files_indexed": sum(r["state"] == "ok" for r in rows),
        "files_stale": sum(r["state"] == "stale" for r in rows),
        "files_not_indexed": sum(r["state"] == "not indexed" for r in rows),
        "rows": sum(r["rows"] for r in rows),
        "rows_deleted": sum(r["deleted"] for r in rows),
        "index_bytes": sum(r["index_bytes"] for r in rows),
    }
    if as_json:
        _dump({"version": manifest.version, "options": manifest.options, "files": rows, "totals": totals})
        return 0
    print(f"{path}: manifest v{manifest.version}, {len(rows)} data file(s)")
    for key, value in sorted(manifest.options.items()):
        print(f"  {key} = {value}")
    print(f"  {'file':40} {'rows':>12} {'state':11} {'index bytes':>12} {'where':9} {'deleted':>9}  indexes")
    for row in rows:
        cols = "; ".join(f"{c}: {'+'.join(t)}" for c, t in row["columns"].items())
        where = "-" if row["index_embedded"] is None else ("manifest" if row["index_embedded"] else "file")
        print(f"  {row['file'][-40:]:40} {row['rows']:>12,} {row['state']:11} {row['index_bytes']:>12,} {where:9} {row['deleted']:>9,}  {cols}")
    t = totals
    print(f"  {'total':40} {t['rows']:>12,} {t['files_indexed']} indexed, {t['files_stale']} stale, {t['files_not_indexed']} not indexed;"
          f" {t['index_bytes']:,} index bytes; {t['rows_deleted']:,} rows deleted; {t['rows'] - t['rows_deleted']:,} live rows")  # fmt: skip
    return 0


def _inspect_container(path: str, data_file: str | None, as_json: bool) -> int:
    from .file_index import FileIndex

    schema = _schema_for(path, data_file)
    index = FileIndex(path, schema)
    rows = index.describe()
    if as_json:
        _dump(rows)
        return 0
    print(f"{path}: {len(rows)} index(es), {sum(r['bytes'] for r in rows):,} bytes")
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
            candidate = re.sub(r"(\.[0-9a-f]{16}(-[0-9a-f]{8})?)?\.index$", "", os.sep.join(parts[:at] + parts[at + 2 :]))
            data_file = candidate if os.path.exists(candidate) else None
        elif index_path.endswith(".index") and os.path.exists(index_path[: -len(".index")]):
            data_file = index_path[: -len(".index")]
    if data_file is None:
        raise UsageError(f"cannot tell the column types of {index_path}: pass --data <the Parquet data file>")
    return pq.read_schema(data_file)


def _partitioning(args) -> str | None:
    """``--partitioning``: Hive folders (``dt=2024-01-02/``) as columns, or not."""
    return None if getattr(args, "partitioning", "hive") == "none" else "hive"


def _where(data, text: str | None):
    return user_filter(text, data.schema, "--where") if text is not None else None


def cmd_explain(args) -> int:
    from .lake import dataset

    data = dataset(args.path, storage_options=_storage(args), partitioning=_partitioning(args))
    plan = data.explain(_where(data, args.where))
    if args.json:
        _dump(plan.to_dict())
    else:
        print(plan)
    return 0


def cmd_query(args) -> int:
    from .lake import dataset

    data = dataset(args.path, storage_options=_storage(args), partitioning=_partitioning(args))
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    if columns:
        _check_columns(columns, data.schema, "--columns")
    expr = _where(data, args.where)
    fmt = "json" if args.json else args.format
    if args.explain:  # on stdout for a person, on stderr (as JSON with --json) when stdout is data
        plan = data.explain(expr)
        if fmt == "table":
            print(plan, end="\n\n")
        else:
            print(json.dumps(plan.to_dict()) if fmt == "json" else plan, file=sys.stderr)
    start = time.perf_counter()
    table = data.to_table(filter=expr, columns=columns)
    elapsed = time.perf_counter() - start
    shown = table.slice(0, args.limit) if args.limit is not None else table
    if fmt == "json":
        for row in shown.to_pylist():
            print(json.dumps(row, default=str))
    elif fmt == "csv":
        import pyarrow.csv as pacsv

        sys.stdout.flush()
        pacsv.write_csv(shown, sys.stdout.buffer)
    else:
        _print_table(shown)
    print(f"{table.num_rows:,} row(s) in {elapsed * 1000:.1f} ms", file=sys.stderr)
    return 0


#: The table format prints at most this many rows (the count of all is printed below it).
TABLE_ROWS = 10_000


def _print_table(table: pa.Table) -> None:
    """``table`` as aligned text: a header, a rule, one line per row (at most
    ``TABLE_ROWS``). Values are formatted by pyarrow's casts to string, column by column
    (no other engine is started for a needle's few rows)."""
    shown = table.slice(0, TABLE_ROWS)
    columns = []
    for name, column in zip(shown.column_names, shown.columns):
        try:
            text = pc.cast(column, pa.string()).to_pylist()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            text = [None if v is None else str(v) for v in column.to_pylist()]
        cells = ["null" if v is None else v.replace("\n", "\\n") for v in text]
        numeric = pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_decimal(column.type)
        width = max([len(name), *map(len, cells)])
        columns.append((name, cells, width, numeric))
    print("  ".join(name.rjust(w) if num else name.ljust(w) for name, _, w, num in columns).rstrip())
    print("  ".join("-" * w for _, _, w, _ in columns))
    for i in range(shown.num_rows):
        print("  ".join(cells[i].rjust(w) if num else cells[i].ljust(w) for _, cells, w, num in columns).rstrip())
    if table.num_rows > shown.num_rows:
        print(f"... {table.num_rows - shown.num_rows:,} more row(s): use --limit, or --format csv / json for all")


def cmd_delete(args) -> int:
    from .lake import dataset, delete

    require_delete_filter(args.where, call="delete", argument="--where")
    storage = _storage(args)
    data = dataset(args.path, storage_options=storage)
    expr = _where(data, args.where)
    options = {"deletion-vectors.bitmap64": "true"} if args.bitmap64 else {}

    def confirm(report) -> bool:
        if not args.json:
            shown = expr.describe(" ".join(str(expr.pushdown).split()) if expr.pushdown is not None else "every row")
            print(f"rows matching {args.where!r} (as pyarrow: {shown}) not deleted yet:")
            for rel, count in sorted(report.rows_by_file.items()):
                print(f"  {rel[-50:]:50} {count:>12,}")
            print(f"  {'total':50} {report.rows_deleted:>12,} in {len(report.rows_by_file)} file(s)"
                  f" ({report.files_skipped_by_index} file(s) ruled out by indexes)")  # fmt: skip
        if args.dry_run:
            return False
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise UsageError("not deleting: stdin is not a terminal, so nobody can confirm; pass --yes to delete"
                             " without asking, or --dry-run to only count")  # fmt: skip
        answer = input(f"delete {report.rows_deleted:,} row(s)? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    report = delete(args.path, expr, options=options, progress=False if args.quiet else None,
                    confirm=confirm, storage_options=storage)  # fmt: skip  (confirm prints the counts and says no for --dry-run)
    if args.json:
        _dump(dataclasses.asdict(report))
    elif report.rows_deleted == 0:
        print(f"nothing to delete: no live row matches {args.where!r}")
    else:
        print(report)
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

    report = vacuum(args.path, _duration(args.older_than), dry_run=args.dry_run, storage_options=_storage(args))
    if args.json:
        _dump(dataclasses.asdict(report))
    else:
        print(report)
    return 0


def cmd_accept_rollback(args) -> int:
    from .lake import accept_rollback

    report = accept_rollback(args.path, dry_run=args.dry_run, storage_options=_storage(args))
    if args.json:
        _dump({**dataclasses.asdict(report), "rows": report.rows})
    else:
        print(report)
    return 0


def cmd_paimon_rewrite_index(args) -> int:
    from .paimon import rewrite_file_index

    options: dict[str, str | None] = {}
    for flag, index_type in INDEX_FLAGS.items():
        given = getattr(args, flag)
        if given:
            columns = [c.strip() for item in given for c in item.split(",") if c.strip()]
            options[f"file-index.{index_type}.columns"] = ",".join(dict.fromkeys(columns))
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--option {item!r}: expected KEY=VALUE, e.g. file-index.bloom-filter.id.fpp=0.01")
        options[key.strip()] = value.strip()
    for key in args.unset or []:
        options[key.strip()] = None
    partitions = []
    for item in args.partition or []:
        spec = {}
        for part in item.split(","):
            key, sep, value = part.partition("=")
            if not sep:
                raise UsageError(f"--partition {item!r}: expected KEY=VALUE[,KEY=VALUE], e.g. dt=2024-01-01")
            spec[key.strip()] = value.strip()
        partitions.append(spec)
    report = rewrite_file_index(args.path, options, partitions=partitions or None, dry_run=args.dry_run,
                                progress=False if args.quiet else None)  # fmt: skip
    if args.json:
        _dump(dataclasses.asdict(report))
    else:
        print(report)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arrowidx", description="Paimon-compatible file indexes and deletion vectors for Parquet datasets.",
        epilog="--debug (anywhere) prints the traceback of an internal error.",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="index every Parquet file of a dataset (incremental; remembers its options)")
    p.add_argument("path", help="a dataset directory, a .parquet file or a URI")
    p.add_argument("--bitmap", metavar="COLS", help="comma-separated columns for a bitmap index")
    p.add_argument("--bloom-filter", metavar="COLS", dest="bloom_filter")
    p.add_argument("--range-bitmap", metavar="COLS", dest="range_bitmap")
    p.add_argument("--bsi", metavar="COLS")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="any Paimon file-index option, repeatable")
    p.add_argument("--drop", action="append", metavar="COLUMN[:TYPE]", help="remove an index kept from earlier builds, repeatable")
    p.add_argument("--replace", action="store_true", help="use only the given index options, forget the stored ones")
    p.add_argument("--full", action="store_true", help="re-index every file, not only new or changed ones")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none unless stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("inspect", help="show a dataset's manifest or one index container")
    p.add_argument("path", help="a dataset directory or a .index container")
    p.add_argument("--data", help="the Parquet data file a container belongs to (for column types)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("explain", help="what the indexes decide for each file for a SQL WHERE clause")
    p.add_argument("path")
    p.add_argument("--where", help="SQL boolean expression")
    p.add_argument("--partitioning", choices=["hive", "none"], default="hive", help="key=value folders as columns (default hive)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("query", help="read the rows matching a SQL WHERE clause, pruned by the indexes")
    p.add_argument("path")
    p.add_argument("--where", help="SQL boolean expression, e.g. \"status = 'PENDING' AND amount > 100\"")
    p.add_argument("--columns", help="comma-separated columns to return")
    p.add_argument("--partitioning", choices=["hive", "none"], default="hive", help="key=value folders as columns (default hive)")
    p.add_argument("--explain", action="store_true", help="print what each file's index decided")
    p.add_argument("--limit", type=int, help="print at most N rows")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--json", action="store_true", help="same as --format json (one JSON object per row)")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("delete", help="delete rows matching a SQL WHERE clause (deletion vectors)")
    p.add_argument("path")
    p.add_argument("--where", required=True)
    p.add_argument("--dry-run", action="store_true", help="only count the rows per file, delete nothing")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("--bitmap64", action="store_true", help="write 64-bit (Iceberg-compatible) vectors")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true", help="print the report (with per-file counts) as JSON")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("vacuum", help="remove manifests, index and deletion files no retained version references")
    p.add_argument("path")
    p.add_argument("--older-than", default="7d", help="retention: 3600, 30m, 12h, 7d (default 7d)")
    p.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    p.add_argument("--json", action="store_true", help="print the report (kept versions, removed files) as JSON")
    p.set_defaults(func=cmd_vacuum)

    p = sub.add_parser("accept-rollback", help="LATEST names a manifest that is lost: go back to the newest on disk"
                       " (its deletions are undone; says which)")  # fmt: skip
    p.add_argument("path")
    p.add_argument("--dry-run", action="store_true", help="only say what would be undone")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_accept_rollback)
    for p in sub.choices.values():
        p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                       help="object stores (s3://, gs://, az://): endpoint, region, credentials, allow_http...; repeatable"
                            " (else the AWS_*/GOOGLE_*/AZURE_* environment variables; see docs/object-stores.md)")  # fmt: skip

    paimon = sub.add_parser("paimon", help="Apache Paimon tables").add_subparsers(dest="paimon_command", required=True)
    p = paimon.add_parser("rewrite-index", help="add, change or drop the file indexes of a Paimon table (a new snapshot)")
    p.add_argument("path", help="the table directory (<warehouse>/<db>.db/<table>)")
    for flag, index_type in INDEX_FLAGS.items():
        p.add_argument(f"--{index_type}", dest=flag, action="append", metavar="COL",
                       help=f"set file-index.{index_type}.columns to these columns (repeatable, or comma-separated)")  # fmt: skip
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="set any file-index.* table option, repeatable")
    p.add_argument("--unset", action="append", metavar="KEY", help="remove a file-index.* table option, repeatable")
    p.add_argument("--partition", action="append", metavar="K=V[,K=V]", help="only these partitions, repeatable")
    p.add_argument("--dry-run", action="store_true", help="say what would be rewritten, write nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none unless stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_paimon_rewrite_index)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2), already printed
        return int(e.code or 0)
    path = getattr(args, "path", None)
    if path and "://" not in path and not os.path.exists(path):
        parent = os.path.dirname(os.path.abspath(path))
        close = difflib.get_close_matches(os.path.basename(path), os.listdir(parent), n=1) if os.path.isdir(parent) else []
        hint = f"; did you mean {os.path.join(os.path.dirname(path), close[0])!r}?" if close else ""
        print(f"arrowidx: {path}: no such file or directory{hint}", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except USER_ERRORS as e:
        print(f"arrowidx: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("arrowidx: interrupted", file=sys.stderr)
        return 130
    except (ArrowIdxError, OSError) as e:
        if debug:
            traceback.print_exc()
        print(f"arrowidx: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the CLI shows one line, not a traceback
        if debug:
            traceback.print_exc()
        print(f"arrowidx: internal error: {type(e).__name__}: {e} (run again with --debug for the traceback;"
              " please report it)", file=sys.stderr)  # fmt: skip
        return 1


if __name__ == "__main__":
    sys.exit(main())
