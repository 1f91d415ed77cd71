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
    arrowidx paimon delete TABLE --where "id = 42" [--dry-run | --yes]   # a Paimon table's rows
    arrowidx accept-rollback PATH [--dry-run] [--json]   # LATEST names a lost manifest: go back on purpose
    arrowidx migrate PATH [--index-root DIR] [--dry-run]   # PATH/_arrowidx/ (the old layout) to _PATH.arrowidx/

``--index-root DIR`` (build, inspect, explain, query, delete, vacuum, accept-rollback,
migrate): where the indexes are when not in the sidecar ``_<folder>.arrowidx/`` beside the
data folder (read-only data, a bucket's root); give every command the same.

``--where`` is a SQL boolean expression with SQL's meaning (:mod:`arrowidx.sql`): the part a
``pyarrow.compute.Expression`` expresses exactly prunes with the indexes, the rest is
evaluated on the rows read; text that is not valid SQL for the dataset is refused with a
caret under the offending token. Exit codes: 0 success, 2 a usage error (bad option, unknown column,
a condition that cannot be translated, a refused delete), 1 anything else (a corrupt file,
a commit conflict, an internal error: one line; ``--debug`` prints the traceback), 141 when
the reader of the output went away (``arrowidx ... | head``: quietly, as Unix tools end).
``--where @FILE`` reads the clause from a file and ``--where -`` from stdin (a long ``IN``
list is beyond the command line's length limit).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import os
import re
import sys
import time
import traceback
import warnings

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
from .lake.layout import SIDECAR_SUFFIX
from .options import OptionWarning
from .sql import WhereError, parse_where

INDEX_FLAGS = {"bitmap": "bitmap", "bloom_filter": "bloom-filter", "range_bitmap": "range-bitmap", "bsi": "bsi"}
INDEX_HELP = {
    "bitmap": "exact rows per value: equality, IN, IS NULL (low and medium cardinality)",
    "bloom-filter": "skips files without a value: equality, IN (high cardinality, few bytes)",
    "range-bitmap": "exact rows for equality, IN and ranges (<, >, BETWEEN) and TopN",
    "bsi": "ranges on numbers (Paimon's older range index; prefer --range-bitmap)",
}
#: ``query`` prints at most this many rows as a table on a terminal (as DuckDB's shell does)
#: unless given ``--limit`` or ``--all``; piped or as CSV / JSON it prints every row.
PREVIEW_ROWS = 40
SIGPIPE_EXIT = 141  # what a shell reports for a command ended by SIGPIPE

__all__ = ["UsageError", "build_parser", "main", "parse_where"]


class UsageError(Exception):
    """A command line the user should fix (exit code 2)."""


USER_ERRORS = (UsageError, WhereError, OptionError, UnsupportedTypeError, UnsupportedValueError, MissingFilterError)


def _dump(obj) -> None:
    print(json.dumps(obj, indent=1, default=str))


def _check_columns(names: list[str], schema: pa.Schema, what: str) -> None:
    for name in names:
        if schema.get_field_index(name) < 0:
            import difflib  # (only for the error)

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
                   replace=args.replace, drop=args.drop or (), storage_options=_storage(args),
                   index_root=args.index_root)  # fmt: skip
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
        return _inspect_dataset(path, args.json, _storage(args), args.index_root)
    return _inspect_container(path, args.data, args.json)


def _inspect_dataset(path: str, as_json: bool, storage_options: dict[str, str] | None = None, index_root: str | None = None) -> int:
    """Every file's state, checked: fresh (by content), its index bytes read and verified
    (size and checksum), its deletions; each problem said with what to do."""
    from .errors import CorruptIndexError, StaleDeletionError
    from .lake.freshness import entry_is_fresh, load_index_bytes
    from .lake.scan import dataset

    data = dataset(path, storage_options=storage_options, index_root=index_root)
    manifest = data.manifest
    rows = []
    for rel in data.files:
        entry = manifest.files.get(rel)
        info = data.lake.info(rel)
        row = {"file": rel, "rows": entry.rows if entry else data.row_count(rel), "state": "ok",
               "index_bytes": 0, "index_embedded": None, "columns": {}, "deleted": 0, "problem": None}  # fmt: skip
        if entry is None:
            row["state"] = "not indexed"
            row["problem"] = "added after the last build: read in full; run arrowidx build to index it"
        else:
            try:
                fresh = entry_is_fresh(entry, info, lambda rel=rel: data.lake.read_footer(rel),  # by content, not mtime
                                       content=lambda rel=rel: data.lake.content_xxh64(rel))  # fmt: skip
            except StaleDeletionError as e:
                fresh, row["state"] = False, "STALE DELETIONS"
                row["problem"] = f"{e}"
            if not fresh:
                row["rows"] = data.row_count(rel)  # what it holds now
            if not fresh and row["state"] == "ok":
                row["state"] = "stale"
                row["problem"] = "changed since it was indexed: its index is ignored, it is read in full; run arrowidx build"
        if entry and entry.index:
            row["index_bytes"] = entry.index.size
            row["index_embedded"] = entry.index.embedded is not None
            if row["state"] == "ok":
                try:
                    load_index_bytes(data.store, data.root, entry)  # every byte: its size and checksum
                    row["columns"] = data.file_index(entry).columns
                except CorruptIndexError as e:
                    row["state"] = "MISSING INDEX" if "is missing" in e.detail else "DAMAGED INDEX"
                    row["problem"] = str(e)
        if entry and entry.deletion and row["state"] in ("ok", "DAMAGED INDEX", "MISSING INDEX"):
            row["deleted"] = entry.deletion.cardinality
        rows.append(row)
    totals = {
        "files": len(rows),
        "files_indexed": sum(r["state"] == "ok" for r in rows),
        "files_stale": sum(r["state"] in ("stale", "STALE DELETIONS") for r in rows),
        "files_stale_deletions": sum(r["state"] == "STALE DELETIONS" for r in rows),
        "files_damaged": sum(r["state"] in ("DAMAGED INDEX", "MISSING INDEX") for r in rows),
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
    print(f"  {'file':40} {'rows':>12} {'state':15} {'index bytes':>12} {'where':9} {'deleted':>9}  indexes")
    for row in rows:
        cols = "; ".join(f"{c}: {'+'.join(t)}" for c, t in row["columns"].items())
        where = "-" if row["index_embedded"] is None else ("manifest" if row["index_embedded"] else "file")
        print(f"  {row['file'][-40:]:40} {row['rows']:>12,} {row['state']:15} {row['index_bytes']:>12,} {where:9} {row['deleted']:>9,}  {cols}")
    t = totals
    stale = f"{t['files_stale']} stale" + (f" ({t['files_stale_deletions']} with deletions)" if t["files_stale_deletions"] else "")
    damaged = f", {t['files_damaged']} with a damaged or missing index" if t["files_damaged"] else ""
    print(f"  {'total':40} {t['rows']:>12,} {t['files_indexed']} indexed, {stale}, {t['files_not_indexed']} not indexed{damaged};"
          f" {t['index_bytes']:,} index bytes; {t['rows_deleted']:,} rows deleted; {t['rows'] - t['rows_deleted']:,} live rows")  # fmt: skip
    problems = [r for r in rows if r["problem"] and r["state"] != "not indexed"]
    if problems:
        print("problems:")
        for row in problems:
            print(f"  {row['file']}: {row['state'].lower()}: {row['problem']}")
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
        sidecar = [i for i, p in enumerate(parts[:-1]) if p.startswith("_") and p.endswith(SIDECAR_SUFFIX) and parts[i + 1] == "index"]
        if ("_arrowidx" in parts or sidecar) and index_path.endswith(".index"):
            at = sidecar[-1] if sidecar else parts.index("_arrowidx")  # <root>/_arrowidx/index/... or _<root>.arrowidx/index/...
            folder = parts[:at] + ([parts[at][1 : -len(SIDECAR_SUFFIX)]] if sidecar else [])
            candidate = re.sub(r"(\.[0-9a-f]{16}(-[0-9a-f]{8})?)?\.index$", "", os.sep.join(folder + parts[at + 2 :]))
            data_file = candidate if os.path.exists(candidate) else None
        elif index_path.endswith(".index") and os.path.exists(index_path[: -len(".index")]):
            data_file = index_path[: -len(".index")]
    if data_file is None:
        raise UsageError(f"cannot tell the column types of {index_path}: pass --data <the Parquet data file>")
    return pq.read_schema(data_file)


def _partitioning(args) -> str | None:
    """``--partitioning``: Hive folders (``dt=2024-01-02/``) as columns, or not."""
    return None if getattr(args, "partitioning", "hive") == "none" else "hive"


def _where_text(text: str | None) -> str | None:
    """``--where`` as given, or read from a file (``@FILE``) or stdin (``-``)."""
    if text == "-":
        return sys.stdin.read()
    if text is not None and text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise UsageError(f"--where {text}: cannot read {text[1:]!r} ({e.strerror or e}); @FILE names a file"
                             " holding the WHERE clause") from None  # fmt: skip
        except UnicodeDecodeError:
            raise UsageError(f"--where {text}: {text[1:]!r} is not UTF-8 text") from None
    return text


def _shown(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters for a message (a clause read with ``@FILE`` may
    hold 100,000 values)."""
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text):,} characters)"


def _where(data, text: str | None):
    return user_filter(text, data.schema, "--where") if text is not None else None


def cmd_explain(args) -> int:
    from .lake.scan import dataset

    data = dataset(args.path, storage_options=_storage(args), partitioning=_partitioning(args), index_root=args.index_root)
    plan = data.explain(_where(data, args.where))
    if args.json:
        _dump(plan.to_dict())
    else:
        print(plan)
    return 0


def cmd_query(args) -> int:
    from .lake.scan import dataset

    data = dataset(args.path, storage_options=_storage(args), partitioning=_partitioning(args), index_root=args.index_root)
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
    limit = args.limit
    if limit is None and fmt == "table" and not args.all and sys.stdout.isatty():
        limit = PREVIEW_ROWS  # a preview on a terminal; piped, every row
    shown = _iso_timestamps(table.slice(0, limit) if limit is not None else table)
    if fmt == "json":
        for row in shown.to_pylist():
            print(json.dumps(row, default=str))
    elif fmt == "csv":
        import pyarrow.csv as pacsv

        sys.stdout.flush()
        pacsv.write_csv(shown, sys.stdout.buffer)
    else:
        _print_table(shown)
        if table.num_rows > shown.num_rows:
            print(f"... {table.num_rows - shown.num_rows:,} more row(s) not shown: --all or --limit N to print them"
                  " (piped, or as --format csv / json, every row is printed)")  # fmt: skip
    print(f"{table.num_rows:,} row(s) in {elapsed * 1000:.1f} ms", file=sys.stderr)
    return 0


def _iso_timestamps(table: pa.Table) -> pa.Table:
    """``table`` with its timestamp columns as ISO 8601 text, one form in every format:
    ``2024-01-05T10:00:00.000000+01:00`` for a zoned column (the instant in the column's zone,
    its offset as ``+HH:MM``), the same without an offset for a naive one, the column's unit's
    digits of a second."""
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            form = "%Y-%m-%dT%H:%M:%S" + ("%Ez" if field.type.tz else "")
            try:
                text = pc.strftime(table.column(i), format=form)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue  # (a zone the platform's database lacks: pyarrow's own text)
            table = table.set_column(i, field.name, text)
    return table


def _print_table(table: pa.Table) -> None:
    """``table`` as aligned text: a header, a rule, one line per row. Values are formatted
    by pyarrow's casts to string, column by column (no other engine is started for a
    needle's few rows)."""
    columns = []
    for name, column in zip(table.column_names, table.columns):
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
    for i in range(table.num_rows):
        print("  ".join(cells[i].rjust(w) if num else cells[i].ljust(w) for _, cells, w, num in columns).rstrip())


def cmd_delete(args) -> int:
    from .lake import delete
    from .lake.scan import dataset

    require_delete_filter(args.where, call="delete", argument="--where")
    storage = _storage(args)
    data = dataset(args.path, storage_options=storage, index_root=args.index_root)
    expr = _where(data, args.where)
    options = {"deletion-vectors.bitmap64": "true"} if args.bitmap64 else {}

    def confirm(report) -> bool:
        if not args.json:
            shown = expr.describe(" ".join(str(expr.pushdown).split()) if expr.pushdown is not None else "every row")
            print(f"rows matching {_shown(args.where)!r} (as pyarrow: {_shown(shown)}) not deleted yet:")
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
                    confirm=confirm, storage_options=storage, index_root=args.index_root)  # fmt: skip  (confirm prints the counts and says no for --dry-run)
    if args.json:
        _dump(dataclasses.asdict(report))
    elif report.rows_deleted == 0:
        print(f"nothing to delete: no live row matches {_shown(args.where)!r}")
    else:
        print(report)
    return 0


def cmd_vacuum(args) -> int:
    from .lake import vacuum
    from .lake.vacuum import parse_duration

    older_than = parse_duration(args.older_than, "--older-than")
    report = vacuum(args.path, older_than, dry_run=args.dry_run, storage_options=_storage(args), index_root=args.index_root)
    if args.json:
        _dump(dataclasses.asdict(report))
    else:
        print(report)
    return 0


def cmd_migrate(args) -> int:
    from .lake import migrate

    report = migrate(args.path, index_root=args.index_root, dry_run=args.dry_run, storage_options=_storage(args))
    if args.json:
        _dump(dataclasses.asdict(report))
    else:
        print(report)
    return 0


def cmd_accept_rollback(args) -> int:
    from .lake import accept_rollback

    report = accept_rollback(args.path, dry_run=args.dry_run, storage_options=_storage(args), index_root=args.index_root)
    if args.json:
        _dump({**dataclasses.asdict(report), "rows": report.rows})
    else:
        print(report)
    return 0


def cmd_paimon_rewrite_index(args) -> int:
    from .options import index_edits
    from .paimon.rewrite import rewrite_file_index, table_options

    added: dict[str, str] = {}
    for flag, index_type in INDEX_FLAGS.items():
        given = getattr(args, flag)
        if given:
            columns = [c.strip() for item in given for c in item.split(",") if c.strip()]
            added[f"file-index.{index_type}.columns"] = ",".join(dict.fromkeys(columns))
    options: dict[str, str | None] = {}
    if added or args.drop or args.set:  # add (the default: nothing forgotten), drop, set
        options.update(index_edits(table_options(args.path), added, drop=args.drop or (), replace=args.set))
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


def cmd_paimon_delete(args) -> int:
    from .paimon import delete as paimon_delete
    from .paimon.delete_rows import where_of

    def confirm(report) -> bool:
        if not args.json:
            print(f"rows matching {args.where!r} not deleted yet:")
            for name, count in sorted(report.rows_by_file.items()):
                print(f"  {name:52} {count:>12,}")
            print(f"  {'total':52} {report.rows_deleted:>12,} in {len(report.rows_by_file)} data file(s)"
                  f" ({report.files_skipped} ruled out by partitions, statistics or indexes)")  # fmt: skip
            if report.superseded:
                print(f"  and {report.superseded:,} not yet compacted version(s) of the deleted keys")
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise UsageError("not deleting: stdin is not a terminal, so nobody can confirm; pass --yes to delete"
                             " without asking, or --dry-run to only count")  # fmt: skip
        answer = input(f"delete {report.rows_deleted:,} row(s) from {args.path}? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    report = paimon_delete(args.path, where_of(args.where, "--where", call="paimon delete"), dry_run=args.dry_run, confirm=None if args.dry_run else confirm,
                           progress=False if args.quiet else None, storage_options=_storage(args))  # fmt: skip
    if args.json:
        _dump(dataclasses.asdict(report))
    elif report.rows_deleted == 0 and report.superseded == 0:
        print(f"nothing to delete: no live row matches {args.where!r}")
    else:
        print(report)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arrowidx", description="Paimon-compatible file indexes and deletion vectors for Parquet datasets.",
        epilog="--debug (anywhere) prints the traceback of an internal error.",
    )  # fmt: skip
    from . import __version__

    parser.add_argument("--version", action="version", version=f"arrowidx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="index every Parquet file of a dataset (incremental; remembers its options)")
    p.add_argument("path", help="a dataset directory, a .parquet file or a URI")
    for flag, index_type in INDEX_FLAGS.items():
        p.add_argument(f"--{index_type}", metavar="COLS", dest=flag,
                       help=f"add a {index_type} index on these comma-separated columns: {INDEX_HELP[index_type]}")  # fmt: skip
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="any Paimon file-index option, repeatable (e.g. file-index.bloom-filter.id.fpp=0.01)")  # fmt: skip
    p.add_argument("--drop", action="append", metavar="COLUMN[:TYPE]",
                   help="remove an index (every index on COLUMN, or its TYPE one) kept from earlier builds, repeatable")  # fmt: skip
    p.add_argument("--set", "--replace", action="store_true", dest="replace",
                   help="the given index flags and options become the dataset's only ones (by default they are"
                        " added to the stored ones, forgetting nothing)")  # fmt: skip
    p.add_argument("--full", action="store_true", help="re-index every file, not only new or changed ones")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none unless stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("inspect", help="show a dataset's manifest or one index container")
    p.add_argument("path", help="a dataset directory or a .index container")
    p.add_argument("--data", help="the Parquet data file a container belongs to (for column types)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    where_help = "SQL boolean expression, e.g. \"status = 'PENDING' AND amount > 100\"; @FILE reads it from a file, - from stdin"
    p = sub.add_parser("explain", help="what the indexes decide for each file for a SQL WHERE clause")
    p.add_argument("path")
    p.add_argument("--where", help=where_help)
    p.add_argument("--partitioning", choices=["hive", "none"], default="hive", help="key=value folders as columns (default hive)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("query", help="read the rows matching a SQL WHERE clause, pruned by the indexes")
    p.add_argument("path")
    p.add_argument("--where", help=where_help)
    p.add_argument("--columns", help="comma-separated columns to return")
    p.add_argument("--partitioning", choices=["hive", "none"], default="hive", help="key=value folders as columns (default hive)")
    p.add_argument("--explain", action="store_true", help="print what each file's index decided")
    p.add_argument("--limit", type=int, help="print at most N rows")
    p.add_argument("--all", action="store_true",
                   help=f"print every row (a table on a terminal shows the first {PREVIEW_ROWS}; piped, or as CSV / JSON, all)")  # fmt: skip
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--json", action="store_true", help="same as --format json (one JSON object per row)")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("delete", help="delete rows matching a SQL WHERE clause (deletion vectors)")
    p.add_argument("path")
    p.add_argument("--where", required=True, help=where_help)
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

    p = sub.add_parser("migrate", help="move a lake's indexes from PATH/_arrowidx/ (the old layout, which Polars cannot"
                       " read past) to the sidecar _<folder>.arrowidx/ beside it")  # fmt: skip
    p.add_argument("path")
    p.add_argument("--dry-run", action="store_true", help="only say what would move")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_migrate)
    for name, p in sub.choices.items():
        if name != "paimon":  # (a Paimon table keeps its indexes as Paimon does)
            p.add_argument("--index-root", metavar="DIR", default=None,
                           help="where the indexes are (default: the sidecar _<folder>.arrowidx/ beside the data"
                                " folder); for read-only data or a bucket's root; give every command the same")  # fmt: skip
        p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                       help="object stores (s3://, gs://, az://): endpoint, region, credentials, allow_http...; repeatable"
                            " (else the AWS_*/GOOGLE_*/AZURE_* environment variables; see docs/object-stores.md)")  # fmt: skip

    paimon = sub.add_parser("paimon", help="Apache Paimon tables").add_subparsers(dest="paimon_command", required=True)
    p = paimon.add_parser("rewrite-index", help="add, change or drop the file indexes of a Paimon table (a new snapshot)")
    p.add_argument("path", help="the table directory (<warehouse>/<db>.db/<table>)")
    for flag, index_type in INDEX_FLAGS.items():
        p.add_argument(f"--{index_type}", dest=flag, action="append", metavar="COLS",
                       help=f"add a {index_type} index on these columns (repeatable, or comma-separated):"
                            f" {INDEX_HELP[index_type]}")  # fmt: skip
    p.add_argument("--drop", action="append", metavar="COLUMN[:TYPE]",
                   help="remove an index (every index on COLUMN, or its TYPE one), repeatable")
    p.add_argument("--set", action="store_true",
                   help="the given index flags become the table's only indexes (by default they are added to the"
                        " table's, forgetting nothing)")  # fmt: skip
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="set any file-index.* table option, repeatable")
    p.add_argument("--unset", action="append", metavar="KEY", help="remove a file-index.* table option, repeatable")
    p.add_argument("--partition", action="append", metavar="K=V[,K=V]", help="only these partitions, repeatable")
    p.add_argument("--dry-run", action="store_true", help="say what would be rewritten, write nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none unless stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_paimon_rewrite_index)
    p = paimon.add_parser("delete", help="delete rows matching a SQL WHERE clause from a Paimon table (deletion vectors)")
    p.add_argument("path", help="the table directory (<warehouse>/<db>.db/<table>) or its URI")
    p.add_argument("--where", required=True, help="SQL boolean expression; TRUE deletes every row")
    p.add_argument("--dry-run", action="store_true", help="only count the rows per data file, delete nothing")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none unless stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the report (with per-file counts) as JSON")
    p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                   help="object stores (s3://, gs://, az://): endpoint, region, credentials, allow_http...; repeatable")  # fmt: skip
    p.set_defaults(func=cmd_paimon_delete)
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
        import difflib  # (only for the error)

        close = difflib.get_close_matches(os.path.basename(path), os.listdir(parent), n=1) if os.path.isdir(parent) else []
        hint = f"; did you mean {os.path.join(os.path.dirname(path), close[0])!r}?" if close else ""
        print(f"arrowidx: {path}: no such file or directory{hint}", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            warnings.filterwarnings("default", category=OptionWarning)  # said once, in the CLI's words
            if getattr(args, "where", None) is not None:
                args.where = _where_text(args.where)
            code = args.func(args)
            sys.stdout.flush()  # (a reader gone away is met here, not at the interpreter's exit)
            return code
    except USER_ERRORS as e:
        print(f"arrowidx: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("arrowidx: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        if e.errno != errno.EPIPE and not isinstance(e, BrokenPipeError):
            return _failed(e, debug)
        # the reader of stdout went away (`arrowidx ... | head`): end quietly, as Unix tools do
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (so the last flush cannot fail again)
        except (OSError, ValueError):
            pass
        return SIGPIPE_EXIT
    except ArrowIdxError as e:
        return _failed(e, debug)
    except Exception as e:  # noqa: BLE001 - the CLI shows one line, not a traceback
        if debug:
            traceback.print_exc()
        print(f"arrowidx: internal error: {type(e).__name__}: {e} (run again with --debug for the traceback;"
              " please report it)", file=sys.stderr)  # fmt: skip
        return 1


def _failed(e: Exception, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"arrowidx: {e}", file=sys.stderr)
    return 1


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one line in the CLI's words (no source line of arrowidx)."""
    print(f"arrowidx: warning: {message}", file=sys.stderr)


class _NoPandas:
    """An import finder that says pandas is not installed (see :func:`run`)."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is not imported by the arrowidx program", name=name)
        return None


def _load_pyarrow_dataset_without_pandas() -> None:
    """Import ``pyarrow.dataset`` with pandas hidden. Importing it converts a Python value
    (``pyarrow._dataset``'s ``Expression._scalar(True)``), and pyarrow's first conversion
    imports pandas (~160 ms of a ~480 ms process) to recognise pandas objects in what it
    converts; the ``arrowidx`` program hands pyarrow none (its literals are made from Arrow
    buffers, :mod:`arrowidx.literals`). Only for the program's own process (:func:`run`):
    pyarrow then treats values as it does without pandas installed, which a library must
    not impose on its caller's process. pandas stays importable for anything that imports
    it by name."""
    if "pandas" in sys.modules or "pyarrow._dataset" in sys.modules:
        return
    sys.meta_path.insert(0, _NoPandas)
    try:
        import pyarrow.dataset  # noqa: F401
    finally:
        sys.meta_path.remove(_NoPandas)


def run() -> None:
    """The ``arrowidx`` program (the console script, ``python -m arrowidx``): :func:`main`
    in a process of its own, which never imports pandas."""
    _load_pyarrow_dataset_without_pandas()
    sys.exit(main())


if __name__ == "__main__":
    run()
