"""The bound tree -> a ``pyarrow.compute.Expression`` TRUE exactly where DuckDB is TRUE (the
pushdown the indexes and Parquet statistics prune with), for the parts that have one.

Only comparisons of a column with constants (and IN, IS NULL, LIKE, IS [NOT] DISTINCT FROM,
AND/OR/NOT of those) are pushed; a cast the binder put on the column is undone by mapping
the constant into the column's own values (``qty > 2.5`` on integers is ``qty >= 3``,
``f32 = 4.64e0`` is FALSE). NOT is pushed to the leaves, so a NULL is never selected by a
negation. Where SQL and Arrow differ the Expression spells out SQL's meaning: NaN is the
largest float and equals itself; ``-0.0 = 0.0``.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import values as V
from .tree import FLIP, NEGATE, Call, Column, Constant, Node, Visitor
from .types import SqlType, int_range, stamp_unit, to_arrow


class NoArrow(Exception):
    """This part has no exact pyarrow Expression: it goes to the residual."""


class ArrowLowering(Visitor):
    """``lower(node)`` -> Expression or NoArrow; ``schema`` gives the columns' Arrow types."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema

    def lower(self, node: Node, neg: bool = False) -> pc.Expression:
        return self.visit(node, neg)

    def default(self, node, neg):
        raise NoArrow

    def constant(self, node: Constant, neg):
        if node.type.id in ("BOOLEAN", "NULL"):
            return pc.scalar(False if node.value is None else bool(node.value) != neg)
        raise NoArrow

    def column(self, node: Column, neg):
        if node.type.id == "BOOLEAN":
            return pc.field(node.name) == pc.scalar(not neg)
        raise NoArrow

    def negation(self, node: Call, neg):
        return self.lower(node.args[0], not neg)

    def conjunction(self, node: Call, neg):
        left, right = self.lower(node.args[0], neg), self.lower(node.args[1], neg)
        return (left & right) if (node.op == "and") != neg else (left | right)

    def is_null(self, node: Call, neg):
        (arg,) = node.args
        if not isinstance(arg, Column):
            raise NoArrow
        null = (node.op == "is_null") != neg
        return pc.field(arg.name).is_null() if null else pc.field(arg.name).is_valid()

    def comparison(self, node: Call, neg):
        a, b = node.args
        op = NEGATE[node.op] if neg else node.op
        if isinstance(a, Constant) and not isinstance(b, Constant):
            a, b, op = b, a, FLIP[op]
        if isinstance(b, Constant):
            return self.compare(op, a, b)
        if isinstance(a, Column) and isinstance(b, Column) and a.type == b.type and not a.type.floating:
            return _op(op, pc.field(a.name), pc.field(b.name))
        raise NoArrow

    def distinct(self, node: Call, neg):
        a, b = node.args
        if isinstance(a, Constant):
            a, b = b, a
        if not isinstance(b, Constant):
            raise NoArrow
        column, _ = self.target(a)
        field = pc.field(column.name)
        distinct = (node.op == "distinct") != neg
        if b.value is None:
            return field.is_valid() if distinct else field.is_null()
        if distinct:
            return self.compare("!=", a, b) | field.is_null()
        return self.compare("=", a, b)

    def in_list(self, node: Call, neg):
        arg = node.args[0]
        column, to = self.target(arg)
        frm = column.type
        field = pc.field(column.name)
        if node.extra is not None:  # a long list, converted in bulk
            values, has_null = node.extra
            items = _series_values(values, to)
        else:
            if not all(isinstance(i, Constant) for i in node.args[1:]):
                raise NoArrow
            items = [i.value for i in node.args[1:] if i.value is not None]
            has_null = any(i.value is None for i in node.args[1:])
        if neg and has_null:
            return pc.scalar(False)  # x NOT IN (..., NULL) is never TRUE
        if node.extra is not None and isinstance(values, pa.Array) and frm == to and (frm.integral or frm.id == "VARCHAR"):
            arrow_type = self.schema.field(column.name).type
            arrow_type = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
            present = values.drop_null()
            if len(present):  # the column's own type: the values as they are
                matched = field.isin(present.cast(arrow_type))
                return (~matched & field.is_valid()) if neg else matched
        mapped = [m for m in (self.equal_value(column, frm, to, v) for v in items) if m is not None]
        t = column.type
        arrow_type = self.schema.field(column.name).type
        if pa.types.is_dictionary(arrow_type):
            arrow_type = arrow_type.value_type
        if t.floating:
            has_nan = any(isinstance(v, float) and math.isnan(v) for v in mapped)
            numbers = [v for v in mapped if not (isinstance(v, float) and math.isnan(v))]
            if any(v == 0.0 for v in numbers):
                numbers += [0.0, -0.0]
            parts = [field.isin(pa.array(numbers, arrow_type))] if numbers else []
            if has_nan:
                parts.append(pc.is_nan(field))
            matched = parts[0] if len(parts) == 1 else (parts[0] | parts[1]) if parts else pc.scalar(False)
        else:
            if not mapped:
                return field.is_valid() if neg else pc.scalar(False)
            matched = field.isin(_arrow_values(mapped, t, arrow_type))
        return (~matched & field.is_valid()) if neg else matched

    def like(self, node: Call, neg):
        (arg,) = node.args
        pattern, escape, ilike = node.extra
        if ilike or not isinstance(arg, Column) or pa.types.is_dictionary(self.schema.field(arg.name).type):
            raise NoArrow  # (pyarrow's string kernels take no dictionary)
        match = like_expression(pc.field(arg.name), pattern, escape)
        return (~match) if neg else match

    # -- comparisons with a constant ------------------------------------------------------------
    def target(self, node: Node) -> tuple[Column, SqlType]:
        """The column under ``node`` (a column, or a column in a cast the binder put in) and
        the type it is compared in."""
        if isinstance(node, Column):
            return node, node.type
        if isinstance(node, Call) and node.op == "cast" and isinstance(node.args[0], Column) and widening(node.args[0].type, node.type):
            return node.args[0], node.type
        raise NoArrow

    def compare(self, op: str, node: Node, const: Constant) -> pc.Expression:
        column, to = self.target(node)
        field = pc.field(column.name)
        if const.value is None:
            return pc.scalar(False)  # x op NULL is NULL: never TRUE
        frm = column.type
        value = const.value
        if frm.floating and to.floating:
            return self._float(op, field, frm, value)
        if frm == to:
            return _op(op, field, self.scalar(column, value))
        bound = _exact_bound(frm, to, value)
        if bound is None:
            raise NoArrow
        exact, below, above = bound  # the column's value equal to the constant, or the nearest ones around it
        lo, hi = _range(frm)
        if exact is not None:
            if not lo <= exact <= hi:
                return self._outside(op, field, exact > hi)
            return _op(op, field, self.scalar(column, exact))
        if op == "=":
            return pc.scalar(False)
        if op == "!=":
            return field.is_valid()
        if op in ("<", "<="):
            if below < lo:
                return pc.scalar(False)
            return field <= self.scalar(column, min(below, hi))
        if above > hi:
            return pc.scalar(False)
        return field >= self.scalar(column, max(above, lo))

    def _outside(self, op, field, above: bool):
        true_for_values = op == "!=" or (op in ("<", "<=") if above else op in (">", ">="))
        return field.is_valid() if true_for_values else pc.scalar(False)

    def _float(self, op: str, field, frm: SqlType, value: float) -> pc.Expression:
        """A FLOAT/DOUBLE column against a number (compared in DOUBLE when ``to`` is): SQL's
        NaN is the largest value and equals itself."""
        if math.isnan(value):
            return {
                "=": pc.is_nan(field), "!=": ~pc.is_nan(field), "<": ~pc.is_nan(field),
                "<=": field.is_valid(), ">": pc.scalar(False), ">=": pc.is_nan(field),
            }[op]  # fmt: skip
        arrow_type = pa.float32() if frm.id == "FLOAT" else pa.float64()
        if frm.id == "FLOAT":
            single = V.float32(value)
            if single != value:  # not a FLOAT: compare with its FLOAT neighbours
                if op == "=":
                    return pc.scalar(False)
                if op == "!=":
                    return field.is_valid()
                below = single if single < value else float(np.nextafter(np.float32(single), np.float32(-np.inf)))
                above = single if single > value else float(np.nextafter(np.float32(single), np.float32(np.inf)))
                op, value = ("<=", below) if op in ("<", "<=") else (">=", above)
        expr = _op(op, field, pa.scalar(value, arrow_type))
        if op in (">", ">="):  # SQL puts NaN above every number; Arrow says NaN > x is false
            expr = expr | pc.is_nan(field)
        return expr

    def scalar(self, column: Column, value) -> pa.Scalar:
        """``value`` (in the column's SQL type) as a scalar of the column's Arrow type."""
        arrow_type = self.schema.field(column.name).type
        if pa.types.is_dictionary(arrow_type):
            arrow_type = arrow_type.value_type
        return _arrow_values([value], column.type, arrow_type)[0]

    def equal_value(self, column: Column, frm: SqlType, to: SqlType, value):
        """The column's value equal to ``value`` of type ``to`` (None: none is)."""
        if value is None:
            return None
        if frm == to or (frm.floating and to.floating and frm.id == to.id):
            return value
        if frm.floating and to.floating:  # FLOAT column, DOUBLE value
            if math.isnan(value):
                return value
            return value if V.float32(value) == value else None
        bound = _exact_bound(frm, to, value)
        if bound is None:
            raise NoArrow
        exact = bound[0]
        lo, hi = _range(frm)
        return exact if exact is not None and lo <= exact <= hi else None


