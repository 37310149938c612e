"""Findings of the file-source and security hunt: COPY to a URL never becomes a local path,
URL prefixes in allowed_paths compare normalized paths, COPY (and the shell's .once/.output)
never writes over or into what a registered table reads (DataFrames, globs, directories
included), the shell's .read obeys the access flags and echoes no file text, and COPY's
nested-CSV, NUL-byte and hive-NULL cases are one-line pqe errors that lose no rows."""

from __future__ import annotations

import http.server
import os
import threading
import uuid

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.access import AccessPolicy
from pqe.shell import app

SECRET = "root:x:0:0:SECRETLINE"


def _listing(d) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), d)
                  for r, _, fs in os.walk(d) for f in fs)


def _one_line(e: BaseException) -> str:
    msg = str(e)
    assert "\n" not in msg and isinstance(e, pqe.Error)
    return msg


# ---- 1. COPY to a URL ---------------------------------------------------------------------------


def test_copy_to_a_url_never_writes_a_local_path(tmp_path, monkeypatch):
    allowed, outside, cwd = tmp_path / "allowed", tmp_path / "outside", tmp_path / "cwd"
    for d in (allowed, outside, cwd):
        d.mkdir()
    monkeypatch.chdir(cwd)
    ctx = pqe.Context(allowed_paths=[str(allowed), "s3://my-bucket/exports/"])
    up = "../" * (len(cwd.parts) + 2)
    for options in ("(FORMAT csv)", "(FORMAT csv, OVERWRITE)",
                    "(FORMAT parquet, PARTITION_BY (k))"):
        with pytest.raises(pqe.AccessError, match="is not allowed") as e:
            ctx.sql(f"COPY (SELECT 'pwned' AS x, 1 AS k) TO "
                    f"'s3://my-bucket/exports/{up}{outside}/pwn.csv' {options}")
        _one_line(e.value)
    assert _listing(outside) == [] and _listing(cwd) == []


def test_copy_to_a_file_url_is_the_local_path(tmp_path, monkeypatch):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    ctx = pqe.Context()
    ctx.sql(f"COPY (SELECT 1 AS a) TO 'file://{tmp_path}/out/f.csv' (FORMAT csv)")
    assert (tmp_path / "out" / "f.csv").read_text() == "\"a\"\n1\n"
    assert _listing(tmp_path / "cwd") == []  # no ./file:/... directory
    # checked as the local path it is
    limited = pqe.Context(allowed_paths=[str(tmp_path / "out")])
    limited.sql(f"COPY (SELECT 2 AS a) TO 'FILE://{tmp_path}/out/g.csv' (FORMAT csv)")
    assert (tmp_path / "out" / "g.csv").read_text() == "\"a\"\n2\n"
    with pytest.raises(pqe.AccessError, match="is not allowed"):
        limited.sql(f"COPY (SELECT 2 AS a) TO 'file://{tmp_path}/cwd/g.csv' (FORMAT csv)")
    with pytest.raises(pqe.AccessError, match="is not allowed"):
        limited.sql(f"COPY (SELECT 2 AS a) TO 'file://{tmp_path}/out/../cwd/g.csv'")
    assert _listing(tmp_path / "cwd") == []


