"""register_csv(schema=...): a column the schema types is read as CAST(text AS type) reads
the same text, checked against DuckDB's read_csv with the same explicit column types.

Arrow's CSV converter read those columns before: it stored 1000.5 and -9999 in a
DECIMAL(5,2), kept DuckDB's BLOB escape text as literal bytes, raised a raw
ArrowNotImplementedError for INTERVAL, and refused text CAST and DuckDB read ('2024/01/05',
'24:00:00', '+02', 't', 'yes', '1.0', '1.005'). A quote left open swallowed every later line
of a file into one value; it is now an error naming the file and line."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

import pqe

PARTITIONS = (1, 3)


def _field(text: str | None) -> str:
    """A CSV field: None is an empty unquoted field (NULL), text is quoted when it must be."""
    if text is None:
        return ""
    if text == "" or any(c in text for c in ',"\n\r') or text != text.strip(" "):
        return '"' + text.replace('"', '""') + '"'
    return text


def _write(path, values) -> None:
    lines = ["a,id"] + [f"{_field(v)},{i}" for i, v in enumerate(values)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x)
                                                      == math.copysign(1, y))
    return x == y and type(x) is type(y)


def _pqe(tmp_path, ty: str, values, partitions: int):
    """The column as pqe reads it, or its error; with 3 partitions the rows are split over
    three files of one directory (a CSV file is one partition)."""
    d = tmp_path / f"p{partitions}"
    d.mkdir()
    if partitions == 1:
        _write(d / "t.csv", values)
    else:
        parts = [values[i::3] for i in range(3)]
        ids = [list(range(i, len(values), 3)) for i in range(3)]
        for k, (vals, rows) in enumerate(zip(parts, ids, strict=True)):
            lines = ["a,id"] + [f"{_field(v)},{i}" for v, i in zip(vals, rows, strict=True)]
            (d / f"t{k}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ctx = pqe.Context(partitions=partitions)
    ctx.register_csv("t", str(d), schema={"a": ty, "id": "BIGINT"})
    out = ctx.sql("SELECT a, typeof(a) AS ty FROM t ORDER BY id").to_pylist()
    return [r["a"] for r in out], {r["ty"] for r in out}


def _duckdb(tmp_path, ty: str, values):
    p = tmp_path / "duck.csv"
    _write(p, values)
    return [r[0] for r in duckdb.sql(
        f"SELECT a FROM read_csv('{p}', header=true, delim=',', quote='\"', escape='\"', "
        f"columns={{'a': '{ty}', 'id': 'BIGINT'}}) ORDER BY id").fetchall()]


# (type, values both engines read alike); NULL is an empty, unquoted field
AGREE = [
    ("BIGINT", ["1", "-9223372036854775808", "9223372036854775807", " 7 ", "1.0", "+3", None,
                "-0", "007", "1.5", "2.5", "-2.5", "1e3"]),
    ("INTEGER", ["2147483647", "-2147483648", "0", None, "12.0"]),
    ("SMALLINT", ["32767", "-32768", None]),
    ("TINYINT", ["127", "-128", " 5", None]),
    ("DOUBLE", ["1.5", "-0.0", "1e308", "-1e-300", "inf", "-inf", " 2.5 ", None, "1", "0.1",
                "4.9e-324"]),
    ("REAL", ["1.5", "3.4e38", "-0.0", None]),
    ("DECIMAL(5,2)", ["999.99", "-999.99", "1.005", "-1.005", "0.001", " 12.5 ", "1", None,
                      "+1.25", "1e2"]),
    ("DECIMAL(38,10)", ["1234567890123456789012345678.0123456789", "-0.00000000005", None]),
    ("DECIMAL(18,0)", ["999999999999999999", "-999999999999999999", "0.5", None]),
    ("DATE", ["2024-01-05", "2024/01/05", "0001-01-01", "9999-12-31", " 2024-02-29 ", None]),
    ("TIMESTAMP", ["2024-01-05 10:00:00", "2024-01-05 24:00:00", "2024-01-05 10:00:00+02",
                   "2024-01-05T10:00:00.123456", "2024-01-05", "0001-01-01 00:00:00",
                   "9999-12-31 23:59:59.999999", None]),
    ("BOOLEAN", ["t", "yes", "no", "TRUE", "false", "0", "1", "Y", "n", None]),
    ("TIME", ["10:00:00", "23:59:59.999999", "00:00", None]),
    ("VARCHAR", ["héllo", "日本", "", " x ", "a,b", 'q"q', "line\nbreak", None]),
    ("BLOB", ["abc", "", " x ", None]),
]


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("ty,values", AGREE, ids=[a for a, _ in AGREE])
def test_typed_columns_read_as_duckdb_reads_them(tmp_path, ty, values, partitions):
    got, types = _pqe(tmp_path, ty, values, partitions)
    want = _duckdb(tmp_path, ty, values)
    if ty == "VARCHAR" or ty == "BLOB":  # (DuckDB reads a quoted "" as NULL: pqe as '')
        want = [b"" if ty == "BLOB" and v == "" else w for v, w in zip(values, want, strict=True)]
        want = ["" if v == "" and ty == "VARCHAR" else w for v, w in zip(values, want, strict=True)]
    assert len(got) == len(want)
    assert all(_same(g, w) for g, w in zip(got, want, strict=True)), (got, want)
    assert types == {{"REAL": "FLOAT"}.get(ty, ty)}


# and text pqe's CAST reads where DuckDB's refuses (PostgreSQL's words for BOOLEAN)
CAST_ONLY = [("BOOLEAN", ["on", " OFF ", " f ", None])]


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("ty,values", AGREE + CAST_ONLY,
                         ids=[a for a, _ in AGREE + CAST_ONLY])
def test_typed_columns_read_as_cast_reads_the_text(tmp_path, ty, values, partitions):
    """The same answer as pqe's own CAST of each text (the kernel the CSV path runs)."""
    got, _ = _pqe(tmp_path, ty, values, partitions)
    ctx = pqe.Context()
    ctx.register_arrow("s", pa.table({"v": pa.array(values, pa.string()),
                                      "id": list(range(len(values)))}))
    want = [r["a"] for r in ctx.sql(f"SELECT CAST(v AS {ty}) AS a FROM s ORDER BY id")
            .to_pylist()]
    assert all(_same(g, w) for g, w in zip(got, want, strict=True)), (got, want)


