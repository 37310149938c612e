"""The one result comparator of pqe's tests, fuzzer and benchmarks: is `actual` (pqe's answer)
the same answer as `expected` (the oracle's, usually DuckDB through `pqe.testing.oracle`)?

    from pqe.testing.compare import compare
    m = compare(pqe_table, duckdb_table, sql=sql)    # ORDER BY keys and LIMIT from the text
    assert m is None, m

Checked, in this order, and reported as a `Mismatch` (kind, message, row, column, values, types):

1. shape: the number of columns and of rows;
2. names: column names, case-insensitively (see ALLOWED_DIFFERENCES);
3. types: each column's *logical* SQL type (`logical_type`): Arrow encodings of one type are
   one type, and only the differences listed in ALLOWED_DIFFERENCES are accepted. INTEGER vs
   DOUBLE, DECIMAL vs DOUBLE, DATE vs TIMESTAMP, VARCHAR vs a number are mismatches;
4. values: integers, decimals, text, dates and timestamps exactly, floats to a relative
   tolerance (`float_rel`, 1e-6) with NaN == NaN, -0.0 == 0.0 and inf == inf of one sign;
5. order: without ORDER BY keys the rows compare as a multiset. With `order_by` (output column
   positions or names of the top-level ORDER BY keys), the sequence of key values must be the
   expected one and rows with equal keys may come in any order (the multiset of rows of each
   run of equal keys is compared). `limit=True` (ORDER BY .. LIMIT) also accepts other rows in
   the last run of equal keys: which of the tied rows make the cut is not defined.
   `ordered=True` compares rows in exact sequence.

`order_spec(sql)` derives `order_by` and `limit` from a query's text. This module imports
neither duckdb nor anything else outside pqe's own dependencies: it ships in the wheel.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["ALLOWED_DIFFERENCES", "Allowance", "LogicalType", "Mismatch", "OrderSpec",
           "assert_same", "compare", "describe_allowed", "logical_type", "order_spec",
           "python_value", "table_rows", "type_difference", "values_equal"]

FLOAT_REL = 1e-6
FLOAT_ABS = 1e-9        # below this two floats are equal whatever their ratio (sums of 0.1s)
GREEDY_LIMIT = 5_000    # largest group of rows matched pairwise when sorting cannot align them
DUCKDB_TYPE_KEY = b"duckdb_type"   # field metadata set by pqe.testing.oracle: DuckDB's type name


# ---- logical types ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LogicalType:
    """A column's SQL type, independent of its Arrow encoding.

    kind: BOOLEAN INTEGER FLOAT DECIMAL VARCHAR BLOB DATE TIME TIMESTAMP TIMESTAMPTZ INTERVAL
    NULL LIST STRUCT MAP OTHER. bits: INTEGER/FLOAT width; precision/scale: DECIMAL; tz:
    TIMESTAMPTZ zone; children: element type (LIST), field types (STRUCT), key/value (MAP)."""

    kind: str
    bits: int | None = None
    precision: int | None = None
    scale: int | None = None
    tz: str | None = None
    children: tuple = ()
    names: tuple = ()
    signed: bool = True
    text: str = ""   # OTHER: the Arrow type

    def __str__(self) -> str:
        k = self.kind
        if k == "INTEGER":
            name = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT", 128: "HUGEINT"}.get(
                self.bits or 64, f"INT{self.bits}")
            return name if self.signed else "U" + name
        if k == "FLOAT":
            return "REAL" if self.bits == 32 else "DOUBLE"
        if k == "DECIMAL":
            return f"DECIMAL({self.precision},{self.scale})"
        if k == "TIMESTAMPTZ":
            return f"TIMESTAMPTZ({self.tz})"
        if k == "LIST":
            return f"{self.children[0]}[]"
        if k == "STRUCT":
            return "STRUCT(" + ", ".join(f"{n} {t}" for n, t in zip(self.names, self.children)) + ")"
        if k == "MAP":
            return f"MAP({self.children[0]}, {self.children[1]})"
        if k == "OTHER":
            return f"OTHER({self.text})"
        return k


_INT_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64,
             pa.uint8(): 8, pa.uint16(): 16, pa.uint32(): 32, pa.uint64(): 64}


def logical_type(t: pa.DataType | pa.Field) -> LogicalType:
    """The SQL type of an Arrow type (or field: DuckDB's own type name in the field metadata,
    set by `pqe.testing.oracle.query`, tells a HUGEINT from a DECIMAL(38,0))."""
    if isinstance(t, pa.Field):
        meta = t.metadata or {}
        duck = meta.get(DUCKDB_TYPE_KEY, b"").decode()
        if duck in ("HUGEINT", "UHUGEINT"):
            return LogicalType("INTEGER", bits=128, signed=duck == "HUGEINT")
        t = t.type
    if pa.types.is_dictionary(t):
        return logical_type(t.value_type)
    if pa.types.is_run_end_encoded(t):
        return logical_type(t.value_type)
    if pa.types.is_boolean(t):
        return LogicalType("BOOLEAN")
    if pa.types.is_integer(t):
        return LogicalType("INTEGER", bits=_INT_BITS[t], signed=pa.types.is_signed_integer(t))
    if pa.types.is_floating(t):
        return LogicalType("FLOAT", bits=t.bit_width if t.bit_width > 16 else 32)
    if pa.types.is_decimal(t):
        return LogicalType("DECIMAL", precision=t.precision, scale=t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return LogicalType("VARCHAR")
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)):
        return LogicalType("BLOB")
    if pa.types.is_date(t):
        return LogicalType("DATE")
    if pa.types.is_time(t):
        return LogicalType("TIME")
    if pa.types.is_timestamp(t):
        return LogicalType("TIMESTAMPTZ", tz=t.tz) if t.tz else LogicalType("TIMESTAMP")
    if pa.types.is_interval(t) or pa.types.is_duration(t):
        return LogicalType("INTERVAL")
    if pa.types.is_null(t):
        return LogicalType("NULL")
    if pa.types.is_map(t):
        return LogicalType("MAP", children=(logical_type(t.key_field), logical_type(t.item_field)))
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return LogicalType("LIST", children=(logical_type(t.value_field),))
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return LogicalType("STRUCT", children=tuple(logical_type(f) for f in fields),
                           names=tuple(f.name for f in fields))
    return LogicalType("OTHER", text=str(t))


# ---- the allowed differences -----------------------------------------------------------------

@dataclass(frozen=True)
class Allowance:
    name: str
    what: str        # the difference
    why: str         # one-line justification
    applies: Callable[[LogicalType, LogicalType], bool] | None = None  # type rules only


def _ints(a: LogicalType, e: LogicalType) -> bool:
    return a.kind == e.kind == "INTEGER"


def _exact_integer_sum(a: LogicalType, e: LogicalType) -> bool:
    return a.kind == "DECIMAL" and a.scale == 0 and e.kind == "INTEGER" and e.bits == 128


def _decimal_precision(a: LogicalType, e: LogicalType) -> bool:
    return a.kind == e.kind == "DECIMAL" and a.scale == e.scale


def _decimal_scale_dropped(a: LogicalType, e: LogicalType) -> bool:
    return (a.kind == e.kind == "DECIMAL" and e.precision == 38
            and (e.scale or 0) < (a.scale or 0))


def _tz_name(a: LogicalType, e: LogicalType) -> bool:
    return a.kind == e.kind == "TIMESTAMPTZ"


# Every difference between pqe's and the oracle's answers that compare() accepts, in ONE place.
# "encoding" rows are Arrow encodings of a single SQL type (logical_type maps them together);
# "type" rows accept two different logical types; "value" and "name" rows relax those checks.
# Anything not listed is a mismatch.
ALLOWED_DIFFERENCES: tuple[Allowance, ...] = (
    Allowance("text encodings", "string / large_string / string_view / dictionary<string>",
              "one SQL VARCHAR; pqe normalizes text to string, DuckDB and Parquet use others"),
    Allowance("dictionary and run-end encodings", "dictionary<T> / run_end_encoded<T> vs T",
              "compression of a column, not a different type"),
    Allowance("binary encodings", "binary / large_binary / binary_view / fixed_size_binary",
              "one SQL BLOB"),
    Allowance("date encodings", "date32 vs date64", "one SQL DATE (days vs milliseconds)"),
    Allowance("timestamp units", "timestamp[s|ms|us|ns] of one zone-ness",
              "one SQL TIMESTAMP; pqe computes in us, Parquet files may hold ns or ms; values "
              "compare as instants to the nanosecond"),
    Allowance("list encodings", "list / large_list / fixed_size_list / list_view",
              "one SQL LIST of the element type"),
    Allowance("integer widths", "TINYINT / SMALLINT / INTEGER / BIGINT / HUGEINT",
              "pqe does integer arithmetic in BIGINT (pqe/types.py) where DuckDB keeps INTEGER, "
              "and DuckDB sums integers into HUGEINT; all are exact integers, compared exactly",
              _ints),
    Allowance("decimal precision", "DECIMAL(p1,s) vs DECIMAL(p2,s)",
              "precision bounds storage only: DuckDB widens SUM to DECIMAL(38,s), pqe may keep "
              "a tighter one; same scale, values compared exactly", _decimal_precision),
    Allowance("decimal scale dropped by DuckDB at 38 digits", "DECIMAL(p,s1) vs DECIMAL(38,s2), "
              "s2 < s1", "DuckDB drops scale when unifying DECIMAL(38,s) with a finer DECIMAL "
              "(UNION, CASE, IN); the expected value must be the actual one rounded to s2",
              _decimal_scale_dropped),
    Allowance("time zone name", "TIMESTAMPTZ(tz1) vs TIMESTAMPTZ(tz2)",
              "a TIMESTAMPTZ value is an instant; the zone only selects how it is displayed",
              _tz_name),
    Allowance("untyped NULL column", "NULL vs any type, when every value is NULL",
              "a bare NULL has no SQL type; engines type it differently (null, INTEGER)"),
    Allowance("float special values", "NaN == NaN, -0.0 == 0.0, floats to relative 1e-6 "
              "(absolute 1e-9)", "summation order differs between plans and partitionings; "
              "NaN and -0.0 are values a result must keep, not errors"),
    Allowance("coarser DECIMAL for a DOUBLE (check_types=False only)", "DECIMAL(p,s) answer off "
              "by one unit in its last place from a DOUBLE expected value", "only for benchmarks "
              "of other engines (DataFusion's AVG returns DECIMAL(p,6)); pqe's own answers are "
              "type-checked, where DECIMAL vs DOUBLE is a mismatch"),
    # behaviour, not result types (applied by the fuzzer, pqe.testing.fuzz_engine)
    Allowance("INTEGER arithmetic overflow", "DuckDB raises 'Overflow in ... of INT32', pqe "
              "answers", "pqe computes integer arithmetic in BIGINT (pqe/types.py), so a "
              "narrower overflow does not exist in pqe; a BIGINT overflow must still raise"),
    Allowance("exact SUM of BIGINT", "DECIMAL(38,0) vs DuckDB's HUGEINT",
              "pqe sums BIGINT exactly into DECIMAL(38,0), as PostgreSQL into numeric (README); "
              "DuckDB sums into HUGEINT; both are exact integers, compared exactly",
              _exact_integer_sum),
    Allowance("parameter types", "a DB-API ? is typed by its value in pqe, by its place in "
              "DuckDB", "pqe binds parameters as typed literals (pqe.dbapi); the fuzzer "
              "checks their result types against DuckDB's answer to the literal text"),
    Allowance("name case", "column names compared case-insensitively",
              "unquoted identifiers are case-insensitive (pqe folds them to lower case, DuckDB "
              "keeps the spelling of the catalog or alias)"),
    Allowance("names of unaliased expressions", "any actual name when DuckDB's name is not a "
              "plain identifier (e.g. 'count_star()', '(a + 1)')",
              "SQL leaves the name of an unaliased expression implementation-dependent"),
)

_TYPE_RULES = [a for a in ALLOWED_DIFFERENCES if a.applies is not None]


def type_difference(actual: LogicalType, expected: LogicalType) -> tuple[bool, str | None]:
    """(acceptable, name of the allowance used or None when the types are equal)."""
    if actual == expected:
        return True, None
    if actual.kind == expected.kind and actual.kind in ("LIST", "MAP", "STRUCT"):
        if len(actual.children) != len(expected.children):
            return False, None
        if actual.kind == "STRUCT" and [n.lower() for n in actual.names] != [
                n.lower() for n in expected.names]:
            return False, None
        used = None
        for a, e in zip(actual.children, expected.children):
            ok, rule = type_difference(a, e)
            if not ok:
                return False, None
            used = used or rule
        return True, used
    for rule in _TYPE_RULES:
        if rule.applies(actual, expected):
            return True, rule.name
    return False, None


# ---- results ---------------------------------------------------------------------------------

@dataclass
class Mismatch:
    """Why two results differ. kind: columns | rows | names | types | values | order."""

    kind: str
    message: str
    row: int | None = None
    column: int | None = None
    column_name: str | None = None
    actual: object = None
    expected: object = None
    actual_type: str | None = None
    expected_type: str | None = None
    details: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join([self.message, *self.details])


@dataclass(frozen=True)
class OrderSpec:
    """What a query's text says about the order of its result."""

    order_by: list[int] | None    # output positions of the top-level ORDER BY keys (a prefix
                                  # of them when a later key is not an output column)
    limit: bool                   # LIMIT/OFFSET/FETCH at the top level
    deterministic: bool           # False: LIMIT without ORDER BY (any rows may come back)
    n_keys: int = 0               # ORDER BY keys in the query (> len(order_by): some unresolved)

    def kwargs(self) -> dict:
        return {"order_by": self.order_by, "limit": self.limit}


