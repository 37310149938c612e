"""Random small tables for the differential fuzzer (`pqe.testing.fuzz`).

A *database* is an ordered dict ``name -> pyarrow.Table``. Tables are small (0-30 rows) with
NULLs, duplicate rows and skewed values drawn from small shared pools, so that joins, GROUP BY,
DISTINCT and set operations find matches. Every column is named ``c<i>`` and has one of seven
SQL types; the generator sees each column's *category* (int/double/decimal/str/date/bool).
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
}
_TYPE_WEIGHTS = [("BIGINT", 5), ("INTEGER", 3), ("DOUBLE", 3), ("DECIMAL(10,2)", 3),
                 ("VARCHAR", 4), ("DATE", 2), ("BOOLEAN", 2)]

INT_POOL = [0, 1, 2, 3, 4, 5, 7, 10, -1, -2, -5, 100, -100, 1000]
DOUBLE_POOL = [0.0, 0.5, 1.0, 1.5, 2.0, 2.25, -0.5, -1.0, -2.75, 3.0, 10.5, 100.0, -0.0, 0.25]
DECIMAL_POOL = ["0.00", "0.01", "1.00", "1.50", "2.25", "-1.00", "-0.50", "3.33", "10.10",
                "99.99", "-12.34", "0.10", "2.00", "5.05"]
STR_POOL = ["", "a", "b", "ab", "abc", "A", "Ab", "a_c", "b%", " a", "a ", "xyz", "é", "ba"]
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


def _pool(rng: random.Random, sql_type: str) -> list:
    cat = SQL_TYPES[sql_type][1]
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


def random_table(rng: random.Random, n_rows: int | None = None,
                 n_cols: int | None = None) -> pa.Table:
    if n_cols is None:
        n_cols = rng.randint(2, 6)
    if n_rows is None:
        n_rows = rng.choice([0, 1, 2, 3] + [rng.randint(4, 12)] * 4 + [rng.randint(13, 30)] * 2)
    types = [t for t, _ in _TYPE_WEIGHTS]
    weights = [w for _, w in _TYPE_WEIGHTS]
    col_types = [rng.choices(types, weights)[0] for _ in range(n_cols)]
    if not any(SQL_TYPES[t][1] == "int" for t in col_types):
        col_types[0] = "BIGINT"
    arrays, names = [], []
    for i, sql_type in enumerate(col_types):
        pool = _pool(rng, sql_type)
        null_p = rng.choice([0.0, 0.0, 0.1, 0.2, 0.4])
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


def random_database(rng: random.Random, n_tables: int | None = None) -> dict[str, pa.Table]:
    if n_tables is None:
        n_tables = rng.randint(2, 4)
    return {f"t{i}": random_table(rng) for i in range(n_tables)}


# ---- rendering, for reproductions ----------------------------------------------------------

def _py_value(v) -> str:
    if isinstance(v, decimal.Decimal):
        return f"D('{v}')"
    if isinstance(v, datetime.date):
        return f"date({v.year}, {v.month}, {v.day})"
    if isinstance(v, float):
        return repr(v)
    return repr(v)


def _sql_value(v, sql_type: str) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, float):
        return f"CAST('{v!r}' AS DOUBLE)" if v == 0.0 and str(v).startswith("-") else repr(v)
    return str(v)


_PA_NAMES = {"BIGINT": "pa.int64()", "INTEGER": "pa.int32()", "DOUBLE": "pa.float64()",
             "DECIMAL(10,2)": "pa.decimal128(10, 2)", "VARCHAR": "pa.string()",
             "DATE": "pa.date32()", "BOOLEAN": "pa.bool_()"}


def database_python(db: dict[str, pa.Table]) -> str:
    """Python that rebuilds `db` (as pyarrow tables)."""
    lines = ["import datetime, decimal; import pyarrow as pa",
             "D = decimal.Decimal; date = datetime.date"]
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
