"""Tests of the sqllogictest runner itself (pqe.testing), on small fixture scripts.

Most tests drive the runner with `FakeEngine`, whose results and errors are spelled out here, so
they check the runner independently of what pqe implements. A few run real engines: pqe (on
literals, VALUES and an Arrow-registered table) and SQLite, whose results the corpus encodes.
"""

from __future__ import annotations

import decimal
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest

import pqe
from pqe.testing.slt_isolated import run_isolated
from pqe.testing.slt_parser import Condition, ExpectedHash, parse_file, parse_text
from pqe.testing.slt_results import Failure, FileResult, result_from_dict, result_to_dict
from pqe.testing.slt_summary import format_summary, group_failures, normalize_message
from pqe.testing.slt_values import hash_values, render_value, sort_values
from pqe.testing.sqlite_engine import SQLiteEngine
from pqe.testing.sqllogictest import main, run_file

FIXTURES = Path(__file__).parent / "slt_runner_fixtures"
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "sqlite"


class _Lazy:
    """What `sql` returns for a query: runs (or fails) only when fetched, like a DataFrame."""

    def __init__(self, result: pa.Table | BaseException):
        self.result = result

    def to_arrow(self, timeout: float | None = None) -> pa.Table:
        if self.result == "slow":
            if timeout is not None:
                raise pqe.QueryTimeout(f"query timed out after {timeout:g} s")
            return pa.table({"n": [1]})
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


class FakeEngine:
    """Answers from a fixed table: SQL starting with OK succeeds, FAIL raises a pqe.Error,
    CRASH raises a ZeroDivisionError (a non-pqe exception, i.e. a crash); anything else must be a
    key of ``TABLES``. Every SQL text it receives is recorded in ``executed``."""

    TABLES: ClassVar[dict[str, Any]] = {
        "SELECT n FROM nums": pa.table({"n": [10, 9, 1]}),
        "SELECT n FROM nums_again": pa.table({"n": [9, 1, 10]}),
        "SELECT n FROM nine": pa.table({"n": list(range(9, 0, -1))}),
        "SELECT n FROM empty": pa.table({"n": pa.array([], pa.int64())}),
        "SELECT n FROM one": pa.table({"n": [1]}),
        "SELECT n FROM one_two": pa.table({"n": [2, 1]}),
        "SELECT a, b FROM pairs": pa.table({"a": [2, 10, 2], "b": ["b", "a", "a"]}),
        "SELECT f FROM typed": pa.table({"f": [2.7, -2.7, None]}),
        "SELECT d, d, d FROM typed": pa.table([pa.array(
            [decimal.Decimal("3.99"), decimal.Decimal("-3.99"), decimal.Decimal("0.00")],
            pa.decimal128(5, 2))] * 3, names=["d", "d", "d"]),
        "SELECT s, s FROM typed": pa.table([pa.array(["12abc", "", "a\tb"])] * 2,
                                           names=["s", "s"]),
        "SELECT b, b, b FROM typed": pa.table([pa.array([True, False, None])] * 3,
                                              names=["b", "b", "b"]),
        "SELECT lazily failing query": pqe.ExecutionError("boom at run time"),
        "SELECT n FROM slow": "slow",
    }
    instances: ClassVar[list[FakeEngine]] = []

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.closed = False
        FakeEngine.instances.append(self)

    def sql(self, text: str) -> Any:
        self.executed.append(text)
        if text.startswith("OK"):
            return None
        if text.startswith("FAIL"):
            raise pqe.UnsupportedError(f"cannot do {text}")
        if text.startswith("CRASH"):
            return 1 // 0
        if text not in self.TABLES:
            raise pqe.UnsupportedError(f"fake engine has no answer for {text!r}")
        return _Lazy(self.TABLES[text])

    def close(self) -> None:
        self.closed = True


def run_fake(name: str, **kw: Any):
    FakeEngine.instances.clear()
    result = run_file(FIXTURES / name, FakeEngine, **kw)
    return result, FakeEngine.instances[-1]


# ---- parsing -------------------------------------------------------------------------------

