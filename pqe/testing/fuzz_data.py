"""Random small tables for the differential fuzzer (`pqe.testing.fuzz`).

A *database* is an ordered dict ``name -> pyarrow.Table``. Tables are small (0-30 rows) with
NULLs, duplicate rows and skewed values drawn from small shared pools, so that joins, GROUP BY,
DISTINCT and set operations find matches. Every column is named ``c<i>`` and has one of the
SQL types of SQL_TYPES; the generator sees each column's *category*
(int/double/decimal/str/date/bool/ts/tstz).

``random_database(rng, edge=True)`` draws from the *edge* pools instead: multi-byte and
combining-mark text (CJK, emoji, ZWJ sequences, decomposed accents, the empty string), integers
at the int64 and int32 limits (and 2^62, whose doubling overflows), DECIMAL(38,10) values with
38 digits, NaN / +-inf / -0.0 / denormals in DOUBLE columns, TIMESTAMP and TIMESTAMPTZ columns,
and NULL-heavy columns (50-100% NULL).
"""

from __future__ import annotations

import datetime
import decimal
import random
from dataclasses import dataclass

import pyarrow as pa

# SQL type name -> (arrow type, generator category)
SQL_TYPES: dict[str, tuple[pa.DataType, str]] = {
    "BIGINT": (pa.int64(), "int"),
    "INTEGER": (pa.int32(), "int"),
    "DOUBLE": (pa.float64(), "double"),
    "DECIMAL(10,2)": (pa.decimal128(10, 2), "decimal"),
    "VARCHAR": (pa.string(), "str"),
    "DATE": (pa.date32(), "date"),
    "BOOLEAN": (pa.bool_(), "bool"),
    "DECIMAL(38,10)": (pa.decimal128(38, 10), "decimal"),
    "TIMESTAMP": (pa.timestamp("us"), "ts"),
    "TIMESTAMPTZ": (pa.timestamp("us", tz="UTC"), "tstz"),
}
_TYPE_WEIGHTS = [("BIGINT", 5), ("INTEGER", 3), ("DOUBLE", 3), ("DECIMAL(10,2)", 3),
                 ("VARCHAR", 4), ("DATE", 2), ("BOOLEAN", 2)]

INT_POOL = [0, 1, 2, 3, 4, 5, 7, 10, -1, -2, -5, 100, -100, 1000]
DOUBLE_POOL = [0.0, 0.5, 1.0, 1.5, 2.0, 2.25, -0.5, -1.0, -2.75, 3.0, 10.5, 100.0, -0.0, 0.25]
DECIMAL_POOL = ["0.00", "0.01", "1.00", "1.50", "2.25", "-1.00", "-0.50", "3.33", "10.10",
                "99.99", "-12.34", "0.10", "2.00", "5.05"]
STR_POOL = ["", "a", "b", "ab", "abc", "A", "Ab", "a_c", "b%", " a", "a ", "xyz", "é", "ba"]
# ---- edge values ----
EDGE_INT64 = [2**63 - 1, -(2**63), 2**62, -(2**62), 2**62 + 1, 2**31, -(2**31) - 1, 2**53 + 1,
              0, 1, -1, 7]
EDGE_INT32 = [2**31 - 1, -(2**31), 2**30, -(2**30), 0, 1, -1, 65536]
EDGE_DOUBLE = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e308, -1e308, 5e-324,
               2.2250738585072014e-308, 0.1, 1e-300, 9007199254740993.0, 1.5, -2.5]
EDGE_DECIMAL38 = ["9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999",
                  "0.0000000001", "-0.0000000001", "1.0000000000", "0E-10", "-1.5000000000",
                  "4611686018427387904.0000000000", "12345678901234567890.1234567890",
                  "5000000000000000000000000000.0000000000"]
EDGE_DECIMAL10 = ["99999999.99", "-99999999.99", "0.01", "-0.01", "0.00", "1.00", "50000000.00"]
EDGE_STR = ["", "漢字", "日本語のテキスト", "한국어", "😀", "👨‍👩‍👧", "🏳️‍🌈", "e\u0301", "\u00e9", "Å",
            "ß", "ﬁ", "İ", "ǅ", "Ω", "עברית", "العربية", "ＡＢＣ", "a\tb", " ", "'", "%", "_",
            "Z\u0324\u0354\u0367\u0311", "a" * 40, "\u200b", "x😀y", "ÀÉÎ"]
EDGE_DATE = [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1969, 12, 31),
             datetime.date(1970, 1, 1), datetime.date(2000, 2, 29), datetime.date(2038, 1, 19),
             datetime.date(1900, 3, 1)]
EDGE_TS = [datetime.datetime(1970, 1, 1), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
           datetime.datetime(2000, 2, 29, 12, 0, 0, 1), datetime.datetime(2038, 1, 19, 3, 14, 8),
           datetime.datetime(2020, 1, 1, 0, 0), datetime.datetime(1900, 1, 1, 0, 0),
           datetime.datetime(2262, 4, 11, 23, 47, 16), datetime.datetime(2020, 3, 8, 2, 30)]
