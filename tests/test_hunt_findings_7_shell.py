"""Shell findings of the seventh adversarial hunt: script text kept byte for byte, .explain
never running a statement, REAL/INTERVAL/NaN shown right, control characters escaped on the
screen, script error locations, carets under wide characters, and .schema output that runs
again."""

from __future__ import annotations

import csv
import io
import json
import sys

import pyarrow as pa
import pytest

import pqe
from pqe.shell import app
from pqe.shell.render import Renderer, render_to_string
from pqe.shell.statements import split_lines

# every character str.splitlines() splits at but '\n', and a lone '\r'
ODD = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei\rj"


def _shell(ctx, mode: str = "csv") -> tuple[app.Shell, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return app.Shell(ctx, Renderer(out, mode, color=False), err, progress=False), out, err


@pytest.fixture
def ctx():
    c = pqe.Context()
    yield c
    c.close()


# ---- 1. string literals in -c, -f, .read and stdin stay byte for byte -----------------------


def test_split_lines_splits_at_newline_only():
    assert split_lines(f"select '{ODD}';\r\nselect 2\n") == [f"select '{ODD}';", "select 2"]
    assert split_lines("a\r\rb\r\n\nc\r") == ["a\r\rb", "", "c\r"]
    assert split_lines("") == []


def test_c_f_and_read_keep_literals(tmp_path, capsys):
    sql = f"SELECT '{ODD}' AS v"
    assert app.main(["--mode", "json", "-c", sql]) == 0
    assert json.loads(capsys.readouterr().out) == [{"v": ODD}]
    script = tmp_path / "odd.sql"
    script.write_bytes(f"-- windows line ends\r\n{sql};\r\nSELECT 'x\r\ny' AS w;\r\n"
                       .encode())
    assert app.main(["--mode", "json", "-f", str(script)]) == 0
    # ('\r\n' ends a line, also inside a literal)
    assert capsys.readouterr().out == (json.dumps([{"v": ODD}], ensure_ascii=False,
                                                  separators=(",", ":"))
                                       + '\n[{"w":"x\\ny"}]\n').replace("\x85", "\\u0085")
    assert app.main(["--mode", "csv", "-c", f".read {script}"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out, newline="")))
    assert rows == [["v"], [ODD], ["w"], ["x\ny"]]


def test_piped_stdin_keeps_literals(monkeypatch, capsys):
    # a text stdin that would translate a lone '\r' (as Windows' does) reads lines at '\n'
    raw = f"SELECT '{ODD}' AS v;\r\n".encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    assert app.main(["--mode", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out, newline="")))
    assert rows == [["v"], [ODD]]


# ---- 2. .explain explains, never executes ----------------------------------------------------


def test_explain_never_runs_a_later_statement(ctx):
    shell, out, err = _shell(ctx, "table")
    assert shell.run_script(["CREATE TABLE t (a INTEGER);", "INSERT INTO t VALUES (1);"])
    assert shell.run_script([".explain SELECT 1 AS x; DROP TABLE t",
                             ".explain SELECT 2 AS y; INSERT INTO t VALUES (2); DELETE FROM t"])
    text = out.getvalue()
    assert "Projection: 1 AS x" in text and "Drop: TABLE t" in text
    assert "Projection: 2 AS y" in text
    # ANALYZE runs queries only: the DROP is refused, not run
    assert not shell.run_script([".explain analyze SELECT 3 AS z; DROP TABLE t"])
    assert "EXPLAIN ANALYZE would run the statement" in err.getvalue()
    assert ctx.tables() == ["t"]
    assert ctx.sql("SELECT a FROM t").to_arrow().column(0).to_pylist() == [1]
    assert not shell.run_script([".explain ;"])
    assert "usage: .explain" in err.getvalue()


# ---- 3. REAL, INTERVAL, NaN and Infinity ----------------------------------------------------


def test_real_and_interval_print_as_duckdb_does(capsys):
    sql = ("SELECT CAST(1.1 AS REAL) AS r, [CAST(0.1 AS REAL)] AS l, INTERVAL 90 MINUTE AS i, "
           "INTERVAL '1 year 2 months 3 days 1 hour 30 minutes' AS j, "
           "INTERVAL 90 MINUTE - INTERVAL 3 DAY AS k, INTERVAL '1.5' SECOND AS s")
    assert app.main(["--mode", "csv", "-c", sql]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        '1.1,[0.1],01:30:00,1 year 2 months 3 days 01:30:00,-3 days 01:30:00,00:00:01.5')
    assert app.main(["--mode", "json", "-c", sql]) == 0
    assert json.loads(capsys.readouterr().out) == [{
        "r": 1.1, "l": [0.1], "i": "01:30:00", "j": "1 year 2 months 3 days 01:30:00",
        "k": "-3 days 01:30:00", "s": "00:00:01.5"}]
    intervals = pa.array([pa.MonthDayNano([13, 0, 0]), pa.MonthDayNano([-13, -1, 0]),
                          pa.MonthDayNano([0, 1, 0]), pa.MonthDayNano([0, 0, 0]),
                          pa.MonthDayNano([0, 0, -5400 * 10**9]),
                          pa.MonthDayNano([0, 0, 360000 * 10**9 + 1000])])
    assert render_to_string(pa.table({"i": intervals}), "list").splitlines()[1:] == [
        "1 year 1 month", "-1 year -1 month -1 day", "1 day", "00:00:00", "-01:30:00",
        "100:00:00.000001"]
    real = pa.table({"r": pa.array([3.4028235e38, 16777216.0, 1e-45], pa.float32())})
    assert render_to_string(real, "list").splitlines()[1:] == [
        "3.4028235e+38", "16777216.0", "1e-45"]


