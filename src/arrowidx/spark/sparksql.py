"""pyarrow Expressions as Spark SQL text meaning exactly the same rows.

:func:`arrowidx.spark.read` hands the filter to Spark's own Parquet reader. SQL text goes to
Spark as it is (its meaning is Spark SQL's). A ``pyarrow.compute.Expression`` means what
pyarrow means, which differs from Spark SQL in places: NaN (pyarrow: IEEE, ``NaN > 1`` is
false; Spark: NaN is the largest value and equals itself), ``is_in`` on NULL (pyarrow:
false, or true with a NULL in the set; Spark: NULL), non-Kleene ``and``/``or``. So an
Expression is bound to the schema (:func:`arrowidx.predicate.bind`: literals cast exactly to
the column types) and written out node by node, each node with pyarrow's three-valued answer
(TRUE, FALSE, NULL) spelled out in Spark SQL. A node with no exact spelling (a function
other than the comparisons, ``is_in``, ``is_null``/``is_valid``, AND/OR/NOT; ``is_in`` on
floats; nanosecond timestamps; types Spark has no literal for) makes the whole Expression
untranslatable: :func:`to_spark_sql` returns None and the caller reads through the data
source, which evaluates the Expression itself.
"""

from __future__ import annotations

import datetime
import math

import pyarrow as pa

from ..predicate import And, Compare, Const, IsIn, IsNull, Node, Not, Opaque, Or, Visitor, bind

_OPS = {"eq": "=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class _Untranslatable(Exception):
    pass


def quote(name: str) -> str:
    """A column name as a Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def to_spark_sql(expr, schema: pa.Schema) -> str | None:
    """Spark SQL text selecting exactly the rows ``Table.filter(expr)`` selects (every node
    with pyarrow's three-valued answer), or None when some part has no exact spelling."""
    try:
        return _sql(bind(expr, schema), schema)
    except _Untranslatable:
        return None


def _sql(node: Node, schema: pa.Schema) -> str:
    return _SparkSql(schema).visit(node)


class _SparkSql(Visitor[str]):
    """A node as Spark SQL text of the same three-valued meaning (:class:`_Untranslatable`
    when some part has no exact spelling)."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema

    def default(self, node: Node) -> str:
        raise _Untranslatable(type(node).__name__)

    def constant(self, node: Const) -> str:
        return {True: "TRUE", False: "FALSE", None: "CAST(NULL AS BOOLEAN)"}[node.value]

    def negation(self, node: Not) -> str:
        return f"(NOT {self.visit(node.child)})"

    def conjunction(self, node: And) -> str:
        return self._junction(node, " AND ")

    def disjunction(self, node: Or) -> str:
        return self._junction(node, " OR ")

    def _junction(self, node: And | Or, word: str) -> str:
        parts = [self.visit(c) for c in node.children]
        joined = "(" + word.join(parts) + ")"
        if node.kleene:
            return joined
        # pyarrow's plain and/or: NULL as soon as one side is NULL
        nulls = " OR ".join(f"({p}) IS NULL" for p in parts)
        return f"(CASE WHEN {nulls} THEN CAST(NULL AS BOOLEAN) ELSE {joined} END)"

    def is_null(self, node: IsNull) -> str:
        return f"({quote(node.column)} IS NULL)"

    def compare(self, node: Compare) -> str:
        return _compare(node, self.schema.field(node.column).type)

    def is_in(self, node: IsIn) -> str:
        return _is_in(node, self.schema.field(node.column).type)

    def opaque(self, node: Opaque) -> str:
        if node.call is not None and node.call[0] == "is_nan":
            column, t = quote(node.call[1]), self.schema.field(node.call[1]).type
            if pa.types.is_floating(t.value_type if pa.types.is_dictionary(t) else t):
                # pyarrow's is_nan is NULL for a NULL row; Spark's isnan(NULL) is FALSE
                return f"(CASE WHEN {column} IS NULL THEN CAST(NULL AS BOOLEAN) ELSE isnan({column}) END)"
        raise _Untranslatable(type(node).__name__)


def _compare(node: Compare, t: pa.DataType) -> str:
    column = quote(node.column)
    t = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_floating(t):
        value = node.literal.as_py()
        if value is None:
            return "CAST(NULL AS BOOLEAN)"
        if math.isnan(value):  # pyarrow: every comparison with NaN is FALSE (NULL for NULL rows)
            return f"(CASE WHEN {column} IS NULL THEN CAST(NULL AS BOOLEAN) ELSE FALSE END)"
        text = f"{column} {_OPS[node.op]} {_literal(node.literal, t)}"
        if node.op in ("gt", "ge"):  # Spark: NaN is larger than every number; pyarrow: not
            return f"({text} AND NOT isnan({column}))"
        return f"({text})"
    return f"({column} {_OPS[node.op]} {_literal(node.literal, t)})"


def _is_in(node: IsIn, t: pa.DataType) -> str:
    t = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_floating(t):
        raise _Untranslatable("is_in on a float column")  # NaN and -0.0 as a hash set sees them
    column = quote(node.column)
    values = [_literal(v, t) for v in node.values]
    member = f"({column} IN ({', '.join(values)}))" if values else f"(CASE WHEN {column} IS NULL THEN CAST(NULL AS BOOLEAN) ELSE FALSE END)"
    match = node.null_match
    if match in ("MATCH", "SKIP"):  # never NULL: a NULL row is TRUE only when MATCH-ing a NULL in the set
        hit = f"coalesce({member}, FALSE)"
        return f"({column} IS NULL OR {hit})" if match == "MATCH" and node.null_in_set else f"({hit})"
    if match == "EMIT_NULL":
        return member
    if match == "INCONCLUSIVE":
        return f"(CASE WHEN {member} THEN TRUE ELSE CAST(NULL AS BOOLEAN) END)" if node.null_in_set else member
    raise _Untranslatable(f"is_in null matching {match}")


def _literal(value: pa.Scalar, t: pa.DataType) -> str:
    """``value`` (of the column type ``t``) as a Spark SQL literal of that value exactly."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    v = value.as_py()
    if v is None:
        raise _Untranslatable("NULL literal")
    if pa.types.is_boolean(t):
        return "TRUE" if v else "FALSE"
    if pa.types.is_integer(t):
        if pa.types.is_uint64(t):
            return f"CAST('{int(v)}' AS DECIMAL(20,0))"  # Spark reads UINT64 as DECIMAL(20,0)
        return f"CAST({int(v)} AS BIGINT)"
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        text = "Infinity" if v == math.inf else "-Infinity" if v == -math.inf else repr(float(v))
        return f"CAST('{text}' AS {'FLOAT' if pa.types.is_float32(t) else 'DOUBLE'})"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return string_literal(v)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return f"X'{bytes(v).hex()}'"
    if pa.types.is_decimal(t):
        return f"CAST('{v}' AS DECIMAL({t.precision},{t.scale}))"
    if pa.types.is_date32(t):
        return f"DATE'{v.isoformat()}'"
    if pa.types.is_timestamp(t) and t.unit in ("s", "ms", "us"):
        micros = value.cast(pa.timestamp("us", tz=t.tz)).value
        if t.tz is not None:
            return f"timestamp_micros({micros})"  # an instant, whatever the session time zone
        wall = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=micros)
        return f"TIMESTAMP_NTZ'{wall.isoformat(sep=' ', timespec='microseconds')}'"
    raise _Untranslatable(f"no Spark literal for {t}")


def string_literal(text: str) -> str:
    """``text`` as a Spark SQL string literal (Spark unescapes backslashes in literals)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