TS_POOL = [datetime.datetime(2020, 1, 1, 0, 0), datetime.datetime(2020, 1, 1, 12, 30),
           datetime.datetime(2019, 12, 31, 23, 59, 59), datetime.datetime(2020, 2, 29, 6, 0),
           datetime.datetime(1970, 1, 1), datetime.datetime(2024, 6, 15, 8, 15, 30, 500000)]

DATE_POOL = [datetime.date(2020, 1, 1), datetime.date(2020, 1, 2), datetime.date(2020, 2, 29),
             datetime.date(2019, 12, 31), datetime.date(1970, 1, 1), datetime.date(2024, 6, 15),
             datetime.date(2000, 1, 1), datetime.date(2020, 3, 1)]


@dataclass(frozen=True)
class Column:
    name: str
    sql_type: str

    @property
    def category(self) -> str:
        return SQL_TYPES[self.sql_type][1]


def table_columns(table: pa.Table) -> list[Column]:
    """The fuzzer columns of a table (from its arrow schema)."""
    by_arrow = {str(v[0]): k for k, v in SQL_TYPES.items()}
    return [Column(f.name, by_arrow[str(f.type)]) for f in table.schema]


def _edge_pool(rng: random.Random, sql_type: str) -> list:
    cat = SQL_TYPES[sql_type][1]
    if sql_type == "BIGINT":
        base = list(EDGE_INT64)
    elif sql_type == "INTEGER":
        base = list(EDGE_INT32)
    elif cat == "double":
        base = list(EDGE_DOUBLE)
    elif sql_type == "DECIMAL(38,10)":
        base = [decimal.Decimal(v) for v in EDGE_DECIMAL38]
    elif cat == "decimal":
        base = [decimal.Decimal(v) for v in EDGE_DECIMAL10]
    elif cat == "str":
        base = list(EDGE_STR)
    elif cat == "date":
        base = list(EDGE_DATE)
    elif cat in ("ts", "tstz"):
        base = list(EDGE_TS)
        if cat == "tstz":
            base = [v.replace(tzinfo=datetime.timezone.utc) for v in base]
    else:
        base = [True, False]
    k = rng.choice([2, 3, 4, 6])
    return rng.sample(base, min(k, len(base)))


def _pool(rng: random.Random, sql_type: str, edge: bool = False) -> list:
    if edge:
        return _edge_pool(rng, sql_type)
    cat = SQL_TYPES[sql_type][1]
    if cat in ("ts", "tstz"):
        base = list(TS_POOL)
        if cat == "tstz":
            base = [v.replace(tzinfo=datetime.timezone.utc) for v in base]
        return rng.sample(base, rng.choice([1, 2, 3, 4]))
    if cat == "int":
        base = list(INT_POOL) if sql_type == "BIGINT" else [v for v in INT_POOL if abs(v) < 1000]
        # mostly small values so that joins and groups match across tables
        base = base[:8] * 3 + base[8:]
    elif cat == "double":
        base = list(DOUBLE_POOL)
    elif cat == "decimal":
        base = [decimal.Decimal(v) for v in DECIMAL_POOL]
    elif cat == "str":
        base = list(STR_POOL)
    elif cat == "date":
        base = list(DATE_POOL)
    else:
        base = [True, False]
    k = rng.choice([1, 2, 3, 4, 6, 8])
    pool = []
    for v in rng.sample(base, min(k, len(base))):
        if v not in pool or (isinstance(v, float) and str(v) not in map(str, pool)):
            pool.append(v)
    return pool


_EDGE_TYPE_WEIGHTS = [("BIGINT", 4), ("INTEGER", 2), ("DOUBLE", 4), ("DECIMAL(10,2)", 1),
                      ("DECIMAL(38,10)", 3), ("VARCHAR", 5), ("DATE", 1), ("BOOLEAN", 1),
                      ("TIMESTAMP", 1), ("TIMESTAMPTZ", 2)]


def random_table(rng: random.Random, n_rows: int | None = None,
                 n_cols: int | None = None, edge: bool = False) -> pa.Table:
    if n_cols is None:
        n_cols = rng.randint(2, 6)
    if n_rows is None:
        n_rows = rng.choice([0, 1, 2, 3] + [rng.randint(4, 12)] * 4 + [rng.randint(13, 30)] * 2)
    table_weights = _EDGE_TYPE_WEIGHTS if edge else _TYPE_WEIGHTS
    types = [t for t, _ in table_weights]
    weights = [w for _, w in table_weights]
    col_types = [rng.choices(types, weights)[0] for _ in range(n_cols)]
    if not any(SQL_TYPES[t][1] == "int" for t in col_types):
        col_types[0] = "BIGINT"
    arrays, names = [], []
    for i, sql_type in enumerate(col_types):
        pool = _pool(rng, sql_type, edge)
        null_p = rng.choice([0.0, 0.0, 0.1, 0.2, 0.4])
        if edge and rng.random() < 0.35:   # NULL-heavy columns
            null_p = rng.choice([0.5, 0.8, 0.9, 1.0])
        skewed = rng.random() < 0.5
        vals = []
        for _ in range(n_rows):
            if rng.random() < null_p:
                vals.append(None)
            elif skewed and rng.random() < 0.6:
                vals.append(pool[0])
            else:
                vals.append(rng.choice(pool))
        arrays.append(pa.array(vals, SQL_TYPES[sql_type][0]))
        names.append(f"c{i}")
    table = pa.table(arrays, names=names)
    # exact duplicate rows
    if n_rows >= 2 and rng.random() < 0.3:
        idx = list(range(n_rows)) + [rng.randrange(n_rows) for _ in range(rng.randint(1, 3))]
        table = table.take(pa.array(idx))
    return table


