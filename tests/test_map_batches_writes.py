"""map_batches and parallel writes, on threads and on a LocalCluster (worker processes):
Python functions over partitions composing with joins, aggregates and SQL; Parquet/CSV
datasets (hive-partitioned or not) that DuckDB reads back as the query's answer; writes that
fail midway (an error in one partition's function, a cast error in one partition) leave no
file and no temporary directory; COPY ... (PARTITION_BY ...) through the session."""

from __future__ import annotations

import datetime
import decimal
import os
import time

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pqe
from pqe import col
from pqe.plan import statements as S

N = 4000
ORDERS = pa.table({
    "o_id": pa.array(range(N), pa.int64()),
    "cust": pa.array([i % 37 for i in range(N)], pa.int64()),
    "region": pa.array([["north", "south", "east/west", None][i % 4] for i in range(N)]),
    "day": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 5) for i in range(N)]),
    "amount": pa.array([decimal.Decimal(i % 1000) / 100 for i in range(N)], pa.decimal128(12, 2)),
    "qty": pa.array([None if i % 11 == 0 else i % 7 for i in range(N)], pa.int64()),
})
CUSTOMERS = pa.table({"cust": pa.array(range(37), pa.int64()),
                      "name": [f"c{i}" for i in range(37)]})


def _setup(ctx: pqe.Context) -> pqe.Context:
    ctx.register_arrow("orders", ORDERS)
    ctx.register_arrow("customers", CUSTOMERS)
    return ctx


@pytest.fixture(scope="module")
def cluster_ctx():
    ctx = _setup(pqe.Context(workers=2, memory_limit="1GiB", partitions=4))
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def threads_ctx():
    ctx = _setup(pqe.Context(partitions=4))
    yield ctx
    ctx.close()


@pytest.fixture(params=["threads", "cluster"])
def any_ctx(request):
    return request.getfixturevalue(f"{request.param}_ctx")


def _rows(table: pa.Table, columns: list[str] | None = None) -> list[tuple]:
    cols = columns or table.column_names
    return sorted((tuple(r[c] for c in cols) for r in table.to_pylist()),
                  key=lambda t: tuple((v is None, str(v)) for v in t))


def with_total(t: pa.Table) -> pa.Table:
    """A module-level function: shipped to workers by reference (the test module is on their
    path, as a user's own module would be)."""
    total = pc.multiply(t["qty"].cast(pa.float64()), t["amount"].cast(pa.float64()))
    return t.select(["o_id", "cust", "region"]).append_column("total", total)


# ---- map_batches -----------------------------------------------------------------------------


def test_map_batches_composes_with_joins_aggregates_and_sql(any_ctx):
    ctx = any_ctx
    scale = 3

    def scaled(t: pa.Table) -> pa.Table:  # a closure: shipped by value
        return pa.table({"cust": t["cust"], "v": pc.multiply(t["qty"], scale)})

    mapped = ctx.table("orders").filter(col("day") > datetime.date(2024, 1, 2)).map_batches(scaled)
    assert mapped.schema == pa.schema([("cust", pa.int64()), ("v", pa.int64())])
    joined = (mapped.join(ctx.table("customers"), on="cust")
              .group_by("name").agg(total=col("v").sum(), n=pqe.count()))
    expected = ctx.sql("SELECT name, sum(qty * 3) AS total, count(*) AS n FROM orders "
                       "JOIN customers USING (cust) WHERE day > DATE '2024-01-02' GROUP BY name")
    assert _rows(joined.to_arrow()) == _rows(expected.to_arrow())

    # SQL over the function's output, registered by name; filters below it are pushed down
    ctx.register_dataframe("scaled_orders", mapped)
    sql = "SELECT cust, max(v) AS m FROM scaled_orders WHERE v > 3 GROUP BY cust"
    got = ctx.sql(sql).to_arrow()
    want = ctx.sql("SELECT cust, max(qty * 3) AS m FROM orders WHERE qty * 3 > 3 AND "
                   "day > DATE '2024-01-02' GROUP BY cust").to_arrow()
    assert _rows(got) == _rows(want)
    text = ctx.sql(sql).explain()
    assert "MapBatches: test_map_batches_composes_with_joins_aggregates_and_sql.<locals>.scaled" in text
    optimized = text.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
    assert "filters=[(orders.day > DATE '2024-01-02')]" in optimized  # pushed into the scan
    ctx.deregister("scaled_orders")