def test_parse_records():
    recs = parse_file(FIXTURES / "parsing.slt").records
    assert [r.kind for r in recs] == ["hash-threshold", "statement", "statement", "query",
                                      "query", "query", "query", "halt", "invalid", "invalid",
                                      "invalid"]
    thr, create, drop, q1, q2, q3, q4, halt, bad_type, bad_sort, bad_kind = recs
    assert thr.threshold == 4 and thr.line == 2
    assert create.line == 4 and not create.expect_error
    assert create.sql == "CREATE TABLE t(\n  a INTEGER\n)"  # comment line removed
    assert drop.expect_error and drop.sql == "DROP TABLE nope"
    assert q1.conditions == (Condition("skipif", "mysql"), Condition("onlyif", "pqe"))
    assert q1.line == 15  # the header line, after the conditions
    assert (q1.types, q1.sort_mode, q1.label) == ("IT", "rowsort", "my-label")
    assert q1.sql == "SELECT a, 'x'\n  FROM t" and q1.expected == ["1", "x"]
    assert q2.sort_mode == "nosort" and q2.label is None
    assert q2.expected == ExpectedHash(5, "0123456789abcdef0123456789abcdef")
    assert q3.expected is None and q3.sort_mode == "valuesort"
    assert q4.expected == []
    assert halt.line == 34
    assert "unknown type character" in bad_type.error
    assert "unknown sort mode" in bad_sort.error
    assert "unknown record type" in bad_kind.error


def test_parse_crlf_and_whitespace_lines():
    text = "statement ok\r\nSELECT 1\r\n   \r\nquery I nosort\r\nSELECT 2\r\n----\r\n2\r\n"
    recs = parse_text(text).records
    assert [(r.kind, r.sql) for r in recs] == [("statement", "SELECT 1"), ("query", "SELECT 2")]
    assert recs[1].expected == ["2"]


def test_comment_does_not_separate_records():
    recs = parse_text("statement ok\n# note\nSELECT 1\n\n\n# only a comment\n\nhalt\n").records
    assert [(r.kind, r.sql) for r in recs] == [("statement", "SELECT 1"), ("halt", "")]


def test_conditions_compare_engine_names_case_insensitively():
    assert Condition("skipif", "PQE").skips("pqe")
    assert not Condition("skipif", "sqlite").skips("pqe")
    assert Condition("onlyif", "sqlite").skips("pqe")
    assert not Condition("onlyif", "Pqe").skips("pqe")


# ---- rendering, sorting, hashing -----------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (7, "7"), (2.7, "2"), (-2.7, "-2"), (decimal.Decimal("-3.99"), "-3"), (True, "1"),
    (False, "0"), ("12abc", "12"), (" -4x", "-4"), ("abc", "0"), ("", "0"), (None, "NULL"),
    (2**31, "-2147483648"),  # sqlite3_column_int narrows to a 32-bit C int
    (1e300, "-1"),  # clamped to INT64_MAX, whose low 32 bits are all ones
])
def test_render_integer(value, expected):
    assert render_value(value, "I") == expected


@pytest.mark.parametrize("value, expected", [
    (1, "1.000"), (2.0625, "2.063"), (-2.0625, "-2.063"), (0.0005, "0.001"), (-0.0, "0.000"),
    (-0.0001, "-0.000"), ("1.5x", "1.500"), ("x", "0.000"), (decimal.Decimal("3.99"), "3.990"),
    (True, "1.000"), (None, "NULL"), (-(2.0**63), "-9223372036854776000.000"),
])
def test_render_real(value, expected):
    assert render_value(value, "R") == expected


@pytest.mark.parametrize("value, expected", [
    ("abc", "abc"), ("", "(empty)"), ("a\tb\x7f", "a@b@"), ("é", "@@"), (5, "5"),
    (1.0, "1.0"), (2.5, "2.5"), (1e20, "1.0e+20"), (True, "1"), (None, "NULL"),
    (decimal.Decimal("1.50"), "1.5"), (float("nan"), "NaN"),
])
def test_render_text(value, expected):
    assert render_value(value, "T") == expected


def test_sort_modes_compare_text():
    rows = [["10", "b"], ["9", "a"], ["10", "a"]]
    assert sort_values(rows, "nosort") == ["10", "b", "9", "a", "10", "a"]
    assert sort_values(rows, "rowsort") == ["10", "a", "10", "b", "9", "a"]  # "10" < "9"
    assert sort_values(rows, "valuesort") == ["10", "10", "9", "a", "a", "b"]


def test_hash_is_md5_of_values_each_followed_by_newline():
    assert hash_values(["10", "9"]) == "46fa97b44667d2a8843039e9e66ad130"
    assert hash_values(["10", "9"]) == hashlib.md5(b"10\n9\n").hexdigest()
    assert hash_values([]) == hashlib.md5(b"").hexdigest()


# ---- running scripts -----------------------------------------------------------------------

