"""Where table files live: local paths, fsspec URLs (s3://, memory://, file://, ...) or a
pyarrow filesystem, described by plain data that tasks carry.

A `FileSystemSpec` is what a scan task needs to open its files: None-like for local files, an
fsspec protocol and its storage options, or a pyarrow filesystem (which pickles as its options).
The filesystem object is built inside the process that reads (once per process, cached), never
in the one that schedules. Listing and file versions (size + mtime, or the object store's etag)
are read on the client when a query is planned, so changed files are noticed.
"""

from __future__ import annotations

import glob as globlib
import hashlib
import json
import os
import pickle
import re
import stat as statlib
import itertools
import threading
from dataclasses import dataclass
from typing import Any

from .errors import CatalogError

_GLOB_CHARS = "*?["
# pyarrow.dataset's discovery skips these (Spark's _SUCCESS, .crc files, _metadata, ...)
_IGNORE_PREFIXES = (".", "_")
_VERSION_KEYS = ("ETag", "etag", "md5Hash", "Content-MD5", "generation", "VersionId", "mtime",
                 "LastModified", "Last-Modified", "last_modified", "updated", "created")
# the keys that name the content (a hash, or a number every overwrite changes); without one
# a file's version is only its size and a time of one-second resolution (HTTP's Last-Modified,
# S3's LastModified through pyarrow), which a same-size rewrite within that second, or one
# with its time put back, keeps: its cached footer and statistics then pruned the new rows
_EXACT_KEYS = ("ETag", "etag", "md5Hash", "Content-MD5", "generation", "VersionId")
WEAK = "weak"  # marks a version that cannot tell a rewrite apart (see weak_version)
_weak_versions = itertools.count()


def weak_version(*parts) -> tuple:
    """A version for a file nothing identifies exactly: unique on every listing, so each
    query reads its footer and statistics again (as DuckDB does for every file); the scan
    keeps no footer of it between queries (catalog._version_token)."""
    return (*parts, WEAK, next(_weak_versions))


# Arrow's reader errors quote the data they choked on ("Expected 1 columns, got 4: <the row>",
# "invalid value '<the value>'"): a file's content must never reach an error message (SQL
# from someone else could read any file's first bad row back that way)
_CONTENT = [
    (re.compile(r"(Expected \d+ columns?, got \d+)\s*:.*"), r"\1"),
    (re.compile(r"(invalid value)\s*'.*?'(?=\s|$|,|\))"), r"\1"),
    (re.compile(r"(CSV conversion error to [\w\[\], ()]+?)\s*:\s*invalid value.*"),
     r"\1: invalid value"),
    # a decimal column's value: "The string '<value>' is not a valid decimal128 number",
    # "Error converting '<value>' to decimal128(3, 2)" (greedy to Arrow's own last words: a
    # value holding a quote is cut whole)
    (re.compile(r"The string '.*' (is not a valid [\w ]+)"), r"a value \1"),
    (re.compile(r"Error converting '.*' to (\w)"), r"Error converting a value to \1"),
    (re.compile(r"(straddling object straddles two block boundaries).*"), r"\1"),
    (re.compile(r"(JSON parse error:).*"), r"\1 invalid JSON"),
    # any other message about a CSV cell that still quotes something: cut at the quote
    (re.compile(r"(In CSV column #\d+:[^']*?)\s*'.*"), r"\1 (value not shown)"),
]


def _first_line(e: BaseException) -> str:
    """The first line of an error, with any quoted file content removed."""
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    for pattern, repl in _CONTENT:
        line = pattern.sub(repl, line)
    return line


def has_glob(text: str) -> bool:
    return any(ch in text for ch in _GLOB_CHARS)


