"""SQL text -> sqlglot ASTs, with sqlglot's errors turned into `pqe.SQLSyntaxError`."""

from __future__ import annotations

import datetime
import decimal
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp, parser
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.parser import IsPredicatePrecedence
from sqlglot.tokens import Tokenizer, TokenType

from .. import types as T
from ..errors import BindError, SQLSyntaxError, UnsupportedError

# sqlglot logs a warning when it falls back to a generic Command; pqe reports its own errors.
logging.getLogger("sqlglot").setLevel(logging.ERROR)


def _anonymous_call(name: str):
    """A parser for NAME(args) as a plain call, whatever sqlglot's own reading of it."""
    return lambda args: exp.Anonymous(this=name, expressions=args)


def _at_most(name: str, most: int):
    """sqlglot's builder of NAME(args), refusing more than `most` arguments (it dropped the
    rest: lpad('a', 3, 'x', 'y') was 'xxa')."""
    build = parser.Parser.FUNCTIONS[name]

    def checked(args):
        if len(args) > most:
            raise BindError(f"{name} takes at most {most} arguments, got {len(args)}")
        return build(args)
    return checked


class PQEDialect(Dialect):
    """sqlglot's default dialect (standard, PostgreSQL-flavoured) with PostgreSQL's NULL
    ordering: NULLs sort as the largest values (ASC -> NULLS LAST, DESC -> NULLS FIRST)."""

    NULL_ORDERING = "nulls_are_large"
    # 1_000_000 is 1000000, as in DuckDB and PostgreSQL 16 (it was a syntax error near '_000')
    NUMBERS_CAN_BE_UNDERSCORE_SEPARATED = True

    class Tokenizer(Tokenizer):
        # SUMMARIZE t / SUMMARIZE SELECT ... (DuckDB's): sqlglot's parser knows the
        # statement once the word is its keyword
        # INT8 is 8 bytes, BIGINT, as in PostgreSQL and DuckDB (sqlglot's default reads
        # ClickHouse's 8 bits)
        # `?::int` is a parameter cast to INT, as in PostgreSQL (sqlglot's default reads
        # Snowflake's `?::` operator, and the text was a syntax error)
        KEYWORDS = {**{k: v for k, v in Tokenizer.KEYWORDS.items() if k != "?::"},
                    "SUMMARIZE": TokenType.SUMMARIZE, "INT8": TokenType.BIGINT,
                    "^@": TokenType.CARET_AT}  # (starts_with, as in PostgreSQL and DuckDB)

    class Parser(parser.Parser):
        # IS [NOT] NULL / TRUE / FALSE / DISTINCT FROM bind looser than the comparison
        # operators, as in PostgreSQL and DuckDB: `x > 1 IS NOT TRUE` is `(x > 1) IS NOT TRUE`
        # and `x IS DISTINCT FROM y = FALSE` is `x IS DISTINCT FROM (y = FALSE)` (sqlglot's
        # default bound IS tightest: `x > (1 IS NOT TRUE)`, a type error or another answer)
        IS_PREDICATE_PRECEDENCE = IsPredicatePrecedence.LOW
        # `?` remembers where it stands in the text: parameters bind in textual order, not in
        # the order a tree walk meets them (`VALUES (lower(?), ?)`)
        PLACEHOLDER_PARSERS = {
            **parser.Parser.PLACEHOLDER_PARSERS,
            TokenType.PLACEHOLDER: lambda self: _placeholder(self),
        }
        # functions with their own syntax (STRING_AGG, TRIM, SUBSTRING, ...) remember where
        # their name stands, as other calls do: a refusal then names what the user wrote
        FUNCTION_PARSERS = {name: (lambda fn: lambda self: _with_name_position(self, fn))(fn)
                            for name, fn in parser.Parser.FUNCTION_PARSERS.items()}
        # DATE_DIFF('part', start, end) as DuckDB writes it (the default dialect reads
        # BigQuery's DATE_DIFF(start, end, part) and turns `end` into a unit word)
        FUNCTIONS: ClassVar[dict] = {**parser.Parser.FUNCTIONS,
                                     **{name: _anonymous_call(name)
                                        for name in ("DATE_DIFF", "DATEDIFF")},
                                     **{name: _at_most(name, 3) for name in ("LPAD", "RPAD")},
                                     **{name: _at_most(name, 2) for name in ("LTRIM", "RTRIM")}}

        # `2 ^ 10` is a power, as in PostgreSQL and DuckDB, binding tighter than * (sqlglot's
        # default read MySQL's bitwise XOR, which pqe refused as such)
        EXPONENT: ClassVar[dict] = {TokenType.CARET: exp.Pow}
        BITWISE: ClassVar[dict] = {k: v for k, v in parser.Parser.BITWISE.items()
                                   if k != TokenType.CARET}

        def _parse_join(self, skip_join_token: bool = False, parse_bracket: bool = False,
                        alias_tokens=None):
            # sqlglot reads `a JOIN b` with no ON as `a, b` (the two are one tree after), and
            # takes ON beside NATURAL or CROSS and OUTER with no side: each a syntax error in
            # PostgreSQL and DuckDB that ran as another join (`a POSITIONAL JOIN b`, reading
            # POSITIONAL as a's alias, was a cross product; NATURAL JOIN .. ON false dropped
            # the ON)
            start = self._curr
            comma = start is not None and start.token_type == TokenType.COMMA
            join = super()._parse_join(skip_join_token, parse_bracket, alias_tokens)
            if join is None or comma or skip_join_token:
                return join
            kind = (join.args.get("kind") or "").upper()
            side = (join.args.get("side") or "").upper()
            method = (join.args.get("method") or "").upper()
            condition = join.args.get("on") is not None or bool(join.args.get("using"))
            if method == "NATURAL" and condition:
                self.raise_error("a NATURAL JOIN takes no ON or USING clause", start)
            elif method == "NATURAL" and kind not in ("", "INNER", "OUTER"):
                # `a NATURAL CROSS JOIN b` ran as a NATURAL JOIN (a syntax error in PostgreSQL
                # and DuckDB)
                self.raise_error(f"NATURAL cannot be combined with {kind} JOIN", start)
            elif kind == "CROSS" and condition:
                self.raise_error("a CROSS JOIN takes no ON or USING clause", start)
            elif kind == "OUTER" and not side:
                self.raise_error("OUTER JOIN needs LEFT, RIGHT or FULL", start)
            elif not condition and not method and kind != "CROSS":
                self.raise_error("JOIN needs an ON or USING clause (CROSS JOIN pairs every "
                                 "row)", start)
            return join

        def _parse_cube_or_rollup(self, with_prefix: bool = False):
            # ROLLUP (x > 20) / CUBE (v IS NULL): any expression, as in GROUP BY itself and in
            # PostgreSQL and DuckDB (sqlglot parsed only bitwise terms: a syntax error)
            if with_prefix or not self._match_set((TokenType.CUBE, TokenType.ROLLUP),
                                                  advance=False):
                return super()._parse_cube_or_rollup(with_prefix)
            kind = exp.Cube if self._curr.token_type == TokenType.CUBE else exp.Rollup
            self._advance()
            return self.expression(kind(
                expressions=self._parse_wrapped_csv(self._parse_disjunction)))

        def _parse_ordered(self, parse_method=None):
            # sqlglot reads `x ASC DESC` as DESC and `x NULLS FIRST NULLS LAST` as NULLS FIRST
            # (each word matched on its own); both are syntax errors in PostgreSQL and DuckDB
            start = self._index
            out = super()._parse_ordered(parse_method)
            toks = self._tokens[start:self._index]
            kinds = [t.token_type for t in toks]
            for i in range(1, len(toks)):
                if kinds[i - 1] == TokenType.ASC and kinds[i] == TokenType.DESC:
                    self.raise_error("ASC and DESC both given", toks[i])
            words = [t.text.upper() for t in toks[-4:]]
            if len(words) == 4 and words[0] == words[2] == "NULLS" and \
                    {words[1], words[3]} <= {"FIRST", "LAST"}:
                self.raise_error("NULLS FIRST/LAST given twice", toks[-2])
            return out

        def _parse_interval_span(self, this, parse_function_unit: bool = True):
            # sqlglot reads INTERVAL '1 day 02:00:00' as INTERVAL '1' DAY, dropping the
            # rest of the text (its one "<number> <unit>" part is taken as the whole): such
            # text is kept whole, for the binder to read or refuse
            if this is not None and this.is_string:
                text = this.name
                parts = exp.INTERVAL_STRING_RE.findall(text)
                if len(parts) == 1 and not exp.INTERVAL_STRING_RE.fullmatch(text):
                    out = super()._parse_interval_span(exp.Literal.string(""),
                                                       parse_function_unit)
                    out.set("this", exp.Literal.string(text))
                    return out
            return super()._parse_interval_span(this, parse_function_unit)


