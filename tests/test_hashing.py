"""Partitioning hash quality: skewed-prefix keys spread evenly; equal values hash equally
however their arrays are encoded (the two sides of a join are hashed apart and must
co-partition); deterministic across processes; NULLs, floats, decimals, multi-column keys."""

from __future__ import annotations

import decimal
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.kernels import hashing
from pqe.kernels.relational import hash_buckets, hash_split


def _load(buckets: np.ndarray, n: int) -> float:
    counts = np.bincount(buckets, minlength=n)
    return counts.max() / counts.mean()


@pytest.mark.parametrize("n", [8, 64, 512])
@pytest.mark.parametrize("pattern", ["https://x.io/{:06d}/index.html", "{:020d}",
                                     "prefix-that-is-long-and-shared-{:d}-suffix-shared-too",
                                     "ab{:d}"])
def test_skewed_prefix_text_keys_spread_evenly(n, pattern):
    # 200k keys: at 512 buckets any uniform hash needs ~100k+ keys for max/mean under 1.3
    keys = pa.table({"k": pa.array([pattern.format(i) for i in range(200_000)])})
    assert _load(hash_buckets(keys, ("k",), n), n) < 1.3


def test_the_reported_skew_case():
    """10,000 URL keys that differ only in the middle used to land in one of 8 partitions."""
    keys = pa.table({"k": pa.array([f"https://x.io/{i:06d}/index.html" for i in range(10_000)])})
    assert _load(hash_buckets(keys, ("k",), 8), 8) < 1.1


@pytest.mark.parametrize("n", [8, 64, 512])
def test_integer_and_date_keys_spread_evenly(n):
    ints = pa.table({"k": pa.array(np.arange(200_000) * 1024, pa.int64()),  # strided keys
                     "d": pa.array(np.arange(200_000) % 20_000, pa.int32()).cast(pa.date32())})
    assert _load(hash_buckets(ints, ("k",), n), n) < 1.3
    multi = hash_buckets(ints, ("d", "k"), n)
    assert _load(multi, n) < 1.3


def _same(a, b) -> None:
    ha = hashing.hash_column(a)
    hb = hashing.hash_column(b)
    assert ha.tolist() == hb.tolist()


def test_equal_text_equal_hash_across_representations():
    values = ["", "a", "abcdefgh", "abcdefghi", None, "https://x.io/000123/index.html",
              "é ü 🙂", "x" * 100, "abcdefgh", None, "a"]
    plain = pa.array(values, pa.string())
    _same(plain, pa.array(values, pa.large_string()))
    _same(plain, pa.array(values, pa.string_view()))
    _same(plain, plain.dictionary_encode())
    _same(plain, pa.chunked_array([values[:3], values[3:7], [], values[7:]]))
    _same(plain, pa.concat_arrays([pa.array(["zzzzzzzzzzzzzzz"] * 3), plain]).slice(3))
    _same(pa.array([v.encode() if v else None for v in values], pa.binary()),
          pa.array([v.encode() if v else None for v in values], pa.large_binary()))
    # every value hashes alike wherever it sits in the data buffer
    h = hashing.hash_column(plain).tolist()
    assert h[2] == h[8] and h[1] == h[10] and h[4] == h[9] == int(hashing.NULL_HASH)
    assert len({h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]}) == 8


def test_long_values_hash_alike_alone_and_among_short_ones():
    """Words are summed word number by word number; a few long values left over are finished
    in one flat pass: both ways give the same hash."""
    long = [("x" * 5000) + str(i) for i in range(3)] + ["y" * 1003]
    mixed = pa.array(["a", "bb"] * 100 + long + ["ccc"] * 50)
    h = hashing.hash_column(mixed).tolist()
    alone = [hashing.hash_column(pa.array([v])).tolist()[0] for v in long]
    assert h[200:204] == alone
    assert len(set(alone)) == 4


def test_text_differing_anywhere_hashes_differently():
    base = "0123456789abcdefghijklmnopqrstuvwxyz"
    variants = [base] + [base[:i] + "#" + base[i + 1:] for i in range(len(base))] + [
        base + "\x00", base[:-1], base[1:]]
    h = hashing.hash_column(pa.array(variants))
    assert len(set(h.tolist())) == len(variants)