def test_copy_to_an_object_store_url_writes_the_object(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bucket = f"b{uuid.uuid4().hex[:8]}"
    ctx = pqe.Context(allowed_paths=[f"memory://{bucket}/exports/"])
    r = ctx.sql(f"COPY (SELECT 1 AS a UNION ALL SELECT 2) TO "
                f"'memory://{bucket}/exports/k.parquet'").to_pylist()
    assert r == [{"count": 2}]
    fs = fsspec.filesystem("memory")
    with fs.open(f"/{bucket}/exports/k.parquet", "rb") as f:
        assert sorted(pq.read_table(f).column("a").to_pylist()) == [1, 2]
    ctx.sql(f"COPY (SELECT 'x' AS s) TO 'memory://{bucket}/exports/k.csv' (FORMAT csv)")
    assert fs.cat(f"/{bucket}/exports/k.csv") == b'"s"\n"x"\n'
    with pytest.raises(pqe.ExecutionError, match="the file exists; add OVERWRITE"):
        ctx.sql(f"COPY (SELECT 3 AS a) TO 'memory://{bucket}/exports/k.parquet'")
    ctx.sql(f"COPY (SELECT 3 AS a) TO 'memory://{bucket}/exports/k.parquet' (OVERWRITE)")
    with fs.open(f"/{bucket}/exports/k.parquet", "rb") as f:
        assert pq.read_table(f).column("a").to_pylist() == [3]
    # `..` in the URL leaves the prefix: refused, for one file and for a dataset
    for options in ("", "(PARTITION_BY (k))"):
        with pytest.raises(pqe.AccessError, match="is not allowed"):
            ctx.sql(f"COPY (SELECT 1 AS a, 2 AS k) TO "
                    f"'memory://{bucket}/exports/../other/x.parquet' {options}")
    assert not fs.exists(f"/{bucket}/other")
    assert _listing(tmp_path) == []


# ---- 2. URL prefixes compared on normalized paths ------------------------------------------------


def test_url_prefix_is_compared_after_normalizing():
    policy = AccessPolicy(allowed_paths=("http://h/data",))
    for url in ("http://h/data/../secret/x.parquet",
                "http://h/data/%2e%2e/secret/x.parquet",
                "http://h/data/%2E%2E%2Fsecret/x.parquet",
                "http://h/data/..%2fsecret/x.parquet",
                "http://h/data/%252e%252e/secret/x.parquet",
                "http://h/data/sub/../../secret/x.parquet",
                "http://h/data/..\\secret/x.parquet",
                "http://h/data//../secret/x.parquet"):
        with pytest.raises(pqe.AccessError, match="is not allowed"):
            policy.check_source(url, "read_parquet")
    # what stays under the prefix once normalized passes
    for url in ("http://h/data/x.parquet", "http://h/data/./sub//x.parquet",
                "http://h/data/sub/../x.parquet", "http://h/data/a%20b.parquet"):
        policy.check_source(url, "read_parquet")


class _Server:
    """A local HTTP server that answers Range requests (as object stores do) and records
    every path asked for."""

    def __init__(self, root):
        seen = self.seen = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(root), **kw)

            def log_message(self, *a):
                pass

            def send_head(self):
                seen.append(self.path)
                rng = self.headers.get("Range")
                path = self.translate_path(self.path)
                if not rng or not os.path.isfile(path):
                    return super().send_head()
                data = open(path, "rb").read()  # noqa: SIM115 - a test server
                start, _, end = rng.removeprefix("bytes=").partition("-")
                start, end = int(start), min(int(end or len(data) - 1), len(data) - 1)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                self.send_header("Content-Length", str(end - start + 1))
                self.end_headers()
                import io

                return io.BytesIO(data[start:end + 1])

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def web(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "secret").mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "data" / "ok.parquet")
    pq.write_table(pa.table({"s": ["secret"]}), tmp_path / "secret" / "s.parquet")
    server = _Server(tmp_path)
    yield server
    server.close()


def test_http_urls_outside_the_prefix_are_never_requested(web):
    ctx = pqe.Context(allowed_paths=[f"{web.url}/data/"])
    for tail in ("../secret/s.parquet", "%2e%2e/secret/s.parquet",
                 "../secret/missing.parquet"):
        with pytest.raises(pqe.AccessError) as e:
            ctx.sql(f"SELECT * FROM read_parquet('{web.url}/data/{tail}')").to_arrow()
        # one message whether the file exists or not
        assert str(e.value) == (f"read_parquet: the URL '{web.url}/data/{tail}' is not "
                                f"allowed (the application allows URLs by prefix in "
                                f"allowed_paths)")
    assert not any("secret" in p for p in web.seen)


def test_http_tables_can_be_read(web):
    ctx = pqe.Context()
    ctx.register_parquet("h", f"{web.url}/data/ok.parquet")
    assert ctx.sql("SELECT sum(a) AS s FROM h").to_pylist() == [{"s": 3}]
    limited = pqe.Context(allowed_paths=[f"{web.url}/data/"])
    assert limited.sql(f"SELECT a FROM read_parquet('{web.url}/data/ok.parquet') "
                       f"ORDER BY a").to_pylist() == [{"a": 1}, {"a": 2}]


# ---- 3. COPY never writes over or into what a registered table reads ---------------------------


@pytest.fixture
def store(tmp_path):
    d = tmp_path / "d"
    (d / "ds").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2, 3]}), d / "data.parquet")
    pq.write_table(pa.table({"a": [1, 2, 3]}), d / "ds" / "x.parquet")
    (d / "c.csv").write_text("a\n1\n")
    return d


