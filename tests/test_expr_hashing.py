"""Expression nodes keep their hash once worked out (`pqe.plan.expr._hash_once`): equal nodes
still hash equal, a rebuilt node works its own out, and a pickled node (a plan shipped to a
cluster worker) never carries its hash into a process whose string hashes differ."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import replace

import pyarrow as pa

from pqe.plan.expr import (AggCall, Call, Case, Cast, ColumnRef, Field, InList, Literal,
                           SortKey, WindowCall)


def _exprs():
    a = ColumnRef(Field("a#1", "a", pa.int64(), True, "t"))
    s = ColumnRef(Field("s#2", "s", pa.string()))
    plus = Call("add", (a, Literal(1, pa.int64())), pa.int64())
    return [
        a, s, plus,
        Cast(plus, pa.float64()),
        Case(((Call("eq", (s, Literal("ü", pa.string())), pa.bool_()), plus),),
             Literal(None, pa.int64()), pa.int64()),
        InList(s, (Literal("x", pa.string()), Literal("y", pa.string()))),
        AggCall("sum", (plus,), pa.int64()),
        WindowCall("rank", (), (s,), (SortKey(a),), None, pa.int64()),
        Literal(float("nan"), pa.float64()),
    ]


def test_equal_expressions_hash_equal_and_rebuilt_ones_rehash():
    for e, twin in zip(_exprs(), _exprs(), strict=True):
        assert e == twin and e is not twin
        assert hash(e) == hash(twin) == hash(e)  # kept, and the same as worked out afresh
        assert len({e, twin}) == 1
    plus = _exprs()[2]
    hash(plus)
    minus = replace(plus, fn="subtract")  # a rebuilt node does not inherit the kept hash
    assert minus != plus and hash(minus) == hash(Call("subtract", plus.args, pa.int64()))


def test_a_pickled_expression_hashes_as_the_receiving_process_builds_it():
    for e in _exprs():
        hash(e)  # keep one here
        assert "_h" not in repr(e)
        back = pickle.loads(pickle.dumps(e))
        assert back == e and hash(back) == hash(e)
    code = (
        "import pickle, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from tests.test_expr_hashing import _exprs\n"
        "shipped = pickle.loads(sys.stdin.buffer.read())\n"
        "here = _exprs()\n"
        "lookup = {e: i for i, e in enumerate(shipped)}\n"
        "assert [lookup.get(e) for e in here] == list(range(len(here))), 'lookup failed'\n"
        "print('ok')\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for seed in ("1", "2"):  # string hashes differ from this process's
        out = subprocess.run([sys.executable, "-c", code, root], input=pickle.dumps(_hashed()),
                             capture_output=True, env={**os.environ, "PYTHONHASHSEED": seed},
                             timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == b"ok", out.stderr.decode()[-2000:]


def _hashed():
    exprs = _exprs()
    for e in exprs:
        hash(e)
    return exprs
