"""Findings of the ninth hunt, files and object stores: a dataset COPY never replaces an
allowed root, the working directory or a whole bucket (`root/.`, `sub/..`, `''`); object-store
URLs with dot segments are refused (S3 keys are literal); a failed COPY to S3 keeps the old
object; a failed S3 dataset overwrite puts the old files back, and one over a key that is
both an object and a prefix replaces both; S3 globs skip hidden entries and folder markers
are no files; CSV value errors quote no file content; hive directories of a column starting
with '_' or '.' read back; `**` does not follow symlinked directories.

The S3 tests run against moto's server on loopback (as tests/test_object_store.py does), one
server for the module."""

from __future__ import annotations

import io
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.access import AccessPolicy


def _listing(d) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), d)
                  for r, _, fs in os.walk(d) for f in fs)


def _one_line(e: BaseException) -> str:
    msg = str(e)
    assert "\n" not in msg and isinstance(e, pqe.Error)
    return msg


# ---- 1. a dataset write never replaces an allowed root or the working directory ---------------


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    (r / "sub").mkdir(parents=True)
    (r / "precious.txt").write_text("keep me")
    (r / "sub" / "inner.txt").write_text("keep me too")
    return r


@pytest.mark.parametrize("tail", [".", "sub/..", "nonexistent/..", "", "./"])
@pytest.mark.parametrize("how", ["PER_THREAD_OUTPUT", "PARTITION_BY (k)"])
def test_dataset_copy_never_replaces_an_allowed_root(root, tail, how):
    # `root/.` passed the parent check as the root's parent was cut from the text ("root"),
    # and OVERWRITE replaced the whole allowed root with one part file
    ctx = pqe.Context(allowed_paths=[str(root)])
    ctx.register_arrow("t", pa.table({"k": [1], "v": [2]}))
    with pytest.raises(pqe.AccessError, match="not allowed") as e:
        ctx.sql(f"COPY t TO '{root}/{tail}' (FORMAT parquet, {how}, OVERWRITE)")
    _one_line(e.value)
    assert _listing(root) == ["precious.txt", "sub/inner.txt"]
    assert (root / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("target", [".", "./", "sub/..", "file://."])
def test_relative_dataset_targets_resolving_to_the_root_are_refused(root, target, monkeypatch):
    monkeypatch.chdir(root)
    ctx = pqe.Context(allowed_paths=[str(root)])
    ctx.register_arrow("t", pa.table({"k": [1]}))
    with pytest.raises(pqe.AccessError, match="not allowed"):
        ctx.sql(f"COPY t TO '{target}' (FORMAT parquet, PER_THREAD_OUTPUT, OVERWRITE)")
    assert _listing(root) == ["precious.txt", "sub/inner.txt"]


def test_a_directory_inside_the_root_is_still_written(root):
    ctx = pqe.Context(allowed_paths=[str(root)])
    ctx.register_arrow("t", pa.table({"k": [1, 2]}))
    ctx.sql(f"COPY t TO '{root}/sub/../out' (FORMAT parquet, PER_THREAD_OUTPUT)")
    ctx.sql(f"COPY t TO '{root}/out' (FORMAT parquet, PER_THREAD_OUTPUT, OVERWRITE)")
    assert ctx.sql(f"SELECT sum(k) AS s FROM '{root}/out'").to_pylist() == [{"s": 3}]
    assert "precious.txt" in os.listdir(root)


@pytest.mark.parametrize("write", [
    lambda ctx: ctx.sql("SELECT * FROM t").write_parquet("", overwrite=True),
    lambda ctx: ctx.sql("SELECT * FROM t").write_parquet(".", overwrite=True),
    lambda ctx: ctx.sql("SELECT * FROM t").write_csv("sub/..", overwrite=True),
    lambda ctx: ctx.sql("SELECT * FROM t").write_parquet("..", overwrite=True),
    lambda ctx: ctx.sql("COPY t TO '' (FORMAT parquet, PER_THREAD_OUTPUT, OVERWRITE)"),
    lambda ctx: ctx.sql("COPY t TO '.' (FORMAT parquet, PER_THREAD_OUTPUT, OVERWRITE)"),
    lambda ctx: ctx.sql("COPY t TO '' (FORMAT parquet, OVERWRITE)"),
], ids=["df-empty", "df-dot", "df-csv-sub-dotdot", "df-parent", "copy-empty", "copy-dot",
        "copy-file-empty"])
def test_writes_never_replace_the_working_directory(root, monkeypatch, write):
    # without allowed_paths, `write_parquet("", overwrite=True)` replaced the working directory
    monkeypatch.chdir(root / "sub")
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"k": [1]}))
    with pytest.raises(pqe.ExecutionError) as e:
        write(ctx)
    _one_line(e.value)
    assert _listing(root) == ["precious.txt", "sub/inner.txt"]


