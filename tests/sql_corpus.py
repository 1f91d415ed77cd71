"""The WHERE corpus (issue 41): clauses a user writes, each run by arrowidx and by DuckDB over
the same rows in memory (and by Polars SQL where it accepts the clause).

An entry is the clause, or ``(clause, duckdb_text)`` when DuckDB spells a Spark form
differently (``TIMESTAMP_NTZ``, ``<=>``, ``DIV``, ``double('NaN')``), or means something else
by it: DuckDB drops the offset of ``TIMESTAMP '... +02:00'``; Spark and arrowidx read the
instant it names (DuckDB's ``TIMESTAMPTZ '...'``).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa


def corpus_table(n: int = 400, seed: int = 41) -> pa.Table:
    """Every Arrow type the lake writer produces, with NULLs, NaN, -0.0, mixed case,
    Unicode and spaces in strings."""
    rng = np.random.default_rng(seed)

    def mask(p=0.1):
        return rng.random(n) < p

    amount = rng.choice([-1.5, -0.0, 0.0, 1.0, 2.5, 7.25, 30.0, 150.5, 1e6, np.nan], n)
    words = np.array(["new", "paid", "lost", "it's", "PAID", "Lost ", " new", "ÄÖü", "naïve", "a_b", "a%b", ""], dtype=object)
    start = np.datetime64("2024-05-01", "us").astype(np.int64)
    micros = start + rng.integers(0, 86_400_000_000 * 10, n)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64) * 3 - 60),
        "qty": pa.array(rng.integers(-7, 8, n), pa.int32(), mask=mask()),
        "small": pa.array(rng.integers(-100, 100, n), pa.int8(), mask=mask()),
        "mid": pa.array(rng.integers(-3000, 3000, n), pa.int16(), mask=mask()),
        "amount": pa.array(amount, mask=mask()),
        "ratio": pa.array(rng.choice([0.5, -0.25, 1.0, np.nan, 3.75, 0.1, 0.3, 16777217.0], n).astype(np.float32), mask=mask()),
        "price": pa.array([None if m else Decimal(int(v)).scaleb(-2) for m, v in zip(mask(), rng.integers(-50000, 50000, n))], pa.decimal128(10, 2)),
        "status": pa.array(words[rng.integers(0, len(words), n)], pa.string(), mask=mask()),
        "flag": pa.array(rng.random(n) < 0.5, mask=mask()),
        "day": pa.array((micros // 86_400_000_000).astype(np.int32), pa.date32(), mask=mask()),
        "ts": pa.array(micros, pa.timestamp("us"), mask=mask()),
        "ts_ms": pa.array(micros // 1000, pa.timestamp("ms"), mask=mask()),
        "tstz": pa.array(micros, pa.timestamp("us", tz="UTC"), mask=mask()),
        "blob": pa.array([None if m else bytes([v % 4, 2]) for m, v in zip(mask(), rng.integers(0, 8, n))], pa.binary()),
        "größe": pa.array(rng.integers(0, 5, n), pa.int16(), mask=mask()),
        "my col": pa.array(np.array(["x", "y", "z"], dtype=object)[rng.integers(0, 3, n)], pa.string(), mask=mask()),
    })  # fmt: skip


CORPUS: list = [
    # -- plain comparisons, every type, untyped literals coerced ---------------------------
    "id = 42", "id = 0", "id != 42", "id <> 42", "id == 42", "id < 0", "id <= -3", "id > 1000", "id >= 1190",
    "qty = 3", "qty = '3'", "qty > 2.5", "qty < -2.5", "qty = 2.5", "qty != 2.5", "qty >= 2147483648", "qty < 2147483648",
    "small > -50", "small = 99", "mid BETWEEN -100 AND 100", "mid NOT BETWEEN -2000 AND 2000",
    "amount > 150", "amount >= 150.5", "amount < 0", "amount <= -0.0", "amount = 0", "amount = -0.0", "amount != 0",
    "amount = 'NaN'", "amount > 'NaN'", "amount >= 'NaN'", "amount < 'NaN'", "amount <= 'NaN'", "amount != 'NaN'",
    "amount = CAST('NaN' AS DOUBLE)", "amount > 1e5", "amount < 1.5e0", "amount = 7.25",
    "ratio > 0.5", "ratio = 1", "ratio = 'NaN'", "ratio < 0", "ratio = 0.1", "ratio > 0.1", "ratio IN (0.1, 0.5)",
    "ratio > CAST(0.1 AS DOUBLE)", "ratio = 16777217",
    "ratio * 2 > 0.2", "ratio / 3 > 0.1", "ratio + qty > 2.1", "ratio * amount > 1",
    "price > 100", "price = 12.5", "price = '12.50'", "price < -100.005", "price BETWEEN -1 AND 1", "price >= 0.01",
    "status = 'paid'", "status = 'PAID'", "status = 'it''s'", "status = ''", "status > 'n'", "status < 'PAID'", "status = 'ÄÖü'",
    "status = 'Lost '", "flag", "NOT flag", "flag = TRUE", "flag = FALSE", "flag = 'true'", "flag = 1", "flag != 0",
    "day = '2024-05-03'", "day = DATE '2024-05-03'", "day > DATE '2024-05-08'", "day < '2024-05-02'",
    "day IN (DATE '2024-05-05', DATE '2024-05-07')", "day BETWEEN DATE '2024-05-02' AND DATE '2024-05-04'",
    "ts < TIMESTAMP '2024-05-03 00:00:00'", "ts > '2024-05-05 12:00:00'", "ts >= TIMESTAMP '2024-05-09'", "ts < '2024-05-02'",
    ("ts < TIMESTAMP_NTZ '2024-05-04 06:30:00'", "ts < TIMESTAMP '2024-05-04 06:30:00'"),
    "ts_ms > TIMESTAMP '2024-05-06 00:00:00.123'", "ts_ms <= '2024-05-03'",
    "tstz > TIMESTAMPTZ '2024-05-05 00:00:00+00:00'", "tstz < '2024-05-03 00:00:00+02:00'",
    ("amount = double('NaN')", "amount = 'NaN'::DOUBLE"), ("amount > double('NaN')", "amount > 'NaN'::DOUBLE"), ("qty = int('3')", "qty = 3"),
    "qty < CAST('NaN' AS DOUBLE)", "qty = CAST('NaN' AS DOUBLE)", "amount < CAST('Infinity' AS DOUBLE)",
    "ts < TIMESTAMP '2024-05-02 12:00:00+00:00'", "tstz >= TIMESTAMP '2024-05-05 00:00:00'", ("tstz < TIMESTAMP '2024-05-04 10:00:00+02:00'", "tstz < TIMESTAMPTZ '2024-05-04 10:00:00+02:00'"),
    "tstz IN (TIMESTAMP '2024-05-03 10:00:00', TIMESTAMP '2024-05-04 00:00:00') OR tstz IS NULL",
    "day = TIMESTAMP '2024-05-03 00:00:00'", "day < TIMESTAMP '2024-05-03 12:00:00'", "ts > DATE '2024-05-06'",
    "blob = X'0102'", "blob = x'0002'", "blob > X'01'", "blob IN (X'0202', X'0302')",
    "größe = 2", "\"größe\" > 3", '"my col" = \'x\'', "`my col` = 'y'", '"MY COL" = \'z\'',
    # -- NULL, NaN, three-valued logic ----------------------------------------------------------
    "qty IS NULL", "qty IS NOT NULL", "amount IS NULL", "status IS NOT NULL", "qty ISNULL", "qty NOTNULL",
    "qty = NULL", "qty != NULL", "NOT (qty = NULL)", "qty IN (1, NULL)", "qty NOT IN (1, NULL)", "qty NOT IN (1, 2)",
    "NOT (qty IN (1, 2))", "NOT (qty > 2)", "NOT (amount > 150)", "NOT (amount < 150)", "NOT NOT (qty = 1)",
    "amount IN (0.0, 2.5)", "amount NOT IN (0.0, 2.5)", "amount IN (-0.0)", "amount IN ('NaN', 1)", "amount IN (0.0, 'NaN')", "amount NOT IN (-0.0, 'NaN')", "ratio IN (0.5, 'NaN')", "amount NOT IN ('NaN')",
    "status IN ('new', NULL)", "status NOT IN ('lost', 'paid')", "flag IS TRUE", "flag IS NOT TRUE", "flag IS FALSE", "flag IS NOT FALSE",
    "qty IS DISTINCT FROM 3", "qty IS NOT DISTINCT FROM 3", "qty IS DISTINCT FROM NULL", "qty IS NOT DISTINCT FROM NULL",
    ("qty <=> 3", "qty IS NOT DISTINCT FROM 3"), "amount IS DISTINCT FROM 'NaN'", "amount IS NOT DISTINCT FROM 0",
    "qty IS DISTINCT FROM small", "status IS NOT DISTINCT FROM \"my col\"",
    "TRUE", "FALSE", "NULL", "1 = 1", "1 = 0", "NOT NULL", "NULL OR qty = 1", "NULL AND qty = 1",
    "(qty = 1 OR qty IS NULL) AND NOT flag", "qty > 0 OR amount > 100 OR status = 'new'", "(qty > 0 AND amount > 100) OR NOT (status = 'new')",
    "NOT (qty > 0 AND amount IS NULL)", "NOT (qty > 0 OR flag)",
    # -- LIKE, ILIKE, regular expressions ----------------------------------------------------
    "status LIKE 'n%'", "status LIKE '%a%'", "status NOT LIKE '%s'", "status LIKE '_aid'", "status LIKE 'a\\_b'",
    "status LIKE 'a!%b' ESCAPE '!'", "status ILIKE 'paid'", "status ILIKE 'LOST%'", "status NOT ILIKE '%A%'", "status ILIKE 'äöü'",
    "status LIKE ''", "status LIKE '%'", "regexp_matches(status, '^[a-z]+$')", ("status RLIKE 'ai'", "regexp_matches(status, 'ai')"),
    # -- arithmetic ----------------------------------------------------------------------------------
    "id % 100 = 7", "id % 7 = -3", "qty % 3 = -1", "qty + 1 > 2", "qty - small > 10", "qty * 2 = -4", "qty / 2 = 1.5",
    "qty / 2 > 1", "qty // 2 = -3", ("qty DIV 2 = -3", "qty // 2 = -3"), "-qty = 3", "qty * qty > 20", "abs(qty) = 7",
    "amount * 2 > 100", "amount / 2 < 1", "amount + 1 = 1", "amount - amount = 0", "amount % 2 = 1.5",
    "price * 2 > 100", "price + 1 > 0", "price / 4 > 10", "abs(price) < 1", ("mid + small * 2 > 100", "mid + CAST(small AS INT) * 2 > 100"),
    "round(amount) = 8", "round(amount, 1) = 7.3", "floor(amount) = 7", "ceil(amount) = 8", "floor(price) = 12", "round(ratio) = 4",
    "id + 0.5 > 100", "(id + qty) % 5 = 0",
    # -- string functions ------------------------------------------------------------------------
    "lower(status) = 'lost'", "upper(status) = 'PAID'", "length(status) = 4", "length(status) > 3", "char_length(status) = 3",
    "substring(status, 1, 2) = 'pa'", "substring(status, 2) = 'aid'", "substr(status, 0, 2) = 'n'", "substring(status, -3, 2) = 'ai'",
    "trim(status) = 'new'", "ltrim(status) = 'new'", "rtrim(status) = 'Lost'", "status || '!' = 'new!'",
    "concat(status, '-', \"my col\") = 'new-x'", "concat(status, NULL) = 'paid'", "status || NULL IS NULL",
    "replace(status, 'a', 'o') = 'poid'", "reverse(status) = 'wen'", "left(status, 2) = 'pa'", "right(status, 2) = 'id'",
    "starts_with(status, 'pa')", "ends_with(status, 'st')", "contains(status, 'ai')", "strpos(status, 'a') = 2", "instr(status, 'i') = 2",
    "lower(status) IN ('lost', 'paid')", "upper(trim(status)) = 'NEW'", "length(trim(status)) = 0", "lower(status) LIKE 'l%'",
    # -- CAST, ::, TRY_CAST -----------------------------------------------------------------------------
    "TRY_CAST(amount AS INT) = 2", "TRY_CAST(amount AS INTEGER) = 8", "CAST(price AS BIGINT) = -12", "CAST(qty AS VARCHAR) = '3'", "CAST(qty AS DOUBLE) / 2 = 1.5",
    "ts::date = DATE '2024-05-03'", "CAST(ts AS DATE) > '2024-05-08'", "CAST(day AS TIMESTAMP) = TIMESTAMP '2024-05-03 00:00:00'",
    "CAST(price AS INT) = 13", "CAST(price AS DOUBLE) > 100", "TRY_CAST(status AS INT) IS NULL", "CAST('5' AS INT) = qty",
    "qty = CAST(3.7 AS INT)", "amount = CAST('2.5' AS DOUBLE)", "CAST(flag AS INT) = 1", "CAST(ratio AS DOUBLE) = 0.5",
    "price = CAST('12.5' AS DECIMAL(10,2))", "qty::BIGINT = 3", "'3'::INT = qty", "CAST(small AS SMALLINT) = 5",
    # -- CASE, COALESCE, IF, NULLIF -----------------------------------------------------------------------
    "CASE WHEN qty > 1 THEN 'y' ELSE 'n' END = 'y'", "CASE WHEN qty > 1 THEN 'y' END IS NULL", "CASE qty WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END = 'many'",
    "CASE WHEN amount > 100 THEN amount ELSE 0 END > 10", "CASE WHEN flag THEN qty ELSE -qty END > 3",
    "coalesce(qty, 0) = 0", "coalesce(qty, small, 0) > 5", "coalesce(status, 'none') = 'none'", "coalesce(amount, 1e9) > 1e8",
    "ifnull(qty, -100) = -100", ("nvl(status, 'x') = 'x'", "ifnull(status, 'x') = 'x'"), "if(flag, qty, 0) > 2", "nullif(qty, 3) IS NULL", "nullif(status, 'new') = 'paid'",
    "coalesce(day, DATE '2000-01-01') < DATE '2001-01-01'",
    # -- dates and times ------------------------------------------------------------------------------
    "year(ts) = 2024", "month(day) = 5", "day(ts) = 3", "hour(ts) = 12", "extract(day FROM ts) = 4", "extract(hour FROM tstz) < 2",
    "minute(ts) = 30", "date_trunc('day', ts) = TIMESTAMP '2024-05-03 00:00:00'", "date_trunc('month', day) = TIMESTAMP '2024-05-01 00:00:00'",
    "day < CURRENT_DATE", "ts < now()", "day = ts::date",
    # -- comments, quoting, spacing, case --------------------------------------------------------------
    "id = 42 -- the answer", "-- leading comment\nid > 1100", "id = /* inline */ 42", "id=42", "  id   =   42  ", "ID = 42",
    "Status = 'paid' and QTY > 0", "status = 'paid' AnD qty > 0 oR flag",
    # -- mixes: pushdown and residual ------------------------------------------------------------------
    "id > 600 AND lower(status) = 'paid'", "qty IN (1, 2, 3) AND id % 2 = 0", "status = 'new' AND length(status) = 3",
    "amount > 100 AND TRY_CAST(amount AS INT) % 2 = 0", "(id < 100 OR lower(status) = 'lost') AND flag",
    "ts > '2024-05-05' AND year(ts) = 2024 AND qty IS NOT NULL", "id BETWEEN 100 AND 300 AND NOT (upper(status) = 'NEW')",
]  # fmt: skip


def clause(entry) -> tuple[str, str]:
    """(the clause, DuckDB's spelling of it)."""
    return (entry, entry) if isinstance(entry, str) else entry
