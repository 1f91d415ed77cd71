"""The generated part of the SQL corpus (issue 48): a typed grammar of WHERE clauses over
random tables of every type a filter reads (NaN, -0.0, +-inf, NULL, Unicode, backslashes,
values at each type's limits), each clause run by arrowidx (pushdown + residual, and wholly
in the residual) and by DuckDB over the same rows in memory.

:func:`run` returns the counts and the first examples of each kind of disagreement:

* ``differences``: both answer, with other rows;
* ``we_answer``: DuckDB raises, arrowidx answers;
* ``we_raise``: arrowidx raises, DuckDB answers. Two kinds are documented differences
  (docs/guide.md), counted apart: ``constant``, a constant DuckDB cannot evaluate, which
  arrowidx refuses whatever the rows; ``duckdb_empty``, a value that raises on a row
  arrowidx reads where DuckDB's optimizer proved that no row passes (statistics, a
  dictionary's values) and evaluated nothing;
* ``duckdb_rewrite``, ``duckdb_internal``: DuckDB's own bugs (its answer changes without its
  expression rewriter; an INTERNAL error);
* ``raw``: arrowidx raises something that is not a :class:`~arrowidx.sql.WhereError`.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa

from arrowidx.sql import WhereError, compile_where

NAN = float("nan")

# -- random tables --------------------------------------------------------------------------------


def _pick(rng: random.Random, pool: list, n: int, nulls: float = 0.1) -> list:
    return [None if rng.random() < nulls else rng.choice(pool) for _ in range(n)]


STRINGS = ["a", "b", "abc", "ABC", "x\\y", "x\\yz", "x\\\\y", "C:\\temp\\a.txt", "it's", "a%b", "a_b", "%", "_", "", " ", " a ",
           "ß", "SS", "İ", "i", "ﬃ", "ſ", "K", "Ǆ", "é", "e\u0301", "👍🏽", "naïve", "ÄÖü", "12", " 5", "-0", "1e3", "6.5",
           "nan", "inf", "true", "T", "no", "2024-01-05", "2024-01-05 10:00:00", "0x1F", "1_000", "\t7", "abc%", "ab\nc"]  # fmt: skip
NUMERIC_STRINGS = ["1", "2", "12", "-3", " 5", "6.5", "1e2", "0", "-0", "255", "127.5", "99999", "0.001"]


def random_table(seed: int, n: int = 36) -> pa.Table:
    rng = random.Random(seed)
    i8 = [-128, 127, 0, 1, -1, 5, 100]
    i16 = [-32768, 32767, 0, 3, -7, 300]
    i32 = [-(2**31), 2**31 - 1, 0, 1, 2, 3, 6, 7, -7, 46341, 100000]
    i64 = [-(2**63), 2**63 - 1, 0, 1, 2, 5, -5, 9007199254740993, 2**62, 10**12]
    u8, u16, u32 = [0, 1, 2, 127, 128, 255], [0, 1, 65535, 300], [0, 1, 2**32 - 1, 2**31, 70000]
    u64 = [0, 1, 2**63, 2**64 - 1, 2**63 - 1, 12345]
    f32 = [0.0, -0.0, 1.0, 0.1, 4.64, 16777217.0, 3.4028234663852886e38, -1.5, 1e-45, 2.5, NAN, float("inf"), float("-inf"), 19.85]
    f64 = [0.0, -0.0, 1.0, 0.1, 4.64, 1e300, -1e300, 2.5, -7.5, 7.25, 1e-7, 5e-324, NAN, float("inf"), float("-inf"), 1e16, 15.5]
    dec = [Decimal(x) for x in ["0.00", "-0.05", "1.25", "-107.51", "12345678.99", "-99999999.99", "2.50", "19.85", "-13.05", "1.26"]]
    dec38 = [Decimal(x) for x in ["0", "1.5", "-1.5", "9999999999999999999999999999.9999999999", "-123456789012345678.0000000001", "42"]]
    days = [dt.date(2024, 1, 5), dt.date(2023, 6, 14), dt.date(2023, 9, 29), dt.date(1970, 1, 1), dt.date(1969, 12, 31),
            dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29)]  # fmt: skip
    stamps = [dt.datetime(2024, 1, 5, 10, 0), dt.datetime(2024, 1, 5, 0, 0), dt.datetime(2023, 6, 14, 23, 59, 59, 999999),
              dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(2024, 2, 29, 12, 30, 15, 250000),
              dt.datetime(1677, 9, 22), dt.datetime(2262, 4, 11)]  # fmt: skip
    stamps_ns = [1600001387004161387, 0, -1, 1704448800000000000, 1704448800123456789]
    blobs = [b"", b"\x00", b"\x01\x02", b"ab", b"\xff\xfe", b"a\\b", b"\x00\x02"]
    cols = {
        "rid": pa.array(range(n), pa.int64()),
        "i8": pa.array(_pick(rng, i8, n), pa.int8()),
        "i16": pa.array(_pick(rng, i16, n), pa.int16()),
        "i32": pa.array(_pick(rng, i32, n), pa.int32()),
        "i64": pa.array(_pick(rng, i64, n), pa.int64()),
        "u8": pa.array(_pick(rng, u8, n), pa.uint8()),
        "u16": pa.array(_pick(rng, u16, n), pa.uint16()),
        "u32": pa.array(_pick(rng, u32, n), pa.uint32()),
        "u64": pa.array(_pick(rng, u64, n), pa.uint64()),
        "f32": pa.array(_pick(rng, f32, n), pa.float32()),
        "f64": pa.array(_pick(rng, f64, n), pa.float64()),
        "dec": pa.array(_pick(rng, dec, n), pa.decimal128(10, 2)),
        "dec38": pa.array(_pick(rng, dec38, n), pa.decimal128(38, 10)),
        "s": pa.array(_pick(rng, STRINGS, n), pa.string()),
        "ns": pa.array(_pick(rng, NUMERIC_STRINGS, n), pa.large_string()),
        "b": pa.array(_pick(rng, [True, False], n), pa.bool_()),
        "d": pa.array(_pick(rng, days, n), pa.date32()),
        "ts": pa.array(_pick(rng, stamps, n), pa.timestamp("us")),
        "ts_s": pa.array(_pick(rng, [s.replace(microsecond=0) for s in stamps], n), pa.timestamp("s")),
        "ts_ms": pa.array(_pick(rng, stamps, n), pa.timestamp("ms")),
        "ts_ns": pa.array(_pick(rng, stamps_ns, n), pa.timestamp("ns")),
        "tz": pa.array(_pick(rng, stamps, n), pa.timestamp("us", tz="UTC")),
        "bl": pa.array(_pick(rng, blobs, n), pa.binary()),
        "cat": pa.array(_pick(rng, ["red", "Red", "", "ß", "x\\y"], n), pa.string()).dictionary_encode(),
        "dec0": pa.array(_pick(rng, [Decimal(x) for x in ["0", "7", "-3", "99999", "-99999", "12"]], n), pa.decimal128(5, 0)),
        "d64": pa.array(_pick(rng, [0.5, -2.5, 3.0, NAN, -0.0, 1e308, 2.0**53 + 1], n), pa.float64()),
    }
    return pa.table(cols)


# -- the grammar ----------------------------------------------------------------------------------------

INT_COLS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOAT_COLS = ["f32", "f64", "d64"]
DEC_COLS = ["dec", "dec38", "dec0"]
STR_COLS = ["s", "ns", "cat"]
TS_COLS = ["ts", "ts_s", "ts_ms", "ts_ns", "tz"]
INT_LITS = ["0", "1", "2", "3", "5", "-1", "7", "100", "127", "128", "255", "256", "-128", "2147483647", "2147483648", "46341",
            "9223372036854775807", "9223372036854775800", "-9223372036854775808", "4611686018427387904", "18446744073709551615",
            "9223372036854775808"]  # fmt: skip
FLOAT_LITS = ["4.64e0", "1e300", "1e-7", "2.5e0", "0e0", "-1.5e0", "1e16", "'NaN'::DOUBLE", "CAST('inf' AS DOUBLE)",
              "CAST('-inf' AS DOUBLE)", "CAST(0.1 AS FLOAT)", "1.5::FLOAT", "3.4e38", "CAST(-0.0 AS DOUBLE)"]  # fmt: skip
DEC_LITS = ["2.5", "0.1", "4.64", "-7.5", "1.255", "19.85", "-13.1", "12.50", "0.001", "99999999.99", "1.26", "-107.51", "15.5"]
STR_LITS = ["'a'", "'abc'", "'x\\y'", "'x\\y%'", "'%\\y'", "'C:\\temp%'", "'it''s'", "'ß'", "'SS'", "'i'", "'İ'", "''", "' '",
            "'6.5'", "'5'", "'12'", "'1e3'", "'NaN'", "'inf'", "'Infinity'", "'3.4e+38'", "'1e+300'", "'-1'", "'true'", "'2024-01-05'",
            "'2024-01-05 10:00:00'", "'abc%'", "'a\\_b'", "'é'", "'👍🏽'", "'%'", "'_'", "'1.255'", "'0x1F'"]  # fmt: skip
DATE_LITS = ["DATE '2024-01-05'", "DATE '2023-06-14'", "'2024-01-05'", "DATE '1970-01-01'", "'2023-09-29'", "DATE '0001-01-01'"]
TS_LITS = ["TIMESTAMP '2024-01-05 10:00:00'", "TIMESTAMP '2023-06-14 00:00:00'", "'2024-01-05 10:00:00'", "TIMESTAMP '1970-01-01'",
           "TIMESTAMP '2024-02-29 12:30:15.25'", "TIMESTAMP '2020-09-13 12:49:47.004161387'", "TIMESTAMPTZ '2024-01-05 10:00:00+02'",
           "'2024-01-05'", "TIMESTAMP_NS '2020-09-13 12:49:47.004161387'"]  # fmt: skip
INTERVALS = ["INTERVAL 1 DAY", "INTERVAL '2 hours'", "INTERVAL 1 MONTH", "INTERVAL '90 minutes'", "INTERVAL 3 DAY", "INTERVAL '1 year'"]
LIKE_PATTERNS = ["'x\\y%'", "'%\\y'", "'a%'", "'%b%'", "'a_b'", "'%'", "'_'", "'ab%c'", "'C:\\temp%'", "'%s'", "'ß'", "'SS'",
                 "'%\\\\%'", "'a!%b' ESCAPE '!'", "'%!_%' ESCAPE '!'", "'%' ESCAPE '%'", "'a$_b' ESCAPE '$'", "''", "'%é%'"]  # fmt: skip
CMP = ["=", "!=", "<", "<=", ">", ">=", "<>"]
REGEXPS = ["'^a'", "'b$'", "'[a-c]+'", "'\\d'", "'ß|ss'", "'x\\\\y'", "'^$'", "'(?i)AB'"]


class Grammar:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def choice(self, items):
        return self.rng.choice(items)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # typed expressions
    def expr(self, kind: str, depth: int) -> str:
        r = self.rng.random()
        leaf = depth <= 0 or r < 0.45
        g = getattr(self, "e_" + kind)
        return g(depth, leaf)

    def e_int(self, depth: int, leaf: bool) -> str:
        if leaf:
            return self.choice(INT_COLS) if self.chance(0.6) else self.choice(INT_LITS)
        k = self.rng.randrange(12)
        if k < 4:
            return f"({self.expr('int', depth - 1)} {self.choice(['+', '-', '*', '//', '%'])} {self.expr('int', depth - 1)})"
        if k == 4:
            return f"abs({self.expr('int', depth - 1)})"
        if k == 5:
            return f"-{self.choice(INT_COLS)}"
        if k == 6:
            return f"CAST({self.expr(self.choice(['int', 'float', 'dec', 'str', 'bool']), depth - 1)} AS {self.choice(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'UBIGINT', 'HUGEINT'])})"
        if k == 7:
            return f"{self.choice(['length', 'strpos'])}({self.expr('str', depth - 1)}{', ' + self.choice(STR_LITS) if self.chance(0.5) else ''})".replace("length(", "length(" if True else "")
        if k == 8:
            part = self.choice(['year', 'month', 'day', 'hour', 'minute', 'second', 'dayofweek', 'week', 'quarter', 'dayofyear'])
            column = self.choice(['d'] + TS_COLS)
            return self.choice([f"{part}({column})", f"extract({part if part not in ('dayofweek', 'dayofyear') else 'dow'} FROM {column})", f"date_part('{part}', {column})"])
        if k == 9:
            form = self.choice(["coalesce({a}, {b})", "nullif({a}, {b})", "ifnull({a}, {b})", "if({c}, {a}, {b})", "sign({a})"])
            return form.format(a=self.expr('int', depth - 1), b=self.expr('int', depth - 1), c=self.expr('bool', depth - 1))
        if k == 10:
            return f"CASE WHEN {self.expr('bool', depth - 1)} THEN {self.expr('int', depth - 1)} ELSE {self.expr('int', depth - 1)} END"
        return f"(d - {self.choice(DATE_LITS[:2] + ['d'])})"

    def e_float(self, depth: int, leaf: bool) -> str:
        if leaf:
            return self.choice(FLOAT_COLS) if self.chance(0.6) else self.choice(FLOAT_LITS)
        k = self.rng.randrange(9)
        if k < 3:
            other = self.expr(self.choice(["float", "int", "dec"]), depth - 1)
            return f"({self.expr('float', depth - 1)} {self.choice(['+', '-', '*', '/', '//', '%'])} {other})"
        if k == 3:
            return f"round({self.expr('float', depth - 1)}, {self.choice(['0', '1', '-1', '2'])})"
        if k == 4:
            return f"{self.choice(['floor', 'ceil', 'abs'])}({self.expr('float', depth - 1)})"
        if k == 5:
            return f"CAST({self.expr(self.choice(['int', 'dec', 'str', 'float']), depth - 1)} AS {self.choice(['DOUBLE', 'FLOAT'])})"
        if k == 6:
            return f"({self.expr('int', depth - 1)} / {self.expr('int', depth - 1)})"
        if k == 7:
            return f"coalesce({self.expr('float', depth - 1)}, {self.expr(self.choice(['float', 'dec', 'int']), depth - 1)})"
        return f"epoch({self.choice(['d'] + TS_COLS)})"

    def e_dec(self, depth: int, leaf: bool) -> str:
        if leaf:
            return self.choice(DEC_COLS) if self.chance(0.6) else self.choice(DEC_LITS)
        k = self.rng.randrange(7)
        if k < 3:
            other = self.expr(self.choice(["dec", "int"]), depth - 1)
            return f"({self.expr('dec', depth - 1)} {self.choice(['+', '-', '*', '%', '//'])} {other})"
        if k == 3:
            return f"round({self.expr('dec', depth - 1)}, {self.choice(['0', '1', '-1', '2'])})"
        if k == 4:
            return f"CAST({self.expr(self.choice(['int', 'dec', 'str', 'float']), depth - 1)} AS DECIMAL({self.choice(['4,1', '10,2', '18,3', '38,10', '5,0'])}))"
        if k == 5:
            return f"{self.choice(['floor', 'ceil', 'abs'])}({self.expr('dec', depth - 1)})"
        return f"coalesce({self.expr('dec', depth - 1)}, {self.expr(self.choice(['dec', 'int', 'float']), depth - 1)})"

    def e_str(self, depth: int, leaf: bool) -> str:
        if leaf:
            return self.choice(STR_COLS) if self.chance(0.6) else self.choice(STR_LITS)
        k = self.rng.randrange(9)
        if k == 0:
            return f"{self.choice(['lower', 'upper', 'trim', 'reverse', 'ltrim', 'rtrim'])}({self.expr('str', depth - 1)})"
        if k == 1:
            return f"substring({self.expr('str', depth - 1)}, {self.choice(['0', '1', '2', '-2'])}{', ' + self.choice(['1', '2', '-1']) if self.chance(0.6) else ''})"
        if k == 2:
            return f"{self.choice(['left', 'right'])}({self.expr('str', depth - 1)}, {self.choice(['1', '2', '-1', '0'])})"
        if k == 3:
            return f"({self.expr('str', depth - 1)} || {self.expr(self.choice(['str', 'int', 'float', 'dec', 'date']), depth - 1)})"
        if k == 4:
            return f"concat({self.expr('str', depth - 1)}, {self.expr(self.choice(['str', 'int', 'bool']), depth - 1)})"
        if k == 5:
            return f"replace({self.expr('str', depth - 1)}, {self.choice(STR_LITS)}, {self.choice(STR_LITS)})"
        if k == 6:
            return f"CAST({self.expr(self.choice(['int', 'float', 'dec', 'date', 'ts', 'bool', 'blob']), depth - 1)} AS VARCHAR)"
        if k == 7:
            form = self.choice(["coalesce({a}, {b})", "nullif({a}, {b})", "trim({a}, {lit})", "rtrim({a}, {lit})", "CAST({a} AS VARCHAR)"])
            return form.format(a=self.expr('str', depth - 1), b=self.expr('str', depth - 1), lit=self.choice(["'a'", "' '", "'ab'", "'ß'"]))
        return f"CASE {self.choice(['WHEN ' + self.expr('bool', depth - 1), self.expr('str', 0) + ' WHEN ' + self.choice(STR_LITS)])} THEN {self.expr('str', depth - 1)} END"

    def e_date(self, depth: int, leaf: bool) -> str:
        if leaf:
            return "d" if self.chance(0.6) else self.choice(DATE_LITS)
        k = self.rng.randrange(4)
        if k == 0:
            return f"(d {self.choice(['+', '-'])} {self.choice(['1', '30', 'i8'])})"
        if k == 1:
            return f"CAST({self.choice(TS_COLS + ['s'])} AS DATE)"
        if k == 2:
            return f"coalesce(d, {self.choice(DATE_LITS)})"
        return f"CAST({self.choice(['ns', 's'])} AS DATE)"

    def e_ts(self, depth: int, leaf: bool) -> str:
        if leaf:
            return self.choice(TS_COLS) if self.chance(0.6) else self.choice(TS_LITS)
        k = self.rng.randrange(4)
        if k == 0:
            return f"({self.choice(TS_COLS + ['d'])} {self.choice(['+', '-'])} {self.choice(INTERVALS)})"
        if k == 1:
            return f"date_trunc('{self.choice(['day', 'month', 'hour', 'year', 'week', 'minute'])}', {self.choice(TS_COLS + ['d'])})"
        if k == 2:
            return f"CAST({self.choice(TS_COLS + ['d', 's'])} AS {self.choice(['TIMESTAMP', 'TIMESTAMP_S', 'TIMESTAMP_MS', 'TIMESTAMP_NS', 'TIMESTAMPTZ'])})"
        return f"coalesce({self.choice(TS_COLS)}, {self.choice(TS_LITS)})"

    def e_blob(self, depth: int, leaf: bool) -> str:
        return "bl" if self.chance(0.7) else self.choice(["X'0102'", "X''", "X'00'", "X'FF'", "'ab'::BLOB"])

    def e_bool(self, depth: int, leaf: bool) -> str:
        if leaf:
            k = self.rng.randrange(10)
            if k < 6:
                return self.comparison(max(depth, 1))
            if k == 6:
                return self.choice(["b", "NOT b", "TRUE", "FALSE", "NULL", "b IS TRUE", "b IS NOT FALSE", "(i8 > 0) IS FALSE", "(s = 'a') IS NOT TRUE"])
            if k == 7:
                return f"{self.choice(['isnan', 'isinf', 'isfinite'])}({self.choice(FLOAT_COLS)})"
            if k == 8:
                return f"{self.choice(INT_COLS + FLOAT_COLS + STR_COLS + ['d', 'dec', 'b'])} IS {self.choice(['', 'NOT '])}NULL"
            return self.comparison(1)
        k = self.rng.randrange(12)
        if k < 3:
            return f"({self.expr('bool', depth - 1)} {self.choice(['AND', 'OR'])} {self.expr('bool', depth - 1)})"
        if k == 3:
            return f"NOT ({self.expr('bool', depth - 1)})"
        if k == 4:
            return self.in_list(depth)
        if k == 5:
            kind = self.choice(["int", "float", "dec", "date", "str", "ts"])
            return f"{self.expr(kind, depth - 1)} {self.choice(['', 'NOT '])}BETWEEN {self.expr(self.other(kind), 0)} AND {self.expr(self.other(kind), 0)}"
        if k == 6:
            op = self.choice(["LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"])
            return f"{self.expr('str', depth - 1)} {op} {self.choice(LIKE_PATTERNS)}"
        if k == 7:
            if self.chance(0.3):
                pattern = self.choice(REGEXPS)
                flags = self.choice(["", ", 'i'", ", 'c'"])
                return f"regexp_matches({self.expr('str', depth - 1)}, {pattern}{flags})"
            return f"{self.choice(['starts_with', 'ends_with', 'contains', 'regexp_matches'])}({self.expr('str', depth - 1)}, {self.choice(STR_LITS[:12])})"
        if k == 8:
            return f"{self.expr(self.choice(['int', 'float', 'str']), depth - 1)} IS {self.choice(['', 'NOT '])}DISTINCT FROM {self.expr(self.choice(['int', 'float', 'str', 'dec']), depth - 1)}"
        return self.comparison(depth)

    def other(self, kind: str) -> str:
        """A kind to compare ``kind`` with: mostly its own, sometimes another (coercions)."""
        if self.chance(0.65):
            return kind
        cross = {"int": ["float", "dec", "str", "bool"], "float": ["int", "dec", "str"], "dec": ["int", "float", "str"],
                 "str": ["int", "float", "date", "str"], "date": ["ts", "str"], "ts": ["date", "str"], "bool": ["int", "str"],
                 "blob": ["str"]}  # fmt: skip
        return self.choice(cross[kind])

    def comparison(self, depth: int) -> str:
        kind = self.choice(["int", "int", "float", "float", "dec", "str", "str", "date", "ts", "blob", "bool"])
        left = self.expr(kind, depth - 1) if kind != "bool" else self.choice(["b", "(i8 > 0)"])
        right_kind = self.other(kind)
        right = self.expr(right_kind, depth - 1) if right_kind != "bool" else self.choice(["TRUE", "FALSE", "b"])
        if self.chance(0.5):
            right = self.leaf_literal(right_kind) or right
        return f"{left} {self.choice(CMP)} {right}"

    def leaf_literal(self, kind: str) -> str | None:
        pools = {"int": INT_LITS, "float": FLOAT_LITS, "dec": DEC_LITS, "str": STR_LITS, "date": DATE_LITS, "ts": TS_LITS,
                 "bool": ["TRUE", "FALSE", "2", "0", "'true'"], "blob": ["X'0102'", "'ab'"]}  # fmt: skip
        return self.choice(pools[kind]) if kind in pools else None

    def in_list(self, depth: int) -> str:
        kind = self.choice(["int", "float", "dec", "str", "date", "ts", "bool"])
        left = self.expr(kind, depth - 1) if kind != "bool" else "b"
        items = []
        if self.chance(0.1) and kind in ("int", "float", "dec", "str"):  # long enough to be read in bulk
            plain = [x for x in INT_LITS + FLOAT_LITS + DEC_LITS if re.fullmatch(r"-?[\d.eE+-]+", x)] if kind != "str" else STR_LITS
            plain = plain + [x for x in STR_LITS if self.chance(0.02)] if kind != "str" else plain
            items = [self.choice(plain) if self.chance(0.97) else "NULL" for _ in range(self.rng.randint(64, 90))]
            return f"{left} {self.choice(['', 'NOT '])}IN ({', '.join(items)})"
        for _ in range(self.rng.randint(1, 4)):
            k = self.other(kind) if self.chance(0.3) else kind
            if self.chance(0.12) and kind != "bool":  # an expression (which may raise)
                items.append(self.expr(k, max(depth - 1, 1)))
            else:
                items.append(self.leaf_literal(k) if self.chance(0.8) else "NULL")
        return f"{left} {self.choice(['', 'NOT '])}IN ({', '.join(items)})"

    def where(self, depth: int) -> str:
        return self.expr("bool", depth)


# -- running ------------------------------------------------------------------------------------------


@dataclass
class Report:
    clauses: int = 0
    selective: int = 0
    agree_errors: int = 0
    differences: list = field(default_factory=list)
    we_answer: list = field(default_factory=list)
    we_raise: list = field(default_factory=list)
    constant: list = field(default_factory=list)
    duckdb_rewrite: list = field(default_factory=list)  # DuckDB answers otherwise without its expression rewriter
    duckdb_internal: list = field(default_factory=list)  # DuckDB's own INTERNAL errors (its bugs)
    duckdb_empty: list = field(default_factory=list)  # a value error where DuckDB's statistics prove no row passes or the conjunct true
    duckdb_factoring: list = field(default_factory=list)  # DuckDB's predicate factoring raises where the text does not
    order: list = field(default_factory=list)  # errors that differ only when every conjunct is evaluated by Polars (a test-only mode)
    raw: list = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.clauses} clauses, {self.selective} selective, {self.agree_errors} refused by both; "
                f"differences {len(self.differences)}, answered where DuckDB raises {len(self.we_answer)}, "
                f"raised where DuckDB answers {len(self.we_raise)} (+{len(self.constant)} constant errors, {len(self.duckdb_empty)} where DuckDB's statistics skip it, {len(self.order)} in the all-residual mode), "
                f"DuckDB rewrite bugs {len(self.duckdb_rewrite)}, DuckDB predicate factoring {len(self.duckdb_factoring)}, "
                f"DuckDB internal errors {len(self.duckdb_internal)}, raw {len(self.raw)}")  # fmt: skip


def _ours(table: pa.Table, text: str, pushdown: bool, zone: str = "UTC"):
    where = compile_where(text, table.schema, pushdown=pushdown, time_zone=zone)
    rows = table.filter(where.pushdown) if where.pushdown is not None else table
    if where.residual is not None:
        rows = rows.filter(where.residual.mask(rows))
    return sorted(rows["rid"].to_pylist())




def _duckdb_unfactored(con, text: str):
    """DuckDB's answer (rows, or None where it raises) with its predicate factoring blocked:
    ``(a AND x) OR (b AND y)`` gains a filter made of the branches' one-column conditions,
    which DuckDB evaluates where the written filter does not (a disjunct no column can be
    factored from, ``random() < 0``, never TRUE, stops it)."""
    import duckdb

    try:
        return sorted(r[0] for r in con.execute(f"SELECT rid FROM t WHERE ({text}) OR random() < 0").fetchall())
    except duckdb.Error:
        return None


def _duckdb_without(con, text: str, optimizer: str):
    """DuckDB's answer with one optimizer off (None where it raises)."""
    import duckdb

    try:
        con.execute(f"SET disabled_optimizers = '{optimizer}'")
        return sorted(r[0] for r in con.execute(f"SELECT rid FROM t WHERE {text}").fetchall())
    except duckdb.Error:
        return None
    finally:
        con.execute("RESET disabled_optimizers")