def test_sort_modes_hashing_and_threshold():
    r, engine = run_fake("sort_hash.slt")
    assert r.failures == []
    assert (r.queries.passed, r.queries.failed) == (7, 0)
    assert r.pass_rate == 1.0 and engine.closed


def test_mismatches_are_reported():
    r, _ = run_fake("mismatch.slt")
    assert (r.queries.passed, r.queries.failed) == (0, 5)
    msgs = [f.message for f in r.failures]
    assert msgs[0] == "wrong result: values differ"
    assert r.failures[0].expected == ["10", "9", "2"] and r.failures[0].got == ["10", "9", "1"]
    assert msgs[1] == "wrong result: expected 2 values, got 3"
    assert msgs[2].startswith("wrong result: result hash differs")
    assert r.failures[2].got == "9 values hashing to 22e400a2ddbb013acf2a5852d6ab69fc"
    assert msgs[3] == "wrong number of result columns: expected 2, got 1"
    assert msgs[4] == "wrong result: expected 0 values, got 3"
    assert [f.line for f in r.failures] == [2, 9, 15, 20, 27]
    assert not any(f.crash for f in r.failures)


def test_labels():
    r, engine = run_fake("labels.slt")
    assert (r.queries.passed, r.queries.failed, r.queries.skipped) == (3, 1, 1)
    (f,) = r.failures
    assert f.line == 31 and "labelled label-a" in f.message
    assert "SELECT something pqe cannot run" not in engine.executed


def test_skipif_onlyif_and_halt():
    r, engine = run_fake("conditions.slt")
    assert engine.executed == ["OK onlyif-pqe", "OK skipif-sqlite", "SELECT n FROM one",
                               "OK after-guarded-halt"]
    assert (r.statements.passed, r.statements.skipped, r.queries.passed) == (3, 2, 1)
    assert r.halted_at == 30 and r.failures == []


def test_engine_name_selects_records():
    r, engine = run_fake("conditions.slt", engine_name="sqlite")
    assert "BOOM onlyif-sqlite" in engine.executed
    assert "OK onlyif-pqe" not in engine.executed
    assert r.halted_at == 25  # the `onlyif sqlite` halt


def test_statement_ok_error_and_crashes():
    r, _ = run_fake("statements.slt")
    assert (r.statements.passed, r.statements.failed) == (2, 5)  # OK, FAIL-expected-error
    assert (r.queries.passed, r.queries.failed) == (0, 1)
    assert r.crashes == 3
    by_line = {f.line: f for f in r.failures}
    assert by_line[4].error_type == "UnsupportedError" and not by_line[4].crash
    assert by_line[10].message == "statement succeeded but an error was expected"
    for line in (13, 16, 19):  # a crash fails even a `statement error`
        assert by_line[line].crash and by_line[line].error_type == "ZeroDivisionError"
        assert "test_sqllogictest_runner.py:sql" in by_line[line].origin
    assert by_line[24].error_type == "ExecutionError"  # a query as a statement is fetched


def test_max_failures_stops_the_file():
    r, engine = run_fake("statements.slt", max_failures=2)
    assert r.stopped_early and len(r.failures) == 2
    assert engine.executed == ["OK", "FAIL", "FAIL", "OK"]


def test_record_timeout_is_passed_to_the_engine(tmp_path):
    script = tmp_path / "slow.slt"
    script.write_text("query I nosort\nSELECT n FROM slow\n----\n1\n")
    assert run_file(script, FakeEngine).failures == []
    r = run_file(script, FakeEngine, record_timeout=0.5)
    (f,) = r.failures
    assert f.error_type == "QueryTimeout" and not f.crash
    assert f.message == "query timed out after 0.5 s"


def test_rendering_of_arrow_types():
    r, _ = run_fake("rendering.slt")
    assert [f.describe() for f in r.failures] == []
    assert r.queries.passed == 6


def test_slow_records_are_listed():
    r, _ = run_fake("sort_hash.slt", slow_seconds=0.0)
    assert len(r.slow) == 7 and r.slow[0].line == 2


# ---- real engines --------------------------------------------------------------------------

def _pqe_with_table() -> pqe.Context:
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"a": pa.array([1, 2, 3, 10], pa.int64()),
                                      "b": ["one", "", None, "ten"],
                                      "c": [0.25, 2.0625, None, -0.5]}))
    return ctx


def test_pqe_end_to_end():
    r = run_file(FIXTURES / "pqe_end_to_end.slt", _pqe_with_table)
    assert [f.describe() for f in r.failures] == []
    assert (r.queries.passed, r.queries.skipped, r.statements.passed) == (8, 1, 1)


