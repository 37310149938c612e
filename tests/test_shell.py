"""The `pqe-sql` shell: its pieces directly, `-c`/`-f`/stdin through subprocesses, and the
interactive prompt through a pseudo-terminal (pexpect), as a person would use it."""

from __future__ import annotations

import decimal
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from prompt_toolkit.document import Document

import pqe
from pqe.shell import app, commands, loader, statements
from pqe.shell.complete import SQLCompleter
from pqe.shell.render import render_to_string

ROOT = Path(__file__).resolve().parents[1]
TPCH_TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region",
               "supplier"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]")
# lineitem x orders at SF0.01: ~900M pairs, several seconds of work, so Ctrl-C lands mid-query
LONG_QUERY = "select count(*) from lineitem a, orders b where a.l_orderkey + b.o_orderkey < 0;"


def clean(text: str) -> str:
    return ANSI.sub("", text).replace("\r", "")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """people.parquet (a NULL, a comma and quotes to escape) and events/ (a table in 2 files)."""
    root = tmp_path_factory.mktemp("shell_data")
    pq.write_table(pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "name": ["Ann", 'Smith, "J"', "Zoë"],
        "age": pa.array([34, None, 7], pa.int32()),
        "score": pa.array([decimal.Decimal("1.50"), decimal.Decimal("20.25"), None],
                          pa.decimal128(6, 2)),
    }), root / "people.parquet")
    (root / "events").mkdir()
    for part, ids in enumerate([[1, 1], [3]]):
        pq.write_table(pa.table({"person": pa.array(ids, pa.int64()),
                                 "kind": [f"k{part}"] * len(ids)}),
                       root / "events" / f"part-{part}.parquet")
    return root


def shell(*args: str, input: str | None = None, cwd: Path | None = None
          ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pqe.shell", *args], input=input,
                          capture_output=True, text=True, timeout=120, cwd=cwd or ROOT)


# ---- pieces ---------------------------------------------------------------------------------


def test_statement_completeness_follows_the_tokenizer():
    assert statements.is_complete("select 1;")
    assert statements.is_complete("select 1;  -- trailing comment")
    assert statements.is_complete(".tables")
    assert not statements.is_complete("select ';'")
    assert not statements.is_complete("select 1 -- ;")
    assert not statements.is_complete("select 'it''s; open")
    assert not statements.is_complete("/* ; */ select 1")
    assert not statements.is_complete("-- a comment before the query")
    assert statements.split_statements("select ';' ; select 2; ;") == ["select ';'", "select 2"]


def test_script_reader_mixes_dot_commands_and_statements():
    items = list(statements.read_script([
        "-- setup", ".mode csv", "select 1,", "  2; select 'a;b';", ".timer on", "select 3"]))
    assert [(i.kind, i.text, i.line) for i in items] == [
        ("dot", ".mode csv", 2), ("sql", "select 1,\n  2", 3), ("sql", "select 'a;b'", 3),
        ("dot", ".timer on", 5), ("sql", "select 3", 6)]


def test_dot_command_prefixes():
    assert commands.resolve(".tab").name == "tables"
    assert commands.resolve(".q").name == "quit"
    assert commands.resolve(".sch").name == "schema"
    with pytest.raises(commands.ShellError, match=r"ambiguous command \.t: could be "
                                                  r"\.tables, \.timer"):
        commands.resolve(".t")
    with pytest.raises(commands.ShellError, match="unknown command .frob"):
        commands.resolve(".frob")


def test_discover_tpch_directory(tpch_dir):
    sources = loader.discover([str(tpch_dir)])
    assert sorted(s.name for s in sources) == TPCH_TABLES
    assert all(s.kind == "parquet" for s in sources)


def test_discover_files_and_errors(data, tmp_path):
    names = {s.name: s.path for s in loader.discover([str(data)])}
    assert names == {"events": data / "events", "people": data / "people.parquet"}
    # a directory of numbered part files is one table, named after the directory
    assert [(s.name, s.path) for s in loader.discover([str(data / "events")])] == [
        ("events", data / "events")]
    with pytest.raises(pqe.CatalogError, match="no such file"):
        loader.discover([str(tmp_path / "missing.parquet")])
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(pqe.CatalogError, match="not a Parquet or CSV file"):
        loader.discover([str(tmp_path / "notes.txt")])
    with pytest.raises(pqe.CatalogError, match="two tables would be named 'people'"):
        loader.discover([str(data / "people.parquet"), str(data)])


