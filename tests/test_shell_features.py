"""The shell's output files (.output/.once), modes (line, box, list, tabs, types under the
names), .last, --version, --no-memory-guard, completion in every statement shape, the progress
display (threads, clusters that report no counts) and the notebook progress bar."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
import types

import pexpect
import pyarrow as pa
import pytest
from prompt_toolkit.document import Document
from test_shell import LONG_QUERY, Pty, clean, shell

import pqe
import pqe.dataframe as dataframe_module
from pqe.shell import app
from pqe.shell.complete import SQLCompleter
from pqe.shell.progress import QueryMonitor
from pqe.shell.render import render_to_string

QUERY = "select id, name, age from people order by id"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """people.parquet (a NULL, a comma and quotes) and events/ (a table in 2 files), as in
    test_shell.py."""
    import decimal

    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("shell_features")
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

# ---- modes ----------------------------------------------------------------------------------

T = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["Ann", "tab\there"],
              "age": pa.array([None, 7], pa.int32())})


def test_line_mode():
    assert render_to_string(T, "line") == (
        "   id = 1\n"
        " name = Ann\n"
        "  age = NULL\n"
        "\n"
        "   id = 2\n"
        " name = tab\\there\n"
        "  age = 7\n")
    long_name = pa.table({"a_long_name": [1], "b": ["x"]})
    assert render_to_string(long_name, "line") == "a_long_name = 1\n          b = x\n"
    assert render_to_string(T.slice(0, 0), "line") == ""


def test_list_and_tabs_modes():
    assert render_to_string(T, "list") == "id|name|age\n1|Ann|\n2|tab\\there|7\n"
    assert render_to_string(T, "tabs") == "id\tname\tage\n1\tAnn\t\n2\ttab\\there\t7\n"
    assert render_to_string(T.slice(0, 0), "tabs") == "id\tname\tage\n"


def test_box_mode_shows_every_row_with_types():
    t = pa.table({"i": pa.array(range(5), pa.int64()), "s": list("abcde")})
    expected = ("┌────────┬─────────┐\n"
                "│      i │ s       │\n"
                "│ bigint │ varchar │\n"
                "├────────┼─────────┤\n"
                "│      0 │ a       │\n"
                "│      1 │ b       │\n"
                "│      2 │ c       │\n"
                "│      3 │ d       │\n"
                "│      4 │ e       │\n"
                "└────────┴─────────┘\n"
                "5 rows\n")
    assert render_to_string(t, "box", max_rows=2) == expected
    # table mode: the same box and types, but long results are cut to max_rows
    out = render_to_string(t, "table", max_rows=2)
    assert out.startswith(expected.split("│      0")[0])
    assert out.endswith("5 rows, 2 shown\n")


def test_types_only_in_boxed_modes():
    t = pa.table({"d": pa.array([1], pa.decimal128(15, 2)), "x": pa.array([1.5], pa.float64())})
    assert "│ decimal(15,2) │ double │" in render_to_string(t, "table")
    for mode in ("csv", "json", "markdown", "line", "list", "tabs"):
        out = render_to_string(t, mode)
        assert "decimal" not in out and "double" not in out, mode


@pytest.mark.parametrize("mode,expected", [
    ("line", ("   id = 1\n name = Ann\n  age = 34\n\n   id = 2\n name = Smith, \"J\"\n"
             "  age = NULL\n\n   id = 3\n name = Zoë\n  age = 7\n")),
    ("list", 'id|name|age\n1|Ann|34\n2|Smith, "J"|\n3|Zoë|7\n'),
    ("tabs", 'id\tname\tage\n1\tAnn\t34\n2\tSmith, "J"\t\n3\tZoë\t7\n'),
    ("box", ("┌────────┬────────────┬─────────┐\n"
            "│     id │ name       │     age │\n"
            "│ bigint │ varchar    │ integer │\n"
            "├────────┼────────────┼─────────┤\n"
            "│      1 │ Ann        │      34 │\n"
            '│      2 │ Smith, "J" │    NULL │\n'
            "│      3 │ Zoë        │       7 │\n"
            "└────────┴────────────┴─────────┘\n"
            "3 rows\n")),
])
def test_new_modes_from_the_command_line(data, mode, expected):
    r = shell(str(data), "--mode", mode, "-c", QUERY)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == expected
    # and through .mode in a script
    r = shell(str(data), "-c", f".mode {mode}\n{QUERY}")
    assert (r.returncode, r.stdout) == (0, expected), r.stderr


def test_dot_tables_has_no_type_line(data):
    r = shell(str(data), "-c", ".tables")
    assert r.stdout == ("┌────────┐\n│ name   │\n├────────┤\n│ events │\n│ people │\n"
                        "└────────┘\n2 rows\n")


def test_mode_names():
    from pqe.shell.commands import ShellError, mode_named

    assert mode_named("tabs") == "tabs" and mode_named("table") == "table"
    assert mode_named("lin") == "line" and mode_named("lis") == "list"
    assert mode_named("b") == "box" and mode_named("CSV") == "csv"
    with pytest.raises(ShellError, match="ambiguous mode 'tab': could be table, tabs"):
        mode_named("tab")
    with pytest.raises(ShellError, match="unknown mode 'html'"):
        mode_named("html")


# ---- .output and .once ----------------------------------------------------------------------


def _files(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_output_redirects_until_output_without_a_file(data, tmp_path):
    out = tmp_path / "out.txt"
    r = shell(str(data), "--mode", "csv", "-c",
              f"select 1 as a;\n.output {out}\nselect 2 as b;\n.tables\n.timer on\n"
              "select 3 as c;\n.output\nselect 4 as d;")
    assert r.returncode == 0, r.stderr
    # the timer line is for the screen; results (dot commands' too) go to the file
    assert re.fullmatch(r"a\n1\nRun Time: \d+\.\d{3} s\nd\n4\nRun Time: \d+\.\d{3} s\n",
                        r.stdout), r.stdout
    assert out.read_text() == "b\n2\nname\nevents\npeople\nc\n3\n"
    # .output truncates; a table written to a file has no colours
    r = shell(str(data), "-c", f".output {out}\nselect 5 as e")
    assert r.stdout == ""
    assert out.read_text() == ("┌─────────┐\n│       e │\n│ integer │\n├─────────┤\n"
                               "│       5 │\n└─────────┘\n1 row\n")


def test_once_takes_only_the_next_result(data, tmp_path):
    once = tmp_path / "once.csv"
    r = shell(str(data), "-c",
              f".once {once}\n.mode csv\nselect name from people where id < 3 order by id;\n"
              "select 'screen' as s;")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "s\nscreen\n"  # .mode did not use the .once: the query did
    assert once.read_text() == 'name\nAnn\n"Smith, ""J"""\n'
    assert _files(tmp_path) == ["once.csv"]  # no temporary file left


