"""Dot commands (`.tables`, `.schema`, ...): the shell's own verbs, in the style of sqlite3.

A dot command is one line starting with `.`, given where a statement could start. Any
unambiguous prefix works (`.tab` is `.tables`); an ambiguous one is answered with the
candidates rather than a guess, since `.t` could mean `.tables` or `.timer`.

Commands that print a result (`output=True`: .tables, .schema, .last, .help) write it where
results go (`.output`/`.once`); settings are reported on the screen.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..sql.text import tokenize
from .render import MODES
from .statements import split_lines

if TYPE_CHECKING:  # pragma: no cover
    from .app import Shell


class ShellError(Exception):
    """A mistake in using the shell itself (bad dot command, unreadable file): one line."""


class ScriptFailed(ShellError):
    """A `.read` script stopped at an error that was already reported."""


class Quit(Exception):
    """`.quit`/`.exit`: unwinds out of any `.read` nesting to end the session."""


@dataclass(frozen=True)
class DotCommand:
    name: str
    usage: str
    help: str
    run: Callable[[Shell, str], None]
    output: bool = False  # prints a result: goes where `.output`/`.once` send results


def _sql_type(t: pa.DataType) -> str:
    try:
        from ..types import type_name

        return type_name(t)
    except Exception:  # pragma: no cover - engine helper moved
        return str(t).upper()


def _quote(name: str) -> str:
    """`name` as SQL: bare only when it is a plain lower-case name that is no keyword (the
    tokenizer reads it as a name), so `.schema` output runs again as it is."""
    if re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        tokens = tokenize(name)
        if tokens and len(tokens) == 1 and tokens[0].token_type.name == "VAR":
            return name
    return '"' + name.replace('"', '""') + '"'


def create_table_text(name: str, schema: pa.Schema, entry: object = None) -> str:
    """The CREATE text of a table (with its PRIMARY KEY and UNIQUE constraints) or a view
    (its query, as written)."""
    view_sql = getattr(entry, "sql", None)
    if isinstance(view_sql, str):  # a view
        names = getattr(entry, "column_names", None)
        cols = f" ({', '.join(_quote(n) for n in names)})" if names else ""
        return f"CREATE VIEW {_quote(name)}{cols} AS {view_sql.strip().rstrip(';')};"
    cols = [f"  {_quote(f.name)} {_sql_type(f.type)}{'' if f.nullable else ' NOT NULL'}"
            for f in schema]
    key = getattr(entry, "primary_key", ())
    if key:
        cols.append(f"  PRIMARY KEY ({', '.join(map(_quote, key))})")
    cols += [f"  UNIQUE ({', '.join(map(_quote, u))})" for u in getattr(entry, "unique", ())]
    return f"CREATE TABLE {_quote(name)} (\n" + ",\n".join(cols) + "\n);"


def describe_table(schema: pa.Schema) -> pa.Table:
    """DESCRIBE's result: one row per column."""
    return pa.table({
        "column_name": [f.name for f in schema],
        "column_type": [_sql_type(f.type) for f in schema],
        "null": ["YES" if f.nullable else "NO" for f in schema],
    })


def tables_table(names: list[str]) -> pa.Table:
    return pa.table({"name": pa.array(names, pa.string())})


# ---- the commands ----------------------------------------------------------------------------


def _tables(shell: Shell, arg: str) -> None:
    names = shell.ctx.tables()
    if arg:
        names = [n for n in names if arg.lower() in n.lower()]
    shell.renderer.result(tables_table(names), types=False)


def _schema(shell: Shell, arg: str) -> None:
    exact = None
    if len(arg) >= 2 and arg[0] == arg[-1] == '"':  # .schema "odd name": the name as quoted
        arg, exact = arg[1:-1].replace('""', '"'), True
    names = [arg] if arg else shell.ctx.tables()
    if not names:
        shell.renderer.status("no tables (give Parquet files or directories on the command "
                              "line)")
    texts = []
    for n in names:
        real, entry = shell.ctx.catalog.lookup(n, exact=exact if arg else True)
        texts.append(create_table_text(real, shell.ctx.table(real).schema, entry))
    if texts:  # DDL text in every mode, as sqlite3 does: it is for reading, not parsing
        shell.renderer.out.write("\n".join(texts) + "\n")
        shell.renderer.out.flush()



def mode_named(arg: str) -> str:
    """The mode a (possibly abbreviated) name means: `.mode t` is ambiguous (table, tabs)."""
    value = arg.lower()
    if value in MODES:
        return value
    hits = [m for m in MODES if m.startswith(value)] if value else []
    if len(hits) > 1:
        raise ShellError(f"ambiguous mode {arg!r}: could be {', '.join(hits)}")
    if not hits:
        raise ShellError(f"unknown mode {arg!r}: use one of {', '.join(MODES)}")
    return hits[0]


def _mode(shell: Shell, arg: str) -> None:
    if not arg:
        shell.renderer.status(f"mode: {shell.renderer.mode} (one of {', '.join(MODES)})")
        return
    shell.renderer.mode = mode_named(arg)


def _on_off(arg: str, what: str) -> bool:
    value = arg.lower()
    if value in ("on", "1", "yes", "true"):
        return True
    if value in ("off", "0", "no", "false"):
        return False
    raise ShellError(f"usage: .{what} on|off")


def _timer(shell: Shell, arg: str) -> None:
    if not arg:
        shell.renderer.status(f"timer: {'on' if shell.timer else 'off'}")
        return
    shell.timer = _on_off(arg, "timer")


def _maxrows(shell: Shell, arg: str) -> None:
    if not arg:
        shell.renderer.status(f"maxrows: {shell.renderer.max_rows} (0: no limit)")
        return
    try:
        value = int(arg)
    except ValueError:
        raise ShellError("usage: .maxrows N (0 shows every row)") from None
    if value < 0:
        raise ShellError("usage: .maxrows N (0 shows every row)")
    shell.renderer.max_rows = value