def test_caret_lines_point_at_the_column():
    assert app.caret_lines("select *\nfrom t wher x", 2, 8) == [
        "LINE 2: from t wher x", "               ^"]


def test_completion(tpch_ctx):
    c = SQLCompleter(tpch_ctx)

    def complete(text: str, cursor: int | None = None) -> list[str]:
        doc = Document(text, len(text) if cursor is None else cursor)
        return [x.text for x in c.get_completions(doc, None)]

    assert complete("select * from line") == ["lineitem"]
    assert complete("sel") == ["select"] and complete("SEL") == ["SELECT"]
    assert complete("select l_ship from lineitem", 13) == [
        "l_shipdate", "l_shipinstruct", "l_shipmode"]
    assert complete("select o.o_orderd from orders o", 17) == ["o_orderdate"]
    assert complete(".ta") == [".tables"]
    assert complete(".schema reg") == ["region"]


def test_render_text_modes():
    t = pa.table({"n": [1, None], "s": ["a|b", 'x,"y"']})
    assert render_to_string(t, "csv") == 'n,s\n1,a|b\n,"x,""y"""\n'
    assert json.loads(render_to_string(t, "json")) == [{"n": 1, "s": "a|b"},
                                                       {"n": None, "s": 'x,"y"'}]
    assert render_to_string(t, "markdown") == (
        "| n | s |\n|---:|---|\n| 1 | a\\|b |\n| NULL | x,\"y\" |\n")


def test_render_truncates_long_results():
    out = render_to_string(pa.table({"i": list(range(100))}), "table", max_rows=6)
    shown = re.findall(r"│\s+(\d+) │", out)
    assert shown == ["0", "1", "2", "97", "98", "99"]
    assert out.rstrip().endswith("100 rows, 6 shown")


# ---- -c, -f and stdin -----------------------------------------------------------------------

QUERY = "select id, name, age, score from people order by id"
EXPECTED = {
    "csv": 'id,name,age,score\n1,Ann,34,1.50\n2,"Smith, ""J""",,20.25\n3,Zoë,7,\n',
    "markdown": ("| id | name | age | score |\n|---:|---|---:|---:|\n| 1 | Ann | 34 | 1.50 |\n"
                 '| 2 | Smith, "J" | NULL | 20.25 |\n| 3 | Zoë | 7 | NULL |\n'),
    # each column's type under its name
    "table": ("┌────────┬────────────┬─────────┬──────────────┐\n"
              "│     id │ name       │     age │        score │\n"
              "│ bigint │ varchar    │ integer │ decimal(6,2) │\n"
              "├────────┼────────────┼─────────┼──────────────┤\n"
              "│      1 │ Ann        │      34 │         1.50 │\n"
              '│      2 │ Smith, "J" │    NULL │        20.25 │\n'
              "│      3 │ Zoë        │       7 │         NULL │\n"
              "└────────┴────────────┴─────────┴──────────────┘\n"
              "3 rows\n"),
}


@pytest.mark.parametrize("mode", ["table", "csv", "json", "markdown"])
def test_c_output_modes(data, mode):
    r = shell(str(data), "--mode", mode, "-c", QUERY)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    if mode == "json":
        assert r.stdout.count("\n") == 3  # one object per line
        assert json.loads(r.stdout) == [
            {"id": 1, "name": "Ann", "age": 34, "score": 1.5},
            {"id": 2, "name": 'Smith, "J"', "age": None, "score": 20.25},
            {"id": 3, "name": "Zoë", "age": 7, "score": None}]
    else:
        assert r.stdout == EXPECTED[mode]


def test_c_several_statements_stop_at_first_error(data):
    r = shell(str(data), "--mode", "csv", "-c",
              "select count(*) as n from events; select nme from people; select 3 as never")
    assert r.returncode == 1
    assert r.stdout == "n\n3\n"
    assert r.stderr == ("Error: column 'nme' does not exist at line 1, column 8 "
                        "(did you mean 'name'?)\n"
                        "LINE 1: select nme from people\n"
                        "               ^\n")


def test_f_script_with_dot_commands_and_syntax_error(data, tmp_path):
    script = tmp_path / "script.sql"
    script.write_text("-- counts; per kind\n.mode csv\nselect kind, count(*) as n\n"
                      "from events group by kind order by kind;\n"
                      "select ';' as semi;\n.mode markdown\nshow tables;\n"
                      "select id\nfrom people\nwhere id = = 1;\nselect 'not reached';\n")
    r = shell(str(data), "-f", str(script))
    assert r.returncode == 1
    assert r.stdout == ("kind,n\nk0,2\nk1,1\nsemi\n;\n"
                        "| name |\n|---|\n| events |\n| people |\n")
    err = r.stderr.splitlines()
    assert err[0].startswith(f"Error: {script}:10:12: syntax error near '='")
    assert err[1:] == ["LINE 10: where id = = 1;", " " * 20 + "^"]
    assert "Traceback" not in r.stderr