def test_once_failed_statement_leaves_no_file(data, tmp_path):
    once = tmp_path / "new.txt"
    r = shell(str(data), "-c", f".once {once}\nselect nope from people;")
    assert r.returncode == 1 and "column 'nope' does not exist" in r.stderr
    assert _files(tmp_path) == []  # neither the file nor a temporary one
    # an existing file is left as it was, and keeps its permissions when replaced
    once.write_text("before\n")
    os.chmod(once, 0o640)
    r = shell(str(data), "-c", f".once {once}\nselect nope from people;")
    assert once.read_text() == "before\n" and _files(tmp_path) == ["new.txt"]
    r = shell(str(data), "--mode", "list", "-c", f".once {once}\nselect 1 as x;")
    assert r.returncode == 0 and once.read_text() == "x\n1\n"
    assert os.stat(once).st_mode & 0o777 == 0o640
    assert _files(tmp_path) == ["new.txt"]


def test_once_inside_output_returns_to_the_output_file(data, tmp_path):
    out, once = tmp_path / "all.txt", tmp_path / "one.txt"
    r = shell(str(data), "--mode", "list", "-c",
              f".output {out}\nselect 1 as a;\n.once {once}\nselect 2 as b;\nselect 3 as c;")
    assert (r.returncode, r.stdout) == (0, ""), r.stderr
    assert out.read_text() == "a\n1\nc\n3\n"
    assert once.read_text() == "b\n2\n"