def test_sqlite_reference_engine():
    """SQLite produced the corpus, so a script written the SQLite way must pass on it."""
    r = run_file(FIXTURES / "sqlite_reference.slt", SQLiteEngine, engine_name="sqlite",
                 error_class=sqlite3.Error)
    assert [f.describe() for f in r.failures] == []
    assert (r.statements.passed, r.queries.passed, r.queries.skipped) == (6, 9, 1)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"conformance corpus not found at {CORPUS}")
@pytest.mark.parametrize("name", ["select1.test", "select4.test", "evidence/in1.test",
                                  "random/aggregates/slt_good_0.test"])
def test_runner_agrees_with_sqlite_on_corpus(name):
    """The corpus's expected results came from SQLite: run on SQLite, every record passes."""
    r = run_file(CORPUS / name, SQLiteEngine, engine_name="sqlite", error_class=sqlite3.Error)
    assert [f.describe() for f in r.failures[:5]] == []
    assert r.total.run > 200


# ---- reporting -----------------------------------------------------------------------------

def test_normalize_message_replaces_names_and_numbers():
    sql = "SELECT col0 FROM tab1 WHERE x = 'abc'"
    assert normalize_message("table 'tab1' does not exist at line 3, column 17", sql) == \
        "table '<id>' does not exist at line <n>, column <n>"
    assert normalize_message("cannot compare 'abc' with COL0 (int64)", sql) == \
        "cannot compare '<str>' with <id> (int64)"
    # function names are kept: they are usually the missing feature
    assert normalize_message("function nullif is not supported",
                             "SELECT nullif(a, 1) FROM t") == "function nullif is not supported"


def test_summary_groups_failures():
    r, _ = run_fake("statements.slt")
    groups = group_failures(r.failures)
    assert groups[0].count == 3 and groups[0].crash
    assert groups[0].key.startswith("CRASH ZeroDivisionError in ")
    text = format_summary([r], top=5)
    assert "CRASHES (non-pqe.Error exceptions, i.e. pqe bugs): 3 in 1 group" in text
    assert "UnsupportedError: cannot do <id>" in text  # FAIL is an identifier of the SQL


def test_summary_merges_messages_differing_in_quoted_parts():
    def fail(line: int, message: str) -> Failure:
        return Failure("f.test", line, "query", "SELECT 1", message, error_type="ExecutionError",
                       error=message)

    groups = group_failures([fail(1, "Function 'less' has no kernel"),
                             fail(2, "Function 'greater' has no kernel"),
                             fail(3, "Function 'less' has no kernel"),
                             fail(4, "division by zero")])
    assert [(g.key, g.count) for g in groups] == [
        ("ExecutionError: Function '…' has no kernel", 3), ("ExecutionError: division by zero", 1)]
    assert groups[0].variants() == {"'less'": 2, "'greater'": 1}
    assert "variants: 2x 'less' | 1x 'greater'" in format_summary(
        [FileResult("f.test", failures=[*groups[0].failures])])


def test_result_json_round_trip():
    r, _ = run_fake("statements.slt")
    back = result_from_dict(json.loads(json.dumps(result_to_dict(r))))
    assert back == r


def test_cli(capsys):
    code = main([str(FIXTURES / "sort_hash.slt"), str(FIXTURES / "pqe_literals.slt"),
                 "--summary"])
    out = capsys.readouterr().out
    assert code == 1  # sort_hash.slt's tables do not exist in pqe
    assert "pqe_literals.slt: 100.0% (4/4 records; queries 3/3, statements 1/1)" in out
    assert "sort_hash.slt: 0.0% (0/7 records; queries 0/7, statements 0/0)" in out
    assert "TOTAL: 36.4% (4/11 records" in out
    assert "7 queries; 1 file)  UnknownTableError: table '…' does not exist" in out


def test_isolated_worker_matches_in_process():
    path = FIXTURES / "rendering.slt"
    isolated = run_isolated(path, memory_limit_gb=4)
    assert isolated.aborted is None
    assert (isolated.total.run, isolated.total.failed) == (6, 6)  # tables unknown to pqe
    assert isolated.failures[0].error_type == "UnknownTableError"


def test_isolated_worker_failure_is_reported():
    r = run_isolated(FIXTURES / "rendering.slt", worker_args=["--scheduler", "bogus"])
    assert r.aborted and "exited with status" in r.aborted and r.pass_rate == 0.0