def _duckdb_unrewritten(con, text: str):
    """DuckDB's answer with its expression rewriter off (where that differs, the rewrite is
    DuckDB's own bug: ``date_trunc('minute', d) > DATE 'x'`` read as ``d >= 'x'``)."""
    import duckdb

    try:
        con.execute("SET disabled_optimizers = 'expression_rewriter'")
        return sorted(r[0] for r in con.execute(f"SELECT rid FROM t WHERE {text}").fetchall())
    except duckdb.Error:
        return None
    finally:
        con.execute("RESET disabled_optimizers")


def run(seed: int, *, clauses: int | None = None, seconds: float | None = None, tables: int = 4, depth: int = 3) -> Report:
    """Generate and compare clauses until ``clauses`` or ``seconds`` (whichever first)."""
    import duckdb

    report = Report()
    start = time.monotonic()
    per_table = max(1, (clauses or 10**9) // tables)
    for t in range(tables):
        table = random_table(seed * 1000 + t)
        con = duckdb.connect()
        zone = ["UTC", "America/New_York", "Asia/Kolkata", "UTC"][t % 4]
        con.execute(f"SET TimeZone = '{zone}'")
        con.register("t", table)
        rng = random.Random(seed * 7919 + t)
        grammar = Grammar(rng)
        for _ in range(per_table):
            if seconds is not None and time.monotonic() - start > seconds:
                return report
            if clauses is not None and report.clauses >= clauses:
                return report
            text = grammar.where(rng.randint(1, depth))
            report.clauses += 1
            try:
                expected = sorted(r[0] for r in con.execute(f"SELECT rid FROM t WHERE {text}").fetchall())
                duck_error = None
            except duckdb.Error as e:
                expected, duck_error = None, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                if isinstance(e, duckdb.InternalException):
                    report.duckdb_internal.append((text, duck_error, seed * 1000 + t))
                    continue
            if expected is not None and 0 < len(expected) < table.num_rows:
                report.selective += 1
            for pushdown in (True, False):
                try:
                    got, error = _ours(table, text, pushdown, zone), None
                except WhereError as e:
                    got, error = None, e
                except Exception as e:  # noqa: BLE001 - a raw exception is what this looks for
                    report.raw.append((text, pushdown, f"{type(e).__module__}.{type(e).__name__}: {str(e)[:200]}"))
                    break
                if duck_error is None and error is None:
                    if got != expected:
                        if got == _duckdb_unrewritten(con, text):
                            report.duckdb_rewrite.append((text, pushdown, len(got), len(expected), seed * 1000 + t))
                        else:
                            report.differences.append((text, pushdown, got, expected, seed * 1000 + t))
                        break
                elif not pushdown and (duck_error is None) != (error is None):
                    report.order.append((text, duck_error or str(error).splitlines()[0][:160], seed * 1000 + t))
                    break
                elif duck_error is not None and error is None:
                    target = report.duckdb_factoring if " OR " in text.upper() and _duckdb_unfactored(con, text) == got else report.we_answer
                    target.append((text, pushdown, len(got), duck_error, seed * 1000 + t))
                    break
                elif duck_error is None and error is not None:
                    target = report.constant if error.kind == "constant" else report.duckdb_empty if (error.kind == "value" and not expected) else report.we_raise
                    if target is report.we_raise and " OR " in text.upper() and _duckdb_unfactored(con, text) is None:
                        target = report.duckdb_factoring
                    elif target is report.we_raise and error.kind == "value" and _duckdb_without(con, text, "statistics_propagation") is None:
                        target = report.duckdb_empty
                    target.append((text, pushdown, str(error).splitlines()[0][:200], len(expected), seed * 1000 + t))
                    break
                elif pushdown is False:
                    report.agree_errors += 1
    return report


def main() -> None:  # pragma: no cover - for a person hunting differences
    import argparse

    parser = argparse.ArgumentParser(description="differential SQL fuzzing against DuckDB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clauses", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--show", type=int, default=15)
    args = parser.parse_args()
    report = run(args.seed, clauses=args.clauses, seconds=args.seconds)
    print(report.summary())
    for name in ("raw", "differences", "we_answer", "we_raise", "constant", "duckdb_empty", "duckdb_rewrite", "duckdb_factoring", "duckdb_internal", "order"):
        items = getattr(report, name)
        if items:
            print(f"-- {name} ({len(items)})")
            for item in items[: args.show]:
                print("  ", item if name != "differences" else (item[0], item[1], f"ours {len(item[2])} {item[2][:8]}", f"duckdb {len(item[3])} {item[3][:8]}", item[4]))


if __name__ == "__main__":  # pragma: no cover
    main()