def test_module_function_and_inferred_schema(any_ctx):
    df = any_ctx.table("orders").map_batches(with_total)
    assert df.columns == ["o_id", "cust", "region", "total"]
    assert df.dtypes == [pa.int64(), pa.int64(), pa.string(), pa.float64()]
    got = df.filter(col("o_id") < 30).to_arrow()
    want = any_ctx.sql("SELECT o_id, cust, region, CAST(qty AS DOUBLE) * CAST(amount AS DOUBLE) "
                       "AS total FROM orders WHERE o_id < 30").to_arrow()
    assert _rows(got) == _rows(want)
    assert "MapBatches: with_total" in df.explain()


def test_declared_schema_is_enforced_at_run_time(any_ctx):
    def bad_type(t):
        return pa.table({"n": pc.cast(t["o_id"], pa.int32())})

    df = any_ctx.table("orders").map_batches(bad_type, schema={"n": "BIGINT"})
    with pytest.raises(pqe.ExecutionError, match=r"map_batches function 'test_declared.*bad_type' "
                                                 r"in partition \d+ \(of 4\): column n is int32, "
                                                 r"expected int64"):
        df.to_arrow()

    def wrong_names(t):
        return pa.table({"m": t["o_id"]})

    df = any_ctx.table("orders").map_batches(wrong_names, schema=pa.schema([("n", pa.int64())]))
    with pytest.raises(pqe.ExecutionError, match=r"in partition \d+ .*missing n; unexpected m"):
        df.to_arrow()

    # other encodings of the declared type are accepted (large_string, dictionaries)
    def large(t):
        return pa.table({"r": t["region"].cast(pa.large_string()),
                         "d": t["region"].dictionary_encode()})

    out = any_ctx.table("orders").map_batches(large, schema=[("r", "VARCHAR"), ("d", pa.string())])
    assert out.to_arrow().schema == pa.schema([("r", pa.string()), ("d", pa.string())])


def test_errors_inside_the_function_name_it_and_the_partition(any_ctx):
    def boom(t):
        if pc.max(t["o_id"]).as_py() >= N - 1:
            raise ValueError("bad batch")
        return t

    df = any_ctx.table("orders").map_batches(boom, schema=ORDERS.schema, name="boom")
    with pytest.raises(pqe.ExecutionError,
                       match=r"map_batches function 'boom' in partition 3 \(of 4\) raised "
                             r"ValueError: bad batch"):
        df.to_arrow()


def test_inference_failure_is_explained(threads_ctx):
    def needs_rows(t):
        return pa.table({"first": [t["o_id"][0].as_py()]})

    with pytest.raises(pqe.ExecutionError, match=r"called on an empty table of its input schema "
                                                 r"to infer its output schema; pass schema="):
        threads_ctx.table("orders").map_batches(needs_rows)
    with pytest.raises(pqe.BindError, match="needs a function"):
        threads_ctx.table("orders").map_batches(42)


def test_map_batches_to_dask_and_polars_results(threads_ctx):
    pl = pytest.importorskip("polars")

    def via_polars(t):
        return pl.from_arrow(t).select(pl.col("cust"), (pl.col("qty") + 1).alias("q1"))

    df = threads_ctx.table("orders").map_batches(via_polars, schema={"cust": "BIGINT", "q1": "BIGINT"})
    assert df.to_arrow().num_rows == N
    ddf = df.to_dask()
    assert int(ddf["q1"].sum().compute()) == pc.sum(pc.add(ORDERS["qty"], 1)).as_py()


# ---- writes --------------------------------------------------------------------------------------


def _duck_dataset(path, columns: list[str]) -> pa.Table:
    con = duckdb.connect()
    try:
        return con.sql(f"SELECT {', '.join(columns)} FROM read_parquet('{path}/**/*.parquet', "
                       f"hive_partitioning=true)").to_arrow_table()
    finally:
        con.close()


def _norm(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, datetime.datetime) and v.time() == datetime.time(0):
        return v.date()
    return v