def test_an_empty_path_is_refused_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"k": [1]}))
    for sql in ("COPY t TO '' (FORMAT csv)", "COPY t TO 'file://' (FORMAT parquet)"):
        with pytest.raises(pqe.ExecutionError, match="the path is empty"):
            ctx.sql(sql)
    assert os.listdir(tmp_path) == []


# ---- 2. object-store URLs: keys are literal, dot segments refused ------------------------------


@pytest.mark.parametrize("url", [
    "s3://bkt/secret/../ok/evil.parquet",
    "s3://bkt/secret/%2E%2E/ok/evil.parquet",
    "s3://bkt/secret/%2e%2e/ok/evil.parquet",
    "s3://bkt/secret/%252E%252E/ok/evil.parquet",
    "s3://bkt/ok/./evil.parquet",
    "s3://bkt/ok/%2E/evil.parquet",
    "s3://bkt/ok//evil.parquet",
    "s3://bkt//ok/evil.parquet",
    "s3://bkt/ok/x/../../secret/evil.parquet",
    "gs://bkt/secret/..%2Fok/evil.parquet",
])
def test_object_store_urls_with_dot_segments_are_refused(url):
    policy = AccessPolicy(allowed_paths=("s3://bkt/ok/", "gs://bkt/ok/"))
    for check in (policy.check_write, policy.check_source):
        with pytest.raises(pqe.AccessError, match="is not allowed"):
            check(url, "COPY TO")


def test_object_store_urls_under_the_prefix_pass_and_http_still_resolves():
    policy = AccessPolicy(allowed_paths=("s3://bkt/ok/", "http://h/data/"))
    for url in ("s3://bkt/ok/x.parquet", "s3://bkt/ok/sub/x.parquet", "s3://bkt/ok/a%20b.csv",
                "http://h/data/./sub//x.parquet", "http://h/data/sub/../x.parquet"):
        policy.check_write(url, "COPY TO")
    # a literal key that only decoded lands under the prefix is not under it
    with pytest.raises(pqe.AccessError):
        policy.check_write("s3://bkt/ok%2Fx.parquet", "COPY TO")
    with pytest.raises(pqe.ProgrammingError, match="not a URL prefix"):
        AccessPolicy(allowed_paths=("s3://bkt/a/../ok/",))


# ---- S3 (moto) -----------------------------------------------------------------------------------


