"""Untrusted SQL: an application that registered `public_data` hands pqe SQL written by
someone else. Every attack from the issue is run against external_access=False, against
allowed_paths and against read_only=True; each is refused with a pqe.Error whose message
leaks nothing, while the allowed cases keep working."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe

SECRET = "s3cr3t-line-do-not-leak"


@pytest.fixture
def files(tmp_path):
    """An allowed data directory, a private directory beside it, and traps."""
    data = tmp_path / "data"
    private = tmp_path / "private"
    data.mkdir()
    private.mkdir()
    pq.write_table(pa.table({"x": list(range(100))}), data / "t.parquet")
    (data / "ok.csv").write_text("a,b\n1,2\n3,4\n")
    (private / "secret.csv").write_text(f"k\n{SECRET},x,y\n")
    pq.write_table(pa.table({"s": [SECRET]}), private / "secret.parquet")
    os.symlink(private / "secret.csv", data / "link.csv")  # a symlink out of the allowed dir
    os.symlink(private, data / "linkdir")
    public = tmp_path / "public"
    public.mkdir()
    pq.write_table(pa.table({"id": list(range(15_000))}), public / "part-0.parquet")
    return {"root": tmp_path, "data": data, "private": private, "public": public}


def _app(files, **kw) -> pqe.Context:
    ctx = pqe.Context(**kw)
    ctx.register_parquet("public_data", str(files["public"]))
    ctx.register_arrow("mem_data", pa.table({"v": [1, 2, 3]}))
    return ctx


def _refused(ctx, sql, error=pqe.AccessError):
    with pytest.raises(error) as e:
        ctx.sql(sql).to_arrow()
    msg = str(e.value)
    assert SECRET not in msg and "\n" not in msg
    return msg


def _reads(files):
    p, d = files["private"], files["data"]
    return [
        f"SELECT * FROM read_csv('{p}/secret.csv')",
        f"SELECT * FROM read_csv_auto('{p}/secret.csv')",
        f"SELECT * FROM read_parquet('{p}/secret.parquet')",
        f"SELECT * FROM parquet_scan('{p}/*.parquet')",
        f"SELECT * FROM '{p}/secret.parquet'",
        f"SELECT * FROM '{p}/secret.csv'",
        f"SELECT * FROM read_csv('file://{p}/secret.csv')",
        f"SELECT * FROM read_csv('{d}/../private/secret.csv')",
        f"SELECT * FROM read_csv('{d}/link.csv')",
        f"SELECT * FROM read_csv('{d}/linkdir/secret.csv')",
        f"SELECT * FROM read_csv('{d}/linkdir/*.csv')",
        f"DESCRIBE SELECT * FROM read_csv('{p}/secret.csv')",
        f"SELECT * FROM public_data WHERE id IN (SELECT 1 FROM read_csv('{p}/secret.csv'))",
        f"CREATE VIEW v AS SELECT * FROM read_csv('{p}/secret.csv')",
        f"CREATE TABLE c AS SELECT * FROM read_parquet('{p}/secret.parquet')",
        f"WITH q AS (SELECT * FROM '{p}/secret.parquet') SELECT * FROM q",
    ]


URLS = [
    "SELECT * FROM read_parquet('s3://b/x.parquet?endpoint_override=127.0.0.1:9&scheme=http')",
    "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
    "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
    "SELECT * FROM read_parquet('hdfs://namenode:8020/x.parquet')",
    "SELECT * FROM 'gs://bucket/x.parquet'",
]


# ---- external_access=False -----------------------------------------------------------------------


def test_no_external_access_refuses_every_file_and_url(files):
    ctx = _app(files, external_access=False)
    for sql in _reads(files) + URLS:
        msg = _refused(ctx, sql)
        assert "not allowed" in msg, (sql, msg)
    for sql in (f"COPY public_data TO '{files['data']}/out.csv'",
                f"COPY (SELECT 1) TO '{files['root']}/x.parquet' (FORMAT parquet)"):
        _refused(ctx, sql)
    assert not (files["data"] / "out.csv").exists() and not (files["root"] / "x.parquet").exists()
    # what the application registered still works, and SQL can use scratch tables
    assert ctx.sql("SELECT count(*) AS n FROM public_data").to_pylist() == [{"n": 15_000}]
    ctx.sql("CREATE TABLE scratch AS SELECT id FROM public_data WHERE id < 5")
    assert ctx.sql("SELECT sum(id) AS s FROM scratch").to_pylist() == [{"s": 10}]
    assert "scratch" in ctx.tables() and "v" not in ctx.tables() and "c" not in ctx.tables()


def test_messages_are_the_same_for_absent_and_present_files(files):
    ctx = _app(files, allowed_paths=[str(files["data"])])
    present = _refused(ctx, f"SELECT * FROM read_csv('{files['private']}/secret.csv')")
    absent = _refused(ctx, f"SELECT * FROM read_csv('{files['private']}/missing.csv')")
    assert present.replace("secret.csv", "X") == absent.replace("missing.csv", "X")
    ctx2 = _app(files, external_access=False)
    a = _refused(ctx2, f"SELECT * FROM read_csv('{files['private']}/secret.csv')")
    b = _refused(ctx2, "SELECT * FROM read_csv('/no/such/dir/at/all.csv')")
    assert a == b


# ---- allowed_paths --------------------------------------------------------------------------------


def test_allowed_paths_confine_sql_to_a_directory(files):
    d = files["data"]
    ctx = _app(files, allowed_paths=[str(d)])
    for sql in _reads(files) + URLS:
        _refused(ctx, sql)
    # inside: works (read, glob, COPY)
    assert ctx.sql(f"SELECT count(*) AS n FROM read_parquet('{d}/t.parquet')").to_pylist() == [{"n": 100}]
    assert ctx.sql(f"SELECT sum(a) AS s FROM read_csv('{d}/ok.csv')").to_pylist() == [{"s": 4}]
    assert ctx.sql(f"SELECT count(*) AS n FROM '{d}/*.parquet'").to_pylist() == [{"n": 100}]
    assert ctx.sql(f"COPY (SELECT 1 AS one) TO '{d}/out.parquet' (FORMAT parquet)").to_pylist() == [{"count": 1}]
    for target in (f"{files['root']}/escape.csv", f"{d}/../escape.csv", f"{d}/linkdir/escape.csv"):
        _refused(ctx, f"COPY (SELECT 1) TO '{target}' (FORMAT csv)")
    assert not (files["root"] / "escape.csv").exists()
    assert not (files["private"] / "escape.csv").exists()
    # inside the allowed directory, ordinary errors stay ordinary
    with pytest.raises(pqe.CatalogError, match="no such file"):
        ctx.sql(f"SELECT * FROM read_csv('{d}/missing.csv')")


def test_allowed_url_prefixes_name_the_schemes(files):
    ctx = _app(files, allowed_paths=["s3://allowed-bucket/prefix/"])
    for sql in URLS + ["SELECT * FROM read_parquet('s3://allowed-bucket/other/x.parquet')",
                       "SELECT * FROM read_parquet('s3://allowed-bucket/prefix/x?endpoint_override=h')"]:
        _refused(ctx, sql)


def test_a_glob_that_expands_out_of_the_directory_leaves_those_files_out(files):
    # link.csv points out: a glob or directory lists only the files inside the allowed
    # paths. (Refusing the expansion named the file, and SQL could probe which names exist
    # where it may not look: `*/secret.c*` refused, `*/zz*` "no files found".)
    d = files["data"]
    ctx = _app(files, allowed_paths=[str(d)])
    got = ctx.sql(f"SELECT * FROM read_csv('{d}/*.csv')").to_arrow()
    assert got.to_pylist() == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    probes = [_refused(ctx, f"SELECT * FROM read_csv('{d}/*/{pattern}')", pqe.CatalogError)
              for pattern in ("secret.c*", "nothing*")]
    assert [p.replace("secret.c*", "X").replace("nothing*", "X") for p in probes] \
        == [probes[0].replace("secret.c*", "X")] * 2
    assert "secret.csv" not in probes[0]
    _refused(ctx, f"SELECT * FROM read_csv('{d}/linkdir/secret.csv')")  # named: refused


# ---- read_only ------------------------------------------------------------------------------------


WRITES = [
    "CREATE TABLE t2(a INT)",
    "CREATE TABLE t3 AS SELECT 1 AS a",
    "CREATE VIEW v2 AS SELECT 1 AS a",
    "CREATE OR REPLACE VIEW public_data AS SELECT 1 AS id",
    "INSERT INTO mem_data VALUES (4)",
    "UPDATE mem_data SET v = 0",
    "DELETE FROM mem_data",
    "DROP TABLE public_data",
    "DROP VIEW IF EXISTS anything",
    "CREATE INDEX i ON public_data(id)",
]


@pytest.mark.parametrize("sql", WRITES)
def test_read_only_refuses_every_change(files, sql):
    ctx = _app(files, read_only=True)
    msg = _refused(ctx, sql)
    assert "read-only" in msg
    assert sorted(ctx.tables()) == ["mem_data", "public_data"]
    assert ctx.sql("SELECT count(*) AS n FROM public_data").to_pylist() == [{"n": 15_000}]


def test_read_only_refuses_copy_and_keeps_reading(files):
    ctx = _app(files, read_only=True)
    _refused(ctx, f"COPY public_data TO '{files['root']}/o.csv'")
    assert not (files["root"] / "o.csv").exists()
    assert ctx.sql(f"SELECT sum(a) AS s FROM read_csv('{files['data']}/ok.csv')").to_pylist() == [{"s": 4}]
    text = "\n".join(r["plan"] for r in ctx.sql("EXPLAIN SELECT * FROM public_data").to_pylist())
    assert "ParquetScan" in text


# ---- what the application registered is its own ------------------------------------------------------


@pytest.mark.parametrize("sql, error", [
    ("DROP TABLE public_data", pqe.CatalogError),
    ("CREATE OR REPLACE VIEW public_data AS SELECT 1 AS id", pqe.CatalogError),
    ("CREATE OR REPLACE TABLE public_data AS SELECT 1 AS id", pqe.CatalogError),
    ("DROP TABLE mem_data", pqe.CatalogError),
    ("DELETE FROM mem_data", pqe.UnsupportedError),
    ("INSERT INTO mem_data VALUES (9)", pqe.UnsupportedError),
    ("UPDATE public_data SET id = 0", pqe.UnsupportedError),
])
def test_sql_cannot_replace_or_change_application_tables(files, sql, error):
    ctx = _app(files)  # the default Context
    with pytest.raises(error, match="registered|only tables created in SQL"):
        ctx.sql(sql)
    assert ctx.sql("SELECT count(*) AS n FROM public_data").to_pylist() == [{"n": 15_000}]
    assert ctx.sql("SELECT sum(v) AS s FROM mem_data").to_pylist() == [{"s": 6}]
    ctx.deregister("public_data")  # the application itself still can
    assert "public_data" not in ctx.tables()


def test_copy_over_a_registered_tables_files_is_refused(files):
    ctx = _app(files)
    with pytest.raises(pqe.ExecutionError, match="would overwrite data of table 'public_data'"):
        ctx.sql(f"COPY (SELECT 1 AS id) TO '{files['public']}/part-0.parquet' (FORMAT parquet, OVERWRITE)")
    assert ctx.sql("SELECT count(*) AS n FROM public_data").to_pylist() == [{"n": 15_000}]


# ---- settings cannot be changed from SQL; defaults -------------------------------------------------


@pytest.mark.parametrize("sql", ["SET external_access = true", "SET read_only = false",
                                 "PRAGMA enable_external_access", "RESET ALL",
                                 "ATTACH 'x.db'", "INSTALL httpfs", "LOAD httpfs"])
def test_settings_cannot_be_changed_from_sql(files, sql):
    ctx = _app(files, external_access=False)
    with pytest.raises((pqe.UnsupportedError, pqe.SQLSyntaxError)):
        ctx.sql(sql)
    _refused(ctx, f"SELECT * FROM read_csv('{files['data']}/ok.csv')")


def test_defaults_read_local_files_but_no_urls(files):
    """The embedded default (pqe.Context()): SQL may read and write local files, as the
    application's own code could; URLs are refused (an endpoint never comes from SQL)."""
    ctx = _app(files)
    assert ctx.sql(f"SELECT sum(a) AS s FROM read_csv('{files['data']}/ok.csv')").to_pylist() == [{"s": 4}]
    for sql in URLS:
        _refused(ctx, sql)
    # a file's content never reaches an error message
    with pytest.raises(pqe.Error) as e:
        ctx.sql(f"SELECT * FROM read_csv('{files['private']}/secret.csv')").to_arrow()
    assert SECRET not in str(e.value)


def test_dbapi_and_shell_take_the_same_options(files):
    conn = pqe.connect(read_only=True, external_access=False)
    cur = conn.cursor()
    with pytest.raises(pqe.AccessError, match="read-only"):
        cur.execute("CREATE TABLE x(a INT)")
    with pytest.raises(pqe.AccessError):
        cur.execute(f"SELECT * FROM read_csv('{files['data']}/ok.csv')")
    cur.execute("SELECT 1")
    assert cur.fetchall() == [(1,)]
    out = subprocess.run([sys.executable, "-m", "pqe.shell", str(files["public"]), "--read-only",
                          "--no-external-access", "-c",
                          f"SELECT count(*) AS n FROM public; SELECT * FROM read_csv('{files['data']}/ok.csv')"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "15000" in out.stdout and "not allowed" in out.stderr
    out = subprocess.run([sys.executable, "-m", "pqe.shell", "--allowed-path", str(files["data"]),
                          "--mode", "csv", "-c",
                          f"SELECT sum(a) AS s FROM read_csv('{files['data']}/ok.csv')"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["s", "4"], out.stderr
