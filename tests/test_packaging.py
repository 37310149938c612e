"""Packaging: `import pqe` is cheap and pulls no heavy module; optional dependencies are
extras whose absence gives a clear error naming the extra; one version everywhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pyarrow", "pandas", "numpy", "dask", "distributed", "sqlglot", "rich",
         "prompt_toolkit", "pygments", "polars", "duckdb")


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)


def test_import_pqe_loads_no_heavy_module():
    out = _python("""
        import sys, pqe
        heavy = sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:]))
        print(','.join(heavy))
        """, *HEAVY)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_arrow_allocates_with_the_system_allocator_unless_the_user_chose_one(monkeypatch):
    """pqe imported before pyarrow asks Arrow for the system allocator (mimalloc keeps freed
    pages mapped: TPC-H SF10 peak RSS ~6% higher summed, up to 30% for a query); a process
    that loaded pyarrow first is switched to it too, its environment untouched (mimalloc's
    huge-page arenas made a first 1.2 GB join output take 2.7-7.2 s, against 0.33 s); a pool
    the user named in ARROW_DEFAULT_MEMORY_POOL is kept either way."""
    import pyarrow as pa

    code = """
        import os, sys
        if sys.argv[1] == 'pyarrow-first':
            import pyarrow
        import pqe
        ctx = pqe.Context()
        assert ctx.sql('select sum(x) as s from (values (1), (2)) t(x)').to_pylist() == [{'s': 3}]
        import pyarrow as pa
        print(pa.default_memory_pool().backend_name, os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))
        """
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    out = _python(code, "pqe-first")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["system", "system"]

    first = _python(code, "pyarrow-first")
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["system", "None"]

    try:
        pa.jemalloc_memory_pool()
        chosen = "jemalloc"
    except (NotImplementedError, pa.ArrowNotImplementedError):  # a build without it
        chosen = "mimalloc"
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", chosen)
    for order in ("pqe-first", "pyarrow-first"):
        user = _python(code, order)
        assert user.returncode == 0, user.stderr
        assert user.stdout.split() == [chosen, chosen]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc arenas (Linux)")
def test_import_pqe_caps_glibc_malloc_arenas_unless_the_user_chose(monkeypatch):
    """glibc gives each allocating thread its own heap arena (8 per core) and never reuses
    one arena's free memory in another: Arrow's and Dask's threads left TPC-H SF10 Q13 at
    668 MiB peak RSS (578 with one arena per core). `import pqe` caps arenas at
    max(2, cores); a MALLOC_ARENA_MAX the user set is kept. Counted from malloc_stats()."""
    code = """
        import ctypes, sys, threading
        if sys.argv[1] == 'pqe':
            import pqe
        n = int(sys.argv[2])
        barrier, keep = threading.Barrier(n), []
        def work():
            barrier.wait()
            keep.append(bytearray(1 << 16))  # malloc'd on this thread
        threads = [threading.Thread(target=work) for _ in range(n)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        ctypes.CDLL(None).malloc_stats()  # 'Arena N:' per arena, on stderr
        """
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)

    def arenas(which: str) -> int:
        out = _python(code, which, str(cap + 6))
        assert out.returncode == 0, out.stderr
        return len(re.findall(r"^Arena \d+:", out.stderr, re.M))

    cap = max(2, os.cpu_count() or 2)
    assert arenas("plain") > cap  # glibc: one more arena per thread (the cap's reason)
    assert arenas("pqe") <= cap
    monkeypatch.setenv("MALLOC_ARENA_MAX", str(cap + 3))
    assert arenas("pqe") == cap + 3


def test_shell_query_does_not_import_pandas_and_pandas_still_works_after():
    """pyarrow imports pandas (a third of `pqe-sql -c`'s start) on its first pa.scalar of a
    Python value; the shell lets that probe find pandas absent. A query runs without pandas,
    and pyarrow's pandas conversions still work once pandas is imported later."""
    conversions = """
        import pandas, pyarrow as pa
        t = pa.Table.from_pandas(pandas.DataFrame({'c': pandas.Categorical(['x', 'y', 'x'])}))
        print(t.column('c').type, pa.array(pandas.Series([1, 2])).type,
              pa.table({'a': [1]}).to_pandas().shape)
        """
    out = _python("""
        import sys
        from pqe.shell import main
        assert main(['-c', "select 1 + 1 as two, 'é' as s"]) == 0
        print('pandas' in sys.modules)
        """ + conversions)
    assert out.returncode == 0, out.stderr
    plain = _python(conversions)  # the same conversions in a process without the shell
    assert plain.returncode == 0, plain.stderr
    lines = out.stdout.strip().splitlines()
    assert "2" in "".join(lines[:-2]) and "é" in "".join(lines[:-2])
    assert lines[-2] == "False"
    assert lines[-1] == plain.stdout.strip()
    assert "dictionary" in lines[-1]


def test_missing_extras_name_the_extra():
    out = _python("""
        import sys

        class NotInstalled:  # as if these were not installed
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in ('pandas', 'polars', 'rich', 'prompt_toolkit',
                                          'pygments'):
                    raise ImportError(f"No module named {name!r}")

        sys.meta_path.insert(0, NotInstalled())
        import pqe
        ctx = pqe.Context()
        assert ctx.sql('select 1 as x').to_pylist() == [{'x': 1}]
        for call in (lambda: ctx.sql('select 1').to_pandas(),
                     lambda: ctx.sql('select 1').to_polars(),
                     lambda: ctx.register_pandas('p', object())):
            try:
                call()
            except pqe.Error as e:
                print(e)
        from pqe.shell import main
        print('exit', main(['-c', 'select 1']))
        """)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == ["to_pandas() needs pandas: pip install 'pqe[pandas]'",
                         "to_polars() needs polars: pip install 'pqe[polars]'",
                         "register_pandas() needs pandas: pip install 'pqe[pandas]'"]
    assert lines[3] == "exit 1" and "pip install 'pqe[shell]'" in out.stderr


def test_register_pandas_refuses_other_frames_clearly():
    import polars as pl

    import pqe

    with pytest.raises(pqe.CatalogError, match="needs a pandas DataFrame.*use register_arrow"):
        pqe.Context().register_pandas("p", pl.DataFrame({"a": [1]}))


def test_one_version_everywhere():
    import pqe
    from pqe._version import __version__

    assert pqe.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    out = subprocess.run([sys.executable, "-m", "pqe.shell", "--version"], capture_output=True,
                         text=True, timeout=60, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.strip() == f"pqe {__version__}"
    assert f"## {__version__}" in (ROOT / "CHANGELOG.md").read_text()
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert (ROOT / "pqe" / "py.typed").exists()


@pytest.mark.slow
def test_fresh_wheel_install_without_extras(tmp_path):
    """Build the wheel, install it with no extras into a new virtualenv, run a query."""
    wheel_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheel_dir),
                    str(ROOT)], check=True, timeout=600)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    (wheel,) = wheel_dir.glob("pqe-*.whl")
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=900)
    code = ("import pqe\nctx = pqe.Context()\nprint(ctx.sql('select 40 + 2 as a').to_pylist())\n"
            "try:\n    ctx.sql('select 1').to_pandas()\nexcept pqe.Error as e:\n    print(e)\n")
    out = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert out.stdout.splitlines() == ["[{'a': 42}]",
                                       "to_pandas() needs pandas: pip install 'pqe[pandas]'"]