def test_read_nested_script_stops_at_error(data, tmp_path):
    inner = tmp_path / "inner.sql"
    inner.write_text("select 'inner' as x;\nselect nope from people;\nselect 'skipped';\n")
    r = shell(str(data), "--mode", "csv", "-c", f".read {inner}\nselect 'after' as y")
    assert (r.returncode, r.stdout) == (1, "x\ninner\n")
    assert r.stderr.startswith(f"Error: {inner}:2:8: column 'nope' does not exist")


def test_stdin_script_and_debug(data):
    r = shell(str(data), "--mode", "csv", "--scheduler", "sync",
              input="select 1 as a;\n.mode json\nselect 2 as b;\n")
    assert (r.returncode, r.stdout) == (0, 'a\n1\n[{"b":2}]\n')
    r = shell(str(data), "--debug", input="select * from nowhere;\n")
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "table 'nowhere' does not exist" in r.stderr
    r = shell(str(data), input="select * from nowhere;\n")
    assert r.stderr.startswith("Error: table 'nowhere' does not exist")
    # one block: the message, the line, a caret under the table name; no traceback
    assert r.stderr.splitlines()[1:] == ["LINE 1: select * from nowhere", " " * 22 + "^"]


def test_startup_errors_are_one_line(tmp_path):
    r = shell(str(tmp_path / "missing.parquet"), "-c", "select 1")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.startswith("Error: no such file or directory")
    r = shell("--workers", "1", "-c", "select 42 as x", "--mode", "csv")
    assert "Traceback" not in r.stderr
    if "workers" in inspect.signature(pqe.Context).parameters:
        assert (r.returncode, r.stdout) == (0, "x\n42\n"), r.stderr
    else:  # the engine has no LocalCluster option yet: a clear message instead
        assert r.returncode == 1
        assert "--workers: not supported by this version of pqe" in r.stderr


def test_csv_paths(tmp_path):
    (tmp_path / "nums.csv").write_text("a,b\n1,x\n2,y\n")
    r = shell(str(tmp_path / "nums.csv"), "--mode", "csv", "-c", "select sum(a) as s from nums")
    if hasattr(pqe.Context, "register_csv"):
        assert (r.returncode, r.stdout) == (0, "s\n3\n"), r.stderr
    else:
        assert r.returncode == 1 and "CSV files are not supported" in r.stderr


# ---- the interactive shell through a pseudo-terminal ----------------------------------------