# (type, value, what the message says): values DuckDB refuses too (Conversion Error)
REFUSED = [
    ("DECIMAL(5,2)", "1000.5", "not a valid DECIMAL(5,2)"),
    ("DECIMAL(5,2)", "-9999", "not a valid DECIMAL(5,2)"),
    ("DECIMAL(5,2)", "99999.99", "not a valid DECIMAL(5,2)"),
    ("DECIMAL(5,2)", "999.995", "not a valid DECIMAL(5,2)"),
    ("BIGINT", "9223372036854775808", "not a valid BIGINT"),
    ("BIGINT", "x1", "not a valid BIGINT"),
    ("INTEGER", "2147483648", "not a valid INTEGER"),
    ("TINYINT", "128", "not a valid TINYINT"),
    ("DOUBLE", "1e400x", "not a valid DOUBLE"),
    ("DATE", "2023-02-29", "not a valid DATE"),
    ("DATE", "2024-13-01", "not a valid DATE"),
    ("TIMESTAMP", "2024-01-05 24:00:01", "not a valid TIMESTAMP"),
    ("BOOLEAN", "maybe", "not a valid BOOLEAN"),
    ("TIME", "25:00:00", "not a valid TIME"),
    ("BLOB", "é", "not a valid BLOB: a backslash escape or a character past ASCII"),
]


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("ty,text,says", REFUSED, ids=[f"{a}-{b}" for a, b, _ in REFUSED])
def test_values_the_type_cannot_hold_are_errors_naming_the_line(tmp_path, ty, text, says,
                                                                 partitions):
    values = ["1" if ty != "DATE" and ty != "TIMESTAMP" and ty != "TIME" and ty != "BOOLEAN"
              else None, None, text, None]
    with pytest.raises(duckdb.Error):
        _duckdb(tmp_path, ty, values)
    with pytest.raises(pqe.DataValueError) as e:
        _pqe(tmp_path, ty, values, partitions)
    msg = str(e.value)
    line = 4 if partitions == 1 else 2  # (row 2 is the first of the third file)
    assert f"line {line}, column 'a' holds a value that is {says}" in msg, msg
    assert ".csv" in msg and text not in msg  # names the file, never quotes its content