BUCKET = "hunt9"


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on loopback with one bucket; (boto3 client, storage options). SQL's
    COPY reaches it through the environment (URLs in SQL carry no options)."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    import logging

    import boto3
    from test_object_store import _free_port

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    options = {"key": "testing", "secret": "testing",
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ENDPOINT_URL", endpoint)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        yield client, options
    server.stop()


def _keys(client, prefix: str) -> list[str]:
    out = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return sorted(o["Key"] for o in out)


def _put_parquet(client, key: str, table: pa.Table) -> None:
    b = io.BytesIO()
    pq.write_table(table, b)
    client.put_object(Bucket=BUCKET, Key=key, Body=b.getvalue())


def test_s3_copy_with_dot_segments_writes_nothing(s3):
    client, _ = s3
    ctx = pqe.Context(allowed_paths=[f"s3://{BUCKET}/dots/ok/"])
    ctx.register_arrow("t", pa.table({"a": [666]}))
    for q in (f"COPY t TO 's3://{BUCKET}/dots/secret/../ok/evil.parquet'",
              f"COPY t TO 's3://{BUCKET}/dots/secret/%2E%2E/ok/evil.parquet'",
              f"COPY t TO 's3://{BUCKET}/dots/secret/../ok/ds' (FORMAT parquet, "
              f"PER_THREAD_OUTPUT)"):
        with pytest.raises(pqe.AccessError, match="is not allowed"):
            ctx.sql(q)
    assert _keys(client, "dots/") == []
    ctx.sql(f"COPY t TO 's3://{BUCKET}/dots/ok/fine.parquet'")
    assert _keys(client, "dots/") == ["dots/ok/fine.parquet"]


def test_s3_dataset_copy_never_replaces_the_allowed_prefix_or_a_bucket(s3):
    client, options = s3
    client.put_object(Bucket=BUCKET, Key="pfx/ok/keep.txt", Body=b"keep")
    ctx = pqe.Context(allowed_paths=[f"s3://{BUCKET}/pfx/ok/"])
    ctx.register_arrow("t", pa.table({"a": [1]}))
    with pytest.raises(pqe.AccessError, match="not allowed"):
        ctx.sql(f"COPY t TO 's3://{BUCKET}/pfx/ok/' (FORMAT parquet, PER_THREAD_OUTPUT, "
                f"OVERWRITE)")
    with pytest.raises(pqe.ExecutionError, match="whole bucket"):
        ctx.sql("SELECT * FROM t").write_parquet(f"s3://{BUCKET}", overwrite=True,
                                                 storage_options=options)
    assert _keys(client, "pfx/") == ["pfx/ok/keep.txt"]


def test_failed_copy_to_s3_keeps_the_old_object_and_leaves_no_new_one(s3):
    # the CSV writer fails on a BLOB that is not UTF-8: the stream was closed on the way out,
    # which uploaded the header alone over the old object
    client, _ = s3
    client.put_object(Bucket=BUCKET, Key="one/x.csv", Body=b"b\nprecious\n")
    ctx = pqe.Context(allowed_paths=[f"s3://{BUCKET}/one/"])
    ctx.register_arrow("t", pa.table({"b": pa.array([b"ok", b"\xff"])}))
    for target in ("x.csv", "new.csv"):
        with pytest.raises(pqe.ExecutionError) as e:
            ctx.sql(f"COPY t TO 's3://{BUCKET}/one/{target}' (FORMAT csv, OVERWRITE)")
        _one_line(e.value)
    assert client.get_object(Bucket=BUCKET, Key="one/x.csv")["Body"].read() == \
        b"b\nprecious\n"
    assert _keys(client, "one/") == ["one/x.csv"]  # no new object, no temporary one
    ctx.register_arrow("u", pa.table({"b": ["fine"]}))
    assert ctx.sql(f"COPY u TO 's3://{BUCKET}/one/x.csv' (FORMAT csv, OVERWRITE)") \
        .to_pylist() == [{"count": 1}]
    assert client.get_object(Bucket=BUCKET, Key="one/x.csv")["Body"].read() == b'"b"\n"fine"\n'
    assert _keys(client, "one/") == ["one/x.csv"]


@pytest.mark.parametrize("fail_on", ["new", "backup"])
def test_failed_s3_dataset_overwrite_leaves_the_old_dataset(s3, monkeypatch, fail_on):
    client, options = s3
    prefix = f"ds-{fail_on}"
    url = f"s3://{BUCKET}/{prefix}"
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("old", pa.table({"v": [1, 2, 3, 4, 5, 6]}))
    ctx.register_arrow("new", pa.table({"v": [100, 200, 300, 400, 500, 600]}))
    assert ctx.sql("SELECT * FROM old").write_parquet(url, storage_options=options) == 6
    before = _keys(client, f"{prefix}/")
    assert len(before) == 3
    orig = pafs.FSSpecHandler.copy_file
    seen = {"n": 0}

    def flaky(self, src, dest):
        # the second copy of a new file into the dataset (after one replaced an old file),
        # or the second copy of an old file aside
        if (".old/" in dest) if fail_on == "backup" else (".tmp/" in src):
            seen["n"] += 1
            if seen["n"] == 2:
                raise OSError("simulated network error")
        return orig(self, src, dest)

    monkeypatch.setattr(pafs.FSSpecHandler, "copy_file", flaky)
    with pytest.raises(pqe.ExecutionError, match="simulated network error"):
        ctx.sql("SELECT * FROM new").write_parquet(url, storage_options=options,
                                                   overwrite=True)
    monkeypatch.setattr(pafs.FSSpecHandler, "copy_file", orig)
    assert seen["n"] == 2
    assert _keys(client, f"{prefix}/") == before
    assert not [k for k in _keys(client, "") if k.startswith(f".{prefix}.pqe-")]  # no backup
    c2 = pqe.Context()
    c2.register_parquet("ds", url, storage_options=options)
    assert c2.sql("SELECT v FROM ds ORDER BY v").to_pylist() == [{"v": v} for v in range(1, 7)]
    # and a write that succeeds replaces the old files whole
    ctx.sql("SELECT * FROM new").write_parquet(url, storage_options=options, overwrite=True)
    assert c2.sql("SELECT sum(v) AS s FROM ds").to_pylist() == [{"s": 2100}]


def test_s3_overwrite_of_an_object_that_is_also_a_prefix_replaces_both(s3):
    client, options = s3
    _put_parquet(client, "both", pa.table({"v": [-1]}))
    _put_parquet(client, "both/old.parquet", pa.table({"v": [666]}))
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"v": [1, 2]}))
    ctx.sql("SELECT * FROM t").write_parquet(f"s3://{BUCKET}/both", overwrite=True,
                                             storage_options=options)
    assert [k for k in _keys(client, "both") if not k.startswith("bothx")] == \
        ["both/part-00000.parquet"]
    back = pqe.Context().read_parquet(f"s3://{BUCKET}/both", storage_options=options)
    assert sorted(back.to_arrow().column("v").to_pylist()) == [1, 2]


