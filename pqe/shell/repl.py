"""The interactive prompt (prompt_toolkit): multi-line input, history, completion, colours.

Enter runs the buffer only when it is complete (see statements.is_complete), otherwise it
starts a continuation line; Esc Enter runs it as it is. Ctrl-C at the prompt clears the input
and Ctrl-C during a query cancels it; either way the session goes on. Ctrl-D exits.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.styles import Style

from .commands import Quit
from .complete import SQLCompleter, sql_lexer
from .statements import is_complete, split_lines

if TYPE_CHECKING:  # pragma: no cover
    from .app import Shell

PROMPT = "pqe> "
CONTINUATION = "...> "
STYLE = Style.from_dict({"prompt": "ansigreen bold", "continuation": "ansigreen"})


def history() -> History:
    """`~/.pqe_history`, or the file `PQE_HISTORY` names (empty: keep no history). A file
    that cannot be read or written keeps the history in memory (`_FileOrMemoryHistory`);
    a missing directory is made only for a `PQE_HISTORY` whose parent exists (HOME, missing,
    was made as a whole tree)."""
    path = os.environ.get("PQE_HISTORY")
    named = path is not None
    if path is None:
        path = str(Path.home() / ".pqe_history")
    if not path:
        return InMemoryHistory()
    file = Path(path).expanduser()
    try:
        if named:
            file.parent.mkdir(exist_ok=True)
    except OSError:
        pass
    return _FileOrMemoryHistory(str(file))


class _FileOrMemoryHistory(FileHistory):
    """A history file that cannot be read or written (a read-only HOME or file, a path that
    is a directory) warns once on stderr and the session's history is kept in memory:
    prompt_toolkit's own FileHistory raised inside its event loop after every statement (a
    traceback, and 'Press ENTER to continue' swallowing the next line)."""

    def __init__(self, filename: str) -> None:
        super().__init__(filename)
        self.failed = False

    def load_history_strings(self):
        try:
            return list(super().load_history_strings())
        except OSError as e:
            self._failure(e)
            return []

    def store_string(self, string: str) -> None:
        if self.failed:
            return
        try:
            super().store_string(string)
        except OSError as e:
            self._failure(e)

    def _failure(self, e: OSError) -> None:
        if not self.failed:
            self.failed = True
            try:
                sys.stderr.write(f"Warning: history file {self.filename} cannot be used "
                                 f"({e.strerror or e}); history is kept for this session only\n")
            except (AttributeError, OSError, ValueError):  # no stderr to warn on
                pass


def key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("enter")
    def _(event: KeyPressEvent) -> None:
        buf = event.current_buffer
        if is_complete(buf.text):
            buf.validate_and_handle()
        else:
            buf.insert_text("\n")

    @kb.add("escape", "enter")
    def _(event: KeyPressEvent) -> None:
        event.current_buffer.validate_and_handle()

    return kb


def banner(shell: Shell) -> str:
    import pqe

    names = shell.ctx.tables()
    listed = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
    tables = f"{len(names)} table{'s' if len(names) != 1 else ''}"
    if names:
        tables += f": {listed}"
    return (f"pqe {pqe.__version__} — {tables}\n"
            "End statements with ';'. Enter .help for help, Ctrl-D to exit.")


def run_interactive(shell: Shell) -> int:
    """Read-eval-print until Ctrl-D or .quit; returns the exit status (0)."""
    session: PromptSession[str] = PromptSession(
        multiline=True,
        key_bindings=key_bindings(),
        history=history(),
        lexer=sql_lexer(),
        completer=SQLCompleter(shell.ctx),
        complete_while_typing=False,
        style=STYLE,
        prompt_continuation=lambda width, line, wrap: [("class:continuation",
                                                        CONTINUATION.rjust(width))],
    )
    shell.renderer.message(banner(shell), style="dim")
    while True:
        try:
            text = session.prompt([("class:prompt", PROMPT)])
        except KeyboardInterrupt:
            continue  # like psql: Ctrl-C drops what was typed
        except EOFError:
            break
        try:
            shell.run_script(split_lines(text))  # (not splitlines: see split_lines)
        except Quit:
            break
        except KeyboardInterrupt:
            shell.cancelled()
    return 0