class FileSystemSpec:
    """How to open a table's files: local (protocol None), an fsspec protocol with its storage
    options, or a pyarrow filesystem. Plain data: pickles small, opens nothing until asked."""

    __slots__ = ("arrow", "key", "options", "protocol")

    def __init__(self, protocol: str | None = None, options: dict | None = None,
                 arrow: Any = None) -> None:
        self.protocol = protocol
        self.options = dict(options or {})
        self.arrow = arrow
        if arrow is not None:
            self.key = "arrow:" + hashlib.sha1(pickle.dumps(arrow)).hexdigest()[:16]
        elif protocol is None:
            self.key = "local"
        else:
            opts = json.dumps(self.options, sort_keys=True, default=repr)
            self.key = f"{protocol}:" + hashlib.sha1(opts.encode()).hexdigest()[:16]

    @property
    def is_local(self) -> bool:
        return self.protocol is None and self.arrow is None

    def __getstate__(self):
        return (self.protocol, self.options, self.arrow, self.key)

    def __setstate__(self, state) -> None:
        self.protocol, self.options, self.arrow, self.key = state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileSystemSpec) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:  # never shows storage options (credentials)
        return f"FileSystemSpec({self.key})"

    # ---- opening (cached per process) -----------------------------------------------------

    def fsspec(self):
        """The fsspec filesystem (fsspec protocols only)."""
        return _cached(("fsspec", self.key), self._make_fsspec)

    def _make_fsspec(self):
        import fsspec

        try:
            return fsspec.filesystem(self.protocol, **self.options)
        except (ImportError, ValueError, TypeError) as e:
            raise CatalogError(f"cannot use the {self.protocol}:// filesystem: {_first_line(e)}") from e

    def arrow_fs(self):
        """The pyarrow filesystem that reads the files (fsspec ones wrapped)."""
        return _cached(("arrow", self.key), self._make_arrow)

    def _make_arrow(self):
        import pyarrow.fs as pafs

        if self.arrow is not None:
            return self.arrow
        if self.protocol is None:
            return pafs.LocalFileSystem()
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fsspec()))

    def fs_path(self, path: str) -> str:
        """A unit's path as the filesystem object sees it (fsspec paths lose the protocol)."""
        if self.protocol is None:
            return path
        return self.fsspec()._strip_protocol(path)

    def url(self, fs_path: str) -> str:
        """The display form of a filesystem path (what errors and EXPLAIN show)."""
        if self.protocol is None:
            return fs_path
        if fs_path.lower().startswith(f"{self.protocol.lower()}://"):
            return fs_path  # HTTP's filesystem path is the whole URL already
        if self.protocol == "memory" and fs_path.startswith("/"):
            return f"memory:/{fs_path}"  # memory://a/b: the memory filesystem's path is /a/b
        return f"{self.protocol}://{fs_path}"


LOCAL = FileSystemSpec()

_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def _cached(key, make):
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is None:
        hit = make()
        with _CACHE_LOCK:
            hit = _CACHE.setdefault(key, hit)
    return hit


def resolve(path: Any, storage_options: dict | None = None,
            filesystem: Any = None) -> tuple[FileSystemSpec, str]:
    """The filesystem spec and the filesystem path for a user's path or URL: local paths are
    made absolute (tasks may run in another directory or on another machine); `file://` URLs
    are local; other URLs go through fsspec with `storage_options`; `filesystem` (fsspec or
    pyarrow) overrides the URL's protocol."""
    text = os.fspath(path)
    if filesystem is not None:
        return _from_filesystem(filesystem, text, storage_options)
    if "://" not in text:
        if storage_options:
            raise CatalogError(f"storage_options given for a local path: {text!r}")
        return LOCAL, os.path.abspath(os.path.expanduser(text))
    protocol = text.split("://", 1)[0].lower()
    if protocol in ("file", "local"):
        return LOCAL, os.path.abspath(text.split("://", 1)[1])
    spec = FileSystemSpec(protocol, storage_options)
    fs = spec.fsspec()
    return spec, fs._strip_protocol(text)


def _from_filesystem(filesystem: Any, text: str, storage_options: dict | None):
    import pyarrow.fs as pafs

    if storage_options:
        raise CatalogError("pass either filesystem= or storage_options=, not both")
    if isinstance(filesystem, pafs.LocalFileSystem):
        return LOCAL, os.path.abspath(text.split("://", 1)[-1])
    if isinstance(filesystem, pafs.FileSystem):
        if isinstance(filesystem, pafs.PyFileSystem):
            handler = filesystem.handler
            if isinstance(handler, pafs.FSSpecHandler):
                return _from_filesystem(handler.fs, text, None)
        return FileSystemSpec(arrow=filesystem), text.split("://", 1)[-1]
    protocol = getattr(filesystem, "protocol", None)
    if protocol is None:
        raise CatalogError(f"filesystem must be an fsspec or pyarrow filesystem, "
                           f"got {type(filesystem).__name__}")
    protocol = protocol if isinstance(protocol, str) else protocol[0]
    if protocol in ("file", "local"):
        return LOCAL, os.path.abspath(filesystem._strip_protocol(text))
    spec = FileSystemSpec(protocol, getattr(filesystem, "storage_options", None))
    return spec, filesystem._strip_protocol(text)