def _refused_write(ctx, sql, table):
    with pytest.raises(pqe.AccessError) as e:
        ctx.sql(sql)
    assert isinstance(e.value, pqe.ExecutionError)  # as COPY reported it before
    assert f"table '{table}'" in _one_line(e.value)


def test_copy_spares_files_of_registered_dataframes(store):
    before = (store / "data.parquet").read_bytes()
    ctx = pqe.Context()
    ctx.register_dataframe("rdf", ctx.read_parquet(str(store / "data.parquet")))
    _refused_write(ctx, f"COPY (SELECT 42 AS a) TO '{store}/data.parquet' "
                        f"(FORMAT parquet, OVERWRITE)", "rdf")
    ctx.register_dataframe("dsv", ctx.read_parquet(str(store / "ds")))
    _refused_write(ctx, f"COPY (SELECT 42 AS a, 1 AS b) TO '{store}/ds' "
                        f"(FORMAT parquet, PARTITION_BY (b), OVERWRITE)", "dsv")
    _refused_write(ctx, f"COPY (SELECT 42 AS a) TO '{store}/ds/new.parquet'", "dsv")
    _refused_write(ctx, f"COPY (SELECT 42 AS a, 1 AS b) TO '{store}' "
                        f"(FORMAT parquet, PARTITION_BY (b), OVERWRITE)", "rdf")
    assert (store / "data.parquet").read_bytes() == before
    assert _listing(store) == ["c.csv", "data.parquet", "ds/x.parquet"]
    assert ctx.sql("SELECT sum(a) AS s FROM dsv").to_pylist() == [{"s": 6}]


def test_copy_spares_files_under_dataframe_plans(store):
    ctx = pqe.Context()
    # a DataFrame made by SQL, reading a CSV file in a subquery and joining a DataFrame
    inner = ctx.sql(f"SELECT * FROM read_parquet('{store}/ds') "
                    f"WHERE a IN (SELECT a FROM read_csv('{store}/c.csv'))")
    ctx.register_dataframe("sub", inner)
    ctx.register_dataframe("app_view", ctx.sql("SELECT * FROM sub"))
    ctx.deregister("sub")
    _refused_write(ctx, f"COPY (SELECT 5 AS a) TO '{store}/c.csv' (FORMAT csv, OVERWRITE)",
                   "app_view")
    _refused_write(ctx, f"COPY (SELECT 5 AS a) TO '{store}/ds/y.parquet'", "app_view")
    assert (store / "c.csv").read_text() == "a\n1\n"
    assert ctx.sql("SELECT a FROM app_view").to_pylist() == [{"a": 1}]
    # other files stay writable
    ctx.sql(f"COPY (SELECT 5 AS a) TO '{store}/other.csv' (FORMAT csv)")
    assert (store / "other.csv").read_text() == "\"a\"\n5\n"


def test_copy_adds_no_file_a_registered_glob_would_read(tmp_path):
    d = tmp_path / "inject"
    d.mkdir()
    pq.write_table(pa.table({"amount": [10, 20]}), d / "part1.parquet")
    (d / "c1.csv").write_text("amount\n5\n")
    ctx = pqe.Context(allowed_paths=[str(tmp_path)])
    ctx.register_parquet("sales", f"{d}/*.parquet")
    ctx.register_parquet("deep", f"{d}/**/*.parquet")
    ctx.register_csv("cg", f"{d}/c*.csv")
    _refused_write(ctx, f"COPY (SELECT 1000000 AS amount) TO '{d}/zz_injected.parquet' "
                        f"(FORMAT parquet)", "sales")
    _refused_write(ctx, f"COPY (SELECT 1 AS amount, 7 AS k) TO '{d}/k=7' "
                        f"(FORMAT parquet, PARTITION_BY (k))", "deep")
    _refused_write(ctx, f"COPY (SELECT 1 AS amount) TO '{d}/k=1/b.parquet'", "deep")
    _refused_write(ctx, f"COPY (SELECT 1 AS amount) TO '{d}/c2.csv' (FORMAT csv)", "cg")
    _refused_write(ctx, f"COPY (SELECT 1 AS amount, 2 AS k) TO '{d}/sub' "
                        f"(FORMAT parquet, PER_THREAD_OUTPUT)", "deep")
    assert _listing(d) == ["c1.csv", "part1.parquet"]
    assert ctx.sql("SELECT sum(amount) AS s, count(*) AS n FROM sales").to_pylist() == \
        [{"s": 30, "n": 2}]
    # what no glob matches is written
    ctx.sql(f"COPY (SELECT 1 AS amount, 7 AS k) TO '{d}/out' (FORMAT csv, PARTITION_BY (k))")
    ctx.sql(f"COPY (SELECT 1 AS amount) TO '{d}/x.csv' (FORMAT csv)")
    assert _listing(d) == ["c1.csv", "out/k=7/part-00000.csv", "part1.parquet", "x.csv"]


