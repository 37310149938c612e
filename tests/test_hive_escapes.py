"""Hive partition directories whose %-escapes are not UTF-8 (`k=%FE`, `k=%FF`) were decoded
to U+FFFD, so two directories became one value; they are refused naming the directory, as
DuckDB refuses them. Escapes of UTF-8 text still decode."""
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe


def _layout(root, values, csv=False):
    for i, v in enumerate(values):
        os.makedirs(root / f"k={v}")
        if csv:
            (root / f"k={v}" / "f.csv").write_text(f"id\n{i}\n")
        else:
            pq.write_table(pa.table({"id": [i]}), root / f"k={v}" / "f.parquet")


@pytest.mark.parametrize("csv", [False, True])
def test_escapes_that_are_not_utf8_are_refused(tmp_path, csv):
    _layout(tmp_path, ["%FE", "%FF", "ok"], csv)
    ctx = pqe.Context()
    with pytest.raises(pqe.CatalogError, match=r"'k=%F[EF]'.*not UTF-8"):
        (ctx.register_csv if csv else ctx.register_parquet)("t", str(tmp_path))
        ctx.sql("SELECT k, count(*) FROM t GROUP BY k").to_arrow()


@pytest.mark.parametrize("csv", [False, True])
def test_utf8_escapes_decode(tmp_path, csv):
    _layout(tmp_path, ["%C3%A9", "a%2Fb", "plain"], csv)
    ctx = pqe.Context()
    (ctx.register_csv if csv else ctx.register_parquet)("t", str(tmp_path))
    got = ctx.sql("SELECT k FROM t ORDER BY k").to_arrow().column("k").to_pylist()
    assert got == ["a/b", "plain", "é"]