def widening(frm: SqlType, to: SqlType) -> bool:
    """CAST(``frm`` AS ``to``) holds every value and never raises (so a comparison through it
    can be answered on the column's own values)."""
    if frm.integral and to.integral:
        lo, hi = int_range(frm.id)
        tlo, thi = int_range(to.id)
        return tlo <= lo and hi <= thi
    if frm.integral and to.id == "DECIMAL":
        lo, hi = int_range(frm.id)
        return max(abs(lo), hi) < 10 ** (to.width - to.scale)
    if frm.integral and to.floating:
        return True
    if frm.id == "DECIMAL" and to.id == "DECIMAL":
        return to.scale >= frm.scale and to.width - to.scale >= frm.width - frm.scale
    if frm.floating and to.floating:
        return frm.id == "FLOAT" or to.id == "DOUBLE"
    if frm.id == "DATE" and to.stamp:
        return not to.zoned and stamp_unit(to) != "ns"
    if frm.stamp and to.stamp and not frm.zoned and not to.zoned:
        a, b = V.UNIT_PER_SECOND[stamp_unit(frm)], V.UNIT_PER_SECOND[stamp_unit(to)]
        return b >= a and stamp_unit(to) != "ns"
    return False


def _op(op: str, field, scalar) -> pc.Expression:
    return {"=": field.__eq__, "!=": field.__ne__, "<": field.__lt__, "<=": field.__le__, ">": field.__gt__, ">=": field.__ge__}[op](scalar)