def test_output_errors(data, tmp_path):
    r = shell(str(data), "-c", f".output {tmp_path / 'missing' / 'x.txt'}")
    assert r.returncode == 1
    assert r.stderr.startswith("Error: cannot write ") and "No such file" in r.stderr
    r = shell(str(data), "-c", f".once {tmp_path / 'missing' / 'x.txt'}")
    assert r.returncode == 1 and "cannot write" in r.stderr
    r = shell(str(data), "-c", ".once")
    assert r.stderr == "Error: usage: .once FILE\n"
    # the shell's access flags cover the files it writes
    r = shell(str(data), "--read-only", "-c", f".output {tmp_path / 'x.txt'}")
    assert r.returncode == 1 and "read-only" in r.stderr
    r = shell(str(data), "--allowed-path", str(tmp_path / "ok"), "-c",
              f".once {tmp_path / 'x.txt'}")
    assert r.returncode == 1 and "is not allowed" in r.stderr
    assert _files(tmp_path) == []


def test_once_pending_at_exit_writes_nothing(data, tmp_path):
    r = shell(str(data), "-c", f".once {tmp_path / 'x.txt'}")
    assert r.returncode == 0
    assert _files(tmp_path) == []


# ---- .last ----------------------------------------------------------------------------------


def test_last_prints_the_previous_result_again(data):
    r = shell(str(data), "--mode", "csv", "-c",
              "select id, age from people where id > 1 order by id;\n.last line\n"
              "create view v as select 1 as x;\n.mode json\n.last\n.last list")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("id,age\n2,\n3,7\n"
                        "   id = 2\n  age = NULL\n\n   id = 3\n  age = 7\n"
                        '[{"id":2,"age":null},\n {"id":3,"age":7}]\n'
                        "id|age\n2|\n3|7\n")
    r = shell(str(data), "-c", ".last")
    assert r.returncode == 1 and r.stderr.startswith("Error: no previous result")


# ---- command-line flags ---------------------------------------------------------------------


def test_version():
    r = shell("--version")
    assert (r.returncode, r.stdout) == (0, f"pqe {pqe.__version__}\n")
    assert re.fullmatch(r"pqe \d+\.\d+\.\d+\S*\n", r.stdout)
    assert "--version" in shell("--help").stdout


def test_no_memory_guard_flag(monkeypatch, capsys, data):
    ctx = app.make_context(app.parse_args(["--no-memory-guard"]))
    try:
        assert ctx.memory_guard is False
    finally:
        ctx.close()
    ctx = app.make_context(app.parse_args([]))
    try:
        assert ctx.memory_guard is True
    finally:
        ctx.close()
    # effective: a machine with (pretend) no free memory refuses the query unless the guard
    # is off
    from pqe.session import state

    monkeypatch.setattr(state, "available_memory", lambda: 1)
    query = ["--mode", "csv", "-c", "select count(*) as n from people"]
    assert app.main([str(data), *query]) == 1
    assert "memory_guard=False" in capsys.readouterr().err
    assert app.main([str(data), "--no-memory-guard", *query]) == 0
    assert capsys.readouterr().out == "n\n3\n"


# ---- completion -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def completer(tpch_dir):
    from helpers import register_tpch

    ctx = register_tpch(pqe.Context(), tpch_dir)
    ctx.register_arrow("Odd Table", pa.table({"Order Date": [1], "id": [2], "select": [3]}))
    yield SQLCompleter(ctx)
    ctx.close()


def complete(c: SQLCompleter, text: str) -> list[str]:
    """Completions at `|` (or the end)."""
    cursor = text.index("|") if "|" in text else len(text)
    text = text.replace("|", "")
    return [x.text for x in c.get_completions(Document(text, cursor), None)]


REGION = ["r_regionkey", "r_name", "r_comment"]
ORDERS = ["o_orderkey", "o_custkey", "o_orderstatus", "o_totalprice", "o_orderdate",
          "o_orderpriority", "o_clerk", "o_shippriority", "o_comment"]
SHIP = ["l_shipdate", "l_shipinstruct", "l_shipmode"]


