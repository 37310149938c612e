"""Writing query results as a dataset of files, in parallel and atomically.

Each partition is written by the task that computed it (on a cluster, on the workers: the
target is a shared path or an object store, reached through a filesystems.FileSystemSpec),
one file per partition and hive directory:

    root/part-00003.parquet                       (no partition_by)
    root/k1=v1/k2=v2/part-00003.parquet           (partition_by=[k1, k2]; the files omit them)

Values in directory names are percent-encoded and NULL is `__HIVE_DEFAULT_PARTITION__`, as
DuckDB and Hive write them (a text value spelled so is refused: readers take it for NULL).
`root` is a temporary directory beside the target; the session renames it to the target once
every task succeeded (`commit`), or deletes it (`abort`).

The atomic-write protocol keeps a failed query from leaving files behind even though tasks of
a failed graph may still be running (Dask does not stop a task that has started):

    root/_pqe_writing            marker: present while tasks may write
    root/_pqe_inflight/<token>   one per task, while it writes

A task creates its in-flight file, then checks the marker: when it is gone the task writes
nothing. `abort` deletes the marker first, waits until no in-flight file is left, then deletes
the directory: a task that saw the marker is waited for, and one that looks later writes
nothing. (On a local disk a task that comes later cannot even create its in-flight file: the
directory is gone and is never created again by a task.)
"""

from __future__ import annotations

import datetime
import decimal
import os
import threading
import time
import uuid
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from .. import types as T
from ..errors import ExecutionError, QueryCancelled, UnsupportedError

MARKER = "_pqe_writing"
INFLIGHT = "_pqe_inflight"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
EXTENSIONS = {"parquet": "parquet", "csv": "csv"}


# ---- in each task ------------------------------------------------------------------------------


def write_partition(table: pa.Table, spec, partition: int) -> pa.Table:
    """Write one partition (columns in the order of `spec.names`) under `spec.root`; returns
    (path, rows) of each file written."""
    fs = spec.fs.arrow_fs()
    flag = f"{spec.root}/{INFLIGHT}/{partition:05d}-{uuid.uuid4().hex[:12]}"
    try:
        _touch(fs, flag)
    except (OSError, pa.ArrowException):
        raise QueryCancelled("the write was abandoned (another partition failed)") from None
    try:
        if not exists(fs, f"{spec.root}/{MARKER}"):
            raise QueryCancelled("the write was abandoned (another partition failed)")
        return _write(table, spec, fs, partition)
    finally:
        delete_quietly(fs, flag)


def _write(table: pa.Table, spec, fs, partition: int) -> pa.Table:
    table = _typed(table, spec, partition)
    name = f"part-{partition:05d}.{EXTENSIONS[spec.format]}"
    paths, rows = [], []
    if table.num_rows == 0:
        return _listing(paths, rows)
    if not spec.partition_by:
        path = f"{spec.root}/{name}"
        write_file(fs, path, table, spec)
        return _listing([path], [table.num_rows])
    keys = list(spec.partition_by)
    data_cols = [n for n in table.column_names if n not in keys]
    seen: dict[str, tuple] = {}
    for values, piece in _groups(table, keys):
        directory = spec.root
        for k, v in zip(keys, values, strict=True):
            text = hive_value(v, table.schema.field(k).type)
            if v is not None and text == HIVE_NULL:
                # the text that names NULL's directory: its rows would land in NULL's file
                # (one group overwriting the other) and read back as NULL
                raise UnsupportedError(f"cannot partition by {k}: it holds the text "
                                       f"'{HIVE_NULL}', which hive directories use for NULL")
            directory = f"{directory}/{quote(k, safe='')}={text}"
        if directory in seen:  # (one group's file would replace the other's)
            raise ExecutionError(f"partition values {seen[directory]!r} and {values!r} are "
                                 f"written as one directory name, {directory!r}")
        seen[directory] = values
        fs.create_dir(directory, recursive=True)
        path = f"{directory}/{name}"
        write_file(fs, path, piece.select(data_cols), spec)
        paths.append(path)
        rows.append(piece.num_rows)
    return _listing(paths, rows)


def _listing(paths: list[str], rows: list[int]) -> pa.Table:
    return pa.table({"path": pa.array(paths, pa.string()), "rows": pa.array(rows, pa.int64())})