def test_equal_numbers_equal_hash_across_types():
    _same(pa.array([1, None, -5, 2**31 - 1], pa.int32()), pa.array([1, None, -5, 2**31 - 1], pa.int64()))
    _same(pa.array([1, 2], pa.int8()), pa.chunked_array([[1], [2]], pa.int64()))
    _same(pa.array([1.5, -0.0, float("nan"), None], pa.float32()),
          pa.array([1.5, 0.0, -float("nan"), None], pa.float64()))
    d = decimal.Decimal
    _same(pa.array([d("1.50"), d("-2.00"), None], pa.decimal128(15, 2)),
          pa.array([d("1.500"), d("-2.000"), None], pa.decimal128(20, 3)))
    _same(pa.array([0, 19000], pa.int32()).cast(pa.date32()),
          pa.array([0, 19000 * 86_400_000], pa.int64()).cast(pa.date64()))
    _same(pa.array([1, 5, 1], pa.int64()).dictionary_encode(), pa.array([1, 5, 1], pa.int64()))
    h = hashing.hash_column(pa.array([0, None, 0.0], pa.float64())).tolist()
    assert h[0] == h[2] != h[1]
    ts = pa.array([1_700_000_000_000_000, None], pa.timestamp("us"))
    assert hashing.hash_column(ts).tolist() == hashing.hash_column(ts.cast(pa.int64())).tolist()


def test_null_keys_have_their_own_hash():
    h = hashing.hash_column(pa.array([0, None, 0], pa.int64())).tolist()
    assert h[0] == h[2] != h[1]
    h = hashing.hash_column(pa.array(["", None], pa.string())).tolist()
    assert h[0] != h[1]


def test_join_sides_co_partition_when_encoded_differently():
    """What an exchange relies on: a key's bucket is the same on both sides of a join."""
    keys = [f"Customer#{i:09d}" for i in range(5000)]
    left = pa.table({"k": pa.array(keys, pa.string_view()), "i": pa.array(range(5000))})
    right = pa.table({"k": pa.chunked_array([keys[:1234], keys[1234:]], pa.large_string()).dictionary_encode(),
                      "i": pa.array(range(5000), pa.int32())})
    for n in (8, 64):
        assert hash_buckets(left, ("k", "i"), n).tolist() == hash_buckets(right, ("k", "i"), n).tolist()
    parts = hash_split(right, ("k",), 8)
    assert sum(p.num_rows for p in parts) == 5000 and max(p.num_rows for p in parts) < 5000 / 8 * 1.2


def test_several_keys_co_partition_in_any_representation():
    """Several keys' hash combines each key's part (a number's bits, text's hash) once mixed:
    still a function of the values only, NULL apart from 0, and spread evenly."""
    d = decimal.Decimal
    n = 3000
    ints = [None if i % 97 == 0 else i % 50 for i in range(n)]
    texts = [None if i % 89 == 0 else f"k{i % 37}" for i in range(n)]
    decs = [d(i % 11) / 4 for i in range(n)]
    left = pa.table({"a": pa.array(ints, pa.int32()), "t": pa.array(texts, pa.string()),
                     "x": pa.array(decs, pa.decimal128(10, 2)),
                     "day": pa.array([i % 7 for i in range(n)], pa.int32()).cast(pa.date32())})
    right = pa.table({"a": pa.chunked_array([ints[:1000], ints[1000:]], pa.int64()).dictionary_encode(),
                      "t": pa.array(texts, pa.large_string()).dictionary_encode(),
                      "x": pa.array([float(v) for v in decs], pa.float64()),
                      "day": pa.array([i % 7 * 86_400_000 for i in range(n)], pa.int64()).cast(pa.date64())})
    keys = ("a", "t", "x", "day")
    assert hashing.hash_columns(left, keys).tolist() == hashing.hash_columns(right, keys).tolist()
    for n_out in (4, 64):
        assert hash_buckets(left, keys, n_out).tolist() == hash_buckets(right, keys, n_out).tolist()
    # NULL is not 0, in any key
    nulls = pa.table({"a": pa.array([0, None, 0], pa.int64()), "b": pa.array([1, 1, None], pa.int64())})
    h = hashing.hash_columns(nulls, ("a", "b")).tolist()
    assert len(set(h)) == 3
    # consecutive small keys (a grid of 1000 x 100) spread over 64 buckets
    grid = pa.table({"x": pa.array(np.repeat(np.arange(1000), 100)),
                     "y": pa.array(np.tile(np.arange(100), 1000), pa.int32())})
    counts = np.bincount(hash_buckets(grid, ("x", "y"), 64), minlength=64)
    assert counts.min() > 0.85 * len(grid) / 64 and counts.max() < 1.15 * len(grid) / 64
    # pinned: a change of the combined hash must be deliberate (mixed clusters disagree)
    assert hashing.hash_columns(pa.table({"a": [1], "b": ["abc"]}), ("a", "b")).tolist() == [PINNED_PAIR]


