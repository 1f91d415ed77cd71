"""The WHERE corpus (issue 41): clauses a user writes, each run by arrowidx and by DuckDB over
the same rows in memory (and by Polars SQL where it accepts the clause).

An entry is the clause, or ``(clause, duckdb_text)`` when DuckDB spells a Spark form
differently (``TIMESTAMP_NTZ``, ``<=>``, ``DIV``, ``double('NaN')``). Where DuckDB raises
(a string that does not convert, a division by zero, an overflow), arrowidx must raise too.

:data:`FAMILIES` holds issue 48's cases: one or more for each kind of answer that once
differed from DuckDB's, each raw exception, each refusal where DuckDB answers and each answer
where DuckDB refuses.
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
    more = np.random.default_rng(seed + 48)  # (issue 48's columns: the ones above keep their values)
    paths = np.array(["C:\\temp\\a.txt", "C:\\temp\\b.txt", "C:\\\\temp\\\\c.txt", "x\\y", "x\\yz", "x\\\\y", "a%b", "a_b"], dtype=object)
    case_words = np.array(["ß", "SS", "İ", "i", "ﬃ", "ſ", "s", "K", "k", "ǅ", "straße", "STRASSE"], dtype=object)
    big = np.array([-(2**63), 2**63 - 1, 0, 1, -1, 4611686018427387904, 9223372036854775800], dtype=np.int64)
    u64 = np.array([0, 1, 2**63, 2**64 - 1, 12345, 2**63 + 7], dtype=np.uint64)
    extra = {
        "path": pa.array(paths[more.integers(0, len(paths), n)], pa.string(), mask=more.random(n) < 0.1),
        "word": pa.array(case_words[more.integers(0, len(case_words), n)], pa.string(), mask=more.random(n) < 0.1),
        "big": pa.array(big[more.integers(0, len(big), n)], pa.int64(), mask=more.random(n) < 0.1),
        "u64": pa.array(u64[more.integers(0, len(u64), n)], pa.uint64(), mask=more.random(n) < 0.1),
        "u32": pa.array(more.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32), pa.uint32(), mask=more.random(n) < 0.1),
        "x": pa.array(more.choice([1e-7, 15.5, 24.0, -7.5, 7.5, 0.1, 1e16, -0.0, np.nan], n), pa.float64(), mask=more.random(n) < 0.1),
        "ts_ns": pa.array(1714700000000000000 + more.integers(0, 10**15, n) + more.integers(0, 1000, n), pa.timestamp("ns"), mask=more.random(n) < 0.1),
        "codes": pa.array(np.array(["1", "2", "12", " 5", "6.5", "-3", "0", "1e2"], dtype=object)[more.integers(0, 8, n)], pa.string()),
    }
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
        **extra,
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
    "ts < TIMESTAMP '2024-05-02 12:00:00+00:00'", "tstz >= TIMESTAMP '2024-05-05 00:00:00'", "tstz < TIMESTAMP '2024-05-04 10:00:00+02:00'",
    "tstz < TIMESTAMPTZ '2024-05-04 10:00:00+02:00'",
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
    "price * 2 > 100", "price + 1 > 0", "price / 4 > 10", "abs(price) < 1", "mid + small * 2 > 100", "mid + CAST(small AS INT) * 2 > 100",
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


FAMILIES: list = [
    # 1. LIKE with a backslash and a leading or trailing % (a backslash is no escape character)
    "path LIKE 'C:\\temp%'", "path NOT LIKE '%\\y'", "path LIKE 'x\\y%'", "path LIKE '%\\\\%'", "path LIKE 'x\\_z'",
    # 2. a FLOAT against a DOUBLE constant compares in DOUBLE
    "ratio = 0.1e0", "ratio = 1e300", "ratio IN (0.1e0, 0.5)", "ratio BETWEEN 0.1e0 AND 1", "ratio = CAST(0.1 AS DOUBLE)", "ratio < 0.3e0",
    # 3. // on DOUBLE, FLOAT and DECIMAL is the plain quotient (DuckDB 2.0)
    "x // 2 = -3.75", "amount // 2 = 3.625", "price // 4 > 10", "ratio // 2 = 0.25",
    # 4. round with negative digits
    "round(x, -1) = 20", "round(price, -2) = 100", "round(qty, -1) = 10", "round(amount, -2) = 200",
    # 5. a quoted number with a fraction against an integer or a decimal (rounded)
    "qty = '6.5'", "qty = '-2.5'", "price IN ('1.255', '12.505', '-0.005')", "qty > '2.5'", "codes = 7",
    # 6. Unicode case: simple case mapping (upper('ß') is 'ẞ'), ILIKE by lower()
    "upper(word) = 'SS'", "upper(word) = 'ẞ'", "lower(word) = 'i'", "word ILIKE 's'", "word ILIKE 'k'", "lower(word) = 'straße'",
    # 7. % on floats and decimals: fmod, exact for decimals
    "amount % 2 = -1.5", "price % 95 = -12.51", "x % 2 = 1.5", "price % 0.07 = 0.01",
    # 8. FLOAT with DECIMAL computes in FLOAT
    "coalesce(price, ratio) = 0.5", "price + ratio > 10.3", "ratio * price < 0.1",
    # 9. BOOLEAN against a number compares as numbers
    "flag = 2", "flag = 1", "flag = qty", "flag < 2", "flag IN (0, 2)",
    # 10. CAST(... AS VARCHAR) and || of floats, decimals, timestamps
    "CAST(x AS VARCHAR) IN ('1e-07', 'nan', '1e+16', '-0.0')", "CAST(ts AS VARCHAR) LIKE '2024-05-0_ __:__:__'", "status || amount = 'new30.0'",
    "concat(qty, ratio) = '30.5'", "CAST(price AS VARCHAR) LIKE '%.0_'", "CAST(ratio AS VARCHAR) = '0.1'", "CAST(day AS VARCHAR) = '2024-05-03'",
    # 11. CAST to a DECIMAL of smaller scale rounds half away from zero
    "CAST(price AS DECIMAL(10,1)) = 12.5", "CAST(price AS DECIMAL(5,0)) = -13", "CAST(amount AS DECIMAL(5,1)) = 7.3",
    # 12. integer arithmetic past 64 bits: DuckDB's constant moves answer exactly, else it raises
    "id + 9223372036854775800 > 0", "id + 9223372036854775800 < 0", "id * 4611686018427387904 > 0", "big * 2 = 0", "big + 1 > 0",
    "-big = 1", "big - 1 < 0",
    # 13. IN lists take one type first
    "day IN (TIMESTAMP '2024-05-03 00:00:00', '2024-05-04 10:00:00')", "qty IN (1, 2.5)", "qty IN ('1', 2)",
    # 14. a TIMESTAMP literal keeps microseconds
    "ts_ns > TIMESTAMP '2024-05-03 12:00:00.123456789'", "ts_ns > TIMESTAMP_NS '2024-05-03 12:00:00.123456789'",
    # raw exceptions once: now DuckDB's answer or its refusal
    "qty = 'NaN'", "price = 'inf'", "qty + 0 = '3.4e+38'", "qty + 0 = '1e+300'", "qty < u64", "u64 > big",
    # refused where DuckDB answers
    "day + INTERVAL 1 DAY = DATE '2024-05-04'", "ts - INTERVAL '2 hours' < TIMESTAMP '2024-05-03'", "ts + INTERVAL 1 MONTH > TIMESTAMP '2024-06-05'",
    "date_trunc('day', ts + INTERVAL 12 HOUR) = TIMESTAMP '2024-05-04'", "u64 + 1 > 5", "abs(u64) > 2", "coalesce(u64, 0) > 9223372036854775808",
    "u64 // 2 > 2", "qty IS NULL OR qty IS NOT NULL OR CAST(status AS INT) = 1", "CASE WHEN qty > 100 THEN CAST(status AS INT) ELSE 0 END = 0",
    "coalesce(id, CAST(status AS INT)) > 0", "hour(day) = 0", "minute(day) = 0", "extract(MINUTE FROM day) = 0",
    # answered where DuckDB refuses
    "qty % 0 IS NULL", "qty // 0 = 1", "amount // 0 > 1", "price % 0 = 1", "flag IN (FALSE, 'true', 0)", "id * '2' = 4", "CAST(1e300 AS FLOAT) > ratio",
    "u32 = '-1'", "qty > '1e400'", "amount < TRUE", "status LIKE '%' ESCAPE '%'", "codes = 5 AND status = 'new'",
    # issue 53: DuckDB's spellings, and the hint for double quotes
    "isnan(amount)", "NOT isnan(amount)", "isinf(x)", "status = \"lost\"",
    # DuckDB 2.0.1's rewrites decide what raises: integer chains take their constants first, the
    # IN rewriter turns the lists it reaches into OR chains (evaluated lazily) and leaves the
    # others whole, a function of NULL is a literal NULL, a BIGINT or FLOAT keeps its cast to
    # DOUBLE, DECIMAL % computed in DOUBLE still raises on 0, an invalid pattern raises when
    # the filter is planned, a LIKE that ends with its escape character raises per string
    "(id + 9223372036854775807) + -10000 > 0", "(2 * id) * 4611686018427387904 <> 5", "qty IN (qty, 10 // (qty - qty))",
    "id > 100000 OR qty IN (qty, 10 // (qty - qty))", "NOT (qty IN (qty, 10 // (qty - qty)))", "lower(NULL) > day",
    "CASE WHEN 1 = 2 THEN 'x' END > day", "upper(CASE WHEN 1 = 2 THEN status END) > day", "(1 - big) != 0e0", "(big + 0) = 1e0",
    "price % CAST(0 AS DECIMAL(38,10)) > 0", "qty > 1000 AND regexp_matches(status, '(')", "regexp_matches(status, '(') OR TRUE",
    "status IS NULL AND status LIKE '%' ESCAPE '%'", "id > 100000 AND status LIKE '%' ESCAPE '%'",
]  # fmt: skip


def clause(entry) -> tuple[str, str]:
    """(the clause, DuckDB's spelling of it)."""
    return (entry, entry) if isinstance(entry, str) else entry