# ---- listing and file versions ---------------------------------------------------------------


@dataclass(frozen=True)
class FileInfo:
    """One data file as listed: its filesystem path, size, and version (what changes when the
    file is rewritten: size + mtime + inode locally, etag / mtime on object stores)."""

    path: str
    size: int
    version: tuple


# pqe's own unfinished writes and the old copies an overwrite moves aside
# (kernels.write.temporary_root, _commit): `.{name}.pqe-<12 hex>.tmp` / `.old`
_PQE_TEMP = re.compile(r"\.pqe-[0-9a-f]{12}\.(tmp|old)$")


def _hidden(name: str, directory: bool) -> bool:
    """Whether a directory listing skips an entry: names starting with '.' or '_' (as
    pyarrow.dataset's discovery: Spark's _SUCCESS, _temporary, .crc files), except a hive
    directory `key=value` whose column starts so (`_k=1/`, which pqe itself writes for a
    column `_k`: its own output read back as "no Parquet files found"). pqe's temporary
    directories stay hidden, `=` in their name or not."""
    if not name.startswith(_IGNORE_PREFIXES):
        return False
    return not (directory and "=" in name[1:] and not _PQE_TEMP.search(name))


def _ignored(rel: str) -> bool:
    parts = [p for p in rel.replace("\\", "/").split("/") if p]
    return any(_hidden(p, i < len(parts) - 1) for i, p in enumerate(parts))


def _hidden_in_glob(pattern: str, path: str) -> bool:
    """Whether a path a glob matched passes through a hidden name the pattern did not ask
    for: as in a local glob (Python's and a shell's), a wildcard does not match a name
    starting with '.' unless its pattern segment starts with '.' too. s3fs's glob matches
    them, so `s3://b/*/*.parquet` read pqe's own unfinished writes (`.x.pqe-<id>.tmp/`)."""
    depth = len([p for p in glob_base(pattern).split("/") if p])
    wanted = [p for p in pattern.split("/") if p][depth:]
    wanted = [p for p in wanted if p.startswith(".")]
    parts = [p for p in path.split("/") if p][depth:]
    import fnmatch

    return any(p.startswith(".") and not any(fnmatch.fnmatchcase(p, w) for w in wanted)
               for p in parts)


def _local_info(path: str, st: os.stat_result | None = None) -> FileInfo:
    st = st if st is not None else os.stat(path)
    # the change time too: a file rewritten in place with its size and mtime put back (cp -p,
    # rsync -t, os.utime) kept its cached footer and statistics, and filters pruned its new
    # rows; no call can set ctime back
    return FileInfo(path, st.st_size, (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns))


def _remote_info(info: dict) -> FileInfo:
    size = int(info.get("size") or info.get("Size") or 0)
    version = (size,) + tuple(str(info[k]) for k in _VERSION_KEYS if info.get(k) is not None)
    if not any(info.get(k) for k in _EXACT_KEYS):
        version = weak_version(*version)
    return FileInfo(info["name"], size, version)


def list_files(spec: FileSystemSpec, path: str, kind: str) -> list[FileInfo]:
    """The files of one source now, sorted: kind is "file", "dir" (recursive, skipping names
    starting with '.' or '_') or "glob". Raises CatalogError when a file source is gone."""
    try:
        if spec.is_local:
            return _list_local(path, kind)
        if spec.arrow is not None:
            return _list_arrow(spec.arrow_fs(), path, kind)
        return _list_fsspec(spec.fsspec(), path, kind)
    except FileNotFoundError as e:
        raise CatalogError(f"no such file or directory: {spec.url(path)!r}") from e
    except _NotRegularFile as e:
        raise CatalogError(f"{spec.url(path)!r} is not a regular file (a pipe, device or "
                           f"socket); pqe reads regular files only") from e
    except OSError as e:
        raise CatalogError(f"cannot list {spec.url(path)}: {_first_line(e)}") from e


class _NotRegularFile(OSError):
    pass


