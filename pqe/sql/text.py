"""Where SQL statements end: the front end's tokenizer decides, so a `;` inside a string, a
quoted name or a comment never ends a statement, and the shell agrees with the parser about
quoting (the shell asks these functions; it does not tokenize itself)."""

from __future__ import annotations

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from .parser import DIALECT


def tokenize(text: str) -> list[Token] | None:
    """The tokens of `text`, or None while a string, quoted name or comment is still open."""
    try:
        # (a number running into letters is the parser's error to report, not an open string)
        return DIALECT.tokenizer_class().tokenize_unchecked(text)
    except TokenError:
        return None


def ends_statement(text: str) -> bool:
    """Whether the last token of `text` is a `;` (False while a string or comment is open)."""
    tokens = tokenize(text)
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def is_blank(text: str) -> bool:
    """Nothing but whitespace and comments."""
    return not text.strip() or tokenize(text) == []


def split_statements(text: str) -> list[str]:
    """Split SQL at top-level semicolons; empty statements are dropped. Text that does not
    tokenize (an unterminated string) comes back whole, so the parser reports the error."""
    tokens = tokenize(text)
    if tokens is None:
        return [text.strip()] if text.strip() else []
    out: list[str] = []
    start = 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            out.append(text[start:tok.start])
            start = tok.end + 1
    out.append(text[start:])
    # a piece with no tokens (only blanks or comments) is not a statement
    return [s.strip() for s in out if s.strip() and tokenize(s)]