def test_decimal_overflow_is_never_stored(tmp_path):
    """The hunt's case: 1000.5 and -9999 were stored in a DECIMAL(5,2) and then in a table of
    that type."""
    p = tmp_path / "t.csv"
    p.write_text("a\n1000.5\n1.5\n-9999\n")
    ctx = pqe.Context()
    ctx.register_csv("t", str(p), schema={"a": "DECIMAL(5,2)"})
    ctx.sql("CREATE TABLE tt (a DECIMAL(5,2))")
    with pytest.raises(pqe.DataValueError, match=r"t\.csv: line 2, column 'a'"):
        ctx.sql("INSERT INTO tt SELECT a FROM t")
    assert ctx.sql("SELECT count(*) AS n FROM tt").to_pylist() == [{"n": 0}]
    p.write_text("a\n999.99\n1.5\n-999.99\n")
    ctx.register_csv("t", str(p), schema={"a": "DECIMAL(5,2)"})
    assert ctx.sql("SELECT a FROM t").to_pylist() == [
        {"a": Decimal("999.99")}, {"a": Decimal("1.50")}, {"a": Decimal("-999.99")}]


def test_blob_escapes_are_refused_as_cast_refuses_them(tmp_path):
    """DuckDB writes BLOB bytes past ASCII as `\\xNN` escapes; pqe's CAST(text AS BLOB) refuses
    such text (README), and so does the CSV path now: it read the escape text as its own bytes
    (8 bytes for 2), silently."""
    con = duckdb.connect()
    con.register("b", pa.table({"b": pa.array([b"\x00\xff", b"abc", None], pa.binary())}))
    con.sql(f"COPY b TO '{tmp_path}/d.csv' (FORMAT csv)")
    ctx = pqe.Context()
    ctx.register_csv("r", str(tmp_path / "d.csv"), schema={"b": "BLOB"})
    with pytest.raises(pqe.DataValueError, match=r"d\.csv: line 2, column 'b' holds a value "
                                                 r"that is not a valid BLOB: a backslash"):
        ctx.sql("SELECT b FROM r").to_arrow()
    with pytest.raises(pqe.DataValueError, match="not a valid BLOB"):
        ctx.sql("SELECT CAST('\\x00\\xFF' AS BLOB)").to_arrow()
    # ASCII text without backslashes is its bytes, as CAST reads it
    (tmp_path / "a.csv").write_text("b\nabc\n\n")
    ctx.register_csv("a", str(tmp_path / "a.csv"), schema={"b": "BLOB"})
    assert ctx.sql("SELECT b FROM a").to_pylist() == [{"b": b"abc"}, {"b": None}]


@pytest.mark.parametrize("ty", ["INTERVAL", pa.list_(pa.int64())], ids=["INTERVAL", "LIST"])
def test_types_no_text_cast_reaches_are_refused_on_registration(tmp_path, ty):
    p = tmp_path / "t.csv"
    p.write_text("a\n1 day\n")
    with pytest.raises(pqe.UnsupportedError, match=r"column 'a' cannot be read as .*read it "
                                                   r"as VARCHAR"):
        pqe.Context().register_csv("t", str(p), schema={"a": ty})
    # as text, CAST reads the column as SQL does
    ctx = pqe.Context()
    ctx.register_csv("t", str(p), schema={"a": "VARCHAR"})
    assert ctx.sql("SELECT a FROM t").to_pylist() == [{"a": "1 day"}]


def test_quoted_empty_text_in_a_typed_column_is_an_error(tmp_path):
    """Only an empty, unquoted field is NULL (README): a quoted "" is the empty text, which
    CAST refuses for a number (DuckDB reads it as NULL)."""
    p = tmp_path / "t.csv"
    p.write_text('a,b\n"",1\n,2\n')
    ctx = pqe.Context()
    ctx.register_csv("t", str(p), schema={"a": "BIGINT"})
    with pytest.raises(pqe.DataValueError, match="line 2, column 'a'"):
        ctx.sql("SELECT a FROM t").to_arrow()