def test_s3_globs_skip_hidden_entries_as_local_globs_do(s3, tmp_path):
    client, options = s3
    _put_parquet(client, "gl/a/x.parquet", pa.table({"v": [1]}))
    # what an unfinished (or killed) pqe write leaves
    _put_parquet(client, "gl/.new.pqe-1b1e2aaa7892.tmp/part-00000.parquet",
                 pa.table({"v": [100]}))
    ctx = pqe.Context()
    ctx.register_parquet("g", f"s3://{BUCKET}/gl/*/*.parquet", storage_options=options)
    ctx.register_parquet("gr", f"s3://{BUCKET}/gl/**/*.parquet", storage_options=options)
    ctx.register_parquet("d", f"s3://{BUCKET}/gl", storage_options=options)
    # a pattern that names the hidden directory reads it, as a local glob does
    ctx.register_parquet("h", f"s3://{BUCKET}/gl/.new*/*.parquet", storage_options=options)
    for name, expected in (("g", 1), ("gr", 1), ("d", 1), ("h", 100)):
        assert ctx.sql(f"SELECT sum(v) AS s FROM {name}").to_pylist() == [{"s": expected}], name
    local = tmp_path / "gl"
    (local / "a").mkdir(parents=True)
    (local / ".new.pqe-1b1e2aaa7892.tmp").mkdir()
    pq.write_table(pa.table({"v": [1]}), local / "a" / "x.parquet")
    pq.write_table(pa.table({"v": [100]}), local / ".new.pqe-1b1e2aaa7892.tmp" / "p.parquet")
    ctx.register_parquet("lg", f"{local}/*/*.parquet")
    assert ctx.sql("SELECT sum(v) AS s FROM lg").to_pylist() == [{"s": 1}]


