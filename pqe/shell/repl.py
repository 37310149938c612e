"""The interactive prompt (prompt_toolkit): multi-line input, history, completion, colours.

Enter runs the buffer only when it is complete (see statements.is_complete), otherwise it
starts a continuation line; Esc Enter runs it as it is. Ctrl-C at the prompt clears the input
and Ctrl-C during a query cancels it; either way the session goes on. Ctrl-D exits.
"""

from __future__ import annotations

import os
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
    """`~/.pqe_history`, or the file `PQE_HISTORY` names (empty: keep no history)."""
    path = os.environ.get("PQE_HISTORY")
    if path is None:
        path = str(Path.home() / ".pqe_history")
    if not path:
        return InMemoryHistory()
    try:
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        return FileHistory(str(Path(path).expanduser()))
    except OSError:
        return InMemoryHistory()


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