def test_a_value_arrows_converter_refuses_past_the_first_block(tmp_path):
    """Numbers, BOOLEAN and DATE columns are read by Arrow's converter while it takes every
    value (it reads them as CAST does): a file it refuses is read as text and cast."""
    p = tmp_path / "t.csv"
    n = 200_000
    p.write_text("a,b,c\n" + "".join(f"{i},{i % 2},2024-01-05\n" for i in range(n))
                 + "1.0,yes,2024/01/06\n")
    for partitions in PARTITIONS:
        ctx = pqe.Context(partitions=partitions)
        ctx.register_csv("t", str(p), schema={"a": "BIGINT", "b": "BOOLEAN", "c": "DATE"})
        assert ctx.sql("SELECT count(*) AS n, sum(a) AS s, count(CASE WHEN b THEN 1 END) AS t, "
                       "max(c) AS c FROM t").to_pylist() == [
            {"n": n + 1, "s": n * (n - 1) // 2 + 1, "t": n // 2 + 1,
             "c": datetime.date(2024, 1, 6)}]
        assert ctx.sql("SELECT a, b, c FROM t WHERE a = 1 AND c > DATE '2024-01-05'") \
            .to_pylist() == [{"a": 1, "b": True, "c": datetime.date(2024, 1, 6)}]


def test_filters_on_typed_columns_see_the_cast_values(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,d,ts\n1.005,2024/01/05,2024-01-05 24:00:00\n2.5,2024-01-07,"
                 "2024-01-05 10:00:00+02\n")
    ctx = pqe.Context()
    ctx.register_csv("t", str(p), schema={"a": "DECIMAL(5,2)", "d": "DATE", "ts": "TIMESTAMP"})
    assert ctx.sql("SELECT a FROM t WHERE a = 1.01").to_pylist() == [{"a": Decimal("1.01")}]
    assert ctx.sql("SELECT a FROM t WHERE d = DATE '2024-01-05'").to_pylist() == \
        [{"a": Decimal("1.01")}]
    assert ctx.sql("SELECT a FROM t WHERE ts = TIMESTAMP '2024-01-06 00:00:00'").to_pylist() == \
        [{"a": Decimal("1.01")}]
    assert ctx.sql("SELECT count(*) AS n FROM t WHERE ts < TIMESTAMP '2024-01-05 12:00:00'") \
        .to_pylist() == [{"n": 1}]


def test_copy_round_trips_with_a_schema(tmp_path):
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE src (i BIGINT, d DECIMAL(5,2), f DOUBLE, dt DATE, ts TIMESTAMP, "
            "b BOOLEAN, s VARCHAR, t TIME)")
    ctx.sql("INSERT INTO src VALUES (9223372036854775807, 999.99, -0.0, DATE '0001-01-01', "
            "TIMESTAMP '9999-12-31 23:59:59.999999', true, 'x,\"y\"\nz', TIME '23:59:59.5'), "
            "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
            "(-9223372036854775808, -999.99, 1e308, DATE '9999-12-31', "
            "TIMESTAMP '0001-01-01 00:00:00', false, '', TIME '00:00:00')")
    ctx.sql(f"COPY src TO '{tmp_path}/o.csv'")
    schema = {"i": "BIGINT", "d": "DECIMAL(5,2)", "f": "DOUBLE", "dt": "DATE",
              "ts": "TIMESTAMP", "b": "BOOLEAN", "s": "VARCHAR", "t": "TIME"}
    for partitions in PARTITIONS:
        c2 = pqe.Context(partitions=partitions)
        c2.register_csv("o", str(tmp_path / "o.csv"), schema=schema)
        back = c2.sql("SELECT * FROM o").to_arrow()
        assert back.schema == ctx.sql("SELECT * FROM src").to_arrow().schema
        ctx.register_arrow(f"o{partitions}", back)
        for a, b in (("src", f"o{partitions}"), (f"o{partitions}", "src")):
            assert ctx.sql(f"SELECT count(*) AS n FROM (SELECT * FROM {a} EXCEPT ALL "
                           f"SELECT * FROM {b})").to_pylist() == [{"n": 0}]