def random_database(rng: random.Random, n_tables: int | None = None,
                    edge: bool = False) -> dict[str, pa.Table]:
    if n_tables is None:
        n_tables = rng.randint(2, 4)
    return {f"t{i}": random_table(rng, edge=edge) for i in range(n_tables)}


# ---- rendering, for reproductions ----------------------------------------------------------

def _py_value(v) -> str:
    if isinstance(v, decimal.Decimal):
        return f"D('{v}')"
    if isinstance(v, datetime.datetime):
        tz = ", tzinfo=UTC" if v.tzinfo is not None else ""
        return (f"datetime({v.year}, {v.month}, {v.day}, {v.hour}, {v.minute}, {v.second}, "
                f"{v.microsecond}{tz})")
    if isinstance(v, datetime.date):
        return f"date({v.year}, {v.month}, {v.day})"
    if isinstance(v, float):
        return repr(v) if v == v and abs(v) != float("inf") else f"float('{v}')"
    return repr(v)


def sql_literal(v, sql_type: str | None = None) -> str:
    """A SQL literal both pqe and DuckDB read as `v` (a typed NULL when `sql_type` is given)."""
    if v is None and sql_type:
        return f"CAST(NULL AS {sql_type})"
    return _sql_value(v, sql_type or "")


def _sql_value(v, sql_type: str) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            return f"TIMESTAMPTZ '{v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat(sep=' ')}+00'"
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, datetime.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")) or (v == 0.0 and str(v).startswith("-")):
            text = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(repr(v), repr(v))
            return f"CAST('{text}' AS DOUBLE)"
        return f"CAST({v!r} AS DOUBLE)" if sql_type != "DOUBLE" else repr(v)
    if isinstance(v, decimal.Decimal) and sql_type.startswith("DECIMAL"):
        return f"CAST('{v}' AS {sql_type})"
    if isinstance(v, decimal.Decimal):
        # plain digits: str() writes Decimal('-1E-10') as -1E-10, a DOUBLE literal in SQL
        return format(v, "f")
    return str(v)


_PA_NAMES = {"BIGINT": "pa.int64()", "INTEGER": "pa.int32()", "DOUBLE": "pa.float64()",
             "DECIMAL(10,2)": "pa.decimal128(10, 2)", "VARCHAR": "pa.string()",
             "DATE": "pa.date32()", "BOOLEAN": "pa.bool_()",
             "DECIMAL(38,10)": "pa.decimal128(38, 10)", "TIMESTAMP": "pa.timestamp('us')",
             "TIMESTAMPTZ": "pa.timestamp('us', tz='UTC')"}


def database_python(db: dict[str, pa.Table]) -> str:
    """Python that rebuilds `db` (as pyarrow tables)."""
    lines = ["import datetime, decimal; import pyarrow as pa",
             "D = decimal.Decimal; date = datetime.date; datetime = datetime.datetime",
             "from datetime import timezone; UTC = timezone.utc"]
    for name, table in db.items():
        cols = []
        for col in table_columns(table):
            vals = ", ".join(_py_value(v) for v in table.column(col.name).to_pylist())
            cols.append(f"'{col.name}': pa.array([{vals}], {_PA_NAMES[col.sql_type]})")
        lines.append(f"{name} = pa.table({{{', '.join(cols)}}})")
    return "\n".join(lines)


def database_sql(db: dict[str, pa.Table]) -> str:
    """CREATE TABLE + INSERT statements that rebuild `db`."""
    out = []
    for name, table in db.items():
        cols = table_columns(table)
        out.append(f"CREATE TABLE {name} ({', '.join(f'{c.name} {c.sql_type}' for c in cols)});")
        rows = table.to_pylist()
        if rows:
            vals = ", ".join(
                "(" + ", ".join(_sql_value(r[c.name], c.sql_type) for c in cols) + ")"
                for r in rows)
            out.append(f"INSERT INTO {name} VALUES {vals};")
    return "\n".join(out)


def value_pool(rng: random.Random, sql_type: str, edge: bool = False) -> list:
    """A few values of `sql_type` to draw from (the edge pools when `edge`)."""
    return _pool(rng, sql_type, edge)


def empty_table(columns: list[tuple[str, str]]) -> pa.Table:
    """An empty table with (name, SQL type) columns: a schema the query generator can read."""
    return pa.table({n: pa.array([], SQL_TYPES[t][0]) for n, t in columns})