def test_copy_spares_symlinked_directories_of_a_registered_directory(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"a": [1]}), other / "x.parquet")
    (tmp_path / "t").mkdir()
    os.symlink(other, tmp_path / "t" / "link")
    ctx = pqe.Context()
    ctx.register_parquet("t", str(tmp_path / "t"))
    _refused_write(ctx, f"COPY (SELECT 9 AS a) TO '{other}/new.parquet'", "t")
    assert ctx.sql("SELECT sum(a) AS s FROM t").to_pylist() == [{"s": 1}]


def test_copy_spares_objects_of_registered_object_store_tables(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bucket = f"b{uuid.uuid4().hex[:8]}"
    fs = fsspec.filesystem("memory")
    with fs.open(f"/{bucket}/t/x.parquet", "wb") as f:
        pq.write_table(pa.table({"a": [1, 2]}), f)
    with fs.open(f"/{bucket}/g/a.parquet", "wb") as f:
        pq.write_table(pa.table({"a": [5]}), f)
    ctx = pqe.Context(allowed_paths=[f"memory://{bucket}/"])
    ctx.register_parquet("m", f"memory://{bucket}/t/x.parquet")
    ctx.register_parquet("mg", f"memory://{bucket}/g/*.parquet")
    _refused_write(ctx, f"COPY (SELECT 9 AS a) TO 'memory://{bucket}/t/x.parquet' (OVERWRITE)",
                   "m")
    _refused_write(ctx, f"COPY (SELECT 9 AS a, 1 AS k) TO 'memory://{bucket}/t' "
                        f"(PARTITION_BY (k), OVERWRITE)", "m")
    _refused_write(ctx, f"COPY (SELECT 9 AS a) TO 'memory://{bucket}/g/new.parquet'", "mg")
    assert ctx.sql("SELECT sum(a) AS s FROM m").to_pylist() == [{"s": 3}]
    assert not fs.exists(f"/{bucket}/g/new.parquet") and _listing(tmp_path) == []


# ---- 4. the shell: .read, .once, .output ---------------------------------------------------------


@pytest.fixture
def sh(tmp_path):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (allowed / "secret.txt").write_text(SECRET + "\n")
    (outside / "ok.sql").write_text("select 'ran' as x;\n")
    pq.write_table(pa.table({"a": [1, 2, 3]}), allowed / "data.parquet")
    return tmp_path


def _run(capsys, *argv):
    status = app.main([*map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def test_read_obeys_the_access_flags(sh, capsys):
    allowed, outside = sh / "allowed", sh / "outside"
    status, out, err = _run(capsys, "--no-external-access", "-c",
                            f".read {outside}/ok.sql")
    assert (status, out) == (1, "")
    assert err == ("Error: .read is not allowed: this session's SQL can read only the tables "
                   "the application registered\n")
    messages = []
    for name in ("ok.sql", "secret.txt", "missing.sql"):
        status, out, err = _run(capsys, "--allowed-path", allowed, "-c", f".read {outside}/{name}")
        assert (status, out) == (1, "")
        messages.append(err.replace(name, "NAME"))
    # one message whether the file exists or not, and nothing of its text
    assert messages == [f"Error: .read: access to '{outside}/NAME' is not allowed\n"] * 3
    status, out, _ = _run(capsys, "--mode", "csv", "-c", f".read {outside}/ok.sql")
    assert (status, out) == (0, "x\nran\n")  # no flags: as before


def test_read_errors_do_not_echo_the_file(sh, capsys):
    status, out, err = _run(capsys, "--allowed-path", sh / "allowed", "-c",
                            f".read {sh}/allowed/secret.txt")
    assert status == 1 and "SECRETLINE" not in err and "root:x" not in err
    assert err == f"Error: {sh}/allowed/secret.txt:1:7: syntax error: unexpected token\n"
    loop = sh / "allowed" / "loop.sql"
    loop.write_text(f".read {loop}\n")
    status, out, err = _run(capsys, "-c", f".read {loop}")
    assert status == 1 and "Internal error" not in err and "Recursion" not in err
    assert err.splitlines()[0].endswith(f"scripts nested more than 32 deep (does {loop} read "
                                        f"itself?)")


def test_once_and_output_spare_table_files(sh, capsys):
    data = sh / "allowed" / "data.parquet"
    before = data.read_bytes()
    for command in (".once", ".output"):
        status, out, err = _run(capsys, data, "--allowed-path", sh / "allowed", "-c",
                                f"{command} {data}\nselect 'x' as junk;")
        assert status == 1 and data.read_bytes() == before
        assert err == f"Error: {command} {data} would overwrite data of table 'data'\n"
    status, out, err = _run(capsys, sh / "allowed", "-c", f".output {data}")
    assert status == 1 and "would overwrite data of table 'data'" in err
    assert data.read_bytes() == before
    status, out, _ = _run(capsys, data, "--mode", "csv", "-c", "select sum(a) as s from data")
    assert (status, out) == (0, "s\n6\n")


def test_once_and_output_take_file_urls_as_local_paths(sh, capsys, monkeypatch):
    monkeypatch.chdir(sh / "outside")
    target = sh / "allowed" / "o.csv"
    status, out, err = _run(capsys, "--mode", "csv", "-c",
                            f".once file://{target}\nselect 1 as a;")
    assert (status, err) == (0, "") and target.read_text() == "a\n1\n"
    status, out, err = _run(capsys, "--allowed-path", sh / "allowed", "-c",
                            f".output file://{sh}/outside/o.csv")
    assert status == 1 and "is not allowed" in err
    status, out, err = _run(capsys, "-c", ".output s3://bucket/o.csv")
    assert (status, err) == (1, "Error: .output: only local files, not URLs\n")
    assert _listing(sh / "outside") == ["ok.sql", "secret.txt"]


# ---- 5. nested columns to CSV, NUL bytes --------------------------------------------------------


@pytest.mark.parametrize("column", ["l", "s", "m"])
@pytest.mark.parametrize("options", ["(FORMAT csv)", "(FORMAT csv, PARTITION_BY (id))"])
def test_copy_of_nested_columns_to_csv_names_the_column(tmp_path, column, options):
    ctx = pqe.Context()
    ctx.register_arrow("n", pa.table({
        "id": [1], "l": pa.array([[1, 2]]), "s": pa.array([{"x": 1}]),
        "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))}))
    with pytest.raises(pqe.UnsupportedError) as e:
        ctx.sql(f"COPY (SELECT id, {column} FROM n) TO '{tmp_path}/l.csv' {options}")
    assert f"column {column} is " in _one_line(e.value) and "CSV" in str(e.value)
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("options", ["", "(PARTITION_BY (a))"])
def test_copy_to_a_path_with_a_nul_byte(tmp_path, options):
    for ctx in (pqe.Context(), pqe.Context(allowed_paths=[str(tmp_path)])):
        with pytest.raises(pqe.Error) as e:
            ctx.sql(f"COPY (SELECT 1 AS a, 2 AS b) TO '{tmp_path}/w\x00.csv' {options}")
        assert "NUL byte" in _one_line(e.value)
    assert _listing(tmp_path) == []


# ---- 6. partitions: NULL and the text that names NULL's directory -------------------------------


def test_partition_value_that_names_the_null_directory_is_refused(tmp_path):
    ctx = pqe.Context()
    with pytest.raises(pqe.UnsupportedError) as e:
        ctx.sql("COPY (SELECT * FROM (VALUES ('', 1), (NULL, 2), "
                "('__HIVE_DEFAULT_PARTITION__', 4)) v(k, x)) "
                f"TO '{tmp_path}/o3' (FORMAT parquet, PARTITION_BY (k))")
    assert "cannot partition by k" in _one_line(e.value)
    assert _listing(tmp_path) == []  # nothing written, nothing lost silently
    # NULL alone round-trips
    ctx.sql("COPY (SELECT * FROM (VALUES ('', 1), (NULL, 2), ('a', 4)) v(k, x)) "
            f"TO '{tmp_path}/o4' (FORMAT parquet, PARTITION_BY (k))")
    ctx.register_parquet("r", str(tmp_path / "o4"))
    assert ctx.sql("SELECT k, x FROM r ORDER BY x").to_pylist() == [
        {"k": "", "x": 1}, {"k": None, "x": 2}, {"k": "a", "x": 4}]