# ---- a quote left open ------------------------------------------------------------------------


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_a_quote_left_open_is_an_error_naming_the_line(tmp_path, partitions):
    """The hunt's case: `2,"abc` swallowed the next lines into one value (2 rows of 4).
    DuckDB's sniffer drops quoting for such a file; with quote='"' it errors, as pqe does."""
    p = tmp_path / "t.csv"
    p.write_text('a,b\n1,x\n2,"abc\n3,y\n4,z\n')
    ctx = pqe.Context(partitions=partitions)
    with pytest.raises(pqe.ExecutionError, match=r"t\.csv: a quote opened on line 3 is not "
                                                 r"closed by the end of the file"):
        ctx.sql(f"SELECT * FROM read_csv('{p}')").to_arrow()
    ctx.register_csv("t", str(p))
    for q in ("SELECT count(*) FROM t", "SELECT a FROM t WHERE a = 1", "SELECT b FROM t"):
        with pytest.raises(pqe.ExecutionError, match="not closed"):
            ctx.sql(q).to_arrow()
    with pytest.raises(duckdb.Error):
        duckdb.sql(f"SELECT * FROM read_csv('{p}', quote='\"', delim=',', header=true)") \
            .fetchall()
    # escaped quotes inside the open value, CRLF lines, no newline at the end
    for body, line in (('a,b\r\n1,"x""y\r\n2,z\r\n', 2), ('a,b\n1,x\n2,"a""\n3,""q', 3)):
        p.write_bytes(body.encode())
        with pytest.raises(pqe.ExecutionError, match=f"quote opened on line {line} "):
            pqe.Context().sql(f"SELECT * FROM read_csv('{p}')").to_arrow()


@pytest.mark.parametrize("last", ["\n", "\r\n", "a\nb", 'x"\n', '"\n"', "\n\n", 'ends""\n',
                                  "é\n日"])
def test_closed_quoted_values_with_line_breaks_at_the_end_read_back(tmp_path, last):
    """A last value that holds a line break, closed: the rows it is, never the error."""
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"id": [1, 2], "s": ["first\nx", last]}))
    ctx.sql(f"COPY t TO '{tmp_path}/o.csv'")
    want = [{"id": 1, "s": "first\nx"}, {"id": 2, "s": last}]
    assert ctx.sql(f"SELECT * FROM read_csv('{tmp_path}/o.csv') ORDER BY id").to_pylist() == want
    ctx.register_csv("o", str(tmp_path / "o.csv"), schema={"id": "INTEGER"})
    assert ctx.sql("SELECT * FROM o ORDER BY id").to_pylist() == want
    # and without the file's final newline
    data = (tmp_path / "o.csv").read_bytes()
    (tmp_path / "n.csv").write_bytes(data[:-1])
    assert ctx.sql(f"SELECT * FROM read_csv('{tmp_path}/n.csv') ORDER BY id").to_pylist() == want


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_hive_directories_with_typed_columns(tmp_path, partitions):
    """A filter on a hive partition column still skips a file whole (a bad value there is
    not read); any other filter sees the cast values of the files it reads."""
    for k, body in ((1, "a\n1.005\n2\n"), (2, "a\n3.5\n"), (3, "a\nnot a number\n")):
        (tmp_path / f"k={k}").mkdir()
        (tmp_path / f"k={k}" / "d.csv").write_text(body)
    ctx = pqe.Context(partitions=partitions)
    ctx.register_csv("t", str(tmp_path), schema={"a": "DECIMAL(5,2)"})
    assert ctx.sql("SELECT k, a FROM t WHERE k < 3 AND a > 1.001 ORDER BY a").to_pylist() == [
        {"k": 1, "a": Decimal("1.01")}, {"k": 1, "a": Decimal("2.00")},
        {"k": 2, "a": Decimal("3.50")}]
    with pytest.raises(pqe.DataValueError, match=r"k=3/d\.csv: line 2, column 'a'"):
        ctx.sql("SELECT k, a FROM t WHERE a > 1").to_arrow()