@pytest.mark.parametrize("text,expected", [
    # SELECT: aliases (with and without AS, any case), joins, comma joins
    ("select * from lineitem l join orders o on l.l_orderkey = o.| where", ORDERS),
    ("select * from lineitem l join orders o on l.l_orderkey = o.o_orderkey where l.l_ship",
     SHIP),
    ("SELECT * FROM lineitem AS L WHERE l.L_SHIP", SHIP),
    ("select * from nation n, region r where r.", REGION),
    ("select * from region r left join nation n on r.r_regionkey = n.n_reg", ["n_regionkey"]),
    ("select n.| from nation n", ["n_nationkey", "n_name", "n_regionkey", "n_comment"]),
    ("select l_ship| from lineitem", SHIP),
    ("select * from region where |", REGION),
    # subqueries: their output names, and correlated references to the outer query
    (("select sub.| from (select n_name as nm, n_regionkey, count(*) as c from nation "
     "group by 1, 2) sub"), ["nm", "n_regionkey", "c"]),
    ("select * from (select * from (select r_name as deep from region) i) o where o.",
     ["deep"]),
    (("select * from region r join (select n_regionkey as rk from nation) n "
     "on r.r_regionkey = n."), ["rk"]),
    (("select * from orders o where exists (select 1 from lineitem l where "
     "l.l_orderkey = o.o_orderk"), ["o_orderkey"]),
    ("select * from orders where o_orderkey in (select l_orderkey from lineitem where l_ship",
     SHIP),
    ("select s.| from (select n_name as nm, bogus, sum(n_nationkey) total from nation) s",
     ["nm", "bogus", "total"]),  # does not bind: the select list as written
    # UPDATE ... SET / WHERE
    ("update orders set o_order", ["o_orderkey", "o_orderstatus", "o_orderdate",
                                   "o_orderpriority"]),
    ("update orders set o_orderstatus = 'x' where o_cust", ["o_custkey"]),
    ("update orders o set o_comment = 'x' where o.o_tot", ["o_totalprice"]),
    ("update region set |", REGION),
    # DELETE FROM ... WHERE
    ("delete from region where r_", REGION),
    ("delete from region r where r.", REGION),
    # INSERT INTO t (columns)
    ("insert into region (r_", REGION),
    ("insert into region (|) values (1)", REGION),
    ("insert into region (r_regionkey, |", REGION),
    # CTEs: names defined by WITH, their columns, column lists, recursion, nesting
    (("with big as (select o_custkey, sum(o_totalprice) as spent from orders group by 1) "
     "select b.| from big b"), ["o_custkey", "spent"]),
    (("with big(k, s) as (select o_custkey, sum(o_totalprice) from orders group by 1) "
     "select * from big where big."), ["k", "s"]),
    ("with a as (select 1 as x), b as (select x, x + 1 as y from a) select * from b where b.",
     ["x", "y"]),
    (("with recursive r(n) as (select 1 union all select n + 1 from r where n < 3) "
     "select r.| from r"), ["n"]),
    ("with a as (select 1 as x) select * from (select x as z from a) s where s.", ["z"]),
    ("with a as (select 1 as x) select * from a where exists (select * from a a2 where a2.",
     ["x"]),
    ("with big as (select 1 as x) select * from bi", ["big"]),
    # quoted identifiers: completed quoted, also inside an opened quote
    ('select * from "Od', ['"Odd Table"']),
    ('select * from "Odd Table" t where t.', ['"Order Date"', "id", '"select"']),
    ('select * from "Odd Table" t where t."Or', ['"Order Date"']),
    ('select "Odd Table".| from "Odd Table"', ['"Order Date"', "id", '"select"']),
    ('select * from "odd table" where "i', ['"id"']),
    # table functions and several statements in the buffer
    ("select * from read_parquet('data/tpch/sf0.01/region.parquet') x where x.", REGION),
    ("select 1; select * from region r where r.r_n", ["r_name"]),
    # table positions: after FROM/JOIN/INTO and in a FROM list
    ("select * from region, na", ["nation"]),
    ("insert into reg", ["region"]),
    # nothing inside strings and comments
    ("select 'from region r where r.", []),
    ("select * from region -- r.", []),
    ("select * from region r /* r.", []),
])
def test_completion_in_every_statement_shape(completer, text, expected):
    assert complete(completer, text) == expected


def test_completion_unqualified_prefers_the_scope(completer):
    # columns of the sources in scope first (any case), then tables, keywords, functions
    assert complete(completer, "select * from orders where O_CUSTK") == ["o_custkey"]
    assert complete(completer, "select * from region where n") == \
        ["nation", "not", "null", "nulls", "nullif("]
    assert complete(completer, "sel") == ['"select"', "select"]  # a column of Odd Table


def test_completion_dot_commands(completer, tmp_path):
    assert complete(completer, ".o") == [".output", ".once"]
    assert complete(completer, ".mode t") == ["table", "tabs"]
    assert complete(completer, ".last l") == ["line", "list"]
    (tmp_path / "script.sql").write_text("")
    assert complete(completer, f".read {tmp_path}/scr") == ["ipt.sql"]


