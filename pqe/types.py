"""pqe's type system: Arrow data types, with SQL typing rules on top.

Logical types are `pyarrow.DataType` objects. Text is always `pa.string()` inside the engine:
scans and in-memory tables normalize `string_view`, `large_string` and dictionary-encoded text
once, at the edge, so no kernel ever meets a `string_view` (pyarrow lacks many kernels for it).

Decimal rules follow DuckDB (precision capped at 38, scale kept); division involving a decimal
yields DOUBLE; integer arithmetic is done in BIGINT and integer division truncates.

Floating point follows DuckDB: REAL = FLOAT4 = FLOAT = FLOAT(1..24) is 4-byte `float32`, DOUBLE =
FLOAT8 = DOUBLE PRECISION = FLOAT(25..53) is 8-byte `float64` (PostgreSQL reads a bare FLOAT as
DOUBLE; pqe takes DuckDB's reading, which is also Arrow's: `float` is float32). A REAL meeting a
REAL, an integer or a DECIMAL stays REAL (arithmetic, comparison, CASE, UNION), as in DuckDB; a
DOUBLE on either side makes it DOUBLE.
"""

from __future__ import annotations

import re

import copyreg

import pyarrow as pa

from .errors import BindError, TypeMismatchError, UnsupportedError

MAX_DECIMAL_PRECISION = 38

BOOLEAN = pa.bool_()
INT8, INT16, INT32, INT64 = pa.int8(), pa.int16(), pa.int32(), pa.int64()
FLOAT32, FLOAT64 = pa.float32(), pa.float64()
TEXT = pa.string()
BINARY = pa.binary()
DATE = pa.date32()
TIMESTAMP = pa.timestamp("us")
TIME = pa.time64("us")
# text that is no BLOB's bytes as it stands (CAST and comparisons): a character past ASCII,
# or a backslash (DuckDB reads '\xAA' as one escaped byte; pqe refuses it)
BLOB_TEXT_REFUSED = r"[^\x00-\x7f]|\\"
INTERVAL = pa.month_day_nano_interval()
NULL = pa.null()

# text that CAST(... AS BOOLEAN) reads as true or false (trimmed, any case), as PostgreSQL does
# what casts from text trim around a value: ASCII whitespace, as DuckDB (a no-break space or an
# ideographic space is part of the text, so '12' followed by U+00A0 is not a number)
ASCII_SPACE = " \t\n\r\f\v"
# the largest BIGINT: LIMIT + OFFSET past it is capped there (a sort's k, the rows a partition
# keeps), never an overflow
INT64_MAX = (1 << 63) - 1

TRUE_TEXT = ("true", "t", "1", "yes", "y", "on")
FALSE_TEXT = ("false", "f", "0", "no", "n", "off")

_INT_RANK = {pa.int8(): 1, pa.int16(): 2, pa.int32(): 3, pa.int64(): 4,
             pa.uint8(): 2, pa.uint16(): 3, pa.uint32(): 4, pa.uint64(): 5}
_INT_DECIMAL_DIGITS = {pa.int8(): 3, pa.int16(): 5, pa.int32(): 10, pa.int64(): 19,
                       pa.uint8(): 3, pa.uint16(): 5, pa.uint32(): 10, pa.uint64(): 20}


def is_integer(t: pa.DataType) -> bool:
    return pa.types.is_integer(t)


def is_floating(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def is_decimal(t: pa.DataType) -> bool:
    return pa.types.is_decimal(t)


def is_numeric(t: pa.DataType) -> bool:
    return is_integer(t) or is_floating(t) or is_decimal(t)


def is_fixed_width(t: pa.DataType) -> bool:
    """One fixed-size value per row, no offsets: numbers, booleans, dates, times,
    timestamps, durations and intervals."""
    return is_numeric(t) or is_boolean(t) or pa.types.is_temporal(t)


def is_text(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_string_view(t))


def is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def is_blob(t: pa.DataType) -> bool:
    """BLOB, in any of Arrow's binary layouts."""
    return (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t))


def is_boolean(t: pa.DataType) -> bool:
    return pa.types.is_boolean(t)


def is_null(t: pa.DataType) -> bool:
    return pa.types.is_null(t)


def is_interval(t: pa.DataType) -> bool:
    return pa.types.is_interval(t)


def is_nested(t: pa.DataType) -> bool:
    """LIST, STRUCT or MAP (and Arrow's other nested layouts)."""
    return pa.types.is_nested(t)