class Pty:
    """The shell on a pseudo-terminal. `run` types a line and waits for `until` (text that
    only the output contains) and the next prompt; it returns the output, ANSI stripped."""

    PROMPT = "pqe> "

    def __init__(self, args: list[str], history: Path):
        env = dict(os.environ, PQE_HISTORY=str(history), TERM="xterm-256color",
                   PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="120", LINES="50")
        env.pop("NO_COLOR", None)
        # the terminal discards pending output on Ctrl-C, which can split a UTF-8 sequence
        # preexec_fn: a terminal's Ctrl-C must reach the shell even when pytest itself was
        # started in the background by a non-interactive shell, which ignores SIGINT (a
        # disposition children inherit)
        self.child = pexpect.spawn(sys.executable, ["-m", "pqe.shell", *args], env=env,
                                   cwd=str(ROOT), dimensions=(50, 120), encoding="utf-8",
                                   codec_errors="replace", timeout=60,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.transcript: list[str] = []
        self.expect(self.PROMPT)

    def expect(self, pattern: str) -> str:
        self.child.expect_exact(pattern)
        text = self.child.before + self.child.after
        self.transcript.append(text)
        return clean(text)

    def run(self, line: str, until: str) -> str:
        self.child.send(line + "\r")
        out = self.expect(until)
        return out + self.expect(self.PROMPT)


@pytest.fixture
def session(tpch_dir, data, tmp_path):
    s = Pty([str(tpch_dir), str(data / "people.parquet")], tmp_path / "history")
    yield s
    if s.child.isalive():
        s.child.terminate(force=True)


def test_interactive_session(session, tmp_path):
    s = session
    banner = clean("".join(s.transcript))
    assert "9 tables: customer, lineitem, nation, orders, part, partsupp, people, region, …" \
        in banner

    # a statement over several lines: Enter before the ';' continues it
    s.child.send("select r_name, count(*) as nations\r")
    s.expect("...> ")
    s.child.send("from region join nation on n_regionkey = r_regionkey\r")
    s.expect("...> ")
    out = s.run("group by r_name order by r_name;", until="5 rows")
    assert re.search(r"│ AFRICA\s+│\s+5 │", out)
    assert "╭" in out and "╰" in out  # rounded box on a terminal

    out = s.run(".tables", until="9 rows")
    for name in TPCH_TABLES + ["people"]:
        assert f"│ {name}" in out

    out = s.run(".schema people", until=");")
    assert "CREATE TABLE people (\n  id BIGINT,\n  name VARCHAR,\n  age INTEGER,\n" \
           "  score DECIMAL(6,2)\n);" in out

    # an error, then the session goes on
    out = s.run("select r_name\rfrom region where r_regionkey = = 1;", until="LINE 2: ")
    assert "Error: syntax error at line 2, column 33" in out
    assert "LINE 2: from region where r_regionkey = = 1\n" \
           "                                        ^" in out
    out = s.run("select r_name from region where r_regionkey = 1;", until="1 row")
    assert "AMERICA" in out

    out = s.run("select n_nam from nation;", until="did you mean")
    assert "column 'n_nam' does not exist" in out and "Traceback" not in out

    s.run(".mode csv", until="\n")
    assert "mode: csv" in s.run(".mode", until="mode: ")
    s.run(".timer on", until="\n")
    assert "timer: on" in s.run(".timer", until="timer: ")
    out = s.run("select n_name, n_nationkey from nation where n_nationkey < 2 order by 2;",
                until="Run Time: ")
    assert "n_name,n_nationkey\nALGERIA,0\nARGENTINA,1\n" in out
    s.run(".mode table", until="\n")
    s.run(".timer off", until="\n")
    out = s.run(".t", until="could be")
    assert "ambiguous command .t: could be .tables, .timer" in out

    # Ctrl-C at the prompt drops the typed text
    s.child.send("select this is not sql")
    s.child.sendcontrol("c")
    s.expect(Pty.PROMPT)
    out = s.run("select 7 as seven;", until="1 row")
    assert re.search(r"│\s+seven │\n│\s+integer │", out) and "Error" not in out
    assert "│       7 │" in out

    # Ctrl-C during a long query: "cancelled", and the next query works
    s.child.send(LONG_QUERY + "\r")
    s.expect("running")  # the progress bar appears after a second: the query is running
    start = time.monotonic()
    s.child.sendcontrol("c")
    s.expect("cancelled")
    assert time.monotonic() - start < 3, "Ctrl-C did not stop the query"
    s.expect(Pty.PROMPT)
    out = s.run("select count(*) as n from people;", until="1 row")
    assert re.search(r"│\s+3 │", out)

    s.child.send(".quit\r")
    s.child.expect(pexpect.EOF)
    s.child.close()
    assert s.child.exitstatus == 0
    history = (tmp_path / "history").read_text()
    assert "select 7 as seven;" in history and ".tables" in history


def test_interactive_ctrl_d_exits(data, tmp_path):
    s = Pty([str(data)], tmp_path / "history")
    s.run("select 1 as one;", until="1 row")
    s.child.sendcontrol("d")
    s.child.expect(pexpect.EOF)
    s.child.close()
    assert s.child.exitstatus == 0


def test_the_process_exit_flushes_everything_and_runs_exit_handlers(tmp_path):
    """The console script ends with os._exit (no module teardown): every byte of a large result
    still reaches stdout and a `.output` file, and exit handlers still run."""
    pq.write_table(pa.table({"i": pa.array(range(200000), pa.int64())}), tmp_path / "big.parquet")
    out = shell(str(tmp_path / "big.parquet"), "--mode", "csv", "-c",
                "select i, 'é' || i as s from big order by i")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "i,s" and len(lines) == 200001 and lines[-1] == "199999,é199999"
    target = tmp_path / "o.csv"
    out = shell("--mode", "csv", "-c", f".output {target}\nselect 42 as x")
    assert out.returncode == 0, out.stderr
    assert target.read_text().splitlines() == ["x", "42"]
    marker = tmp_path / "exit-handler-ran"
    code = (f"import atexit, pathlib, sys; atexit.register(pathlib.Path({str(marker)!r}).touch); "
            "from pqe.shell import main; sys.argv = ['pqe-sql', '-c', 'select 1']; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert marker.exists()