# ---- progress -------------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _wait_for(predicate, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_progress_spinner_until_counts_are_reported():
    m = QueryMonitor(_Tty(), delay=0.1)
    m.start_display()
    try:
        assert m.text() == ""  # nothing before the delay
        _wait_for(lambda: m.text() != "")
        shown = m.text()
        assert re.fullmatch(r"\S running \d:\d\d:\d\d", shown), shown  # no "0/1 tasks"
        m.update(0, 40)
        m.update(5, 0)
        assert re.fullmatch(r"running \S+ +5/40 tasks \d:\d\d:\d\d", m.text()), m.text()
    finally:
        m.stop_display()
    assert m.text() == ""
    quiet = QueryMonitor(io.StringIO(), delay=0.0)  # not a terminal: never shown
    quiet.start_display()
    assert not quiet.enabled and quiet.text() == ""


@pytest.mark.parametrize("args,counts", [([], True), (["--workers", "1"], None)])
def test_progress_on_threads_and_cluster(tpch_dir, tmp_path, args, counts):
    """The bar on the threaded scheduler counts tasks; on a cluster it counts them when the
    engine reports them, else shows a spinner and the elapsed time, never "0/1 tasks"."""
    s = Pty([str(tpch_dir), *args], tmp_path / "history")
    try:
        s.child.send(LONG_QUERY + "\r")
        s.expect("running")
        s.child.expect(r"\d:\d\d:\d\d", timeout=30)  # the elapsed time
        time.sleep(1.5)
        s.child.expect(r"\d:\d\d:\d\d")
        seen = clean("".join(s.transcript) + s.child.before + s.child.after)
        if counts:
            assert re.search(r"\d+/\d+ tasks", seen), seen
        assert "0/1 tasks" not in seen
        s.child.sendcontrol("c")
        s.expect("cancelled")
        s.expect(Pty.PROMPT)
        out = s.run("select 1 as one;", until="1 row")
        assert "│       1 │" in out
        s.child.send(".quit\r")
        s.child.expect(pexpect.EOF, timeout=60)
    finally:
        if s.child.isalive():
            s.child.terminate(force=True)


# ---- the interactive prompt -----------------------------------------------------------------


def test_interactive_output_once_last_and_modes(data, tmp_path):
    s = Pty([str(data)], tmp_path / "history")
    try:
        once, out = tmp_path / "once.txt", tmp_path / "out.txt"
        s.run(f".once {once}", until="\n")
        s.child.send("select id, name from people order by id;\r")
        _wait_for(once.exists)  # nothing on the screen: the result went to the file
        s.expect(Pty.PROMPT)
        assert once.read_text() == ("┌────────┬────────────┐\n"
                                    "│     id │ name       │\n"
                                    "│ bigint │ varchar    │\n"
                                    "├────────┼────────────┤\n"
                                    "│      1 │ Ann        │\n"
                                    '│      2 │ Smith, "J" │\n'
                                    "│      3 │ Zoë        │\n"
                                    "└────────┴────────────┘\n"
                                    "3 rows\n")
        text = s.run(".last line", until="name = Zoë")
        assert "   id = 1\n name = Ann\n\n" in text
        s.run(".mode tabs", until="\n")
        assert "id\tname\n1\tAnn\n" in s.run(".last", until="Zoë")
        s.run(f".output {out}", until="\n")
        s.child.send("select 42 as answer;\r")
        _wait_for(lambda: out.read_text() != "")
        s.expect(Pty.PROMPT)
        s.run(".output", until="\n")
        s.run(".mode line", until="\n")
        assert "v = 7" in s.run("select 7 as v;", until="v = 7")
        assert out.read_text() == "answer\n42\n"
        assert "mode: line" in s.run(".mode", until="mode: ")
        s.child.send(".quit\r")
        s.child.expect(pexpect.EOF)
    finally:
        if s.child.isalive():
            s.child.terminate(force=True)


# ---- notebooks ------------------------------------------------------------------------------