def _with_name_position(p: parser.Parser, fn) -> exp.Expression | None:
    name = p._tokens[p._index - 2] if p._index >= 2 else None  # NAME ( <- _index
    out = fn(p)
    if isinstance(out, exp.Expression) and name is not None and "start" not in out.meta:
        out.update_positions(name)
    return out


def _placeholder(p: parser.Parser) -> exp.Expression:
    node = p.expression(exp.Placeholder())
    node.meta["start"] = p._prev.start
    return node


DIALECT = PQEDialect


def position(sql: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    offset = max(0, min(offset, len(sql)))
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    return line, col


def node_position(sql: str, node: exp.Expression) -> tuple[int, int] | None:
    """Line and column where an AST node starts, when sqlglot recorded it."""
    for n in [node, *node.find_all(exp.Identifier, exp.Literal)]:
        meta = getattr(n, "meta", None) or {}
        if "start" in meta:
            return position(sql, meta["start"])
        if isinstance(getattr(n, "this", None), exp.Expression):
            inner = getattr(n.this, "meta", None) or {}
            if "start" in inner:
                return position(sql, inner["start"])
    return None


@dataclass
class ParsedStatement:
    """One statement of the text: its AST and whether it is wrapped in EXPLAIN [ANALYZE]."""

    ast: exp.Expression
    explain: str | None = None  # None, "explain" or "analyze"


_ANALYZE = re.compile(r"\s*analyze\b", re.I)


def parse_statements(sql: str, params: Sequence[Any] | None = None) -> list[ParsedStatement]:
    """Parse `;`-separated statements, unwrap EXPLAIN [ANALYZE], and bind `?` parameters (in
    the order they appear in the text) as typed literals: values never become SQL text."""
    statements = parse(sql)
    bodies = None  # the text is tokenized again to find them only when there is an EXPLAIN
    out: list[ParsedStatement] = []
    seen = 0  # where the next generic command's text is looked for
    for ast in statements:
        if isinstance(ast, exp.Command) and ast.this.upper() == "CREATE":
            seen = _check_create_body(sql, ast, seen)
        if isinstance(ast, exp.Command) and ast.this.upper() == "EXPLAIN":
            if bodies is None:
                bodies = iter(_explain_bodies(sql))
            start = next(bodies, None)
            if start is None:  # pragma: no cover - the tokenizer and parser disagree
                raise SQLSyntaxError("cannot find the statement after EXPLAIN")
            m = _ANALYZE.match(sql, start)
            mode = "analyze" if m else "explain"
            if m:
                start = m.end()
            end = _statement_end(sql, start)
            inner = parse(_blank(sql[:start]) + sql[start:end])
            if len(inner) != 1:
                raise SQLSyntaxError("EXPLAIN needs one statement", *position(sql, start))
            if isinstance(inner[0], exp.Command) and inner[0].this.upper() == "EXPLAIN":
                raise UnsupportedError("EXPLAIN EXPLAIN is not supported")
            out.append(ParsedStatement(inner[0], mode))
        else:
            out.append(ParsedStatement(ast))
    for p in out:
        _check_set_operands(sql, p.ast)
    _bind_parameters(sql, [p.ast for p in out], params)
    return out


def _check_set_operands(sql: str, ast: exp.Expression) -> None:
    """`SELECT ... ORDER BY x LIMIT 1 UNION ALL SELECT ...`: an operand of UNION / INTERSECT /
    EXCEPT with its own ORDER BY, LIMIT or OFFSET needs parentheses (PostgreSQL, DuckDB and
    SQLite reject the text); sqlglot read it as if they were there, an answer the user may
    not have meant."""
    for node in ast.find_all(exp.SetOperation):
        for side in (node.this, node.expression):
            if isinstance(side, (exp.Select, exp.SetOperation)):
                for key in ("order", "limit", "offset"):
                    clause = side.args.get(key)
                    if clause is not None:
                        where = node_position(sql, clause) or (None, None)
                        word = {"order": "ORDER BY"}.get(key, key.upper())
                        raise SQLSyntaxError(f"{word} inside an operand of "
                                             f"{node.key.upper()} needs parentheses around "
                                             f"that SELECT", *where)


def _check_create_body(sql: str, ast: exp.Command, after: int) -> int:
    """sqlglot reads a CREATE TABLE/VIEW ... AS whose query has a syntax error as a generic
    command (later refused as an unsupported statement): parse the query after AS on its own,
    so the user hears of the syntax error and where it is. Returns where the command ends."""
    body = ast.expression.name if isinstance(ast.expression, exp.Literal) else ast.expression
    if not isinstance(body, str):  # pragma: no cover - sqlglot keeps the text
        return after
    if not body:
        return after
    start = sql.find(body, after)
    if start < 0:  # pragma: no cover - the command's text is a slice of the statement's
        return after
    end = start + len(body)
    try:
        tokens = Tokenizer().tokenize(body)
    except TokenError:  # pragma: no cover - parse() tokenized it already
        return end
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif tok.token_type == TokenType.ALIAS and depth == 0 and i >= 2 and \
                tokens[0].text.upper() in ("TABLE", "VIEW", "OR", "TEMP", "TEMPORARY"):
            query = start + tok.end + 1
            parse(_blank(sql[:query]) + sql[query:end])  # raises its SQLSyntaxError
            break
    return end


def _blank(text: str) -> str:
    """Spaces for every character but newlines: a prefix that keeps error positions exact."""
    return "".join(ch if ch == "\n" else " " for ch in text)


def _explain_bodies(sql: str) -> list[int]:
    """Offsets where the statement after each EXPLAIN keyword starts."""
    try:
        tokens = Tokenizer().tokenize(sql)
    except TokenError:  # pragma: no cover - parse() reported it already
        return []
    out = []
    for i, tok in enumerate(tokens):
        if tok.token_type == TokenType.COMMAND and tok.text.upper() == "EXPLAIN":
            j = tok.end + 1
            while j < len(sql) and sql[j].isspace():
                j += 1
            out.append(j)
    return out


def _statement_end(sql: str, start: int) -> int:
    """Where the statement starting at `start` ends: its `;` (not one inside a string or
    comment), or the end of the text."""
    try:
        tokens = Tokenizer().tokenize(_blank(sql[:start]) + sql[start:])
    except TokenError:
        return len(sql)
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON and tok.start >= start:
            return tok.start
    return len(sql)


# the nodes under which a placeholder sits where a name belongs
_NAME_PARENTS = (exp.Table, exp.TableAlias, exp.Schema, exp.ColumnDef, exp.Column,
                 exp.Identifier, exp.Dot)


def _bind_parameters(sql: str, statements: list[exp.Expression],
                     params: Sequence[Any] | None) -> None:
    holes = [p for stmt in statements for p in stmt.find_all(exp.Placeholder)]
    if params is None:
        params = ()
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise SQLSyntaxError("parameters must be a sequence (a tuple or a list), "
                             f"got {type(params).__name__}")
    named = [h for h in holes if h.this]
    if named:
        raise UnsupportedError(f"named parameters (:{named[0].this}) are not supported; use ?")
    if len(holes) != len(params):
        raise SQLSyntaxError(f"the statement has {len(holes)} parameters, {len(params)} given")
    holes.sort(key=lambda h: h.meta.get("start", 0))
    for hole in holes:
        # `ORDER BY ?` bound to 1 would read as "the first column" (DuckDB refuses it)
        parent = hole.parent
        if isinstance(parent, exp.Ordered) and isinstance(parent.parent, exp.Order) \
                and not isinstance(parent.parent.parent, exp.Window):
            raise UnsupportedError("a parameter as an ORDER BY item is not supported: bound to "
                                   "an integer it would name a column by position")
        if isinstance(parent, exp.Group):
            raise UnsupportedError("a parameter as a GROUP BY item is not supported: bound to "
                                   "an integer it would name a column by position")
        if isinstance(parent, _NAME_PARENTS) or (
                isinstance(parent, exp.Alias) and hole.arg_key == "alias"):
            # `CREATE TABLE ?`, `INSERT INTO t(?)`, `SELECT 1 AS ?`, `FROM t AS ?`: bound as a
            # string literal the value became a name (a table named "x'; drop table t; --");
            # parameters are values, never SQL text or names (DuckDB: a syntax error)
            start = hole.meta.get("start")
            line = col = None
            if start is not None:
                line, col = sql.count("\n", 0, start) + 1, start - sql.rfind("\n", 0, start)
            raise SQLSyntaxError("a parameter (?) cannot stand for a name (a table, column or "
                                 "alias); parameters bind values only", line, col, "?")
    for hole, value in zip(holes, params, strict=True):
        hole.replace(parameter_literal(value))


def parameter_literal(value: Any) -> exp.Expression:
    """A parameter value as a typed literal node. Subclasses of the Python types (a
    `str`/`int` Enum, numpy's float64) bind as the value they hold, never as their str() or
    repr() (`Status.ACTIVE`, `np.float64(5.5)`); numpy scalars as their Python value."""
    value = T.plain_value(value)
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            # beyond BIGINT: an exact DECIMAL when it fits 38 digits
            if len(str(abs(value))) > 38:
                raise SQLSyntaxError(f"parameter {value} does not fit DECIMAL(38, 0)")
            return exp.cast(exp.Literal.string(str(value)), "DECIMAL(38, 0)")
        if value == -(1 << 63):
            # the literal would be -(9223372036854775808), a DECIMAL: the value is a BIGINT
            return exp.cast(exp.Literal.string(str(value)), "BIGINT")
        return exp.Literal.number(value)
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else
                                                          ("inf" if value > 0 else "-inf"))
        return exp.cast(exp.Literal.string(text), "DOUBLE")
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise SQLSyntaxError(f"parameter {value} is not a finite DECIMAL")
        sign, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        precision = max(len(digits) + max(0, int(exponent)), scale, 1)
        if precision > 38:
            raise SQLSyntaxError(f"parameter {value} has more than 38 digits")
        return exp.cast(exp.Literal.string(format(value, "f")),
                        f"DECIMAL({max(precision, scale)}, {scale})")
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            # (pqe has no TIMESTAMPTZ SQL type to give it; a zoned column is compared with
            # a naive value as its UTC instant)
            raise UnsupportedError(
                f"a timezone-aware datetime parameter ({value.isoformat(sep=' ')}) is not "
                f"supported; pass it as a naive datetime in UTC "
                f"(value.astimezone(timezone.utc).replace(tzinfo=None))")
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP")
    if isinstance(value, datetime.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    # SQL values pqe has no literal for are not supported (yet); other objects are the
    # caller's mistake, as in sqlite3 and psycopg (a ProgrammingError)
    error = UnsupportedError if isinstance(
        value, (bytes, bytearray, memoryview, datetime.time, datetime.timedelta, list, tuple,
                dict)) else BindError
    raise error(f"a parameter of type {type(value).__name__} cannot be bound (use None, bool, "
                f"int, float, Decimal, str, date or naive datetime)")


def builtin_call(name: str) -> str | None:
    """What SQL parses `name(x)` as, when that is not a plain call of a function named
    `name` (a keyword or a built-in sqlglot knows): a user function cannot take that name."""
    for args in ("x", "x, y", "x, y, z"):  # a known function may refuse some counts
        try:
            (stmt,) = sqlglot.parse(f"SELECT {name}({args})", read=DIALECT)
        except (ParseError, ValueError, TokenError):
            continue
        call = stmt.expressions[0] if isinstance(stmt, exp.Select) and stmt.expressions else None
        if isinstance(call, exp.Anonymous) and call.name.lower() == name.lower():
            continue
        return type(call).__name__.upper() if call is not None else "a SQL keyword"
    try:
        (stmt,) = sqlglot.parse(f"SELECT {name}(x)", read=DIALECT)
    except (ParseError, ValueError, TokenError):
        return "a SQL keyword"
    return None


def parse(sql: str) -> list[exp.Expression]:
    """Parse one or more `;`-separated statements."""
    if not isinstance(sql, str):
        raise SQLSyntaxError(f"SQL must be a string, got {type(sql).__name__}")
    # a byte-order mark before the text (editors on Windows save one) is no part of it: a
    # space keeps every position where it was
    if sql.startswith("\ufeff"):
        sql = " " + sql[1:]
    try:
        # (a comment after the last `;` is a Semicolon node of its own, no statement: it was
        # refused as '/* statements' after the statements before it had run)
        statements = [s for s in sqlglot.parse(sql, read=DIALECT)
                      if not isinstance(s, exp.Semicolon)]
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        desc = err.get("description") or str(e)
        highlight = err.get("highlight") or None
        line, col = err.get("line"), err.get("col")
        if line is not None and col is not None and highlight:
            # sqlglot reports the end of the offending token; point at its start
            col = max(1, col - len(highlight) + 1)
        message = _describe(desc)
        if line is not None and col is not None and _after_x(sql, line, col):
            message = "BLOB literals (x'...') are not supported: pqe has no BLOB type"
            col -= 1
        raise SQLSyntaxError(message, line, col, highlight) from None
    except TokenError as e:
        msg = str(e)
        line = col = None
        text = None
        if "'" in msg:
            text = msg.split("'", 1)[1].rsplit("'", 1)[0]
            idx = sql.find(text)
            if idx >= 0:
                quote = sql.find("'", idx + 1) if "'" in text[1:] else -1
                line, col = position(sql, quote if quote >= 0 else idx)
        raise SQLSyntaxError("cannot tokenize (unterminated string or quoted name?)",
                             line, col) from None
    return [s for s in statements if s is not None]


def _after_x(sql: str, line: int, col: int) -> bool:
    """Whether the offending token is a quoted string right after an `x` or `X` (a BLOB
    literal, which the default dialect reads as a name followed by a string)."""
    lines = sql.split("\n")
    if not 1 <= line <= len(lines):
        return False
    text, i = lines[line - 1], col - 1
    return 1 <= i < len(text) and text[i] == "'" and text[i - 1] in "xX" \
        and (i == 1 or not (text[i - 2].isalnum() or text[i - 2] == "_"))


def _describe(desc: str) -> str:
    if desc.startswith("Invalid expression / Unexpected token"):
        return "unexpected token"
    if desc.startswith("Required keyword:"):
        return "incomplete statement: " + desc.split("for <class", 1)[0].strip().rstrip("'")
    return desc.split(". Line", 1)[0]