def _range(t: SqlType) -> tuple[int, int]:
    if t.integral:
        return int_range(t.id)
    if t.id == "DECIMAL":
        return -(10**t.width) + 1, 10**t.width - 1
    return -(2**63), 2**63 - 1


def _exact_bound(frm: SqlType, to: SqlType, value):
    """A value of ``to`` in the domain of the column type ``frm`` when CAST(frm AS to) is
    exact and order-keeping: (the equal column value or None, the largest column value below
    it, the smallest above it). None: no such mapping (the residual compares)."""
    exact_value = _as_fraction(value, to)
    if exact_value is None:
        return None
    if frm.integral:
        if to.floating and not _int_exact_in_float(frm, to):
            return None
        if not (to.integral or to.id == "DECIMAL" or to.floating):
            return None
        q = exact_value
    elif frm.id == "DECIMAL" and (to.id == "DECIMAL" and to.scale >= frm.scale):
        q = exact_value * 10**frm.scale
    elif frm.id == "DATE" and to.stamp and not to.zoned and stamp_unit(to) != "ns":
        q = exact_value / (86_400 * V.UNIT_PER_SECOND[stamp_unit(to)])
    elif frm.stamp and to.stamp and not frm.zoned and not to.zoned and stamp_unit(to) != "ns" and V.UNIT_PER_SECOND[stamp_unit(to)] >= V.UNIT_PER_SECOND[stamp_unit(frm)]:
        q = exact_value / (V.UNIT_PER_SECOND[stamp_unit(to)] // V.UNIT_PER_SECOND[stamp_unit(frm)])
    else:
        return None
    if q.denominator == 1:
        return int(q), int(q) - 1, int(q) + 1
    return None, math.floor(q), math.ceil(q)


def _int_exact_in_float(frm: SqlType, to: SqlType) -> bool:
    lo, hi = int_range(frm.id)
    limit = 2**24 if to.id == "FLOAT" else 2**53
    return -limit <= lo and hi <= limit


def _as_fraction(value, t: SqlType) -> Fraction | None:
    if t.id == "DECIMAL":
        return Fraction(value, 10**t.scale)
    if t.floating:
        if math.isnan(value) or math.isinf(value):
            return None
        return Fraction(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if t.id == "DATE" or t.stamp:
        if value in (V.DATE_INF, V.DATE_NINF, V.STAMP_INF, V.STAMP_NINF):
            return None
    return Fraction(value)


def _arrow_values(values: list, t: SqlType, arrow_type: pa.DataType) -> pa.Array:
    """Values of SQL type ``t`` as an Arrow array of the column's type."""
    if t.id == "DECIMAL":
        return pa.array([Decimal(v).scaleb(-t.scale) for v in values], arrow_type)
    if t.id == "DATE":
        return pa.array(values, pa.int32()).cast(pa.date32()).cast(arrow_type)
    if t.stamp:
        unit_type = pa.timestamp(stamp_unit(t), tz="UTC" if t.zoned else None)
        return pa.array(values, pa.int64()).cast(unit_type).cast(arrow_type)
    if t.id == "FLOAT":
        return pa.array(values, pa.float32()).cast(arrow_type)
    return pa.array(values, to_arrow(t)).cast(arrow_type)


def _series_values(values, t: SqlType) -> list:
    """A long IN list's values (a Polars series or an Arrow array) in :mod:`.values` form."""
    from .polars_casts import from_polars_value

    if hasattr(values, "to_list"):  # a Polars series
        import polars as pl

        if values.dtype == pl.Int128:
            return [int(v) for v in values.cast(pl.Decimal(38, 0)).to_list() if v is not None]
        if values.dtype == pl.Date:
            return [v for v in values.cast(pl.Int32).to_list() if v is not None]
        if isinstance(values.dtype, pl.Datetime):
            from .polars_casts import stamp_ints

            return [v for v in pl.select(stamp_ints(pl.lit(values), t)).to_series().to_list() if v is not None]
        return [from_polars_value(v, t) for v in values.to_list() if v is not None]
    return [v for v in values.to_pylist() if v is not None]


_META = set("\\.^$|?*+()[]{}")


def regex_escape(text: str) -> str:
    """``text`` as a literal in RE2 / Rust regex syntax."""
    return "".join("\\" + ch if ch in _META else ch for ch in text)


def like_regex(pattern: str, escape: str | None) -> str:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if escape and ch == escape:
            out.append(regex_escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else regex_escape(ch))
        i += 1
    return "(?s)^" + "".join(out) + "$"


def like_expression(field, pattern: str, escape: str | None) -> pc.Expression:
    """``field LIKE pattern`` as pyarrow's starts_with / ends_with / substring / regex (not
    ``match_like``, whose fast paths read a backslash as an escape)."""
    special = set("%_") | ({escape} if escape else set())
    core = pattern.strip("%")
    if not (set(core) & special) and pattern:
        if set(pattern) == {"%"}:
            return pc.match_substring(field, pattern="")  # TRUE, and NULL for NULL
        lead, trail = pattern.startswith("%"), pattern.endswith("%")
        if lead and trail:
            return pc.match_substring(field, pattern=core)
        if lead:
            return pc.ends_with(field, pattern=core)
        if trail:
            return pc.starts_with(field, pattern=core)
        return field == pa.scalar(pattern)
    return pc.match_substring_regex(field, pattern=like_regex(pattern, escape))