def test_json_tells_nan_and_infinity_from_null():
    t = pa.table({"d": [float("nan"), float("inf"), float("-inf"), None, 1.5],
                  "l": [[float("nan")], None, None, None, None]})
    assert json.loads(render_to_string(t, "json")) == [
        {"d": "NaN", "l": ["NaN"]}, {"d": "Infinity", "l": None},
        {"d": "-Infinity", "l": None}, {"d": None, "l": None}, {"d": 1.5, "l": None}]


# ---- 4. control characters never reach the terminal raw --------------------------------------

CONTROLS = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]]
NASTY = "\x1b[2J\x07\x00\x7f\x85\x9b" + "\x1b]0;title\x07"


@pytest.mark.parametrize("mode", ["table", "box", "line", "markdown", "list", "tabs"])
def test_display_modes_escape_control_characters(mode):
    t = pa.table({"a\x1b[31m": [NASTY], "b": ["tab\there"]})
    out = render_to_string(t, mode)
    raw = [c for c in CONTROLS if c in out.replace("\n", "").replace("\t" * (mode == "tabs"), "")]
    assert raw == []
    assert "\\x1b[2J\\x07\\x00\\x7f\\x85\\x9b" in out and "a\\x1b[31m" in out
    assert "tab\\there" in out
    # and a nested column's field name in the type under it, and a plan's lines
    nested = pa.table({"s": pa.array([{"x\x1b": 1}], pa.struct([("x\x1b", pa.int32())]))})
    assert "\x1b" not in render_to_string(nested, mode)
    plan = io.StringIO()
    Renderer(plan, mode, color=False).lines(["Filter: a = '\x1b[2J'"])
    assert "\x1b" not in plan.getvalue()


def test_machine_modes_keep_control_characters_exact():
    t = pa.table({"a\x1b": [NASTY]})
    assert json.loads(render_to_string(t, "json")) == [{"a\x1b": NASTY}]
    assert "\x1b" not in render_to_string(t, "json")  # (JSON escapes; valid either way)
    rows = list(csv.reader(io.StringIO(render_to_string(t, "csv"), newline="")))
    assert rows == [["a\x1b"], [NASTY]]
    # a lone '\r' is quoted, as a '\n' is: CSV readers end a row at either
    t = pa.table({"v": ["i\rj", "k\r\nl"], "w": [None, "m"]})
    assert render_to_string(t, "csv") == 'v,w\n"i\rj",\n"k\r\nl",m\n'
    rows = list(csv.reader(io.StringIO(render_to_string(t, "csv"), newline="")))
    assert rows == [["v", "w"], ["i\rj", ""], ["k\r\nl", "m"]]


def test_error_messages_escape_control_characters(ctx):
    shell, _, err = _shell(ctx)
    shell.report(pqe.ExecutionError(f"cannot cast '{NASTY}' to INTEGER"))
    assert "\x1b" not in err.getvalue() and "\\x1b[2J" in err.getvalue()


# ---- 5. a script's error is located by one file line and column -----------------------------


def test_script_error_location_is_the_file_line_and_column(ctx, tmp_path):
    script = tmp_path / "loc.sql"
    script.write_text("-- setup\nSELECT 1,\n  nope;\n")
    shell, _, err = _shell(ctx)
    assert not shell.run_script(split_lines(script.read_text()), source="loc.sql")
    assert err.getvalue() == ("Error: loc.sql:3:3: column 'nope' does not exist\n"
                              "LINE 3:   nope;\n"
                              "          ^\n")
    # a second statement on a line, and a lone '\r' (a line break to the SQL front end)
    shell, _, err = _shell(ctx)
    assert not shell.run_script(["-- c", "select 1; select 'a\rb', nope;"], source="s.sql")
    assert err.getvalue().startswith("Error: s.sql:2:25: column 'nope' does not exist\n")
    # a syntax error in a `.read` file: the place, not the text
    script.write_text("select 1;\n\n  select 1\nfrom t where = ;\n")
    shell, _, err = _shell(ctx)
    assert not shell.run_script([f".read {script}"])
    assert err.getvalue() == (f"Error: {script}:4:14: syntax error: incomplete statement: "
                              "EQ is missing what follows it\n")


# ---- 6. the caret goes by display width ------------------------------------------------------


def test_caret_counts_display_width():
    # 日本 take two cells each, a combining accent none; LINE 1: is 8 wide
    assert app.caret_lines("select '日本', zz from t", 1, 14)[1] == " " * 23 + "^"
    assert app.caret_lines("select 'e\u0301', zz from t", 1, 14)[1] == " " * 20 + "^"
    # an escaped control character takes the cells of its escape
    assert app.caret_lines("select '\x1b', zz", 1, 13) == [
        "LINE 1: select '\\x1b', zz", " " * 23 + "^"]


# ---- 7. .schema output runs again ------------------------------------------------------------


def test_schema_output_recreates_the_schema(ctx):
    ctx.sql('CREATE TABLE "select" ("from" INTEGER NOT NULL, "order" VARCHAR, '
            'PRIMARY KEY ("from"))')
    ctx.sql('CREATE TABLE "order" ("Group" DOUBLE, "by" BIGINT, unique_key INTEGER, '
            'UNIQUE ("by"))')
    shell, out, err = _shell(ctx)
    assert shell.run_script([".schema"])
    schema = out.getvalue()
    assert 'CREATE TABLE "select" (\n  "from" INTEGER NOT NULL,' in schema
    fresh = pqe.Context()
    try:
        again, again_out, again_err = _shell(fresh)
        assert again.run_script(split_lines(schema)), again_err.getvalue()
        assert sorted(fresh.tables()) == ["order", "select"]
        assert again.run_script([".schema"])
        assert again_out.getvalue() == schema
    finally:
        fresh.close()