def _same(got: pa.Table, want: pa.Table) -> None:
    cols = want.column_names
    g = [tuple(_norm(x) for x in r) for r in _rows(got, cols)]
    w = [tuple(_norm(x) for x in r) for r in _rows(want, cols)]
    assert len(g) == len(w)
    assert sorted(g, key=repr) == sorted(w, key=repr)


def test_write_parquet_partitioned_and_not_reads_back_in_duckdb(any_ctx, tmp_path):
    query = any_ctx.sql("SELECT o_id, region, day, amount, qty FROM orders WHERE cust < 30")
    want = query.to_arrow()
    flat = tmp_path / "flat"
    assert query.write_parquet(flat) == want.num_rows
    files = sorted(os.listdir(flat))
    assert files == [f"part-{i:05d}.parquet" for i in range(4)]  # one file per partition
    _same(_duck_dataset(flat, want.column_names), want)

    hive = tmp_path / "hive"
    assert query.write_parquet(hive, partition_by=["region", "day"]) == want.num_rows
    regions = sorted(os.listdir(hive))
    assert regions == ["region=__HIVE_DEFAULT_PARTITION__", "region=east%2Fwest", "region=north",
                       "region=south"]
    assert sorted(os.listdir(hive / "region=north")) == [f"day=2024-01-0{d}" for d in range(1, 6)]
    assert all(f.startswith("part-") for f in os.listdir(hive / "region=north" / "day=2024-01-01"))
    _same(_duck_dataset(hive, want.column_names), want)
    # and pqe reads its own datasets back
    back = any_ctx.read_parquet(str(hive)).select("o_id", "qty").to_arrow()
    _same(back, want.select(["o_id", "qty"]))
    assert [p.name for p in tmp_path.iterdir()] == sorted(["flat", "hive"]) or \
        sorted(p.name for p in tmp_path.iterdir()) == ["flat", "hive"]


def test_write_csv_and_map_batches_output(any_ctx, tmp_path):
    df = any_ctx.table("orders").map_batches(with_total)
    out = tmp_path / "csv"
    assert df.write_csv(out, partition_by="region") == N
    con = duckdb.connect()
    got = con.sql(f"SELECT o_id, cust, total FROM read_csv('{out}/**/*.csv', hive_partitioning=true)"
                  ).to_arrow_table()
    con.close()
    _same(got, df.select("o_id", "cust", "total").to_arrow())