def order_spec(sql: str, dialect=None) -> OrderSpec:
    """`_order_spec`, memoized: a fuzz case compares one query's answers several times (per
    partition count, per oracle), and parsing it is a fifth of the comparison's time."""
    spec = _order_spec(sql, dialect)
    return dataclasses.replace(spec, order_by=None if spec.order_by is None
                               else list(spec.order_by))


@functools.lru_cache(maxsize=512)
def _order_spec(sql: str, dialect=None) -> OrderSpec:
    """The ORDER BY keys of `sql`'s top level, as output column positions. A key that is not
    an output column (ORDER BY an expression not selected) ends the list: the keys before it
    still order the result. Positions (ORDER BY 2), aliases and the projected expression's
    text are recognized; SELECT * keys resolve only by position."""
    import sqlglot
    from sqlglot import exp

    if dialect is None:
        try:
            from ..sql.parser import DIALECT as dialect  # noqa: N811
        except Exception:  # noqa: BLE001 - pqe's parser failed to import: sqlglot's default
            dialect = None
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:  # noqa: BLE001 - not SQL sqlglot reads: no ordering known
        return OrderSpec(None, False, True)
    limited = bool(tree.args.get("limit") or tree.args.get("offset") or tree.args.get("fetch"))
    order = tree.args.get("order")
    if order is None:
        return OrderSpec(None, limited, not limited)
    first = tree
    while isinstance(first, (exp.SetOperation, exp.Subquery)):
        first = first.this
    outputs = list(first.expressions) if isinstance(first, exp.Select) else []
    star = any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
               for e in outputs)
    names = [e.alias_or_name.lower() for e in outputs]
    texts = [e.unalias().sql(dialect=dialect).lower() for e in outputs]
    keys: list[int] = []
    for o in order.expressions:
        k = o.this if isinstance(o, exp.Ordered) else o
        pos = None
        if isinstance(k, exp.Literal) and k.is_int:
            pos = int(k.this) - 1
        elif not star:
            if isinstance(k, exp.Column) and k.name.lower() in names and (
                    not k.table or texts.count(k.sql(dialect=dialect).lower()) or
                    names.count(k.name.lower()) == 1):
                pos = names.index(k.name.lower())
            elif k.sql(dialect=dialect).lower() in texts:
                pos = texts.index(k.sql(dialect=dialect).lower())
        if pos is None:
            break
        keys.append(pos)
    return OrderSpec(keys, limited, bool(keys) or not limited, len(order.expressions))