PINNED_PAIR = 4621993136946088129


def test_hash_is_deterministic_across_processes():
    """Never Python's salted hash(): another process with another PYTHONHASHSEED agrees."""
    code = ("import pyarrow as pa; from pqe.kernels import hashing; "
            "print(hashing.hash_column(pa.array(['abc', 'https://x.io/1/index.html', None])).tolist(),"
            " hashing.hash_column(pa.array([1, 2**40, -3])).tolist())")
    env = dict(os.environ, PYTHONHASHSEED="12345",
               PYTHONPATH=os.path.dirname(os.path.dirname(pqe.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, timeout=120).stdout.strip()
    here = (f"{hashing.hash_column(pa.array(['abc', 'https://x.io/1/index.html', None])).tolist()} "
            f"{hashing.hash_column(pa.array([1, 2**40, -3])).tolist()}")
    assert out == here
    # pinned values: a change of hash function must be deliberate (mixed clusters disagree)
    assert hashing.hash_column(pa.array([1], pa.int64())).tolist() == [PINNED_INT]
    assert hashing.hash_column(pa.array(["abc"])).tolist() == [PINNED_TEXT]


PINNED_INT = 6238072747940578789
PINNED_TEXT = 7352217424845631663


def test_grouping_and_joins_on_skewed_text_keys_stay_correct():
    keys = [f"https://x.io/{i:06d}/index.html" for i in range(3000)]
    t = pa.table({"k": keys * 2, "v": list(range(6000))})
    ctx = pqe.Context(partitions=8)
    ctx.register_arrow("t", t)
    ctx.register_arrow("u", pa.table({"k": pa.array(keys, pa.large_string()), "w": range(3000)}))
    r = ctx.sql("select count(*) n, count(distinct k) d from t join u using (k)").to_pylist()
    assert r == [{"n": 6000, "d": 3000}]
    r = ctx.sql("select max(c) m from (select k, count(*) c from t group by k) g").to_pylist()
    assert r == [{"m": 2}]
    ctx.close()


def _byte_path(monkeypatch, col):
    """hash_column with the dictionary detour turned off."""
    with monkeypatch.context() as m:
        m.setattr(hashing, "DICTIONARY_MIN_ROWS", 1 << 62)
        return hashing.hash_column(col)


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string(), pa.binary(), pa.string_view()])
def test_repeated_text_hashes_once_per_value_with_the_same_hashes(monkeypatch, typ):
    """A long text column with few distinct values is hashed through a dictionary (each value
    once, gathered through the indices): the hashes must be exactly the byte-wise ones, NULLs
    included, in any chunking and slicing, or the two sides of a join stop co-partitioning."""
    rng = np.random.default_rng(7)
    values = np.array([f"välue-{i}-" + "x" * (i % 23) for i in range(40)] + [None, ""],
                      dtype=object)
    col = pa.array(values[rng.integers(0, len(values), 60_000)], typ)
    seen = []
    real = hashing._hash_bytes
    monkeypatch.setattr(hashing, "_hash_bytes", lambda c: seen.append(len(c)) or real(c))
    for arr in (col, col.slice(3, 50_000),
                pa.chunked_array([col.slice(0, 20_000), col.slice(20_000)])):
        seen.clear()
        got = hashing.hash_column(arr)
        assert seen and max(seen) <= len(values)  # hashed the distinct values, not the rows
        assert np.array_equal(got, _byte_path(monkeypatch, arr))
        table = pa.table({"t": arr, "i": pa.array(np.arange(len(arr)) % 5)})
        combined = hashing.hash_columns(table, ["t", "i"])
        with monkeypatch.context() as m:
            m.setattr(hashing, "DICTIONARY_MIN_ROWS", 1 << 62)
            assert np.array_equal(combined, hashing.hash_columns(table, ["t", "i"]))


def test_text_that_seldom_repeats_is_hashed_byte_wise(monkeypatch):
    col = pa.array([f"key-{i:07d}" for i in range(50_000)])
    seen = []
    real = hashing._hash_bytes
    monkeypatch.setattr(hashing, "_hash_bytes", lambda c: seen.append(len(c)) or real(c))
    hashing.hash_column(col)
    assert seen == [len(col)]  # no dictionary first: it doubled the time of unique keys
