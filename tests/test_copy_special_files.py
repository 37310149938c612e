"""COPY ... TO (and DataFrame writes) over a device, FIFO or socket: OVERWRITE renamed a new
regular file over it (during a hunt, /dev/full became a regular file). pqe writes regular
files and directories only, as it reads regular files only; the special file is left as it
was."""
import os
import socket
import stat

import pytest

import pqe


def _special(tmp_path, kind):
    path = str(tmp_path / f"target_{kind}.csv")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path)
        sock.close()
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # (/dev/null)
    return path


KINDS = ["fifo", "socket", "device"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_copy_overwrite_refuses_special_files(tmp_path, kind, fmt):
    path = _special(tmp_path, kind)
    before = os.lstat(path).st_mode
    ctx = pqe.Context()
    with pytest.raises(pqe.ExecutionError, match=r"it is a (FIFO|socket|character device); "
                                                 r"pqe writes regular files"):
        ctx.sql(f"COPY (SELECT 1 AS a) TO '{path}' (FORMAT {fmt}, OVERWRITE)")
    assert os.lstat(path).st_mode == before
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


@pytest.mark.parametrize("kind", KINDS)
def test_copy_without_overwrite_still_says_it_exists(tmp_path, kind):
    path = _special(tmp_path, kind)
    with pytest.raises(pqe.ExecutionError, match="exists"):
        pqe.Context().sql(f"COPY (SELECT 1 AS a) TO '{path}' (FORMAT csv)")


@pytest.mark.parametrize("kind", KINDS)
def test_dataframe_write_refuses_special_files(tmp_path, kind):
    path = _special(tmp_path, kind)
    before = os.lstat(path).st_mode
    ctx = pqe.Context()
    with pytest.raises(pqe.ExecutionError, match="pqe writes regular files"):
        ctx.sql("SELECT 1 AS a").write_parquet(path, overwrite=True)
    assert os.lstat(path).st_mode == before


def test_symlink_to_a_regular_file_is_still_written(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("a\n0\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    pqe.Context().sql(f"COPY (SELECT 7 AS a) TO '{link}' (FORMAT csv, OVERWRITE)")
    assert "7" in open(link).read()
