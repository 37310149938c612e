"""What SQL text may reach: files, URLs, and whether it may change anything.

An application gives pqe SQL written by someone else. What that SQL can reach is decided by
the application, once, in Python (`pqe.Context(external_access=..., allowed_paths=...,
read_only=...)`); nothing in SQL changes it. Tables the application registers from Python are
its own choice and are never checked; what is checked is every file or URL that SQL text
names: `read_parquet('...')`, `read_csv('...')`, `FROM 'file.parquet'` and `COPY ... TO '...'`.

- `external_access=False`: SQL reaches only registered tables (no file or URL at all).
- `allowed_paths=[...]`: SQL reaches files only under these directories (after resolving `..`
  and symlinks, for the path given and for every file a glob or directory expands to) and URLs
  only under these URL prefixes (`s3://bucket/prefix/`): the scheme and the bucket are the
  application's choice. Without `allowed_paths`, SQL may read and write local files (the
  embedded default, as DuckDB's) but no URL: an endpoint is never taken from SQL text.
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

from .errors import ProgrammingError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class AccessError(ProgrammingError):
    """SQL asked for a file, URL or change its session does not allow."""


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
            if _SCHEME.match(text) and not text.lower().startswith("file://"):
                urls.append(text if text.endswith("/") else text + "/")
            else:
                if text.lower().startswith("file://"):
                    text = text[7:]
                dirs.append(os.path.realpath(os.path.abspath(os.path.expanduser(text))))
        object.__setattr__(self, "allowed_paths", tuple(os.fspath(p) for p in self.allowed_paths))
        object.__setattr__(self, "_dirs", tuple(dirs))
        object.__setattr__(self, "_urls", tuple(urls))

    @property
    def unrestricted(self) -> bool:
        return self.external_access and self.allowed_paths is None and not self.read_only

    # ---- checks ------------------------------------------------------------------------------

    def check_source(self, path: str, what: str) -> None:
        """A path or URL SQL text named (before anything is opened or listed)."""
        text = os.fspath(path)
        if not self.external_access:
            raise AccessError(f"{what} is not allowed: this session's SQL can read only the "
                              f"tables the application registered")
        m = _SCHEME.match(text)
        if m and m.group(1).lower() != "file":
            if "?" in text or "#" in text:
                raise AccessError(f"{what}: URL parameters are not allowed in SQL; the "
                                  f"application configures storage")
            if not any(text.startswith(prefix) for prefix in self._urls):
                raise AccessError(f"{what}: the URL '{_shown(text)}' is not allowed (the "
                                  f"application allows URLs by prefix in allowed_paths)")
            return
        if m:
            text = text[7:]
        if self.allowed_paths is not None:
            self.check_local(text, what)

    def check_local(self, path: str, what: str) -> None:
        """A local file or directory (symlinks and `..` resolved) must be under an allowed
        directory; the message is the same whether or not it exists."""
        if self.allowed_paths is None:
            return
        real = os.path.realpath(os.path.abspath(os.path.expanduser(_glob_base(path))))
        if not any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in self._dirs):
            raise AccessError(f"{what}: access to '{_shown(path)}' is not allowed")

    def check_listed(self, path: str, url: str, what: str) -> None:
        """A file a directory or glob expanded to (local paths only: URLs were checked by
        prefix and cannot escape it)."""
        if self.allowed_paths is None or _SCHEME.match(url):
            return
        self.check_local(path, what)

    def check_write(self, path: str, what: str) -> None:
        if self.read_only:
            raise AccessError(f"{what} is not allowed: the session is read-only")
        self.check_source(path, what)

    def check_change(self, what: str) -> None:
        if self.read_only:
            raise AccessError(f"{what} is not allowed: the session is read-only")


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


__all__ = ["AccessPolicy", "AccessError", "current", "enforcing", "policy_from", "UNRESTRICTED"]
