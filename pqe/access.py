"""What SQL text may reach: files, URLs, and whether it may change anything.

An application gives pqe SQL written by someone else. What that SQL can reach is decided by
the application, once, in Python (`pqe.Context(external_access=..., allowed_paths=...,
read_only=...)`); nothing in SQL changes it. Tables the application registers from Python are
its own choice and are never checked; what is checked is every file or URL that SQL text
names: `read_parquet('...')`, `read_csv('...')`, `FROM 'file.parquet'` and `COPY ... TO '...'`.

- `external_access=False`: SQL reaches only registered tables (no file or URL at all).
- `allowed_paths=[...]`: SQL reaches files only under these directories (after resolving `..`
  and symlinks, for the path given and for every file a glob or directory expands to) and URLs
  only under these URL prefixes (`s3://bucket/prefix/`): an HTTP URL is compared once `..`,
  `.`, `//` and their percent-encoded forms are resolved, as an HTTP client resolves them; an
  object store's key is literal (`s3://b/secret/../ok/x` is the key `secret/../ok/x`), so a URL
  with a `.`, `..` or empty segment, raw or percent-encoded, is refused there. The scheme and
  the bucket are the application's choice. A `file://` URL is the local path it names.
  Without `allowed_paths`, SQL may read and write local files (the embedded default, as
  DuckDB's) but no URL: an endpoint is never taken from SQL text.
- `read_only=True`: every statement that would change the catalog or write a file is refused.

A refused path gets one message whether the file exists or not, and no error about a file
quotes its content.

The policy is in force while the session binds and runs a statement (a context variable), so
a table function or a quoted path in SQL is checked where its table is created, and the files
it expands to are checked again every time they are listed.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from .errors import ExecutionError, ProgrammingError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# schemes whose servers resolve a URL's path (dot segments, `//`, percent-encoding) before
# serving it; every other scheme names objects by literal keys (s3, gs, az, memory, ...)
_PATH_SCHEMES = ("http", "https")
# schemes that name local files (filesystems.resolve maps them to local paths): checked as
# local paths, never as URLs
LOCAL_SCHEMES = ("file", "local")


class AccessError(ProgrammingError):
    """SQL asked for a file, URL or change its session does not allow."""


class TableDataError(AccessError, ExecutionError):
    """A write refused because a registered table reads that file or directory (or would
    read a file written there). An AccessError like every refusal, and an ExecutionError as
    COPY reported it before."""


@dataclass(frozen=True)
class AccessPolicy:
    external_access: bool = True
    allowed_paths: tuple[str, ...] | None = None
    read_only: bool = False
    # resolved once: real directories, and URL prefixes
    _dirs: tuple[str, ...] = field(default=(), init=False, repr=False)
    _urls: tuple[str, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self):
        if self.allowed_paths is None:
            return
        if isinstance(self.allowed_paths, (str, os.PathLike)):
            raise ProgrammingError("allowed_paths must be a list of directories or URL prefixes")
        dirs, urls = [], []
        for p in self.allowed_paths:
            text = os.fspath(p)
            scheme = _scheme(text)
            if scheme is not None and scheme not in LOCAL_SCHEMES:
                prefix = normalize_url(text)
                if prefix is None:
                    raise ProgrammingError(f"allowed_paths: {text!r} is not a URL prefix "
                                           f"(a scheme, a host and a path without '..'; "
                                           f"an object store's without '.', '..' or '//')")
                urls.append(prefix if prefix.endswith("/") else prefix + "/")
            else:
                if scheme is not None:
                    text = local_part(text)
                dirs.append(os.path.realpath(os.path.abspath(os.path.expanduser(text))))
        object.__setattr__(self, "allowed_paths", tuple(os.fspath(p) for p in self.allowed_paths))
        object.__setattr__(self, "_dirs", tuple(dirs))
        object.__setattr__(self, "_urls", tuple(urls))

    @property
    def unrestricted(self) -> bool:
        return self.external_access and self.allowed_paths is None and not self.read_only

    # ---- checks ------------------------------------------------------------------------------

    def check_source(self, path: str, what: str, pattern: bool = True) -> None:
        """A path or URL SQL text named (before anything is opened or listed)."""
        text = os.fspath(path)
        if not self.external_access:
            raise AccessError(f"{what} is not allowed: this session's SQL can read only the "
                              f"tables the application registered")
        if "\x00" in text:  # no file has such a name (the OS refuses it with a ValueError)
            raise AccessError(f"{what}: a path cannot contain a NUL byte")
        scheme = _scheme(text)
        if scheme is not None and scheme not in LOCAL_SCHEMES:
            if "?" in text or "#" in text:
                raise AccessError(f"{what}: URL parameters are not allowed in SQL; the "
                                  f"application configures storage")
            self._check_url(text, what)
            return
        if scheme is not None:  # the path filesystems.resolve reads: no `~` expansion
            text = os.path.abspath(local_part(text))
        if self.allowed_paths is not None:
            self.check_local(text, what, pattern)

    def _check_url(self, text: str, what: str) -> None:
        """A URL must be under an allowed prefix once its path is normalized: HTTP clients
        resolve `..`, `.` and their percent-encoded forms before sending, so
        `http://h/data/../secret` asks for /secret; the raw text would pass `http://h/data/`.
        An object store resolves nothing: `s3://b/secret/../ok/x` is stored under `secret/`,
        and resolved it passed `s3://b/ok/` (normalize_url refuses such a URL)."""
        url = normalize_url(text)
        if url is None or not any(url.startswith(prefix) for prefix in self._urls):
            raise AccessError(f"{what}: the URL '{_shown(text)}' is not allowed (the "
                              f"application allows URLs by prefix in allowed_paths)")

    def check_local(self, path: str, what: str, pattern: bool = True) -> None:
        """A local file or directory (symlinks and `..` resolved) must be under an allowed
        directory; the message is the same whether or not it exists.

        The path is first normalized as the readers and writers take it (filesystems.resolve:
        `~` expanded, `..` removed from the text): `A/x*/../../outside` names `outside`, not
        a glob under A (cut at its wildcard before that, it passed the check as A and was
        then written to, or listed, outside). With `pattern`, its wildcards are a glob's, and
        the directory before the first one is checked (each file it expands to is checked
        again when listed); without, the path is one file or directory, checked whole (a
        COPY target, a file a listing found: `a[1].csv` is a name, and a symlink so named
        pointing outside was never resolved)."""
        if self.allowed_paths is None:
            return
        text = os.path.abspath(os.path.expanduser(path))
        real = os.path.realpath(_glob_base(text) if pattern else text)
        if not any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in self._dirs):
            raise AccessError(f"{what}: access to '{_shown(path)}' is not allowed")

    def check_listed(self, path: str, url: str, what: str) -> None:
        """A file a directory or glob expanded to. A URL is checked by prefix again: an HTTP
        "directory" is a page whose links may point anywhere on the server."""
        if self.allowed_paths is None:
            return
        if _scheme(url) is not None:
            self._check_url(url, what)
            return
        self.check_local(path, what, pattern=False)

    def check_write(self, path: str, what: str) -> None:
        """A path SQL writes to: no glob, one target, checked whole."""
        if self.read_only:
            raise AccessError(f"{what} is not allowed: the session is read-only")
        self.check_source(path, what, pattern=False)

    def check_replace(self, path: str, what: str) -> None:
        """A directory a write replaces as a whole (COPY with PARTITION_BY or
        PER_THREAD_OUTPUT): its temporary directory is made beside it and the old one moved
        aside and deleted, so its parent must be writable too, and it is never an allowed
        directory itself nor one holding an allowed directory. The parent is that of the path
        as resolved: cut from the text, `root/.`, `root/sub/..` (and `''` or `.` with the
        working directory in the root) had the root's own path as "parent", passed, and the
        write replaced the whole allowed root."""
        self.check_write(path, what)
        if self.allowed_paths is None:
            return
        text = os.fspath(path)
        scheme = _scheme(text)
        if scheme is not None and scheme not in LOCAL_SCHEMES:
            url = normalize_url(text)  # (not None: check_write took it)
            parent = url.rstrip("/").rsplit("/", 1)[0] if url is not None else text
            self._check_url(parent + "/", what)
            return
        local = os.path.abspath(local_part(text) if scheme is not None
                                else os.path.expanduser(text))
        real = os.path.realpath(local)
        if any(d == real or d.startswith(real.rstrip(os.sep) + os.sep) for d in self._dirs):
            raise AccessError(f"{what}: '{_shown(text)}' is an allowed directory (or holds "
                              f"one): replacing it is not allowed; write to a directory "
                              f"inside it")
        self.check_local(os.path.dirname(local), what, pattern=False)

    def check_change(self, what: str) -> None:
        if self.read_only:
            raise AccessError(f"{what} is not allowed: the session is read-only")


def _scheme(text: str) -> str | None:
    """The scheme of a URL, lower-cased; None for a local path. Anything holding `://` is a
    URL, as filesystems.resolve takes it (`simplecache::s3://...` too), even when the text
    before it is no valid scheme (it is then refused as a URL, never read as a path)."""
    return text.split("://", 1)[0].lower() if "://" in text else None


def local_part(text: str) -> str:
    """The local path a `file://` (or `local://`) URL names, as filesystems.resolve reads it."""
    return text.split("://", 1)[1]


def normalize_url(text: str) -> str | None:
    """`scheme://host/path` as its server reads it; None when no server could be asked for it
    safely. HTTP(S): the path percent-decoded with `//`, `.` and `..` resolved, as a server
    resolves it (`%2e%2e`, `%2f` and `\\` included); None when `..` climbs above the root.
    An object store's path is a literal key, returned as written; None when it holds a `.`,
    `..` or (before its end) empty segment, raw or in any percent-decoded form: resolved,
    `s3://b/secret/%2E%2E/ok/x` passed the prefix `s3://b/ok/` and was written under
    `secret/`. The scheme and host are kept as written (`S3://` is no scheme the readers
    know: lower-cased here it passed the check, then failed in the resolver)."""
    m = _SCHEME.match(text)
    if m is None or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in text):
        # whitespace and control characters: URL parsers strip tabs and newlines as browsers
        # do (`/data/.\t./secret` is fetched as /secret), so no such URL is allowed
        return None
    rest = text[m.end():]
    host, _, path = rest.partition("/")
    forms = [path]
    decoded = path
    for _ in range(4):  # `%252e`: a server that decodes twice would see `..` too
        decoded, before = unquote(decoded), decoded
        if decoded == before:
            break
        forms.append(decoded)
    decoded = decoded.replace("\\", "/")
    if m.group(1).lower() not in _PATH_SCHEMES:
        for form in forms + [f.replace("\\", "/") for f in forms]:
            segments = form.split("/")
            if any(seg in (".", "..") for seg in segments) or "" in segments[:-1]:
                return None
        return f"{m.group(1)}://{host}/{path}"
    parts: list[str] = []
    for seg in decoded.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(seg)
    tail = "/" if decoded.endswith("/") and parts else ""
    return f"{m.group(1)}://{host}/" + "/".join(parts) + tail


def _glob_base(path: str) -> str:
    """The directory part of a glob before its first wildcard (the path itself otherwise)."""
    for i, ch in enumerate(path):
        if ch in "*?[":
            return os.path.dirname(path[:i]) or "."
    return path


def _shown(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "..."


UNRESTRICTED = AccessPolicy()
_current: contextvars.ContextVar[AccessPolicy | None] = contextvars.ContextVar(
    "pqe_access_policy", default=None)


def current() -> AccessPolicy | None:
    """The policy of the statement being bound or run (None outside SQL: Python registration
    is the application's own and is not checked)."""
    return _current.get()


@contextlib.contextmanager
def enforcing(policy: AccessPolicy) -> Iterator[None]:
    token = _current.set(policy)
    try:
        yield
    finally:
        _current.reset(token)


def policy_from(external_access: bool = True, allowed_paths: Sequence[str] | None = None,
                read_only: bool = False) -> AccessPolicy:
    if not isinstance(external_access, bool) or not isinstance(read_only, bool):
        raise ProgrammingError("external_access and read_only must be True or False")
    return AccessPolicy(external_access, tuple(allowed_paths) if allowed_paths is not None
                        else None, read_only)


__all__ = ["AccessPolicy", "AccessError", "TableDataError", "current", "enforcing", "policy_from",
           "UNRESTRICTED"]