def test_s3_folder_markers_are_not_files(s3):
    client, options = s3
    client.put_object(Bucket=BUCKET, Key="mk/dir/", Body=b"")
    client.put_object(Bucket=BUCKET, Key="mk/dir/k=1/", Body=b"")
    _put_parquet(client, "mk/dir/k=1/x.parquet", pa.table({"v": [1, 2]}))
    client.put_object(Bucket=BUCKET, Key="mk/csvdir/", Body=b"")
    client.put_object(Bucket=BUCKET, Key="mk/csvdir/a.csv", Body=b"a,b\n1,2\n")
    ctx = pqe.Context()
    for name, path in (("d", "mk/dir"), ("d2", "mk/dir/"), ("g", "mk/dir/**")):
        ctx.register_parquet(name, f"s3://{BUCKET}/{path}", storage_options=options)
        assert ctx.sql(f"SELECT v, k FROM {name} ORDER BY v").to_pylist() == \
            [{"v": 1, "k": 1}, {"v": 2, "k": 1}], name
    ctx.register_csv("c", f"s3://{BUCKET}/mk/csvdir", storage_options=options)
    assert ctx.sql("SELECT * FROM c").to_pylist() == [{"a": 1, "b": 2}]


# ---- 8. CSV value errors quote no file content --------------------------------------------------


def test_csv_decimal_errors_do_not_quote_the_value(tmp_path):
    f = tmp_path / "a.csv"
    # inferred DECIMAL from the first block; the bad value lies past it
    f.write_text("a\n" + "99999999999999999999\n" * 60000 + "password=hunter2\n")
    ctx = pqe.Context(allowed_paths=[str(tmp_path)])
    with pytest.raises(pqe.Error) as e:
        ctx.sql(f"SELECT count(*) FROM read_csv('{f}')").to_arrow()
    msg = _one_line(e.value)
    assert "hunter2" not in msg and "not a valid decimal128" in msg and "Row #60002" in msg

    g = tmp_path / "b.csv"
    g.write_text("a,b\n1.234,SECRETVALUE\n")
    # (1.234 as DECIMAL(3,2) is 1.23, as CAST and DuckDB read it: a CSV's typed columns are
    # converted by CAST, where Arrow's converter refused it)
    c = pqe.Context()
    c.register_csv("t", str(g), schema={"a": "DECIMAL(3,2)"})
    assert c.sql("SELECT a FROM t").to_pylist() == [{"a": Decimal("1.23")}]
    for schema in ({"a": "DECIMAL(2,2)"}, {"b": "DECIMAL(3,2)"}, {"b": "DATE"},
                   {"b": "BIGINT"}):
        with pytest.raises(pqe.Error) as e:
            c = pqe.Context()
            c.register_csv("t", str(g), schema=schema)
            c.sql("SELECT * FROM t").to_arrow()
        msg = _one_line(e.value)
        assert "1.234" not in msg and "SECRETVALUE" not in msg, msg


# ---- 9. hive directories of columns starting with '_' or '.' ------------------------------------