def _typed(table: pa.Table, spec, partition: int) -> pa.Table:
    """The partition's columns under their names, in the query's types."""
    cols = []
    for col, name, t in zip(table.columns, spec.names, spec.types, strict=True):
        if col.type != t:
            try:
                col = col.cast(t)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise ExecutionError(f"write of partition {partition}: column {name} is "
                                     f"{col.type}, expected {t}: {str(e).splitlines()[0]}") from e
        cols.append(col)
    return pa.Table.from_arrays(cols, names=list(spec.names))


def _groups(table: pa.Table, keys: list[str]):
    """(key values, rows) for each distinct combination of the key columns (NULL is a value)."""
    from .relational import canonical_floats, combination_codes

    n = table.num_rows
    # (NaNs of two bit patterns, -0.0 and 0.0 are one group, as GROUP BY makes them)
    codes = combination_codes(canonical_floats(table.column(k).combine_chunks())
                              for k in keys)
    order = np.argsort(codes, kind="stable")
    ordered = table.take(pa.array(order))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    ends = np.r_[starts[1:], n]
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        piece = ordered.slice(s, e - s)
        values = tuple(piece.column(k)[0].as_py() for k in keys)
        yield values, piece


def hive_value(v, dtype: pa.DataType | None = None) -> str:
    """A partition value (of type `dtype`) as it appears in a `key=value` directory name."""
    if isinstance(v, float) and dtype is not None and pa.types.is_float32(dtype) and v != 0:
        # a REAL by its own shortest text, as CAST(r AS VARCHAR) and DuckDB write it: as a
        # Python float 0.1 was r=0.10000000149011612, which `WHERE r = '0.1'` never found
        v = str(np.float32(v))
    if v is None:
        return HIVE_NULL
    if isinstance(v, bool):
        text = "true" if v else "false"
    elif isinstance(v, datetime.datetime):
        text = v.isoformat(sep=" ")
    elif isinstance(v, datetime.date):
        text = v.isoformat()
    elif isinstance(v, float) and v == 0:
        text = "0.0"  # (-0.0 is grouped with 0.0, as GROUP BY groups them)
    elif isinstance(v, decimal.Decimal):
        text = format(v, "f")  # (str gave 0E-10 for 0.0000000000)
    elif isinstance(v, bytes):
        # text when it is UTF-8 without a backslash, else \xHH for each byte that is not
        # printable ASCII or is a backslash: b'\xff' and b'\\xff' were one directory
        try:
            text = v.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or "\\" in text:
            text = "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\x{b:02X}"
                           for b in v)
    else:
        text = str(v)
    return quote(text, safe="")


def csv_floats(table: pa.Table) -> pa.Table:
    """DOUBLE / REAL columns as the text a CSV holds them by, with a decimal point when the
    value is whole: Arrow wrote 1.0 as 1 and -0.0 as -0, read back as BIGINT 1 and 0 (a
    partitioned write then had files of either type). DuckDB writes 1.0 and -0.0. BLOBs as
    their text, an error when their bytes are not UTF-8; dates past year 32767 an error."""
    import pyarrow.compute as pc

    for i, f in enumerate(table.schema):
        if T.is_blob(f.type):
            # a CSV is text: a BLOB's bytes go in as they are where they are UTF-8 (Arrow
            # failed the whole write with a bare 'Invalid UTF8 payload' otherwise)
            try:
                text = pc.cast(table.column(i), pa.string())
            except pa.ArrowInvalid:
                raise ExecutionError(f"column {f.name!r} holds BLOB values that are not UTF-8 "
                                     f"text, which a CSV file cannot hold: write Parquet") from None
            table = table.set_column(i, pa.field(f.name, pa.string(), f.nullable), text)
            continue
        if pa.types.is_date(f.type) or pa.types.is_timestamp(f.type):
            # Arrow writes a value past year 32767 as '<value out of range: n>' in the file
            text = pc.cast(table.column(i), pa.string())
            if pc.any(pc.starts_with(text, "<value out of range")).as_py():
                raise ExecutionError(f"column {f.name!r} holds a {T.type_name(f.type)} past "
                                     f"year 32767, which cannot be written as CSV text")
            continue
        if not pa.types.is_floating(f.type):
            continue
        text = pc.cast(table.column(i), pa.string())
        whole = pc.match_substring_regex(text, r"^-?[0-9]+$")
        text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
        table = table.set_column(i, pa.field(f.name, pa.string(), f.nullable), text)
    return table


def write_file(fs, path: str, table: pa.Table, spec) -> None:
    if spec.format == "parquet":
        import pyarrow.parquet as pq

        compression = spec.option("compression", "snappy")
        pq.write_table(table, path, filesystem=fs,
                       compression=None if compression in (None, "none") else compression)
        return
    import pyarrow.csv as pcsv

    table = csv_floats(table)
    opts = pcsv.WriteOptions(include_header=bool(spec.option("header", True)),
                             delimiter=str(spec.option("delimiter", ",")))
    with fs.open_output_stream(path) as out:
        pcsv.write_csv(table, out, opts)