class FakeNotebook:
    """IPython with a kernel, recording display() and DisplayHandle.update() calls."""

    def __init__(self, kernel: bool = True):
        self.events: list[tuple[str, float, str]] = []
        self.start = time.monotonic()
        notebook = self

        class HTML:
            def __init__(self, body: str):
                self.data = body

        class Handle:
            def update(self, obj) -> None:
                notebook.events.append(("update", time.monotonic() - notebook.start, obj.data))

        def display(obj, display_id=None):
            assert display_id is True
            notebook.events.append(("display", time.monotonic() - notebook.start, obj.data))
            return Handle()

        shell = types.SimpleNamespace(kernel=object()) if kernel else None
        self.ipython = types.ModuleType("IPython")
        self.ipython.get_ipython = lambda: shell
        self.display = types.ModuleType("IPython.display")
        self.display.display = display
        self.display.HTML = HTML
        self.ipython.display = self.display

    def install(self, monkeypatch) -> FakeNotebook:
        monkeypatch.setitem(sys.modules, "IPython", self.ipython)
        monkeypatch.setitem(sys.modules, "IPython.display", self.display)
        return self


def _slow_frame(ctx, seconds: float):
    df = ctx.from_arrow(pa.table({"x": pa.array(range(10), pa.int64())}))

    def slow(t):
        time.sleep(seconds)
        return t

    return df.map_batches(slow, schema=df.schema)


def test_notebook_progress_shows_only_after_the_delay(ctx, monkeypatch):
    monkeypatch.setattr(dataframe_module, "NOTEBOOK_PROGRESS_DELAY", 0.4)
    nb = FakeNotebook().install(monkeypatch)
    # a quick query: no display at all
    assert ctx.sql("select 1 as x").to_arrow().to_pylist() == [{"x": 1}]
    assert nb.events == []
    # a slow one: the bar appears after the delay, shows the task counts, and is cleared
    slow = _slow_frame(ctx, 1.2)
    nb.start = time.monotonic()
    assert slow.to_arrow().num_rows == 10
    kinds = [e[0] for e in nb.events]
    assert kinds[0] == "display" and kinds.count("display") == 1, nb.events
    assert nb.events[0][1] >= 0.4
    assert "<progress" in nb.events[0][2] and "tasks" in nb.events[0][2], nb.events[0]
    assert re.search(r'value="\d+" max="\d+"', nb.events[0][2])
    assert nb.events[-1][0] == "update" and nb.events[-1][2] == ""  # cleared at the end
    # the notebook's own rendering of a DataFrame runs through to_arrow too
    nb.events.clear()
    assert "<table>" in slow._repr_html_()
    assert [e[0] for e in nb.events][:1] == ["display"]


def test_notebook_progress_only_in_a_kernel_main_thread(ctx, monkeypatch):
    monkeypatch.setattr(dataframe_module, "NOTEBOOK_PROGRESS_DELAY", 0.1)
    slow = _slow_frame(ctx, 0.5)
    # terminal IPython (no kernel): nothing
    nb = FakeNotebook(kernel=False).install(monkeypatch)
    assert slow.to_arrow().num_rows == 10 and nb.events == []
    # in a kernel, from another thread: nothing
    nb = FakeNotebook().install(monkeypatch)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("n", slow.to_arrow().num_rows))
    t.start()
    t.join()
    assert result == {"n": 10} and nb.events == []
    # with a progress callback of the caller's own: theirs, not a display
    calls = []
    assert slow.to_arrow(progress=lambda d, n: calls.append((d, n))).num_rows == 10
    assert nb.events == [] and sum(n for _, n in calls) >= 1
    assert sum(d for d, _ in calls) == sum(n for _, n in calls)


def test_notebook_progress_without_ipython_changes_nothing(ctx, monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert dataframe_module._notebook_display() is None
    started = threading.active_count()
    assert ctx.sql("select 2 as y").to_arrow().to_pylist() == [{"y": 2}]
    assert "IPython" not in sys.modules
    assert threading.active_count() <= started + 8  # no notebook helper thread lingers


def test_notebook_progress_cancel_and_errors(ctx, monkeypatch):
    monkeypatch.setattr(dataframe_module, "NOTEBOOK_PROGRESS_DELAY", 0.1)
    nb = FakeNotebook().install(monkeypatch)
    cancel = threading.Event()
    threading.Timer(0.4, cancel.set).start()
    with pytest.raises(pqe.QueryCancelled):
        _slow_frame(ctx, 3.0).to_arrow(cancel=cancel)
    assert nb.events and nb.events[-1][2] == ""  # the bar was cleared
    with pytest.raises(pqe.QueryTimeout):
        _slow_frame(ctx, 3.0).to_arrow(timeout=0.3)
    assert ctx.sql("select 3 as z").to_arrow().to_pylist() == [{"z": 3}]
