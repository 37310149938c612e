"""Cliffs: common query shapes over generated data, pqe against DuckDB, to find where pqe is
many times slower than DuckDB (the benchmark suites' queries do not cover every key type or
aggregate a user reaches for).

    python -m benchmarks.cliffs                 # 2M rows, prints a table
    python -m benchmarks.cliffs --rows 200000

Each shape runs once to warm up, then the best of `--runs` is taken for each engine (both
with 2 threads). Every answer is checked against DuckDB's; a shape more than 5x DuckDB's
time (and over 0.1 s) is flagged. What it found (2026-12-04): GROUP BY / joins on DOUBLE
keys holding whole numbers (90x-250x: Acero's hash of 8-byte keys that differ only in their
high bits), the same for BIGINT keys such as k << 40 (1,400x), MEDIAN / QUANTILE (8x: a
sort of every value), EXISTS with `<>` on a key held by many rows of each side (60x); all
fixed since (kernels.relational.hash_key_floats / low_bits_repeat, kernels.holistic.
_selected, optimizer.semi_join_extremes). A third sweep (85 shapes, the last seven here):
CAST of text to numbers (1,150x: kernels.expressions._Stages and Arrow's cast for plain
digits), STRFTIME (9-13x: kernels.scalars.fixed_width_strftime), window sums over a partition
or running (5-6x: kernels.window._partition_sums), MIN/MAX of text over many groups (5x:
kernels.aggregate._text_ranks), joins ON IS NOT DISTINCT FROM (a nested loop: a hash join on
null-safe keys now); all brought within 5x.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa


def tables(n: int, seed: int = 7) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, max(2, n // 20), n)
    m = max(2, n // 20)
    t = pa.table({
        "id": np.arange(n),
        "k": rng.integers(0, max(2, n // 20), n),
        "k2": rng.integers(0, 50, n),
        "s": pa.array([f"user_{i:07d}" for i in rng.integers(0, max(2, n // 4), n)]),
        "url": pa.array([f"https://example.com/catalog/items/{i}" for i in keys]),
        "x": rng.normal(size=n),
        "p": np.round(rng.uniform(1, 100, n), 2),
        "whole": keys * 1.0,
        "big": keys << 40,
        "d": pa.array((keys * 100).astype(np.int32)).cast(pa.decimal128(12, 2)),
        "ts": pa.array(rng.integers(1_600_000_000_000_000, 1_700_000_000_000_000, n))
        .cast(pa.timestamp("us")),
        "si": pa.array(rng.integers(-10 ** 6, 10 ** 6, n).astype(str)),
    })
    u = pa.table({
        "k": np.arange(m), "whole": np.arange(m) * 1.0, "big": np.arange(m) << 40,
        "d": pa.array((np.arange(m) * 100).astype(np.int32)).cast(pa.decimal128(12, 2)),
        "s": pa.array([f"user_{i:07d}" for i in range(0, 5 * m, 5)]),
        "name": pa.array([f"name_{i}" for i in range(m)]),
    })
    return {"t": t, "u": u}


SHAPES = {
    "group by text": "SELECT s, count(*) FROM t GROUP BY s",
    "group by two ints": "SELECT k, k2, sum(x) FROM t GROUP BY k, k2",
    "group by whole doubles": "SELECT whole, sum(k2) FROM t GROUP BY whole",
    "group by prices": "SELECT p, count(*) FROM t GROUP BY p",
    "group by k << 40": "SELECT big, count(*) FROM t GROUP BY big",
    "group by decimal": "SELECT d, count(*) FROM t GROUP BY d",
    "group by date_trunc": "SELECT date_trunc('month', ts) m, count(*) FROM t GROUP BY m",
    "join on text": "SELECT count(*) FROM t JOIN u ON t.s = u.s",
    "join on whole doubles": "SELECT count(*), sum(u.k) FROM t JOIN u ON t.whole = u.whole",
    "join on k << 40": "SELECT count(*) FROM t JOIN u ON t.big = u.big",
    "join on decimal": "SELECT count(*) FROM t JOIN u ON t.d = u.d",
    "many-to-many join": "SELECT count(*) FROM t a JOIN t b ON a.k = b.k WHERE a.id < 2000",
    "left join anti": "SELECT count(*) FROM t LEFT JOIN u ON t.k = u.k * 2 WHERE u.k IS NULL",
    "not in": "SELECT count(*) FROM t WHERE k NOT IN (SELECT k FROM u WHERE k % 3 = 0)",
    # (50 keys, each held by a fiftieth of the rows: DuckDB checks the pairs, 21.6 s for
    # 200,000 rows unfiltered; pqe reads per-key MIN/MAX. The outer side is cut to 2,000
    # rows so DuckDB's time stays in seconds at 2M rows)
    "exists <> hot key": "SELECT count(*) FROM t a WHERE a.id < 2000 AND EXISTS (SELECT 1 "
                         "FROM t b WHERE b.k2 = a.k2 AND b.k <> a.k)",
    "order by limit": "SELECT id, x FROM t ORDER BY x DESC LIMIT 10",
    "row_number": "SELECT max(r) FROM (SELECT row_number() OVER (PARTITION BY k ORDER BY x) r "
                  "FROM t)",
    "top-n per group": "SELECT count(*) FROM (SELECT k2, rank() OVER (PARTITION BY k2 ORDER BY "
                       "x DESC) r FROM t) WHERE r <= 3",
    "lag": "SELECT sum(dx) FROM (SELECT x - lag(x) OVER (PARTITION BY k2 ORDER BY id) dx "
           "FROM t)",
    "median": "SELECT k2, median(x) FROM t GROUP BY k2",
    "quantile": "SELECT quantile_cont(x, 0.9), quantile_disc(x, 0.1) FROM t",
    "count distinct": "SELECT count(DISTINCT s), count(DISTINCT k) FROM t",
    "distinct 3 columns": "SELECT count(*) FROM (SELECT DISTINCT k, k2, s FROM t)",
    "like": "SELECT count(*) FROM t WHERE url LIKE '%items/12%'",
    "regexp": "SELECT count(*) FROM t WHERE regexp_matches(url, 'items/1[0-9]{3}$')",
    "string functions": "SELECT count(DISTINCT upper(substr(s, 6, 4)) || 'x') FROM t",
    "string_agg": "SELECT k2, length(string_agg(name, ',')) FROM t JOIN u ON t.k = u.k "
                  "GROUP BY k2",
    "correlated scalar": "SELECT count(*) FROM u WHERE u.k < 1000 AND "
                         "(SELECT max(x) FROM t WHERE t.k = u.k) > 1",
    "union all": "SELECT k2, count(*) FROM (SELECT k2 FROM t UNION ALL SELECT k2 FROM t) "
                 "GROUP BY k2",
    # found by a third sweep (85 shapes; 2026-12-04): 4x to 1,150x DuckDB before
    "cast text to integer": "SELECT sum(CAST(si AS INTEGER)) FROM t",
    "try_cast text to decimal": "SELECT sum(TRY_CAST(si AS DECIMAL(12,2))) FROM t",
    "group by strftime": "SELECT strftime(ts, '%Y-%m') m, count(*) FROM t GROUP BY m",
    "window sum by partition": "SELECT max(w) FROM (SELECT sum(p) OVER (PARTITION BY k) w "
                               "FROM t)",
    "running sum": "SELECT max(w) FROM (SELECT sum(p) OVER (ORDER BY id) w FROM t)",
    "min/max text, many groups": "SELECT k, min(s), max(url) FROM t GROUP BY k",
    "join is not distinct from": "SELECT count(*) FROM t JOIN u ON t.k IS NOT DISTINCT "
                                 "FROM u.k",
}


def _best(fn, runs: int) -> tuple[float, object]:
    out, best = fn(), float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def run(rows: int = 2_000_000, runs: int = 2, shapes=None, on_result=None) -> list[dict]:
    """One row per shape: seconds for each engine, their ratio, whether the answers agree
    (each also handed to `on_result` as it is measured)."""
    import duckdb

    import pqe
    from pqe.testing import oracle
    from pqe.testing.compare import compare

    data = tables(rows)
    ctx = pqe.Context(threads=2)
    for name, table in data.items():
        ctx.register_arrow(name, table)
    con = oracle.connect(data)
    con.execute("SET threads = 2")
    results = []
    for name in shapes or SHAPES:
        sql = SHAPES[name]
        pqe_s, got = _best(lambda sql=sql: ctx.sql(sql).to_arrow(), runs)
        duck_s, want = _best(lambda sql=sql: oracle.query(con, sql), runs)
        results.append({"shape": name, "pqe": pqe_s, "duckdb": duck_s,
                        "ratio": pqe_s / max(duck_s, 1e-9),
                        "mismatch": compare(got, want, sql=sql)})
        if on_result is not None:
            on_result(results[-1])
    ctx.close()
    return results


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--runs", type=int, default=2)
    args = p.parse_args(argv)
    print(f"{'shape':26s} {'pqe s':>8s} {'DuckDB s':>9s} {'ratio':>6s}  answer")

    def show(r: dict) -> None:
        flag = "  <<< cliff" if r["ratio"] > 5 and r["pqe"] > 0.1 else ""
        answer = "same" if r["mismatch"] is None else f"DIFFERS: {r['mismatch'][:80]}"
        print(f"{r['shape']:26s} {r['pqe']:8.3f} {r['duckdb']:9.3f} {r['ratio']:6.1f}  "
              f"{answer}{flag}", flush=True)

    run(args.rows, args.runs, on_result=show)


if __name__ == "__main__":
    main()