# ---- on the client: prepare, commit, abort --------------------------------------------------------


def temporary_root(target: str) -> str:
    """A hidden directory beside `target` (readers skip names starting with '.')."""
    parent, base = _split(target)
    return f"{parent}/.{base}.pqe-{uuid.uuid4().hex[:12]}.tmp"


def prepare(fs, root: str) -> None:
    """The temporary directory, its in-flight directory and the marker. The target's parent
    directory must exist (on a local disk)."""
    fs.create_dir(root, recursive=False)
    fs.create_dir(f"{root}/{INFLIGHT}", recursive=False)
    _touch(fs, f"{root}/{MARKER}")


def commit(fs, root: str, target: str, overwrite: bool) -> None:
    """Every task succeeded: drop the control files and make the directory `target`.

    On a local disk the directory is renamed (atomic; an existing target, when `overwrite`,
    is renamed aside first and deleted after). On an object store, which cannot rename, the
    files are copied under `target` and the temporary ones deleted (`_copy_commit`): a
    failure while copying puts the old dataset back as it was; readers may see old and new
    files together while the copies run."""
    delete_quietly(fs, f"{root}/{MARKER}")
    _delete_tree(fs, f"{root}/{INFLIGHT}")
    # one commit to a target at a time in this process: two writers overwriting one directory
    # interleaved their renames ('Failed renaming ... .old') and left hidden .old copies
    with _COMMITS_LOCK:
        lock = _COMMITS.setdefault(target, threading.Lock())
    with lock:
        _commit(fs, root, target, overwrite)


_COMMITS: dict[str, threading.Lock] = {}
_COMMITS_LOCK = threading.Lock()


def _commit(fs, root: str, target: str, overwrite: bool) -> None:
    info = fs.get_file_info(target)
    exists_ = info.type != pafs.FileType.NotFound
    if exists_ and not overwrite:
        raise ExecutionError(f"write to '{target}': it exists; pass overwrite=True "
                             f"(OVERWRITE in COPY) to replace it")
    if not isinstance(fs, pafs.LocalFileSystem):
        _copy_commit(fs, root, target, info if exists_ else None)
        return
    old = None
    if exists_:
        parent, base = _split(target)
        old = f"{parent}/.{base}.pqe-{uuid.uuid4().hex[:12]}.old"
        fs.move(target, old)
    try:
        fs.move(root, target)
    except BaseException:
        if old is not None:
            fs.move(old, target)  # put the previous contents back
        raise
    if old is not None:
        _delete_any(fs, old)


def _copy_commit(fs, root: str, target: str, existing) -> None:
    """Put the files under `root` in place under `target` on a store that cannot rename.

    An old object a new file replaces (same name: a rewrite of pqe's own output replaces
    every part-NNNNN file), and an object stored at `target` itself (where the directory
    goes; on S3 `both` and `both/x` coexist), are first copied aside to a hidden backup
    prefix beside the target; then the new files are copied in; the old files no new one
    replaced are deleted only once every new file is in place. A failure while copying
    deletes the new files, copies the backed-up ones back, and so leaves the old dataset
    as it was: copied straight over, a failure midway left old and new files mixed, and the
    old files the new ones had replaced were gone for good. On S3 each copy is server-side
    (CopyObject): the backup costs one request per replaced file, no transfer."""
    new = {target + p[len(root):]: p for p in (i.path for i in _files_under(fs, root))}
    old = _old_objects(fs, target) if existing is not None else []
    parent, base = _split(target)
    backup = f"{parent}/.{base}.pqe-{uuid.uuid4().hex[:12]}.old"

    def saved(path: str) -> str:  # (the object at `target` itself, and those under it)
        return f"{backup}/f" if path == target else f"{backup}/d{path[len(target):]}"

    replaced = [p for p in old if p in new or p == target]
    kept: list[str] = []
    try:
        for p in replaced:
            fs.copy_file(p, saved(p))
            kept.append(p)
        if target in replaced:  # a file where the directory goes (a store with directories
            fs.delete_file(target)  # cannot put files under it)
    except BaseException:
        _delete_any_quietly(fs, backup)
        raise
    copied: list[str] = []
    try:
        for dest, src in new.items():
            fs.copy_file(src, dest)
            copied.append(dest)
    except BaseException as e:
        _restore(fs, target, copied, kept, saved, backup, e)
        raise
    for p in old:
        if p not in new and p != target:
            delete_quietly(fs, p)
    _delete_any_quietly(fs, backup)
    _delete_tree(fs, root)