def test_existing_target_needs_overwrite_and_empty_results_keep_a_schema(threads_ctx, tmp_path):
    target = tmp_path / "ds"
    q = threads_ctx.sql("SELECT o_id, qty FROM orders WHERE o_id < 10")
    q.write_parquet(target)
    with pytest.raises(pqe.ExecutionError, match="overwrite=True"):
        q.write_parquet(target)
    empty = threads_ctx.sql("SELECT o_id, qty FROM orders WHERE o_id < 0")
    assert empty.write_parquet(target, overwrite=True) == 0
    assert os.listdir(target) == ["part-00000.parquet"]
    assert threads_ctx.read_parquet(str(target)).schema.names == ["o_id", "qty"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no temporary directory left
    with pytest.raises(pqe.UnknownColumnError, match="partition column 'nope'"):
        q.write_parquet(tmp_path / "x", partition_by=["nope"])
    # missing parent directories are made, and removed again when the write fails
    assert q.write_parquet(tmp_path / "new" / "dirs" / "x") == 10
    assert os.listdir(tmp_path / "new" / "dirs" / "x") == ["part-00000.parquet"]
    bad = threads_ctx.table("orders").map_batches(_slow_failure, schema=ORDERS.schema)
    with pytest.raises(pqe.ExecutionError, match="this partition fails"):
        bad.write_parquet(tmp_path / "more" / "dirs" / "x")
    assert not (tmp_path / "more").exists()
    # COPY (SQL) does not make directories
    stmt = S.Copy(q.logical_plan(), str(tmp_path / "missing" / "x"), "parquet",
                  {"PARTITION_BY": ("qty",)})
    with pytest.raises(pqe.ExecutionError, match="does not exist"):
        threads_ctx.session.execute(stmt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "new"]


def _slow_failure(t: pa.Table) -> pa.Table:
    if pc.max(t["o_id"]).as_py() >= N - 1:
        time.sleep(0.5)  # the other partitions have written their files by now
        raise RuntimeError("this partition fails")
    return t


@pytest.mark.parametrize("failure", ["map_batches", "cast"])
def test_a_write_failing_midway_leaves_nothing(any_ctx, tmp_path, failure):
    if failure == "map_batches":
        df = any_ctx.table("orders").map_batches(_slow_failure, schema=ORDERS.schema)
        error = "this partition fails"
    else:  # the last partition holds one value that is not a number
        df = any_ctx.sql("SELECT o_id, CAST(CASE WHEN o_id = 3999 THEN 'x' ELSE "
                         "CAST(qty AS VARCHAR) END AS BIGINT) AS q, region FROM orders")
        error = "x"
    for partition_by in (None, ["region"]):
        with pytest.raises(pqe.ExecutionError, match=error):
            df.write_parquet(tmp_path / "out", partition_by=partition_by)
        assert list(tmp_path.iterdir()) == []  # no file, no temporary directory
    # a failing overwrite keeps the old contents
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("old")
    with pytest.raises(pqe.ExecutionError, match=error):
        df.write_parquet(tmp_path / "out", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert os.listdir(tmp_path / "out") == ["keep.txt"]


def _fail_fast_finish_late(t: pa.Table) -> pa.Table:
    top = pc.max(t["o_id"]).as_py()
    if top < N // 4:
        raise RuntimeError("the first partition fails at once")
    if top >= N - 1:
        time.sleep(1.0)  # still running when the query has failed: must not write
    return t


def test_tasks_still_running_after_a_failure_write_nothing(any_ctx, tmp_path):
    df = any_ctx.table("orders").map_batches(_fail_fast_finish_late, schema=ORDERS.schema)
    with pytest.raises(pqe.ExecutionError, match="fails at once"):
        df.write_parquet(tmp_path / "out", partition_by="region")
    assert list(tmp_path.iterdir()) == []
    time.sleep(1.5)  # the slow partition has finished by now
    assert list(tmp_path.iterdir()) == []


def test_a_write_that_times_out_leaves_nothing(threads_ctx, tmp_path):
    def slow(t):
        time.sleep(1.0)
        return t

    df = threads_ctx.table("orders").map_batches(slow, schema=ORDERS.schema)
    with pytest.raises(pqe.QueryTimeout):
        df.write_parquet(tmp_path / "out", timeout=0.3)
    assert list(tmp_path.iterdir()) == []


def test_copy_partition_by_through_the_session(any_ctx, tmp_path):
    """COPY (query) TO 'dir' (FORMAT parquet, PARTITION_BY (region)): the statement as the SQL
    front end binds it (options PARTITION_BY: a tuple of column names, OVERWRITE: bool)."""
    source = any_ctx.sql("SELECT region, cust, qty FROM orders WHERE o_id % 2 = 0")
    target = tmp_path / "copy"
    stmt = S.Copy(source.logical_plan(), str(target), "parquet", {"PARTITION_BY": ("region",)})
    result = any_ctx.session.execute(stmt)
    assert result.kind == "COPY" and result.rows_affected == N // 2
    _same(_duck_dataset(target, ["region", "cust", "qty"]), source.to_arrow())
    with pytest.raises(pqe.ExecutionError, match="OVERWRITE"):
        any_ctx.session.execute(stmt)
    again = S.Copy(source.logical_plan(), str(target), "csv",
                   {"PARTITION_BY": ("region",), "OVERWRITE": True, "HEADER": True})
    assert any_ctx.session.execute(again).rows_affected == N // 2
    assert all(f.endswith(".csv") for d in os.listdir(target) for f in os.listdir(target / d))
    # PER_THREAD_OUTPUT: a directory of one file per partition, no hive directories
    flat = S.Copy(source.logical_plan(), str(tmp_path / "flat"), "parquet",
                  {"PER_THREAD_OUTPUT": True})
    assert any_ctx.session.execute(flat).rows_affected == N // 2
    assert sorted(os.listdir(tmp_path / "flat")) == [f"part-{i:05d}.parquet" for i in range(4)]


def test_copy_checks_access_and_registered_tables(tmp_path):
    ro = pqe.Context(read_only=True)
    try:
        ro.register_arrow("orders", ORDERS)
        stmt = S.Copy(ro.table("orders").logical_plan(), str(tmp_path / "x"), "parquet",
                      {"PARTITION_BY": ("region",)})
        with pytest.raises(pqe.AccessError, match="read-only"):
            ro.session.execute(stmt)
    finally:
        ro.close()
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    limited = pqe.Context(allowed_paths=[str(allowed)])
    try:
        limited.register_arrow("orders", ORDERS)
        plan = limited.table("orders").logical_plan()
        # outside the allowed directory, or the allowed directory itself (its temporary
        # directory would be made beside it, and OVERWRITE would replace the whole root)
        for target in (tmp_path / "x", allowed):
            stmt = S.Copy(plan, str(target), "parquet", {"PARTITION_BY": ("region",),
                                                         "OVERWRITE": True})
            with pytest.raises(pqe.AccessError, match="not allowed"):
                limited.session.execute(stmt)
        stmt = S.Copy(plan, str(allowed / "ds"), "parquet", {"PARTITION_BY": ("region",)})
        assert limited.session.execute(stmt).rows_affected == N
    finally:
        limited.close()
    assert [p.name for p in tmp_path.iterdir()] == ["allowed"]
    assert [p.name for p in allowed.iterdir()] == ["ds"]
    import shutil

    shutil.rmtree(allowed)
    ctx = pqe.Context()
    try:
        data = tmp_path / "data"
        ctx.register_arrow("orders", ORDERS)
        ctx.table("orders").write_parquet(data, partition_by="region")
        ctx.register_parquet("stored", str(data))
        for target in (data, tmp_path, data / "region=north"):
            stmt = S.Copy(ctx.table("orders").logical_plan(), str(target), "parquet",
                          {"PARTITION_BY": ("cust",), "OVERWRITE": True})
            with pytest.raises(pqe.ExecutionError, match="would overwrite data of table 'stored'"):
                ctx.session.execute(stmt)
        assert ctx.sql("SELECT count(*) AS n FROM stored").to_pylist() == [{"n": N}]
    finally:
        ctx.close()


def test_write_to_an_object_store(threads_ctx):
    fsspec = pytest.importorskip("fsspec")
    url = "memory://pqe-writes/ds"
    df = threads_ctx.sql("SELECT o_id, region, qty FROM orders")
    assert df.write_parquet(url, partition_by="region") == N
    fs = fsspec.filesystem("memory")
    assert not [p for p in fs.find("/pqe-writes") if ".pqe-" in p]
    back = threads_ctx.read_parquet(url).select("o_id", "region", "qty").to_arrow()
    _same(back, df.to_arrow())
    fs.rm("/pqe-writes", recursive=True)


@pytest.fixture(scope="module")
def s3_options():
    """A local S3 endpoint (moto's server on loopback) with an empty bucket."""
    import logging
    import socket

    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(
        Bucket="writes")
    yield {"key": "testing", "secret": "testing",
           "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    server.stop()


def test_workers_write_to_s3(any_ctx, s3_options, request):
    import s3fs

    url = f"s3://writes/{request.node.callspec.id}/ds"
    df = any_ctx.sql("SELECT o_id, region, qty FROM orders")
    assert df.write_parquet(url, partition_by="region", storage_options=s3_options) == N
    fs = s3fs.S3FileSystem(**s3_options)
    files = fs.find(url)
    assert files and all("/region=" in f and f.endswith(".parquet") and ".pqe-" not in f
                         for f in files)
    assert not [f for f in fs.find(f"s3://writes/{request.node.callspec.id}") if ".pqe-" in f]
    back = any_ctx.read_parquet(url, storage_options=s3_options).select("o_id", "region", "qty")
    _same(back.to_arrow(), df.to_arrow())
    # a failing write to S3 leaves nothing either
    bad = any_ctx.table("orders").map_batches(_slow_failure, schema=ORDERS.schema)
    with pytest.raises(pqe.ExecutionError, match="this partition fails"):
        bad.write_parquet(url + "2", storage_options=s3_options)
    fs.invalidate_cache()
    assert fs.find(url + "2") == [] and not [
        f for f in fs.find(f"s3://writes/{request.node.callspec.id}") if ".pqe-" in f]