def _list_local(path: str, kind: str) -> list[FileInfo]:
    if kind == "file":
        st = os.stat(path)
        if not statlib.S_ISREG(st.st_mode):
            # a FIFO, a device (/dev/zero, /dev/stdin) or a socket: reading one blocks or
            # never ends, past any timeout (the read happens while the statement is bound,
            # and a write would hold the write lock); globs and directories list regular
            # files only, and so does a path named alone
            raise _NotRegularFile(path)
        return [_local_info(path, st)]
    if kind == "glob":
        out = []
        seen: set[tuple[str, str]] = set()
        for p in _glob_local(path):
            # a file is listed once per real directory and name (two names of one file stay
            # two files): `a/*/x` and `a/*/../*/x`-like patterns reach one file twice
            where = (os.path.realpath(os.path.dirname(p)), os.path.basename(p))
            if where in seen:
                continue
            seen.add(where)
            try:
                st = os.stat(p)
            except FileNotFoundError:
                continue  # deleted between the listing and the stat
            if statlib.S_ISREG(st.st_mode):
                out.append(_local_info(p, st))
        return out
    return _walk_local(path)[0]


def local_directories(path: str) -> list[str]:
    """The real paths of the directories a local directory source's listing walks: itself
    and its subdirectories, symlinked ones included, empty ones too (a write must not add a
    file where the next listing would read it: COPY into an empty symlinked subdirectory
    was let through, and the table read the new file)."""
    return _walk_local(path)[1]


def _walk_local(path: str) -> tuple[list[FileInfo], list[str]]:
    """(the files, the real paths of the directories walked) of a local directory source."""
    out = []
    top = os.path.realpath(path)
    walked: set[str] = {top}
    dirs = [top]

    def walk(d: str, real_d: str) -> None:
        with os.scandir(d) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            try:
                is_dir = e.is_dir()
                if _hidden(e.name, is_dir):
                    continue
                if is_dir:
                    real = os.path.join(real_d, e.name)
                    if e.is_symlink():
                        # a symlinked subdirectory is read (a directory of links to data
                        # elsewhere), once, and never one back to the directory walked or
                        # above it: `d/up -> ..` walked `d/up/d/up/...` 40 levels deep, then
                        # failed (ELOOP), reading the sibling directories of `d` on the way
                        real = os.path.realpath(e.path)
                        if real in walked or any(
                                r == real or r.startswith(real.rstrip(os.sep) + os.sep)
                                for r in (top, real_d)):
                            continue
                        walked.add(real)
                    dirs.append(real)
                    walk(e.path, real)
                elif e.is_file():
                    out.append(_local_info(e.path, e.stat()))
            except FileNotFoundError:
                continue
    walk(path, top)
    return out, dirs


def local_glob_directories(pattern: str) -> list[str]:
    """For a local glob, the same glob rooted at the real path of each directory its
    directory part matches now (`l*/*.parquet` with `lnk -> real`: `real/*.parquet`), so a
    write through another name of such a directory is seen to add to the glob's files."""
    head, tail = os.path.split(pattern)
    if not tail or not has_glob(head):
        return []
    return [os.path.join(os.path.realpath(d), tail) for d in _glob_local(head)
            if os.path.isdir(d)]


def _glob_local(pattern: str) -> list[str]:
    """The paths a local glob matches, sorted, as Python's glob matches them (`*`, `?`, `[..]`
    within a name, never a name starting with '.' unless the pattern's does), except that
    `**` does not descend into symlinked directories, as DuckDB's recursive globs do not:
    Python's follows them, and a link back to an ancestor (`d/up -> ..`) made
    `d/**/*.parquet` read the sibling directories of `d` and walk 40 levels of
    `d/up/d/up/...` (with two such links the paths double at every level). A pattern
    without `**` is globbed as before (its depth is the pattern's)."""
    if "**" not in pattern:
        return sorted(globlib.glob(pattern))
    import fnmatch

    base = glob_base(pattern)
    segments = [p for p in pattern[len(base):].split("/") if p]
    found: set[str] = set()
    done: set[tuple[str, int]] = set()

    def names(d: str) -> list[os.DirEntry]:
        try:
            with os.scandir(d) as it:
                return list(it)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []

    def expand(d: str, i: int) -> None:
        if (d, i) in done:
            return
        done.add((d, i))
        if i == len(segments):
            found.add(d)
            return
        seg = segments[i]
        if seg == "**":
            expand(d, i + 1)  # no directory at all
            for e in names(d):
                if e.name.startswith("."):
                    continue
                if e.is_dir(follow_symlinks=False):
                    expand(e.path, i)
                elif i + 1 == len(segments):  # a trailing `**` matches files too
                    found.add(e.path)
            return
        if not has_glob(seg):
            p = os.path.join(d, seg)
            if os.path.lexists(p):
                expand(p, i + 1)
            return
        for e in names(d):
            if (e.name.startswith(".") and not seg.startswith(".")) or \
                    not fnmatch.fnmatchcase(e.name, seg):
                continue
            if i + 1 == len(segments) or e.is_dir():
                expand(e.path, i + 1)

    expand(base, 0)
    return sorted(found)