def _restore(fs, target: str, copied: list[str], kept: list[str], saved, backup: str,
             error: BaseException) -> None:
    """Undo a failed copy commit: the new files that replaced nothing deleted, the replaced
    old ones copied back from the backup, then the backup deleted. When a copy back fails
    too, the backup stays (and the error says where)."""
    for dest in copied:
        if dest not in kept:
            delete_quietly(fs, dest)
    try:
        for p in kept:
            fs.copy_file(saved(p), p)
    except (OSError, pa.ArrowException) as again:
        first = (str(error).strip() or type(error).__name__).splitlines()[0]
        then = (str(again).strip() or type(again).__name__).splitlines()[0]
        raise ExecutionError(f"write to '{target}' failed ({first}) and putting its old files "
                             f"back failed too ({then}): they are kept under {backup}") from error
    _delete_any_quietly(fs, backup)


def _old_objects(fs, target: str) -> list[str]:
    """The objects an overwrite of `target` replaces: every file under `target/`, and an
    object stored at `target` itself. On S3 both can exist at once, and s3fs then calls
    `target` a file or a directory by what its cache holds: taken as a file, the files under
    it stayed and were read back with the new ones."""
    try:
        old = [i.path for i in _files_under(fs, target)]
    except (OSError, pa.ArrowException):
        if not _object_at(fs, target):
            raise
        return [target]  # (a file only: fsspec refuses to list it as a directory)
    if _object_at(fs, target):
        old.append(target)
    return old


def _object_at(fs, path: str) -> bool:
    """Whether an object is stored at `path` itself. An fsspec store's cached listing is
    dropped first: s3fs answers a path that is both an object and a prefix with what it
    last listed (a directory), and asks the store (HEAD) only when nothing is cached."""
    handler = getattr(fs, "handler", None)
    inner = getattr(handler, "fs", None)
    if inner is not None and hasattr(inner, "invalidate_cache"):
        inner.invalidate_cache(path)
    return fs.get_file_info(path).type == pafs.FileType.File


def _files_under(fs, directory: str) -> list:
    selector = pafs.FileSelector(directory, recursive=True, allow_not_found=True)
    return [i for i in fs.get_file_info(selector) if i.type == pafs.FileType.File]


def abort(fs, root: str, wait: float = 120.0) -> None:
    """The query failed: stop tasks from writing, wait for those writing now, delete
    everything written. Never raises."""
    try:
        delete_quietly(fs, f"{root}/{MARKER}")
        deadline = time.monotonic() + wait
        while _listing_of(fs, f"{root}/{INFLIGHT}") and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(50):
            if not exists(fs, root):
                return
            try:
                _delete_tree(fs, root)
            except (OSError, pa.ArrowException):
                time.sleep(0.05)  # a task that started before the marker went is finishing
    except Exception:  # noqa: BLE001 - the query's own error is the one to report
        pass


# ---- filesystem helpers --------------------------------------------------------------------------


def _split(path: str) -> tuple[str, str]:
    path = path.rstrip("/")
    if "/" not in path:
        return ".", path
    parent, base = path.rsplit("/", 1)
    return parent or "/", base


def _touch(fs, path: str) -> None:
    with fs.open_output_stream(path) as out:
        out.write(b"")


def exists(fs, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def delete_quietly(fs, path: str) -> None:
    try:
        fs.delete_file(path)
    except (OSError, pa.ArrowException):
        pass


def _listing_of(fs, directory: str) -> list:
    try:
        return [i for i in fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
                if i.type == pafs.FileType.File]
    except (OSError, pa.ArrowException):
        return []


def _delete_tree(fs, path: str) -> None:
    if exists(fs, path):
        fs.delete_dir(path)


def _delete_any_quietly(fs, path: str) -> None:
    try:
        _delete_any(fs, path)
    except (OSError, pa.ArrowException):
        pass


def _delete_any(fs, path: str) -> None:
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        fs.delete_dir(path)
    elif info.type != pafs.FileType.NotFound:
        fs.delete_file(path)


def local_parent_exists(target: str) -> bool:
    return os.path.isdir(os.path.dirname(target.rstrip("/")) or ".")


__all__ = ["write_partition", "write_file", "hive_value", "temporary_root", "prepare", "commit",
           "abort", "exists", "MARKER", "INFLIGHT"]