# `.read` inside `.read`: deeper than this is a file that reads itself (or a cycle)
MAX_READ_DEPTH = 32


def _read(shell: Shell, arg: str) -> None:
    """`.read FILE`: the file is checked like a file SQL names (--no-external-access,
    --allowed-path) before it is opened, and errors in it do not echo its text."""
    if not arg:
        raise ShellError("usage: .read FILE")
    path = shell.readable(_file_argument(arg, ".read FILE"), ".read")
    if shell.reading >= MAX_READ_DEPTH:
        raise ShellError(f".read: scripts nested more than {MAX_READ_DEPTH} deep (does "
                         f"{path} read itself?)")
    try:
        # newline='' and split_lines: a '\r' or U+2028 in a string literal stays in it
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except UnicodeDecodeError:  # (Python's message quotes the bytes it met)
        raise ShellError(f"cannot read {path}: it is not UTF-8 text") from None
    except OSError as e:
        raise ShellError(f"cannot read {path}: {e.strerror or e}") from None
    shell.reading += 1
    try:
        ok = shell.run_script(split_lines(text), source=str(path))
    finally:
        shell.reading -= 1
    if not ok:
        raise ScriptFailed(str(path))


def _explain(shell: Shell, arg: str) -> None:
    query = arg.strip().rstrip(";").strip()
    if not query:
        raise ShellError("usage: .explain [ANALYZE] QUERY")
    shell.explain(query)


def _file_argument(arg: str, usage: str) -> str:
    try:
        words = shlex.split(arg)
    except ValueError:
        raise ShellError(f"usage: {usage}") from None
    if len(words) != 1:
        raise ShellError(f"usage: {usage}")
    return words[0]


def _output(shell: Shell, arg: str) -> None:
    """`.output FILE`: every following result goes to FILE (created or truncated now) until
    `.output` with no argument (or `.output stdout`) sends results back to the screen."""
    if not arg or arg == "stdout":
        shell.output_to(None)
        return
    shell.output_to(_file_argument(arg, ".output [FILE]"))


def _once(shell: Shell, arg: str) -> None:
    """`.once FILE`: only the next result goes to FILE, which appears when that result is
    complete (a failed statement leaves FILE as it was)."""
    if not arg:
        raise ShellError("usage: .once FILE")
    shell.once_to(_file_argument(arg, ".once FILE"))


def _last(shell: Shell, arg: str) -> None:
    """`.last [MODE]`: the previous statement's result again, in the current mode or MODE."""
    shell.print_last(mode_named(arg) if arg else None)


def _help(shell: Shell, arg: str) -> None:
    width = max(len(c.usage) for c in COMMANDS.values())
    lines = [f"{c.usage.ljust(width)}  {c.help}" for c in COMMANDS.values()]
    lines += ["", "Dot commands may be abbreviated (.tab is .tables).",
              "Table and box modes show each column's type under its name.",
              "End SQL statements with ';' (Esc Enter runs the input as it is). Tab completes;",
              "Ctrl-C cancels a running query or clears the input; Ctrl-D exits.",
              "SQL: SELECT ..., EXPLAIN [ANALYZE] ..., SHOW TABLES, DESCRIBE table."]
    shell.renderer.out.write("\n".join(lines) + "\n")


def _quit(shell: Shell, arg: str) -> None:
    raise Quit()


COMMANDS: dict[str, DotCommand] = {c.name: c for c in [
    DotCommand("tables", ".tables [TEXT]", "list tables (whose names contain TEXT)", _tables,
               output=True),
    DotCommand("schema", ".schema [TABLE]", "show CREATE TABLE for one table or all", _schema,
               output=True),
    DotCommand("mode", ".mode [MODE]", f"output mode: {'|'.join(MODES)}", _mode),
    DotCommand("timer", ".timer on|off", "print the run time of each statement", _timer),
    DotCommand("maxrows", ".maxrows N", "rows shown in table mode (0: all)", _maxrows),
    DotCommand("output", ".output [FILE]",
               "send results to FILE until .output with no FILE", _output),
    DotCommand("once", ".once FILE", "send the next result to FILE", _once),
    DotCommand("last", ".last [MODE]", "print the previous result again (in MODE)", _last,
               output=True),
    DotCommand("read", ".read FILE", "run the statements and dot commands in FILE", _read),
    DotCommand("explain", ".explain [ANALYZE] QUERY",
               "show the plan of each statement (ANALYZE also runs queries)", _explain),
    DotCommand("help", ".help", "show this help", _help, output=True),
    DotCommand("quit", ".quit", "exit (also .exit, Ctrl-D)", _quit),
    DotCommand("exit", ".exit", "exit", _quit),
]}


def resolve(word: str) -> DotCommand:
    """The command a (possibly abbreviated) name means; ShellError if none or several."""
    name = word.lstrip(".").lower()
    if name in COMMANDS:
        return COMMANDS[name]
    hits = [c for c in COMMANDS.values() if c.name.startswith(name)] if name else []
    if len({c.run for c in hits}) == 1:  # .qu / .ex are fine: .quit and .exit are one command
        return hits[0]
    if hits:
        raise ShellError(f"ambiguous command .{name}: could be "
                         + ", ".join("." + c.name for c in hits))
    raise ShellError(f"unknown command .{name}: enter .help for the list")


def run_dot(shell: Shell, line: str) -> None:
    word, _, arg = line.strip().partition(" ")
    command = resolve(word)
    if command.output:
        with shell.result_output():
            command.run(shell, arg.strip())
    else:
        command.run(shell, arg.strip())