def normalize(t: pa.DataType) -> pa.DataType:
    """The engine-internal type for a type found in user data (text -> `string`)."""
    if isinstance(t, pa.BaseExtensionType):
        # JSON is its text, bool8 its booleans, a UUID its canonical text (as registered
        # Arrow data: context.engine_table); any other extension (pandas' period, a tensor)
        # would be read as its storage, a period as its ordinal: refused
        name = t.extension_name
        if name == "arrow.json":
            return TEXT
        if name == "arrow.bool8":
            return BOOLEAN
        if name == "arrow.uuid":
            return TEXT  # (read as its 16 bytes, then `uuid_text`: kernels.scan)
        raise UnsupportedError(f"extension type {name} is not supported")
    if is_text(t):
        return TEXT
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return BINARY
    if pa.types.is_dictionary(t):
        return normalize(t.value_type)
    if pa.types.is_date64(t):
        return DATE
    if pa.types.is_decimal(t) and t.scale < 0:
        # DECIMAL(5,-2) holds multiples of 100 up to 7 digits: the same values as
        # DECIMAL(7,0), which every kernel takes (Arrow's casts to text and integers refuse
        # negative scales: they failed at the query's first cast)
        return normalize(pa.decimal128(t.precision - t.scale, 0)
                         if t.precision - t.scale <= MAX_DECIMAL_PRECISION
                         else pa.decimal256(t.precision - t.scale, 0))
    if pa.types.is_decimal(t) and not isinstance(t, pa.Decimal128Type):
        if t.precision <= MAX_DECIMAL_PRECISION:
            return pa.decimal128(t.precision, t.scale)
        # no engine type holds it exactly: DOUBLE would round its values silently (DuckDB
        # refuses such Arrow data too)
        raise UnsupportedError(f"DECIMAL({t.precision},{t.scale}) is not supported: DECIMAL "
                               f"precision is at most {MAX_DECIMAL_PRECISION}")
    if pa.types.is_float16(t):
        return FLOAT32
    if pa.types.is_duration(t):
        return INTERVAL  # (converted by `duration_interval`; DuckDB reads it as INTERVAL too)
    return _nested_layout(t)


