"""A directory whose files store one text column differently (dictionary-encoded in one, as
pandas writes a Categorical, plain string, large_string or string_view in others) was refused
("files disagree on column"); DuckDB reads it. The column is read as plain text."""
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe

ENCODINGS = {
    "dict": lambda v: pa.array(v, pa.string()).dictionary_encode(),
    "dict8": lambda v: pa.array(v, pa.string()).dictionary_encode().cast(
        pa.dictionary(pa.int8(), pa.string())),
    "string": lambda v: pa.array(v, pa.string()),
    "large": lambda v: pa.array(v, pa.large_string()),
    "view": lambda v: pa.array(v, pa.string_view()),
}
VALUES = [["a", "b", None, "é"], ["c", "", "a"], ["zz", None]]


@pytest.mark.parametrize("kinds", [("dict", "string"), ("dict8", "large"), ("view", "string"),
                                   ("dict", "view", "large"), ("string", "dict", "dict8"),
                                   ("string", "view"), ("dict", "view"), ("view", "large")])
@pytest.mark.parametrize("page_dictionary", [True, False])
@pytest.mark.parametrize("partitions", [1, 3])
def test_mixed_text_encodings_read_as_text(tmp_path, kinds, page_dictionary, partitions):
    # (without dictionary pages a string_view column is read back as string_view: a filter
    # pushed into the scan met string against string_view, "no kernel matching")
    for i, kind in enumerate(kinds):
        vals = VALUES[i]
        pq.write_table(pa.table({"s": ENCODINGS[kind](vals),
                                 "x": pa.array(range(10 * i, 10 * i + len(vals)), pa.int64())}),
                       tmp_path / f"f{i}.parquet", use_dictionary=page_dictionary)
    ctx = pqe.Context(partitions=partitions)
    ctx.register_parquet("t", str(tmp_path))
    con = duckdb.connect()
    for q in ["SELECT s, x FROM t ORDER BY x",
              "SELECT s, count(*) AS n FROM t GROUP BY s ORDER BY s NULLS LAST",
              "SELECT x FROM t WHERE s = 'a' ORDER BY x",
              "SELECT x FROM t WHERE s <> 'a' OR s IN ('zz', 'é') ORDER BY x",
              "SELECT x FROM t WHERE s BETWEEN 'b' AND 'zz' ORDER BY x",
              "SELECT x FROM t WHERE s > 'a' AND x > 0 ORDER BY x",
              "SELECT max(s) AS m, min(s) AS l FROM t"]:
        got = [tuple(r.values()) for r in ctx.sql(q).to_arrow().to_pylist()]
        want = con.execute(q.replace("FROM t", f"FROM read_parquet('{tmp_path}/*.parquet')")
                           ).fetchall()
        assert got == want, q


def test_text_against_a_number_is_still_refused(tmp_path):
    pq.write_table(pa.table({"s": pa.array(["a"]).dictionary_encode()}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"s": pa.array([1])}), tmp_path / "b.parquet")
    ctx = pqe.Context()
    with pytest.raises(pqe.CatalogError, match="disagree on column 's'"):
        ctx.register_parquet("t", str(tmp_path))
        ctx.sql("SELECT * FROM t").to_arrow()
