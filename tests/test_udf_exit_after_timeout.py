"""A query whose scalar Python function is still running on an Arrow thread when the query
times out (or its Context closes) returned at once; the process then aborted at exit
("Fatal Python error: PyGILState_Release", status 134) when the call ended while the
interpreter finalized. Exit now refuses new Python kernel calls and waits for those in flight."""
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import time, pyarrow as pa, pqe
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("big", pa.table({"x": list(range(200000))}))
    ctx.register_udf("slow", lambda x: (time.sleep(0.2), x)[1], ["BIGINT"], "BIGINT")
    try:
        ctx.sql("select sum(slow(x)) from big").to_arrow(timeout=0.3)
    except pqe.QueryTimeout:
        print("timed out")
    if CLOSE:
        ctx.close()
    print("exiting")
""")


@pytest.mark.parametrize("close", [False, True])
def test_exit_after_a_timed_out_udf_query_is_clean(close):
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", SCRIPT.replace("CLOSE", str(close))],
                             capture_output=True, text=True, timeout=120)
        assert "Fatal Python error" not in run.stderr, run.stderr[-2000:]
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.split() == ["timed", "out", "exiting"]