# ---- values ----------------------------------------------------------------------------------

class _Ts(int):
    """A timestamp as integer nanoseconds since the epoch (UTC for TIMESTAMPTZ)."""

    def __repr__(self) -> str:
        s, ns = divmod(int(self), 1_000_000_000)
        try:
            d = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=s)
        except OverflowError:
            return f"<timestamp {int(self)} ns>"
        frac = f".{ns:09d}".rstrip("0") if ns else ""
        return f"'{d.isoformat(sep=' ')}{frac}'"


class _Days(int):
    """A date as days since 1970-01-01 (any date32 value, also past Python's year 9999)."""

    def __repr__(self) -> str:
        try:
            return f"'{(_EPOCH + datetime.timedelta(days=int(self))).isoformat()}'"
        except OverflowError:
            return f"<date {int(self)} days>"


_EPOCH = datetime.date(1970, 1, 1)
_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_DAY_NS = 86_400 * 1_000_000_000


def _column_values(col: pa.ChunkedArray | pa.Array) -> list:
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type) if isinstance(col, pa.Array) else pc.cast(col, t.value_type)
        return _column_values(col)
    if pa.types.is_run_end_encoded(t):
        return _column_values(pc.run_end_decode(col))
    if pa.types.is_timestamp(t):
        ints = col.cast(pa.int64()).to_pylist()
        return [None if v is None else _Ts(v * _NS[t.unit]) for v in ints]
    if pa.types.is_date32(t):
        return [None if v is None else _Days(v) for v in col.cast(pa.int32()).to_pylist()]
    if pa.types.is_date64(t):
        ints = col.cast(pa.int64()).to_pylist()
        return [None if v is None else _Days(v // 86_400_000) for v in ints]
    if pa.types.is_struct(t):
        return [None if v is None else tuple(_freeze(x) for x in v.values())
                for v in col.to_pylist()]
    return [_freeze(v) for v in col.to_pylist()]


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(_freeze(x) for x in v.values())
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return _Ts((v - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1) * 1000)
    if isinstance(v, datetime.date):
        return _Days((v - _EPOCH).days)
    return v


def _float_eq(a: float, b: float, rel: float, abs_: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return a == b or math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def _is_num(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, (bool, _Ts, _Days))


class _Col:
    """How one column's values compare."""

    def __init__(self, actual: LogicalType, expected: LogicalType, rel: float, abs_: float,
                 decimal_ulp: bool = False):
        self.rel, self.abs = rel, abs_
        self.ulp = decimal_ulp and actual.kind == "DECIMAL" and expected.kind == "FLOAT"
        self.float = "FLOAT" in (actual.kind, expected.kind) or _has_float(actual) or \
            _has_float(expected)
        # DuckDB dropped scale: the expected value is the actual one rounded
        self.round_to = expected.scale if _decimal_scale_dropped(actual, expected) else None
        # types differ (check_types=False): numbers cross-compare, a DATE is its midnight
        self.mixed = actual.kind != expected.kind
        self.exact = not self.float and self.round_to is None and not self.mixed

    def eq(self, a, b) -> bool:
        if a is None or b is None:
            return a is None and b is None
        if isinstance(a, tuple) and isinstance(b, tuple):
            return len(a) == len(b) and all(self.eq(x, y) for x, y in zip(a, b))
        if isinstance(a, bool) or isinstance(b, bool):
            return type(a) is type(b) and a == b
        if _is_num(a) and _is_num(b):
            if isinstance(a, float) or isinstance(b, float):
                if self.ulp and isinstance(a, decimal.Decimal) and a.is_finite():
                    ulp = float(decimal.Decimal(1).scaleb(a.as_tuple().exponent))
                    if abs(float(a) - float(b)) <= ulp:
                        return True
                return _float_eq(float(a), float(b), self.rel, self.abs)
            if a == b:
                return True
            if self.round_to is not None and isinstance(a, decimal.Decimal):
                q = decimal.Decimal(1).scaleb(-self.round_to)
                # enough digits for any DECIMAL(38) or int64 at any scale: quantize never traps
                with decimal.localcontext(prec=120):
                    return any(a.quantize(q, rounding=m) == b for m in
                               (decimal.ROUND_HALF_UP, decimal.ROUND_HALF_EVEN, decimal.ROUND_DOWN))
            return False
        if type(a) is not type(b) and self.mixed and {type(a), type(b)} == {_Ts, _Days}:
            return _midnight(a) == _midnight(b)   # DATE vs TIMESTAMP, types not checked
        return type(a) is type(b) and a == b

    def key(self, v):
        """Exact grouping key (None for fuzzy columns: they group as one)."""
        if self.exact:
            if isinstance(v, decimal.Decimal):
                return ("n", v.normalize() if v.is_finite() else str(v))
            if isinstance(v, bool):
                return ("b", v)
            if isinstance(v, int) and not isinstance(v, _Ts):
                return ("n", decimal.Decimal(v))
            return (type(v).__name__, v)
        return "#"

    def sort_key(self, v):
        if v is None:
            return (0, 0.0, "")
        if _is_num(v):
            f = float(v)
            if math.isnan(f):
                return (2, 0.0, "")
            return (1, float(f"{f:.9g}") + 0.0, "")
        return (3, 0.0, repr(v))


def _midnight(v):
    return int(v) * _DAY_NS if isinstance(v, _Days) else int(v)


def _has_float(t: LogicalType) -> bool:
    return t.kind == "FLOAT" or any(_has_float(c) for c in t.children)


def _fmt(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return repr(v)
    return repr(v)


def _fmt_row(row) -> str:
    return "(" + ", ".join(_fmt(v) for v in row) + ")"


_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


# ---- compare ---------------------------------------------------------------------------------

def compare(actual: pa.Table, expected: pa.Table, *, order_by: Sequence[int | str] | None = None,
            ordered: bool = False, limit: bool = False, float_rel: float = FLOAT_REL,
            float_abs: float = FLOAT_ABS, check_names: bool = True, check_types: bool = True,
            sql: str | None = None, decimal_ulp: bool = False) -> Mismatch | None:
    """None when `actual` is the same answer as `expected`, else the first difference.

    order_by: positions or names of the ORDER BY keys; ordered: the whole row order matters;
    limit: the result was cut by LIMIT (ties in the last key run may differ); sql: derive
    order_by and limit from the query text when neither order_by nor ordered is given;
    decimal_ulp: (with check_types=False, for other engines) accept a DECIMAL answer one unit
    in its last place from a DOUBLE expected value."""
    if sql is not None and order_by is None and not ordered:
        spec = order_spec(sql)
        order_by, limit = spec.order_by, spec.limit
        if not spec.deterministic:
            return _compare_shape_only(actual, expected, check_names, check_types)
    if actual.num_columns != expected.num_columns:
        return Mismatch("columns", f"{actual.num_columns} columns {actual.column_names}, "
                        f"expected {expected.num_columns} {expected.column_names}")
    if check_names:
        m = _check_names(actual, expected)
        if m:
            return m
    cols = []
    for i in range(actual.num_columns):
        fa, fe = actual.schema.field(i), expected.schema.field(i)
        ta, te = logical_type(fa), logical_type(fe)
        ok, _ = type_difference(ta, te)
        if not ok and (ta.kind == "NULL" or te.kind == "NULL"):
            ok = actual.column(i).null_count == actual.num_rows and \
                expected.column(i).null_count == expected.num_rows
        if check_types and not ok:
            # (no rows: nothing was computed either, only typed)
            every_null = actual.column(i).null_count == actual.num_rows and \
                expected.column(i).null_count == expected.num_rows
            return Mismatch("types", f"column {i} {fa.name!r}: type {ta} ({fa.type}), expected "
                            f"{te} ({fe.type})" + (" (every value NULL)" if every_null else ""),
                            column=i, column_name=fa.name,
                            actual_type=str(ta), expected_type=str(te))
        cols.append(_Col(ta, te, float_rel, float_abs, decimal_ulp))
    if actual.num_rows != expected.num_rows:
        m = Mismatch("rows", f"{actual.num_rows} rows, expected {expected.num_rows}")
        m.details = _multiset_diff(_rows(actual), _rows(expected), cols, actual)[1]
        return m
    got, want = _rows(actual), _rows(expected)
    if ordered:
        order_by = list(range(actual.num_columns))
        limit = False
    if not order_by:
        return _multiset(got, want, cols, actual)
    keys = []
    for k in order_by:   # a key that is not a column ends the usable prefix
        k = k if isinstance(k, int) else (actual.column_names.index(k)
                                          if k in actual.column_names else -1)
        if not 0 <= k < actual.num_columns:
            break
        keys.append(k)
    if not keys:
        return _multiset(got, want, cols, actual)
    return _ordered(got, want, cols, keys, limit, actual, expected)


def _compare_shape_only(actual, expected, check_names, check_types) -> Mismatch | None:
    """LIMIT without ORDER BY: which rows come back is not defined; shape and types are."""
    m = compare(actual.slice(0, 0), expected.slice(0, 0), check_names=check_names,
                check_types=check_types)
    if m:
        return m
    if actual.num_rows != expected.num_rows:
        return Mismatch("rows", f"{actual.num_rows} rows, expected {expected.num_rows} "
                        "(LIMIT without ORDER BY: only the count is checked)")
    return None


def _check_names(actual: pa.Table, expected: pa.Table) -> Mismatch | None:
    for i, (a, e) in enumerate(zip(actual.column_names, expected.column_names)):
        if a == e or a.lower() == e.lower() or not _PLAIN_NAME.match(e):
            continue
        return Mismatch("names", f"column {i} is named {a!r}, expected {e!r}", column=i,
                        column_name=a, actual=a, expected=e)
    return None


def _rows(t: pa.Table) -> list[tuple]:
    cols = [_column_values(t.column(i)) for i in range(t.num_columns)]
    return list(zip(*cols)) if cols else [()] * t.num_rows


def table_rows(t: pa.Table) -> list[tuple]:
    """The rows of `t` as compare() sees them (dates and timestamps as numbers with readable
    reprs, so that values outside Python's datetime range still show)."""
    return _rows(t)


def _row_eq(cols, a, b) -> bool:
    return all(c.eq(x, y) for c, x, y in zip(cols, a, b))


def _value_diff(cols, a, b, table: pa.Table) -> tuple[int, str] | None:
    for j, (c, x, y) in enumerate(zip(cols, a, b)):
        if not c.eq(x, y):
            f = table.schema.field(j)
            return j, f"column {j} {f.name!r}: {_fmt(x)} ({logical_type(f)}), expected {_fmt(y)}"
    return None


def _match(got: list, want: list, cols) -> tuple[list, list]:
    """Rows of `got` with no partner in `want` and vice versa (as a multiset, with the float
    tolerance). Rows are grouped by their exact columns, then paired within a group."""
    groups: dict = collections.defaultdict(lambda: ([], []))
    for r in got:
        groups[tuple(c.key(v) for c, v in zip(cols, r))][0].append(r)
    for r in want:
        groups[tuple(c.key(v) for c, v in zip(cols, r))][1].append(r)
    only_g, only_w = [], []
    for g, w in groups.values():
        if not g or not w:
            only_g += g
            only_w += w
            continue

        def sk(r):
            return tuple(c.sort_key(v) for c, v in zip(cols, r))

        gs, ws = sorted(g, key=sk), sorted(w, key=sk)
        if len(gs) == len(ws) and all(_row_eq(cols, a, b) for a, b in zip(gs, ws)):
            continue
        if len(g) > GREEDY_LIMIT or len(w) > GREEDY_LIMIT:
            only_g += gs
            only_w += ws
            continue
        left = list(ws)
        for r in gs:
            for i, cand in enumerate(left):
                if _row_eq(cols, r, cand):
                    del left[i]
                    break
            else:
                only_g.append(r)
        only_w += left
    return only_g, only_w


def _multiset_diff(got, want, cols, table) -> tuple[bool, list[str], tuple | None]:
    only_g, only_w = _match(got, want, cols)
    if not only_g and not only_w:
        return True, [], None
    lines = []
    if only_g:
        lines.append(f"  {len(only_g)} rows only in actual, e.g. "
                     + ", ".join(_fmt_row(r) for r in only_g[:3]))
    if only_w:
        lines.append(f"  {len(only_w)} rows only in expected, e.g. "
                     + ", ".join(_fmt_row(r) for r in only_w[:3]))
    pair = None
    if only_g and only_w:
        # the closest pair: most columns equal
        a = only_g[0]
        b = max(only_w[:200], key=lambda w: sum(c.eq(x, y) for c, x, y in zip(cols, a, w)))
        pair = (a, b)
    return False, lines, pair


def _multiset(got, want, cols, table, what: str = "") -> Mismatch | None:
    same, lines, pair = _multiset_diff(got, want, cols, table)
    if same:
        return None
    if pair:
        j, text = _value_diff(cols, pair[0], pair[1], table)
        f = table.schema.field(j)
        return Mismatch("values", f"values differ{what}: actual row {_fmt_row(pair[0])} vs nearest "
                        f"expected {_fmt_row(pair[1])}: {text}", column=j, column_name=f.name,
                        actual=pair[0][j], expected=pair[1][j], details=lines)
    return Mismatch("values", f"rows differ{what}", details=lines)


def _ordered(got, want, cols, keys, limit, actual, expected) -> Mismatch | None:
    kc = [cols[k] for k in keys]

    def key(r):
        return [r[k] for k in keys]

    # runs of equal keys in the expected answer
    runs: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(want) + 1):
        if i == len(want) or not _row_eq(kc, key(want[i]), key(want[start])):
            runs.append((start, i))
            start = i
    first_bad_key = next((i for i, (g, w) in enumerate(zip(got, want))
                          if not _row_eq(kc, key(g), key(w))), None)

    def order_mismatch() -> Mismatch:
        i = first_bad_key
        names = [actual.column_names[k] for k in keys]
        return Mismatch("order", f"wrong order at row {i}: ORDER BY keys {names} are "
                        f"{_fmt_row(key(got[i]))}, expected {_fmt_row(key(want[i]))}", row=i,
                        actual=tuple(key(got[i])), expected=tuple(key(want[i])))

    if not limit:
        m = _multiset(got, want, cols, actual)   # a wrong value is worse than a wrong order
        if m is not None:
            return m
        if first_bad_key is not None:
            return order_mismatch()
        for a, b in runs:   # each run of equal keys holds the same rows (any order)
            m = _multiset(got[a:b], want[a:b], cols, actual, f" in rows {a}..{b - 1} (equal keys)")
            if m is not None:
                return m
        return None
    # ORDER BY .. LIMIT: the rows of the last run of equal keys may be any of the tied rows
    cut = runs[-1][0] if runs else 0
    body = _multiset(got[:cut], want[:cut], cols, actual)
    if first_bad_key is None and body is None:
        return None
    if first_bad_key is not None and not any(_match([key(r) for r in got],
                                                    [key(r) for r in want], kc)):
        return order_mismatch()     # the same keys, placed differently
    if body is not None:
        body.message += f" (rows 0..{cut - 1}, before the rows tied at the LIMIT)"
        return body
    return order_mismatch()


def python_value(v):
    """A Python value from Arrow's to_pylist in the form `values_equal` compares."""
    return _freeze(v)


def values_equal(a, b, float_rel: float = FLOAT_REL, float_abs: float = FLOAT_ABS,
                 decimal_ulp: bool = False) -> bool:
    """Two Python values (or tuples of values) as compare() would compare them with
    check_types=False: numbers numerically, a DATE equal to its midnight timestamp."""
    c = _Col(LogicalType("OTHER"), LogicalType("MIXED"), float_rel, float_abs)
    c.ulp = decimal_ulp
    return c.eq(python_value(a), python_value(b))


def assert_same(actual: pa.Table, expected: pa.Table, **kwargs) -> None:
    """`compare` as an assertion (pytest shows the message)."""
    m = compare(actual, expected, **kwargs)
    assert m is None, str(m)


def describe_allowed() -> str:
    """The allowed-differences table as Markdown."""
    lines = ["| difference | accepted | why |", "|---|---|---|"]
    for a in ALLOWED_DIFFERENCES:
        lines.append(f"| {a.name} | {a.what} | {a.why} |")
    return "\n".join(lines)