def _nested_layout(t: pa.DataType, child=None) -> pa.DataType:
    """`t` with the values nested in it (at any depth) in the layouts pqe's kernels take: a
    FIXED_SIZE_LIST or list view a LIST (subscripts and UNNEST read a list's offsets), and
    each child's type by `child` (by default `_child_layout`: string_view and binary_view
    text and BLOB, a run-end encoded child its values). A Parquet file keeps pyarrow's own
    types: `l[1]` of a list<string_view> failed ("array_take has no kernel"). Registered
    Arrow data takes the same shapes with its own conversion of children
    (context._engine_type: extension types, durations)."""
    child = child or _child_layout

    def field(f: pa.Field) -> pa.Field:
        return f.with_type(child(f.type))

    if pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t) or pa.types.is_list(t):
        out = pa.list_(field(t.value_field))
    elif pa.types.is_large_list(t) or pa.types.is_large_list_view(t):
        out = pa.large_list(field(t.value_field))
    elif pa.types.is_struct(t):
        out = pa.struct([field(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_map(t):
        out = pa.map_(field(t.key_field), field(t.item_field), t.keys_sorted)
    else:
        return t
    return t if out == t else out


def is_nested_layout(t: pa.DataType) -> bool:
    """Whether `_nested_layout` rebuilds `t` (a list-like, struct or map type)."""
    return (pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t) or pa.types.is_list(t)
            or pa.types.is_large_list(t) or pa.types.is_large_list_view(t)
            or pa.types.is_struct(t) or pa.types.is_map(t))


def _child_layout(x: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(x):
        return pa.string()
    if pa.types.is_binary_view(x):
        return pa.binary()
    if pa.types.is_run_end_encoded(x):
        return _child_layout(x.value_type)
    if pa.types.is_dictionary(x):
        # decoded: a dictionary nested in a STRUCT or LIST (a categorical field) was typed as
        # its values but met no kernel as such (`s.k = 'a'`, ORDER BY s.k, max(s.k) failed)
        return _child_layout(x.value_type)
    return _nested_layout(x)


def normalize_schema(schema: pa.Schema) -> pa.Schema:
    """The engine types of a table's columns; a type pqe cannot hold is an UnsupportedError
    naming the column (when the table is registered, not at its first query)."""
    fields = []
    for f in schema:
        try:
            fields.append(pa.field(f.name, normalize(f.type), f.nullable))
        except UnsupportedError as e:
            raise UnsupportedError(f"column {f.name!r}: {e}") from None
    return pa.schema(fields)


# field metadata of a stored text column declared VARCHAR(n) / CHAR(n): n, the most characters
# a value may hold (checked on every write: session.writes.conform)
MAX_LENGTH = b"pqe.max_length"


def max_length(field: pa.Field) -> int | None:
    """The n of a stored column declared VARCHAR(n) or CHAR(n); None for any other."""
    meta = field.metadata
    if not meta or MAX_LENGTH not in meta:
        return None
    return int(meta[MAX_LENGTH])


def decimal(precision: int, scale: int) -> pa.DataType:
    precision = min(max(precision, 1), MAX_DECIMAL_PRECISION)
    scale = min(max(scale, 0), precision)
    return pa.decimal128(precision, scale)


def as_decimal(t: pa.DataType) -> pa.DataType:
    """The decimal type that holds every value of an integer or decimal type exactly."""
    if is_decimal(t):
        return t
    if is_integer(t):
        return pa.decimal128(_INT_DECIMAL_DIGITS[t], 0)
    raise TypeMismatchError(f"cannot treat {type_name(t)} as DECIMAL")


def widens(src: pa.DataType, dst: pa.DataType) -> bool:
    """Every value of `src` converts to `dst` exactly, so the cast can never fail: a wider
    integer, a DECIMAL with at least as many integral and fractional digits, NULL."""
    if is_null(src) or src == dst:
        return True
    if is_boolean(src):
        return is_integer(dst) or is_decimal(dst) and dst.precision > dst.scale
    if is_integer(src) and is_integer(dst):
        if pa.types.is_signed_integer(src) and not pa.types.is_signed_integer(dst):
            return False
        extra = 0 if pa.types.is_signed_integer(src) == pa.types.is_signed_integer(dst) else 1
        return dst.bit_width >= src.bit_width + extra
    if (is_integer(src) or is_decimal(src)) and is_decimal(dst):
        s = as_decimal(src)
        return dst.scale >= s.scale and dst.precision - dst.scale >= s.precision - s.scale
    return False


def _cast_kind(t: pa.DataType) -> str | None:
    """The family a CAST stays within; None for text and NULL, which convert to and from
    every family (through the text's parsing or writing)."""
    if is_numeric(t) or is_boolean(t):
        return "number"
    if is_temporal(t):
        return "datetime"
    if pa.types.is_time(t):
        return "time"
    if is_interval(t) or pa.types.is_duration(t):
        return "interval"
    if is_blob(t):
        return "blob"
    return None


def check_castable(src: pa.DataType, dst: pa.DataType) -> None:
    """Refuse a CAST between families that have no SQL conversion, as PostgreSQL and DuckDB
    refuse them ("Unimplemented type for cast (TIME -> BIGINT)"): Arrow's cast answered a
    DATE's day number, a TIME's or a DURATION's count of its storage unit (TIME64[US] and
    TIME64[NS] of one value gave 3723000000 and 3723000000000), read a BLOB's bytes as text
    to parse a number, or failed with its raw 'Unsupported cast'. A TIMESTAMP's time of day
    is a TIME (DuckDB); a BLOB is text only through CAST to text (whose bytes are checked)."""
    if is_nested(src) != is_nested(dst) and not is_null(src):
        # (Arrow's cast failed when run, TRY_CAST too: 'Unsupported cast from list<item:
        # int32> to utf8')
        raise UnsupportedError(f"CAST of {type_name(src)} to {type_name(dst)} is not "
                               f"supported")
    a, b = _cast_kind(src), _cast_kind(dst)
    if a is None or b is None or a == b or (pa.types.is_timestamp(src) and b == "time"):
        return
    raise TypeMismatchError(f"cannot cast {type_name(src)} to {type_name(dst)}")


def _wider_int(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if pa.types.is_uint64(a) or pa.types.is_uint64(b):
        # UBIGINT holds values past BIGINT: with another unsigned type it stays UBIGINT,
        # with a signed one both are read as DECIMAL(20,0) (DuckDB: HUGEINT); as BIGINT,
        # `u > -1` or COALESCE(u, 0) failed on any value from 2^63
        other = b if pa.types.is_uint64(a) else a
        return pa.uint64() if pa.types.is_unsigned_integer(other) else decimal(20, 0)
    rank = max(_INT_RANK.get(a, 4), _INT_RANK.get(b, 4))
    return {1: INT8, 2: INT16, 3: INT32}.get(rank, INT64)


def _decimal_union(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    a, b = as_decimal(a), as_decimal(b)
    scale = max(a.scale, b.scale)
    integral = max(a.precision - a.scale, b.precision - b.scale)
    return decimal(integral + scale, scale)


def modulo_by_wider(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether DECIMAL `a % b` reads its operands as they are rather than as the result type:
    when their union needs more than 38 digits and the dividend has the larger scale (the
    remainder's type then holds the dividend, not the divisor; kernels: _modulo_by_wider)."""
    a, b = as_decimal(a), as_decimal(b)
    union = max(a.precision - a.scale, b.precision - b.scale) + max(a.scale, b.scale)
    return union > MAX_DECIMAL_PRECISION and a.scale >= b.scale


def _float_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The floating type of two numbers, one of them floating: DOUBLE when either is DOUBLE,
    else REAL (REAL with REAL, an integer or a DECIMAL stays REAL, as in DuckDB)."""
    if pa.types.is_float64(a) or pa.types.is_float64(b):
        return FLOAT64
    return FLOAT32


def common_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type both sides are cast to for comparison, UNION, CASE, COALESCE; None if none."""
    if a == b:
        return a
    if is_null(a):
        return b
    if is_null(b):
        return a
    if is_integer(a) and is_integer(b):
        return _wider_int(a, b)
    if is_numeric(a) and is_numeric(b):
        if is_floating(a) or is_floating(b):
            return _float_type(a, b)
        return _decimal_union(a, b)
    if is_text(a) and is_text(b):
        return TEXT
    if is_temporal(a) and is_temporal(b):
        stamps = [t for t in (a, b) if pa.types.is_timestamp(t)]
        if len(stamps) == 2 and all(t.tz is not None for t in stamps):
            # two instants stay an instant (in another unit or zone they became a naive
            # TIMESTAMP: UNION of Polars' ms and pandas' us UTC columns lost the zone)
            unit = "ns" if any(t.unit == "ns" for t in stamps) else "us"  # (as below)
            return pa.timestamp(unit, a.tz if a.tz == b.tz else "UTC")
        # an instant beside a naive TIMESTAMP or a DATE (read as UTC, pqe's session time
        # zone) gives an instant, as PostgreSQL and DuckDB prefer TIMESTAMPTZ: coalesce(tz,
        # ts) lost its zone (its text had no +00, pandas saw naive times)
        zone = next((t.tz for t in stamps if t.tz is not None), None)
        if any(t.unit == "ns" for t in stamps):
            # nanoseconds (pandas' unit) meet others in nanoseconds: in microseconds a value
            # with a nanosecond part did not convert, and the comparison failed; a zoned
            # side too (its UTC instant), where the nanoseconds were cut and a zoned 00:00
            # equalled a naive 00:00:00.000000001
            return pa.timestamp("ns", zone)
        if zone is not None:
            return pa.timestamp("us", zone)
        return TIMESTAMP if stamps else DATE
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return TIMESTAMP
    if pa.types.is_time(a) and pa.types.is_time(b):
        # times of day in two units (Arrow's time32 ms from Polars, time64 us from pandas):
        # the finer one holds both (comparing them was a TypeMismatchError)
        units = {a.unit, b.unit}
        for unit, t in (("ns", pa.time64("ns")), ("us", pa.time64("us")),
                        ("ms", pa.time32("ms"))):
            if unit in units:
                return t
    if pa.types.is_list(a) and pa.types.is_list(b):
        # element by element: [['a'], []] is a list of LIST<VARCHAR> (the empty list's
        # elements are NULL-typed), as a UNION of INTEGER[] and BIGINT[] is BIGINT[]
        item = common_type(a.value_type, b.value_type)
        return None if item is None else pa.list_(item)
    return None


def arithmetic_type(op: str, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Result type of `a op b` for op in add, subtract, multiply, divide, modulo."""
    if is_null(a) or is_null(b):
        other = b if is_null(a) else a
        if is_null(other):
            return NULL
        if op == "multiply" and is_decimal(other):
            # NULL * x is NULL: x's type, not the product x * x, whose doubled scale widened
            # a CASE or UNION with x past the values of x (DECIMAL(38,10) became (38,20))
            return other
        return arithmetic_type(op, other, other)
    if is_integer(a) and is_integer(b):
        return INT64
    if is_numeric(a) and is_numeric(b):
        if is_floating(a) or is_floating(b):
            return _float_type(a, b)
        if op == "divide":
            return FLOAT64
        a, b = as_decimal(a), as_decimal(b)
        if op in ("add", "subtract"):
            scale = max(a.scale, b.scale)
            return decimal(max(a.precision - a.scale, b.precision - b.scale) + scale + 1, scale)
        if op == "multiply":
            if a.scale + b.scale > MAX_DECIMAL_PRECISION:
                # (it was a DOUBLE: 17 digits of 37 kept, silently; DuckDB refuses it too)
                raise TypeMismatchError(
                    f"{type_name(a)} * {type_name(b)} needs scale {a.scale + b.scale}, past "
                    f"DECIMAL's {MAX_DECIMAL_PRECISION}: cast an operand to a smaller scale "
                    f"(or to DOUBLE)")
            return decimal(a.precision + b.precision, a.scale + b.scale)
        if op == "modulo":
            if not modulo_by_wider(a, b):
                return _decimal_union(a, b)  # (clamped to 38 digits: an operand past it fails
            # its cast). Past 38 digits the union would not hold a divisor with more integer
            # digits than the dividend (DECIMAL(38,37) % 100), but the remainder needs no
            # more integer digits than the smaller operand: |r| < |b| and |r| <= |a|
            scale = max(a.scale, b.scale)
            return decimal(min(a.precision - a.scale, b.precision - b.scale) + scale, scale)
    raise TypeMismatchError(
        f"cannot apply {op} to {type_name(a)} and {type_name(b)}")


_SQL_NAMES = {
    pa.bool_(): "BOOLEAN", pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER",
    pa.int64(): "BIGINT", pa.uint8(): "UTINYINT", pa.uint16(): "USMALLINT",
    pa.uint32(): "UINTEGER", pa.uint64(): "UBIGINT", pa.float32(): "REAL",
    pa.float64(): "DOUBLE", pa.string(): "VARCHAR", pa.binary(): "BLOB", pa.date32(): "DATE",
    pa.null(): "NULL", pa.month_day_nano_interval(): "INTERVAL",
}


def type_name(t: pa.DataType) -> str:
    """SQL spelling of a type, for messages, DESCRIBE and EXPLAIN."""
    if t in _SQL_NAMES:
        return _SQL_NAMES[t]
    if is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return "TIMESTAMPTZ"
        return {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "ns": "TIMESTAMP_NS"}.get(
            t.unit, "TIMESTAMP")
    if is_text(t):
        return "VARCHAR"
    if t == TIME:
        return "TIME"
    # nested types as DuckDB spells them (Arrow's upper-cased text turned field names to
    # capitals: STRUCT<X: INT64, Y: STRING>, and read as no SQL)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) \
            or pa.types.is_large_list_view(t):
        return type_name(t.value_type) + "[]"
    if pa.types.is_fixed_size_list(t):
        return f"{type_name(t.value_type)}[{t.list_size}]"
    if pa.types.is_struct(t):
        return "STRUCT(" + ", ".join(f"{_type_field_name(f.name)} {type_name(f.type)}"
                                     for f in t) + ")"
    if pa.types.is_map(t):
        return f"MAP({type_name(t.key_type)}, {type_name(t.item_type)})"
    if pa.types.is_dictionary(t):
        return type_name(t.value_type)
    return str(t).upper()


def _type_field_name(name: str) -> str:
    """A struct field's name in a type's text: as is when it is a plain lower-case word,
    else double-quoted (its quotes doubled)."""
    if re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'



_NAMED = {
    "boolean": BOOLEAN, "bool": BOOLEAN,
    "tinyint": INT8, "int1": INT8, "int8": INT64,  # PostgreSQL: int8 is BIGINT
    "smallint": INT16, "int2": INT16, "int16": INT16,
    "integer": INT32, "int": INT32, "int4": INT32, "int32": INT32, "signed": INT64,
    "bigint": INT64, "int64": INT64, "long": INT64,
    # DuckDB's unsigned integers (Parquet files hold them too)
    "utinyint": pa.uint8(), "uint8": pa.uint8(), "usmallint": pa.uint16(),
    "uint16": pa.uint16(), "uinteger": pa.uint32(), "uint32": pa.uint32(),
    "ubigint": pa.uint64(), "uint64": pa.uint64(),
    "real": FLOAT32, "float4": FLOAT32, "float32": FLOAT32,
    # FLOAT is REAL, as in DuckDB (and Arrow's `float`); PostgreSQL reads it as DOUBLE
    "double": FLOAT64, "float": FLOAT32, "float8": FLOAT64, "float64": FLOAT64,
    "double precision": FLOAT64,
    "varchar": TEXT, "text": TEXT, "string": TEXT, "char": TEXT, "bpchar": TEXT,
    "character": TEXT, "character varying": TEXT, "nvarchar": TEXT, "nchar": TEXT,
    "utf8": TEXT, "str": TEXT,
    "blob": BINARY, "bytea": BINARY, "binary": BINARY, "varbinary": BINARY,
    "date": DATE, "date32": DATE,
    "timestamp": TIMESTAMP, "datetime": TIMESTAMP, "timestamp without time zone": TIMESTAMP,
    # an instant; pqe's session time zone is UTC (text without an offset is UTC time)
    "timestamptz": pa.timestamp("us", tz="UTC"), "timestamp with time zone":
        pa.timestamp("us", tz="UTC"),
    "time": TIME, "time without time zone": TIME,
    "interval": INTERVAL,
    "decimal": pa.decimal128(18, 3), "numeric": pa.decimal128(18, 3),
}

_FLOAT_RE = re.compile(r"^\s*float\s*\(\s*(\d+)\s*\)\s*$", re.I)
_DECIMAL_RE = re.compile(r"^\s*(decimal|numeric|dec)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)\s*$", re.I)


def shown_type(t: pa.DataType, other: pa.DataType) -> str:
    """`t`'s SQL name for a message comparing it with `other`, with its Arrow type when the
    two names are the same (TIMESTAMPTZ in two zones, a list and a large list)."""
    name = type_name(t)
    return f"{name} ({t})" if t != other and name == type_name(other) else name


def parse_type(spec: str | pa.DataType) -> pa.DataType:
    """A type from an Arrow type or a SQL/Arrow spelling ('BIGINT', 'decimal(15,2)', 'string')."""
    if isinstance(spec, pa.DataType):
        return normalize(spec)
    text = spec.strip()
    m = _DECIMAL_RE.match(text)
    if m:
        precision = int(m.group(2))
        scale = int(m.group(3) or 0)
        if not 1 <= precision <= MAX_DECIMAL_PRECISION or scale > precision:
            raise TypeMismatchError(f"invalid decimal type {text!r}")
        return pa.decimal128(precision, scale)
    m = _FLOAT_RE.match(text)
    if m:
        # FLOAT(p): p binary digits of precision, as in DuckDB and PostgreSQL
        bits = int(m.group(1))
        if not 1 <= bits <= 53:
            raise TypeMismatchError(f"invalid type {text!r}: the precision of FLOAT must be "
                                    f"between 1 and 53")
        return FLOAT32 if bits <= 24 else FLOAT64
    m = re.fullmatch(r"(timestamp|datetime)\s*\(\s*(\d+)\s*\)", text.lower())
    if m and int(m.group(2)) != 6:
        # (it was read as TIMESTAMP: .987654 kept where DuckDB rounds to the precision, and
        # TIMESTAMP(9)'s nanoseconds were cut)
        raise UnsupportedError(f"type {text} is not supported: pqe's TIMESTAMP keeps "
                               f"microseconds (precision 6)")
    key = re.sub(r"\s*\(\s*\d+\s*\)\s*$", "", text.lower())  # VARCHAR(25) -> varchar
    key = re.sub(r"\s+", " ", key)
    if key in _NAMED:
        if key != text.lower().strip() and _NAMED[key] != TEXT and not m:
            # a text type's length is kept by nothing (DuckDB's is not either); any other
            # type's parameter (MySQL's INT(5) display width, BLOB(3)) is not read as nothing
            raise UnsupportedError(f"type {text} is not supported: {key.upper()} takes no "
                                   f"parameters")
        return _NAMED[key]
    raise UnsupportedError(f"unknown or unsupported type {spec!r}")


def python_values(column, name: str) -> list:
    """A result column as Python values; a value Python cannot hold (a DATE or TIMESTAMP past
    year 9999, which date arithmetic can reach) is a one-line error naming the column, not
    Python's OverflowError."""
    from .errors import DataValueError

    try:
        return column.to_pylist()
    except (OverflowError, ValueError) as e:
        raise DataValueError(f"column {name!r} holds a value Python cannot represent ({e}); "
                             f"read it with to_arrow()") from None


def plain_value(value: object) -> object:
    """`value` as an instance of the Python type it is (bool, int, float, Decimal, str,
    date, datetime) rather than of a subclass whose str() or repr() differs: a mixed-in
    Enum member's value, a numpy scalar's Python value. pandas' missing values (NaT, NA)
    are None: NaT is a datetime whose text is 'NaT' (a cast error where DuckDB binds NULL)."""
    if type(value).__name__ in ("NaTType", "NAType") \
            and type(value).__module__.startswith("pandas"):
        return None
    if type(value).__module__.startswith("pandas") and (
            getattr(value, "nanosecond", 0) or getattr(value, "nanoseconds", 0)):
        _below_micros(value)  # (a pandas Timestamp or Timedelta: datetime subclasses)
    if type(value).__module__ == "numpy" and hasattr(value, "item") \
            and getattr(value, "ndim", 0) == 0:  # (an array is no scalar: refused as lists are)
        import numpy as np

        kind = getattr(getattr(value, "dtype", None), "kind", "")
        if kind in "Mm" and np.datetime_data(value.dtype)[0] in ("ns", "ps", "fs", "as"):
            # finer than microseconds .item() gives an int: as TIMESTAMP's microseconds a
            # datetime (a timedelta, refused as one), never a number
            micros = value.astype("datetime64[us]" if kind == "M" else "timedelta64[us]")
            if not np.isnat(value) and micros.astype(value.dtype) != value:
                _below_micros(value)
            value = micros
        value = value.item()
    for base in (bool, int, float, str):
        if isinstance(value, base) and type(value) is not base:
            if base is int and isinstance(value, bool):
                continue
            return base(value) if base is not str else str.__str__(value)
    return value


def python_number(value: object) -> object:
    """A NumPy integer or floating scalar (np.int64(2), np.float32(0.25)) as the Python int
    or float it holds, for arguments that take a Python number (a quantile, a frame offset,
    ddof, a timeout, partitions=); anything else, a NumPy bool included, unchanged (a bool
    is refused where an integer is wanted: np.bool_ is no Python int either)."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 \
            and getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u", "f"):
        item = value.item()
        if isinstance(item, (int, float)):  # (np.longdouble's item() is itself)
            return item
    return value


def _below_micros(value: object) -> None:
    """A value with digits below the microsecond is refused: a constant holds microseconds,
    and cutting `pd.Timestamp(1, unit="ns")` to 0 compared a TIMESTAMP_NS column with the
    wrong instant (`c == v` found the row at 0 ns), as SQL text naming nanoseconds is."""
    raise UnsupportedError(f"the {type(value).__name__} {value} has digits below the "
                           f"microsecond, which a constant cannot hold (constants hold "
                           f"microseconds): round it to microseconds, or compare in the "
                           f"column's own terms")


def uuid_text(storage: pa.Array) -> pa.Array:
    """UUIDs (16 bytes each, a fixed_size_binary(16) array) as their canonical text: 36
    characters of lower-case hex, 8-4-4-4-12 (DuckDB's cast of a UUID to VARCHAR)."""
    import numpy as np
    import pyarrow.compute as pc

    n = len(storage)
    raw = np.frombuffer(storage.buffers()[1], np.uint8)[storage.offset * 16:
                                                        (storage.offset + n) * 16]
    raw = raw.reshape(n, 16)
    digits = np.frombuffer(b"0123456789abcdef", np.uint8)
    hexed = np.empty((n, 32), np.uint8)
    hexed[:, 0::2] = digits[raw >> 4]
    hexed[:, 1::2] = digits[raw & 15]
    text = np.full((n, 36), ord("-"), np.uint8)
    for lo, hi, at in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        text[:, at:at + hi - lo] = hexed[:, lo:hi]
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    validity = None
    if storage.null_count:
        validity = storage.buffers()[0] if not storage.offset else \
            pc.is_valid(storage).buffers()[1]  # (a slice: its bits realigned)
    return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets),
                                                  pa.py_buffer(text.tobytes())],
                                 null_count=storage.null_count)


def _month_day_nano(months: int, days: int, nanoseconds: int):
    return pa.MonthDayNano([months, days, nanoseconds])


def _reduce_month_day_nano(v):
    return _month_day_nano, (v.months, v.days, v.nanoseconds)


# pyarrow's MonthDayNano (an INTERVAL literal's value in a plan) does not pickle: its class
# is looked up as builtins.MonthDayNano. A plan holding one failed on a cluster ("Error
# during deserialization of the task graph"); registered here, it pickles as its three parts
copyreg.pickle(type(pa.MonthDayNano([0, 0, 0])), _reduce_month_day_nano)


def duration_interval(arr: pa.Array, column: str) -> pa.Array:
    """A DURATION array (pandas' timedelta64, Polars' Duration) as INTERVALs of no months and
    no days and its length in nanoseconds, as DuckDB reads an Arrow duration (in
    microseconds). Arrow has no such cast; a length past INTERVAL's nanoseconds (about 292
    years) is an UnsupportedError naming `column`, never a wrapped value."""
    import numpy as np
    import pyarrow.compute as pc

    try:
        nanos = pc.cast(arr, pa.duration("ns"))  # (checked: a value past int64 ns raises)
    except pa.ArrowInvalid as e:
        raise UnsupportedError(f"column {column!r}: a {type_name(arr.type)} value is longer "
                               f"than an INTERVAL holds (about 292 years)") from e
    n = len(nanos)
    raw = nanos.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    out = np.zeros((n, 2), np.int64)  # each value: int32 months, int32 days, int64 nanos
    out[:, 1] = raw - np.fmod(raw, 1000)  # (`interval_micros`)
    validity = pc.is_valid(nanos).buffers()[1] if nanos.null_count else None
    return pa.Array.from_buffers(INTERVAL, n, [validity, pa.py_buffer(out.tobytes())],
                                 null_count=nanos.null_count)


def interval_micros(arr: pa.Array) -> pa.Array:
    """An INTERVAL array with its nanoseconds cut to whole microseconds, toward zero, as
    DuckDB reads Arrow intervals and durations: INTERVAL prints, casts and adds to
    timestamps to the microsecond, so 1 ns kept below that printed as 00:00:00 yet was not
    equal to INTERVAL '0 seconds', and four such values made four groups. The array itself
    when no value has a fraction of a microsecond."""
    import numpy as np
    import pyarrow.compute as pc

    n = len(arr)
    if n == 0:
        return arr
    data = np.frombuffer(arr.buffers()[1], np.int64, count=2 * (arr.offset + n))
    data = data.reshape(-1, 2)[arr.offset:]
    nanos = data[:, 1]
    if not np.fmod(nanos, 1000).any():
        return arr
    out = data.copy()
    out[:, 1] = nanos - np.fmod(nanos, 1000)
    validity = arr.buffers()[0]
    if validity is not None and arr.offset:
        validity = pc.is_valid(arr).buffers()[1]
    return pa.Array.from_buffers(INTERVAL, n, [validity, pa.py_buffer(out.tobytes())],
                                 null_count=arr.null_count)


# the codecs a written Parquet or CSV file may use (COPY ... (COMPRESSION c), write_parquet)
WRITE_CODECS = {"parquet": ("snappy", "zstd", "gzip", "none", "lz4", "brotli"),
                "csv": ("none", "gzip", "bz2", "zstd")}


def write_codec(fmt: str, codec: object, what: str) -> str:
    """`codec` (any case) if a `fmt` file can be written with it, else a BindError naming
    the ones that can: checked before the query runs."""
    c = str(codec).lower() if isinstance(codec, str) else None
    allowed = WRITE_CODECS[fmt]
    if c not in allowed:
        raise BindError(f"{what} {codec} is not supported for {fmt} (use {', '.join(allowed)})")
    return c


def bad_csv_delimiter(d) -> bool:
    """A CSV delimiter pqe cannot write safely: not one ASCII character, a quote or a newline,
    or a character an unquoted number, date or timestamp holds (digits, letters, . - + : and
    space: COPY ... (DELIMITER '-') wrote -2-2020-01-02, six fields for three)."""
    return not isinstance(d, str) or len(d) != 1 or not d.isascii() or d.isalnum() \
        or d in '"\n\r.-+: '