def test_partitions_of_underscore_and_dot_columns_read_back(tmp_path):
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"_k": [1, 2], ".d": ["x", "y"], "v": [10, 20]}))
    ctx.sql(f"COPY t TO '{tmp_path}/o' (FORMAT parquet, PARTITION_BY (_k))")
    assert sorted(os.listdir(tmp_path / "o")) == ["_k=1", "_k=2"]
    ctx.register_parquet("b", str(tmp_path / "o"))
    assert ctx.sql("SELECT _k, v FROM b ORDER BY v").to_pylist() == \
        [{"_k": 1, "v": 10}, {"_k": 2, "v": 20}]
    ctx.sql('SELECT ".d", v FROM t').write_parquet(tmp_path / "p", partition_by=[".d"])
    ctx.register_parquet("p", str(tmp_path / "p"))
    assert ctx.sql('SELECT ".d", v FROM p ORDER BY v').to_pylist() == \
        [{".d": "x", "v": 10}, {".d": "y", "v": 20}]
    # hidden entries that are no partitions stay skipped: Spark's markers, pqe's own
    # unfinished writes (even one named like a partition)
    for junk in ("_temporary", ".k=9.pqe-0123456789ab.tmp", "_k=3.pqe-0123456789ab.old"):
        (tmp_path / "o" / junk).mkdir()
        pq.write_table(pa.table({"v": [666]}), tmp_path / "o" / junk / "part-0.parquet")
    (tmp_path / "o" / "_SUCCESS").write_text("")
    (tmp_path / "o" / "_k=1" / "_x=1.parquet").write_bytes(b"not parquet")
    ctx.register_parquet("b2", str(tmp_path / "o"))
    assert ctx.sql("SELECT sum(v) AS s FROM b2").to_pylist() == [{"s": 30}]


def test_partitions_of_underscore_columns_read_back_from_a_store():
    import uuid

    url = f"memory://h9-{uuid.uuid4().hex[:8]}/o"
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"_k": [1, 2], "v": [10, 20]}))
    ctx.sql("SELECT * FROM t").write_parquet(url, partition_by=["_k"])
    ctx.register_parquet("b", url)
    assert ctx.sql("SELECT _k, v FROM b ORDER BY v").to_pylist() == \
        [{"_k": 1, "v": 10}, {"_k": 2, "v": 20}]


# ---- 10. `**` and directories through symlinks --------------------------------------------------


def test_recursive_listings_do_not_follow_links_back_up(tmp_path):
    d = tmp_path / "tbl"
    d.mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3]}), d / "x.parquet")
    (tmp_path / "other").mkdir()
    pq.write_table(pa.table({"a": [100]}), tmp_path / "other" / "y.parquet")
    os.symlink("..", d / "up")
    ctx = pqe.Context()
    # a directory: failed with ELOOP after 40 levels of tbl/up/tbl/up/...
    ctx.register_parquet("t", str(d))
    # `**`: read the sibling directory through tbl/up (count 4, sum 106), and tbl/x 40 deep
    ctx.register_parquet("g", f"{d}/**/*.parquet")
    for name in ("t", "g"):
        assert ctx.sql(f"SELECT count(*) AS n, sum(a) AS s FROM {name}").to_pylist() == \
            [{"n": 3, "s": 6}], name
    assert ctx.catalog.lookup("g")[1].files() == [f"{d}/x.parquet"]


def test_symlinked_subdirectories_elsewhere_are_still_read_in_directories(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"a": [5]}), other / "y.parquet")
    d = tmp_path / "tbl"
    (d / "sub").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1]}), d / "sub" / "x.parquet")
    os.symlink(other, d / "link")
    ctx = pqe.Context()
    ctx.register_parquet("t", str(d))
    assert ctx.sql("SELECT sum(a) AS s FROM t").to_pylist() == [{"s": 6}]
    # `**` does not descend into the link (as DuckDB's recursive globs do not); an explicit
    # segment still goes through it
    ctx.register_parquet("g", f"{d}/**/*.parquet")
    assert ctx.sql("SELECT sum(a) AS s FROM g").to_pylist() == [{"s": 1}]
    ctx.register_parquet("e", f"{d}/*/*.parquet")
    assert ctx.sql("SELECT sum(a) AS s FROM e").to_pylist() == [{"s": 6}]