def _list_fsspec(fs, path: str, kind: str) -> list[FileInfo]:
    if kind == "file":
        fs.invalidate_cache(path)
        return [_remote_info(fs.info(path))]
    if kind == "glob":
        fs.invalidate_cache(glob_base(path))
        found = fs.glob(path, detail=True)
        infos = found.values() if isinstance(found, dict) else [fs.info(p) for p in found]
        return sorted((_remote_info(i) for i in infos if _listed_object(i)
                       and not _hidden_in_glob(path, i["name"])), key=lambda f: f.path)
    fs.invalidate_cache(path)
    found = fs.find(path, detail=True, withdirs=False)
    base = path.rstrip("/")
    out = []
    for name, info in found.items():
        rel = name.removeprefix(base)
        if _listed_object(info) and not _ignored(rel):
            out.append(_remote_info(info))
    return sorted(out, key=lambda f: f.path)


def _listed_object(info: dict) -> bool:
    """A data file of a listing: not a directory, nor a "folder marker" (an empty object
    whose key ends in '/', which S3 consoles and tools create for a folder; s3fs lists it
    as a file, and its footer could not be read: "cannot read the Parquet footer of
    s3://b/dir/")."""
    return info.get("type", "file") == "file" and not info["name"].endswith("/")


def _list_arrow(fs, path: str, kind: str) -> list[FileInfo]:
    import pyarrow.fs as pafs

    def info(i) -> FileInfo:
        # (Arrow's file info has no etag or inode: size and mtime only, see weak_version)
        mtime = i.mtime_ns if i.mtime_ns is not None else None
        return FileInfo(i.path, i.size or 0, weak_version(i.size, mtime))

    if kind == "file":
        i = fs.get_file_info(path)
        if i.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        return [info(i)]
    if kind == "glob":
        import fnmatch

        base = glob_base(path)
        sel = pafs.FileSelector(base, recursive=True)
        return sorted((info(i) for i in fs.get_file_info(sel)
                       if i.type == pafs.FileType.File and not i.path.endswith("/")
                       and fnmatch.fnmatch(i.path, path) and not _hidden_in_glob(path, i.path)),
                      key=lambda f: f.path)
    sel = pafs.FileSelector(path, recursive=True)
    base = path.rstrip("/")
    return sorted((info(i) for i in fs.get_file_info(sel)
                   if i.type == pafs.FileType.File and not i.path.endswith("/")
                   and not _ignored(i.path[len(base):])),
                  key=lambda f: f.path)


def glob_base(path: str) -> str:
    """The directory part of a glob before its first wildcard."""
    parts = path.split("/")
    keep = []
    for p in parts:
        if has_glob(p):
            break
        keep.append(p)
    return "/".join(keep) or "/"


def source_kind(spec: FileSystemSpec, path: str) -> str:
    """"glob", "dir" or "file" for a source at registration (CatalogError when missing)."""
    if has_glob(path):
        return "glob"
    try:
        if spec.is_local:
            if os.path.isdir(path):
                return "dir"
            if os.path.exists(path):
                return "file"
            raise FileNotFoundError(path)
        if spec.arrow is not None:
            import pyarrow.fs as pafs

            t = spec.arrow_fs().get_file_info(path).type
            if t == pafs.FileType.NotFound:
                raise FileNotFoundError(path)
            return "dir" if t == pafs.FileType.Directory else "file"
        fs = spec.fsspec()
        fs.invalidate_cache(path)
        info = fs.info(path)
        return "dir" if info.get("type") == "directory" else "file"
    except FileNotFoundError as e:
        raise CatalogError(f"no such file or directory: {spec.url(path)!r}") from e
    except OSError as e:
        raise CatalogError(f"cannot open {spec.url(path)}: {_first_line(e)}") from e
