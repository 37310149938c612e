"""Bad input gets a single-line pqe.Error naming the culprit, never a raw traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import pqe


@pytest.fixture
def ectx():
    ctx = pqe.Context()
    ctx.register_arrow("people", pa.table({"id": [1, 2], "name": ["a", "b"], "age": [30, 40]}))
    ctx.register_arrow("pets", pa.table({"id": [1], "owner": [1], "name": ["rex"]}))
    yield ctx
    ctx.close()


def test_syntax_error_has_line_and_column(ectx):
    with pytest.raises(pqe.SQLSyntaxError) as e:
        ectx.sql("select id,\n  name frm people where")
    assert e.value.line == 2
    assert e.value.column is not None
    assert "line 2" in str(e.value)
    assert "\n" not in str(e.value)


def test_unterminated_string(ectx):
    with pytest.raises(pqe.SQLSyntaxError, match="unterminated"):
        ectx.sql("select 'abc from people")


def test_unknown_table_suggests(ectx):
    with pytest.raises(pqe.UnknownTableError, match=r"table 'peple' does not exist.*did you mean 'people'"):
        ectx.sql("select * from peple")


def test_unknown_column_suggests_with_position(ectx):
    with pytest.raises(pqe.UnknownColumnError) as e:
        ectx.sql("select nme from people")
    msg = str(e.value)
    assert "'nme'" in msg and "did you mean 'name'" in msg and "line 1" in msg


def test_ambiguous_column(ectx):
    with pytest.raises(pqe.AmbiguousColumnError, match="ambiguous"):
        ectx.sql("select name from people, pets where people.id = pets.owner")


def test_ambiguous_column_of_a_table_joined_to_itself(ectx):
    """Was 'column 'name' does not exist (did you mean 'name'?)': both sides are one table."""
    for sql in ("select name from people p join people q on p.id = q.id",
                "select count(name) from people, people q"):
        with pytest.raises(pqe.AmbiguousColumnError, match=r"'name' is ambiguous: it could be (people|p)\.name or q\.name"):
            ectx.sql(sql)


def test_type_mismatch(ectx):
    with pytest.raises(pqe.TypeMismatchError, match="VARCHAR"):
        ectx.sql("select name + 1 from people")


def test_non_grouped_column(ectx):
    with pytest.raises(pqe.AggregateMisuseError, match="must appear in the GROUP BY"):
        ectx.sql("select name, count(*) from people group by age")


def test_aggregate_in_where(ectx):
    with pytest.raises(pqe.AggregateMisuseError, match="WHERE"):
        ectx.sql("select id from people where sum(age) > 3")


def test_unknown_function(ectx):
    with pytest.raises(pqe.BindError, match="unknown function FROBNICATE"):
        ectx.sql("select frobnicate(id) from people")


def test_wrong_argument_count(ectx):
    with pytest.raises(pqe.BindError, match="SPLIT_PART takes 3 arguments, got 2"):
        ectx.sql("select split_part(name, 1) from people")
    with pytest.raises(pqe.SQLSyntaxError, match="arguments"):
        ectx.sql("select abs(id, 2) from people")


def test_unsupported_construct_is_named(ectx):
    with pytest.raises(pqe.UnsupportedError, match="UNION BY NAME"):
        ectx.sql("select name from people union by name select name from people")


def test_runaway_recursive_cte(ectx, monkeypatch):
    from pqe.sql.binder import Binder

    monkeypatch.setattr(Binder, "MAX_RECURSION", 20)
    with pytest.raises(pqe.ExecutionError, match="did not finish after 20 iterations"):
        ectx.sql("with recursive r(n) as (select 1 union all select n + 1 from r) "
                 "select * from r").to_arrow()


def test_missing_parquet_path(ectx):
    with pytest.raises(pqe.CatalogError, match="no such file"):
        ectx.register_parquet("x", "/nonexistent/file.parquet")


def test_scalar_subquery_with_several_rows(ectx):
    with pytest.raises(pqe.ExecutionError, match="more than one row"):
        ectx.sql("select (select id from people) from pets").to_arrow()


def test_correlated_scalar_subquery_with_several_rows(ectx):
    ectx.register_arrow("more_pets", pa.table({"owner": [1, 1], "name": ["a", "b"]}))
    with pytest.raises(pqe.ExecutionError, match="more than one row"):
        ectx.sql("select (select name from more_pets m where m.owner = people.id) from people").to_arrow()


def test_errors_are_pqe_errors():
    for cls in (pqe.SQLSyntaxError, pqe.BindError, pqe.UnknownTableError, pqe.UnsupportedError,
                pqe.ExecutionError, pqe.CatalogError, pqe.InternalError):
        assert issubclass(cls, pqe.Error)


def test_blob_literal_is_read_and_a_bad_one_named():
    """sqllogictest's evidence/in1 uses x'303132': a BLOB (it was refused, naming it)."""
    ctx = pqe.Context()
    assert ctx.sql("SELECT 1 AS a,\n  X'00' AS b").to_pylist() == [{"a": 1, "b": b"\x00"}]
    with pytest.raises(pqe.SQLSyntaxError, match=r"line 2, column 3: x'0g' is not a BLOB"):
        ctx.sql("SELECT 1,\n  X'0g'")
    with pytest.raises(pqe.SQLSyntaxError, match="unexpected token"):
        ctx.sql("SELECT max'a'")  # a name ending in x is not a BLOB literal


def test_workers_at_the_top_of_a_script_without_a_main_guard_fail_fast(tmp_path):
    """`pqe.Context(workers=2)` at a script's top level: each worker process imports the
    script again and started a cluster of its own, waiting for the parent as the parent
    waited for it (a hang with no error; 12 minutes in the hunt). The worker's Context now
    refuses at once and the parent's start fails, naming the main guard."""
    import subprocess
    import sys

    script = tmp_path / "noguard.py"
    script.write_text("import pqe\nctx = pqe.Context(workers=2)\nprint('STARTED')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(Path(pqe.__file__).parents[1])})
    assert out.returncode != 0 and "STARTED" not in out.stdout
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("pqe.errors.Error: could not start 2 local worker process(es)")
    assert "if __name__ == '__main__':" in last
    assert "ran while a worker process was starting" in out.stderr  # (in the workers)


def test_workers_from_a_program_without_a_file_is_one_clear_error(tmp_path):
    """pqe.Context(workers=N) in a program read from standard input: the worker processes
    cannot re-import it; the error says so in one pqe.Error line (it was Dask's "Nanny
    failed to start" traceback)."""
    import subprocess
    import sys

    program = ("import pqe\ntry:\n    pqe.Context(workers=1)\nexcept pqe.Error as e:\n"
               "    print('PQE-ERROR', e)\n")
    out = subprocess.run([sys.executable, "-"], input=program, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    line = next(x for x in out.stdout.splitlines() if x.startswith("PQE-ERROR"))
    assert "could not start 1 local worker process(es)" in line
    assert "'<stdin>' is not a file" in line and "if __name__ == '__main__':" in line
