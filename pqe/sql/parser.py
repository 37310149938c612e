"""SQL text -> sqlglot ASTs, with sqlglot's errors turned into `pqe.SQLSyntaxError`."""

from __future__ import annotations

import datetime
import decimal
import difflib
import functools
import itertools
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp, generator, parser
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.parser import IsPredicatePrecedence
from sqlglot.tokens import Tokenizer, TokenType

from .. import types as T
from ..errors import BindError, SQLSyntaxError, TypeMismatchError, UnsupportedError
from .walk import find_all

# sqlglot logs a warning when it falls back to a generic Command; pqe reports its own errors.
logging.getLogger("sqlglot").setLevel(logging.ERROR)


def _anonymous_call(name: str):
    """A parser for NAME(args) as a plain call, whatever sqlglot's own reading of it."""
    return lambda args: exp.Anonymous(this=name, expressions=args)


def _part_first(name: str):
    """NAME('part', start, end), DuckDB's DATE_SUB, as a plain call; other forms (MySQL's
    DATE_SUB(date, INTERVAL ...)) as sqlglot reads them."""
    build = _keeping_arguments(name, parser.Parser.FUNCTIONS[name])
    return lambda args: exp.Anonymous(this=name, expressions=args) if len(args) == 3 \
        else build(args)


def _at_most(name: str, most: int, least: int = 0):
    """sqlglot's builder of NAME(args), refusing more than `most` arguments (it dropped the
    rest: lpad('a', 3, 'x', 'y') was 'xxa') or fewer than `least` (IFNULL and NVL, which
    sqlglot builds as COALESCE of any number: ifnull(a, b, c) ran as coalesce)."""
    build = parser.Parser.FUNCTIONS[name]

    def checked(args):
        if len(args) > most:
            many = f"{most}" if least == most else f"at most {most}"
            raise BindError(f"{name} takes {many} arguments, got {len(args)}")
        if len(args) < least:
            raise BindError(f"{name} takes {least} arguments, got {len(args)}")
        return build(args)
    return checked


# the words INTERVAL x <unit> takes as its unit (PostgreSQL's and DuckDB's keywords)
INTERVAL_UNIT_WORDS = frozenset(
    w + s for w in ("year", "quarter", "month", "week", "day", "hour", "minute", "second",
                    "millisecond", "microsecond", "decade", "millennium")
    for s in ("", "s")) | {"century", "centuries", "millennia"}


class _ArgumentDropped(ValueError):
    """A sqlglot function builder left one of the written arguments out of the call it
    built: a name read as a unit word (`date_trunc(s, ts)` truncated to SECOND whatever the
    column s held), or an argument past the ones the function takes (`log10(2, 100)` was
    log10(2)). `parse` reports it as a pqe error at the argument."""

    def __init__(self, name: str, node: exp.Expression, unit: bool, kind: str):
        super().__init__(name)
        self.name, self.node, self.unit, self.kind = name, node, unit, kind

    def error(self, sql: str):
        pos = node_position(sql, self.node)
        where = f" at line {pos[0]}, column {pos[1]}" if pos else ""
        shown = self.node.sql(dialect=PQEDialect)[:40]
        if self.unit:
            err = UnsupportedError(
                f"{self.name.lower()}: the unit must be a string literal like 'month', not the "
                f"name {shown}{where} (a column as the unit is not supported)")
        else:
            err = BindError(f"{self.name.lower()} does not take the argument {shown}{where} "
                            f"(too many arguments)")
        if pos:
            err.line, err.column = pos
        return err


def _within(node: exp.Expression, root: exp.Expression) -> bool:
    """Whether `node` is in `root`'s tree (its parent links lead there and each parent holds
    it: a node a constructor replaced keeps its parent link)."""
    for _ in range(64):
        if node is root:
            return True
        parent = node.parent
        if parent is None:
            return False
        held = parent.args.get(node.arg_key)
        if held is not node and not (isinstance(held, list) and any(h is node for h in held)):
            return False
        node = parent
    return False


def _converted(call, args: list, i: int, dialect) -> bool:
    """Whether argument `i` is still in what the builder makes of the call, in some other
    form: built again with a marker in its place, the marker shows in the result's SQL."""
    marker = f"pqe_argument_probe_{i}"
    probe = [exp.Literal.string(marker) if j == i else
             (a.copy() if isinstance(a, exp.Expression) else a) for j, a in enumerate(args)]
    try:
        out = call(probe, dialect)
        return out is None or marker in out.sql()
    except Exception:  # (the builder wants another kind of value there: it used it)
        return True


def _keeping_arguments(name: str, build):
    """sqlglot's builder of NAME(args), refusing a call whose built node lost a written
    argument (see `_ArgumentDropped`). A string literal unit it spelled anew ('month' ->
    'MONTH') is no loss."""
    def call(args, dialect):
        try:
            return build(args)
        except TypeError:
            if dialect is None:
                raise  # (sqlglot calls again with its dialect)
            return build(args, dialect=dialect)

    def checked(args, dialect=None):
        out = call(args, dialect)
        if not isinstance(out, exp.Expression) or (
                isinstance(out, exp.Func) and not out.is_var_len_args
                and len(args) > len(out.arg_types)):
            return out  # (too many for the function: sqlglot's validation says so)
        unit = out.args.get("unit")
        for i, a in enumerate(args):
            if not isinstance(a, exp.Expression) or _within(a, out):
                continue
            named = isinstance(a, (exp.Column, exp.Var, exp.Identifier))
            as_unit = isinstance(unit, (exp.Var, exp.Literal)) and (
                a.name.upper() == unit.name.upper()
                or exp.TimeUnit.UNABBREVIATED_UNIT_NAME.get(a.name.upper()) == unit.name.upper())
            if as_unit and isinstance(a, exp.Literal) and a.is_string:
                continue  # ('month' spelled as MONTH)
            if not named and _converted(call, args, i, dialect):
                continue  # (a value the builder rewrote, as a JSON path: kept in its form)
            raise _ArgumentDropped(name, a, as_unit and named, type(out).__name__.upper())
        return out
    checked.__name__ = getattr(build, "__name__", name)
    return checked


class _NumberJunk(Exception):
    """A number running into letters (raised by the tokenizer; a SQLSyntaxError at `offset`)."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset, self.message = offset, message


# TableSample.meta key: written `TABLESAMPLE <method> (n)`, with no ROWS or PERCENT
SAMPLE_BARE_NUMBER = "pqe_sample_bare_number"


class PQEDialect(Dialect):
    """sqlglot's default dialect (standard, PostgreSQL-flavoured) with PostgreSQL's NULL
    ordering: NULLs sort as the largest values (ASC -> NULLS LAST, DESC -> NULLS FIRST)."""

    NULL_ORDERING = "nulls_are_large"
    # 1_000_000 is 1000000, as in DuckDB and PostgreSQL 16 (it was a syntax error near '_000')
    NUMBERS_CAN_BE_UNDERSCORE_SEPARATED = True

    class Tokenizer(Tokenizer):
        # $$text$$ and $tag$text$tag$ are strings, as in PostgreSQL and DuckDB (a `?` inside
        # one was read as an operator); `$1` stays a numbered parameter (refused by name)
        HEREDOC_STRINGS: ClassVar[list] = ["$"]
        # x'4142' is a BLOB of the bytes its hex digits spell, as in DuckDB and SQLite (it
        # was a syntax error)
        HEX_STRINGS: ClassVar[list] = [("x'", "'"), ("X'", "'")]
        HEREDOC_TAG_IS_IDENTIFIER = True
        HEREDOC_STRING_ALTERNATIVE = TokenType.PARAMETER
        SINGLE_TOKENS: ClassVar[dict] = {**Tokenizer.SINGLE_TOKENS, "$": TokenType.HEREDOC_STRING}
        VAR_SINGLE_TOKENS: ClassVar[set] = {"$"}
        # SUMMARIZE t / SUMMARIZE SELECT ... (DuckDB's): sqlglot's parser knows the
        # statement once the word is its keyword
        # INT8 is 8 bytes, BIGINT, as in PostgreSQL and DuckDB (sqlglot's default reads
        # ClickHouse's 8 bits)
        # `?::int` is a parameter cast to INT, as in PostgreSQL (sqlglot's default reads
        # Snowflake's `?::` operator, and the text was a syntax error)
        KEYWORDS = {**{k: v for k, v in Tokenizer.KEYWORDS.items() if k != "?::"},
                    "SUMMARIZE": TokenType.SUMMARIZE, "INT8": TokenType.BIGINT,
                    "^@": TokenType.CARET_AT,  # (starts_with, as in PostgreSQL and DuckDB)
                    # DuckDB's integer division, refused by name as DIV is (it was read as
                    # two slashes: "DIV is missing what follows it")
                    "//": TokenType.DIV,
                    # `s ~ 'pattern'`: a regular expression matching somewhere in s, as in
                    # PostgreSQL and DuckDB (RLIKE, as sqlglot's PostgreSQL reads it; it was
                    # a syntax error near '~'); `~x` stays bitwise NOT (Parser.UNARY_PARSERS)
                    "~": TokenType.RLIKE}

        def tokenize_unchecked(self, sql: str):
            """The tokens without the check of numbers (where statements end: pqe.sql.text)."""
            return super().tokenize(sql)

        def tokenize(self, sql: str):
            # A number that runs straight into letters is an error, as in PostgreSQL 16
            # ("trailing junk after numeric literal"): sqlglot read `SELECT 0b101` as 0 AS
            # b101, `12abc` as 12 AS abc and `x = 1and ...` as 1 AND (DuckDB answers so too);
            # PostgreSQL 16 reads 0x1F, 0o17 and 0b101 as integers. `0x1F` was a BLOB here
            # (x'1F' is one)
            tokens = self.tokenize_unchecked(sql)
            for tok in tokens:
                if tok.token_type == TokenType.HEX_STRING and sql[tok.start:tok.start + 1] == "0":
                    raise TokenError("0x") from _NumberJunk(
                        tok.start, "hexadecimal, octal and binary integer literals (0x1F, "
                        "0o17, 0b101) are not supported; write the number in decimal "
                        "(x'1F' is a BLOB of hex digits)")
                if tok.token_type == TokenType.NUMBER and tok.end + 1 < len(sql) \
                        and (sql[tok.end + 1].isidentifier()):
                    stop = tok.end + 1
                    while stop < len(sql) and (sql[stop].isalnum() or sql[stop] == "_"):
                        stop += 1
                    word = sql[tok.start:stop]
                    hint = ("hexadecimal, octal and binary integer literals (0x1F, 0o17, "
                            "0b101) are not supported; write the number in decimal"
                            if re.fullmatch(r"0[xXoObB]\w+", word) else
                            "put a space between a number and a name or keyword")
                    raise TokenError(word) from _NumberJunk(
                        tok.start, f"trailing junk after the number in {word!r}: {hint}")
            return tokens

    class Generator(generator.Generator):
        # APPROX_COUNT_DISTINCT(x) names its column as written (sqlglot spells the node
        # APPROX_DISTINCT; DuckDB names it approx_count_distinct(x)), and STRING_AGG too
        # (sqlglot reads it as GROUP_CONCAT: _string_agg_sql)
        TRANSFORMS = {**generator.Generator.TRANSFORMS,
                      exp.ApproxDistinct: lambda self, e: self.func(
                          "APPROX_COUNT_DISTINCT", e.this, e.args.get("accuracy")),
                      exp.GroupConcat: lambda self, e: _string_agg_sql(self, e),
                      # `a // b` names its column as written (sqlglot spelled it CAST(a / b
                      # AS BIGINT))
                      exp.IntDiv: lambda self, e: self.binary(e, "//")}

    class Parser(parser.Parser):
        UNARY_PARSERS = {
            **parser.Parser.UNARY_PARSERS,
            TokenType.RLIKE: lambda self: self.expression(exp.BitwiseNot(this=self._parse_unary())),
        }

        def _parse_table_sample(self, as_modifier: bool = False):
            # the standard's `TABLESAMPLE SYSTEM (10)` (a method, then a bare number in
            # parentheses) is marked: PostgreSQL reads the number as a percentage, DuckDB as
            # a row count (sqlglot's tree is the same as for `SYSTEM (10 ROWS)`)
            start = self._index
            node = super()._parse_table_sample(as_modifier)
            if node is not None:
                toks = self._tokens[start:self._index]
                unit = any(t.token_type in (TokenType.ROWS, TokenType.PERCENT, TokenType.MOD)
                           for t in toks)
                standard = len(toks) > 2 and toks[0].token_type == TokenType.TABLE_SAMPLE \
                    and toks[2].token_type == TokenType.L_PAREN
                node.meta[SAMPLE_BARE_NUMBER] = standard and not unit
            return node

        def _parse_id_var(self, any_token: bool = True, tokens=None):
            # OVER (GROUPS BETWEEN ...): sqlglot took GROUPS, a plain word to its tokenizer,
            # for the name of a window the frame refines (`OVER (w ROWS ...)`), then failed
            # on BETWEEN ("Expecting )"); followed by a frame bound it is the frame's mode
            if tokens is self.WINDOW_ALIAS_TOKENS and self._curr is not None \
                    and self._curr.token_type == TokenType.VAR \
                    and self._curr.text.upper() == "GROUPS" and self._next is not None \
                    and (self._next.token_type in (TokenType.BETWEEN, TokenType.NUMBER)
                         or self._next.text.upper() in ("UNBOUNDED", "CURRENT")):
                return None
            return super()._parse_id_var(any_token, tokens)

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
        # BigQuery's DATE_DIFF(start, end, part) and turns `end` into a unit word), and
        # DATE_SUB('part', start, end) likewise (read as MySQL's DATE_SUB(date, interval))
        # every other builder keeps what was written: a name never becomes a unit word,
        # and no argument is dropped (_keeping_arguments)
        FUNCTIONS: ClassVar[dict] = {**{name: _keeping_arguments(name, build)
                                        for name, build in parser.Parser.FUNCTIONS.items()},
                                     **{name: _anonymous_call(name)
                                        for name in ("DATE_DIFF", "DATEDIFF")},
                                     "DATE_SUB": _part_first("DATE_SUB"),
                                     **{name: _at_most(name, 3) for name in ("LPAD", "RPAD")},
                                     **{name: _at_most(name, 2, 2) for name in ("IFNULL", "NVL")},
                                     **{name: _at_most(name, 2) for name in ("LTRIM", "RTRIM")}}

        # a $$dollar-quoted$$ string is a string like any other (sqlglot keeps it apart, as a
        # RawString, which nothing binds)
        PRIMARY_PARSERS: ClassVar[dict] = {
            **parser.Parser.PRIMARY_PARSERS,
            TokenType.HEREDOC_STRING: lambda self, token: self.expression(
                exp.Literal(this=token.text, is_string=True), token),
        }

        # `2 ^ 10` is a power, as in PostgreSQL and DuckDB, binding tighter than * (sqlglot's
        # default read MySQL's bitwise XOR, which pqe refused as such)
        EXPONENT: ClassVar[dict] = {TokenType.CARET: exp.Pow}
        BITWISE: ClassVar[dict] = {k: v for k, v in parser.Parser.BITWISE.items()
                                   if k != TokenType.CARET}

        def parse(self, raw_tokens, sql=None):
            # a zero-length quoted name ("") is no name (PostgreSQL and DuckDB: "zero-length
            # delimited identifier"); it made a column, alias or table named ''
            for tok in raw_tokens:
                if tok.token_type == TokenType.IDENTIFIER and tok.text == "":
                    self.reset()
                    self.sql = sql or ""
                    self.raise_error('a zero-length quoted name ("") is not a name', tok)
            return super().parse(raw_tokens, sql)

        def _parse_table_alias(self, alias_tokens=None):
            # `FROM t GROUP`, `FROM t ORDER`, `FROM t OFFSET`, `FROM t AS order`: a reserved
            # word is no table alias (PostgreSQL and DuckDB: a syntax error); sqlglot took it
            # for one and the rest of the clause was never asked for. `FROM t AS` with no
            # name after it was read as no alias.
            start = self._index
            out = super()._parse_table_alias(alias_tokens)
            _check_alias(self, start, out.this if out is not None else None,
                         RESERVED_TABLE_ALIAS_WORDS)
            return out

        def _parse_alias(self, this, explicit: bool = False):
            # `SELECT 1 order`, `SELECT a group FROM t`: a reserved word is no implicit column
            # alias (after AS it may be one, as in PostgreSQL and DuckDB); `SELECT 1 AS` with
            # no name after it was read as no alias
            start = self._index
            out = super()._parse_alias(this, explicit)
            alias = out.args.get("alias") if isinstance(out, exp.Alias) and out is not this \
                else None
            if alias is None and isinstance(out, exp.Aliases) and out is not this:
                return out
            _check_alias(self, start, alias, RESERVED_COLUMN_ALIAS_WORDS, after_as=False)
            return out

        def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False):
            # A typed literal is one constant, and what follows it (`::t`, `[i]`, `->k`)
            # applies to that constant, as in PostgreSQL and DuckDB: `TIMESTAMP '2024-01-31
            # 12:34'::DATE` is a DATE. sqlglot applied the `::` to the text first and the
            # literal's type last (a TIMESTAMP at midnight; `INTEGER '7'::DOUBLE / 2` was 3).
            # A type keyword followed by text is read here, as sqlglot's _parse_type reads it
            # but for that order; anything else is left to sqlglot
            curr = self._curr
            if fallback_to_identifier or curr is None or curr.token_type not in self.TYPE_TOKENS \
                    or curr.token_type == TokenType.INTERVAL \
                    or curr.token_type in self.PRIMARY_PARSERS:  # (NULL: sqlglot's atom first)
                return super()._parse_type(parse_interval, fallback_to_identifier)
            index = self._index
            data_type = self._parse_types(check_func=True, allow_identifiers=False)
            if isinstance(data_type, exp.DataType) and self._curr is not None \
                    and self._curr.token_type == TokenType.STRING:
                literal = self._parse_primary()
                if isinstance(literal, exp.Literal):
                    if self.ZONE_AWARE_TIMESTAMP_CONSTRUCTOR \
                            and parser.TIME_ZONE_RE.search(literal.name):
                        if data_type.is_type(exp.DType.TIMESTAMP):
                            data_type = exp.DType.TIMESTAMPTZ.into_expr()
                        elif data_type.is_type(exp.DType.TIME):
                            data_type = exp.DType.TIMETZ.into_expr()
                    typed = self.TYPE_LITERAL_PARSERS.get(data_type.this)
                    out = typed(self, literal, data_type) if typed else \
                        self.expression(exp.Cast(this=literal, to=data_type))
                    return self._parse_column_ops(out)
            self._retreat(index)
            return super()._parse_type(parse_interval, fallback_to_identifier)

        def _parse_types(self, *args, **kwargs):
            # a type remembers where it was written: CAST(a AS nosuchtype) is refused there
            start = self._curr
            out = super()._parse_types(*args, **kwargs)
            if isinstance(out, exp.DataType) and start is not None and "start" not in out.meta:
                out.update_positions(start)
            return out

        def _parse_derived_table_values(self, allow_value_synonym: bool = False):
            # INSERT ... VALUE (1) is MySQL's; PostgreSQL and DuckDB know VALUES only
            return super()._parse_derived_table_values(False)

        def _parse_lambda(self, alias: bool = False):
            # count(DISTINCT) and count(ALL) name no argument (PostgreSQL and DuckDB: an
            # error); sqlglot read count(ALL) as count() and count(DISTINCT) as an empty
            # DISTINCT, which failed deep in the planner
            _check_modifier_argument(self)
            return super()._parse_lambda(alias)

        def _parse_string_agg(self):
            _check_modifier_argument(self)  # string_agg(DISTINCT)
            return super()._parse_string_agg()

        def _parse_create(self):
            # CREATE VIEW v / CREATE VIEW v AS / CREATE TABLE x AS with no query after them
            # (a view without a query failed while binding; CREATE TABLE x AS said the table
            # needs a column)
            out = super()._parse_create()
            if isinstance(out, exp.Create) and out.expression is None:
                kind = (out.args.get("kind") or "").upper()
                last = self._prev
                if kind == "VIEW" or (kind == "TABLE" and last is not None
                                      and last.token_type == TokenType.ALIAS
                                      and not isinstance(out.this, exp.Schema)):
                    self.raise_error(f"CREATE {kind} needs AS and a query", self._curr or last)
            return out

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
                # (PostgreSQL and DuckDB read `a LEFT JOIN b CROSS JOIN c ON p` as a LEFT JOIN
                # of a to (b CROSS JOIN c) ON p; pqe asks for the parentheses)
                self.raise_error("a CROSS JOIN takes no ON or USING clause (to join to a cross "
                                 "product, put it in parentheses: a LEFT JOIN (b CROSS JOIN c) "
                                 "ON ...)", start)
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
            start, word = self._index, self._curr
            out = None
            if this is not None and this.is_string:
                text = this.name
                parts = exp.INTERVAL_STRING_RE.findall(text)
                if len(parts) == 1 and not exp.INTERVAL_STRING_RE.fullmatch(text):
                    out = super()._parse_interval_span(exp.Literal.string(""),
                                                       parse_function_unit)
                    out.set("this", exp.Literal.string(text))
            if out is None:
                out = super()._parse_interval_span(this, parse_function_unit)
            after = self._curr
            if this is not None and this.is_string and after is not None \
                    and after.token_type == TokenType.VAR \
                    and after.text.lower() in INTERVAL_UNIT_WORDS \
                    and re.search(r"[a-z]", this.name, re.I):
                # INTERVAL '1 day' HOUR: the text names its unit already; the word after it
                # was taken as an alias (a day named "hour"), where DuckDB refuses it and
                # PostgreSQL reads a field restriction (cutting the text to whole hours)
                self.raise_error(f"INTERVAL '{this.name}' names its unit already: '{after.text}'"
                                 f" after it is not supported (write INTERVAL '{this.name}' AS "
                                 f"{after.text} for an alias)", after)
            # the word after INTERVAL x is its unit only when it is one: sqlglot took any
            # name and spelled abbreviations out (`INTERVAL 1 s` was a second; s may be a
            # column or an alias, as PostgreSQL and DuckDB read it)
            if isinstance(out.args.get("unit"), exp.Var) and self._index > start \
                    and word is not None and word.token_type == TokenType.VAR \
                    and word.text.lower() not in INTERVAL_UNIT_WORDS:
                bare = this is not None and this.is_string and \
                    re.fullmatch(r"\s*[-+]?\d+(\.\d*)?\s*", this.name) is not None
                close = difflib.get_close_matches(word.text.lower(), INTERVAL_UNIT_WORDS, 1,
                                                  0.7)
                if this is not None and this.is_string and not (bare and close):
                    # INTERVAL '1 day 12:00:00' x: the text is the whole interval and x an
                    # alias, as DuckDB reads it (it was a syntax error). Not after a bare
                    # number when the word is a misspelled unit: `INTERVAL '5' dys` would
                    # be 5 seconds named dys, as DuckDB reads it, where days were meant
                    self._retreat(start)
                    return self.expression(exp.Interval(this=exp.Literal.string(this.name)))
                hint = f" (did you mean {close[0].upper()}?" + (
                    " An alias after a bare number needs AS)" if bare else ")") if close else ""
                self.raise_error(f"'{word.text}' is not an interval unit{hint}; write YEAR, "
                                 f"MONTH, DAY, HOUR, MINUTE, SECOND, ...", word)
            return out


# DuckDB's reserved keywords (duckdb_keywords(): 'reserved'), and those that are no table
# alias either ('type_function', but for those also a column name there): PostgreSQL's lists,
# nearly word for word
RESERVED_COLUMN_ALIAS_WORDS = frozenset("""
    all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create default deferrable desc describe distinct do else end except false fetch
    for foreign from group having in initially intersect into lambda lateral leading limit not
    null offset on only or order pivot pivot_longer pivot_wider placing primary qualify
    references returning select show some summarize symmetric table then to trailing true
    union unique unpivot using variadic when where window with""".split())
# (ANTI, ASOF, POSITIONAL and SEMI start joins: `a POSITIONAL JOIN b` is refused by the join
# rules with their own message)
RESERVED_TABLE_ALIAS_WORDS = RESERVED_COLUMN_ALIAS_WORDS | frozenset("""
    authorization binary by collation concurrently cross freeze full glob ilike inner is
    isnull join left like natural notnull outer overlaps right similar tablesample unpack
    verbose""".split())


def _check_alias(p: parser.Parser, start: int, alias, reserved: frozenset,
                 after_as: bool = True) -> None:
    """Refuse a reserved word as the alias just parsed (unquoted; after AS too when
    `after_as`), and an AS with no name after it."""
    toks = p._tokens[start:p._index]
    has_as = bool(toks) and toks[0].token_type == TokenType.ALIAS
    if has_as and alias is None:
        p.raise_error("AS needs a name after it", toks[0])
    if not isinstance(alias, exp.Identifier) or alias.quoted:
        return
    if (has_as and not after_as) or alias.name.lower() not in reserved:
        return
    word = next((t for t in toks if t.text == alias.name), toks[-1] if toks else None)
    p.raise_error(f"{alias.name.upper()} is a reserved word, not an alias (quote it to use it "
                  f"as a name: \"{alias.name}\")", word)


def _check_modifier_argument(p: parser.Parser) -> None:
    """f(DISTINCT) / f(ALL) with no argument after the word: a syntax error."""
    word = p._curr
    if word is not None and word.token_type in (TokenType.DISTINCT, TokenType.ALL):
        after = p._next
        if after is None or after.token_type in (TokenType.R_PAREN, TokenType.COMMA,
                                                 TokenType.ORDER_BY, TokenType.SEMICOLON):
            p.raise_error(f"{word.text.upper()} needs an argument after it", word)


def _with_name_position(p: parser.Parser, fn) -> exp.Expression | None:
    name = p._tokens[p._index - 2] if p._index >= 2 else None  # NAME ( <- _index
    out = fn(p)
    if isinstance(out, exp.Expression) and name is not None and "start" not in out.meta:
        out.update_positions(name)
    if isinstance(out, exp.GroupConcat) and name is not None \
            and name.text.upper() == "STRING_AGG":
        out.meta["written"] = "STRING_AGG"  # (its column's name: _string_agg_sql)
    return out


def _string_agg_sql(gen: generator.Generator, e: exp.GroupConcat) -> str:
    """STRING_AGG(x, sep ORDER BY k) as written, DuckDB's and PostgreSQL's order of its
    parts, where sqlglot writes every such call as GROUP_CONCAT(x ORDER BY k, sep): a
    column named by its text was group_concat(x, ',') where DuckDB names it
    string_agg(x, ','). GROUP_CONCAT as written stays as sqlglot writes it."""
    if e.meta.get("written") != "STRING_AGG":
        return gen.function_fallback_sql(e)
    this, order = e.this, None
    if isinstance(this, exp.Order) and this.this is not None:
        order = this.copy()
        this = order.this
        order.set("this", None)
    separator = e.args.get("separator")
    text = gen.func("STRING_AGG", this, separator)
    return text if order is None else f"{text[:-1]}{gen.sql(order)})"


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
    for n in [node, *find_all(node, exp.Identifier, exp.Literal)]:
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


def insert_rows_statement(sql: str, rows: Sequence[Sequence[Any]]) -> ParsedStatement | None:
    """`INSERT INTO t [(cols)] VALUES (?, ...)` with each parameter row of `rows` bound as one
    row of a single VALUES (DB-API executemany): the same typed literals, each cast to its
    column as a one-row INSERT casts it (statements._constant_values), in one statement
    instead of one per row. None when the text is not one such INSERT (ON CONFLICT, OR
    REPLACE, a subquery, a parameter outside the row, several rows or statements): those
    run one statement per row. Each row is bound as execute() binds its parameters."""
    statements = parse(sql)
    if len(statements) != 1:
        return None
    (ast,) = statements
    if not isinstance(ast, exp.Insert) or ast.args.get("conflict") is not None \
            or ast.args.get("alternative") or not isinstance(ast.expression, exp.Values):
        return None
    values = ast.expression
    if len(values.expressions) != 1 or any(values.args.get(k) is not None
                                           for k in values.args if k != "expressions"):
        return None
    (row,) = values.expressions
    holes = list(find_all(ast, exp.Placeholder))
    if not holes or any(h.this for h in holes) or any(not _within(h, row) for h in holes) \
            or any(True for _ in find_all(row, exp.Query, exp.Subquery)):
        return None
    bound = []
    for params in rows:
        copy = row.copy()
        _bind_parameters(sql, [copy], params)
        bound.append(copy)
    values.set("expressions", bound)
    return ParsedStatement(ast)


def _check_set_operands(sql: str, ast: exp.Expression) -> None:
    """`SELECT ... ORDER BY x LIMIT 1 UNION ALL SELECT ...`: an operand of UNION / INTERSECT /
    EXCEPT with its own ORDER BY, LIMIT or OFFSET needs parentheses (PostgreSQL, DuckDB and
    SQLite reject the text); sqlglot read it as if they were there, an answer the user may
    not have meant."""
    for node in find_all(ast, exp.SetOperation):
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
        tokens = PQEDialect.tokenizer_class().tokenize(body)
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
        tokens = PQEDialect.tokenizer_class().tokenize(sql)
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
        tokens = PQEDialect.tokenizer_class().tokenize(_blank(sql[:start]) + sql[start:])
    except TokenError:
        return len(sql)
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON and tok.start >= start:
            return tok.start
    return len(sql)


# the nodes under which a placeholder sits where a name belongs
_NAME_PARENTS = (exp.Table, exp.TableAlias, exp.Schema, exp.ColumnDef, exp.Column,
                 exp.Identifier, exp.Dot)


PARAMETER = "pqe_parameter"  # meta of a node a `?` was bound to


def _bind_parameters(sql: str, statements: list[exp.Expression],
                     params: Sequence[Any] | None) -> None:
    holes = [p for stmt in statements for p in find_all(stmt, exp.Placeholder)]
    if params is None:
        params = ()
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise SQLSyntaxError("parameters must be a sequence (a tuple or a list), "
                             f"got {type(params).__name__}")
    named = [h for h in holes if h.this]
    if named:
        raise UnsupportedError(f"named parameters (:{named[0].this}) are not supported; use ?")
    numbered = [p for stmt in statements for p in find_all(stmt, exp.Parameter)]
    if numbered and params:  # (without parameters, binding names the `$1` it cannot take)
        raise UnsupportedError(f"numbered parameters (${numbered[0].name}) are not "
                               "supported; use ? (paramstyle qmark)")
    if len(holes) != len(params):
        raise SQLSyntaxError(f"the statement has {len(holes)} parameters, {len(params)} given")
    holes.sort(key=lambda h: h.meta.get("start", 0))
    for hole in holes:
        # `ORDER BY ?` bound to 1 would read as "the first column" (DuckDB refuses it); so
        # would `ORDER BY (?)`, `GROUP BY (?)` and `?` in GROUPING SETS, ROLLUP or CUBE
        # (bound to 1, `GROUPING SETS ((b), (?))` grouped by b twice)
        item = _item_parent(hole)
        if isinstance(item, exp.Ordered) and isinstance(item.parent, exp.Order) \
                and not isinstance(item.parent.parent, exp.Window):
            raise UnsupportedError("a parameter as an ORDER BY item is not supported: bound to "
                                   "an integer it would name a column by position")
        if isinstance(item, (exp.Group, exp.GroupingSets, exp.Rollup, exp.Cube)):
            raise UnsupportedError("a parameter as a GROUP BY item is not supported: bound to "
                                   "an integer it would name a column by position")
        if hole.find_ancestor(exp.DataType, exp.DataTypeParam) is not None:
            # `CAST(x AS DECIMAL(?, 2))`, `VARCHAR(?)`: a type is SQL text, not a value
            # (accepted, the value's literal text became part of the type)
            raise UnsupportedError("a parameter (?) cannot stand for part of a type "
                                   "(DECIMAL(?, 2), VARCHAR(?)); parameters bind values only")
        if isinstance(item, exp.Distinct) and isinstance(item.parent, exp.Select) \
                and item.args.get("on") is not None:
            # (DISTINCT ON (?) bound to 2 kept one row per value of the second column;
            # DuckDB refuses it too)
            raise UnsupportedError("a parameter as a DISTINCT ON item is not supported: bound "
                                   "to an integer it would name a column by position")
        parent = hole.parent
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
        bound = parameter_literal(value)
        bound.meta[PARAMETER] = True  # (a view's text shows the value, not `?`)
        hole.replace(bound)


def written_query_text(sql: str, name: exp.Identifier) -> str | None:
    """The text of `CREATE VIEW <name> [(columns)] AS <query>` after its AS, as written (to
    the statement's end): what a view shows (sqlglot's text of a query loses what pqe's
    parser reads beyond its own, a window frame's EXCLUDE or `INTERVAL '1.5 days'`). None
    when it cannot be found."""
    start = name.meta.get("start")
    if start is None:
        return None
    try:
        tokens = DIALECT().tokenize(sql)
    except Exception:  # noqa: BLE001 - the statement parsed: this does not happen
        return None
    i = next((k for k, t in enumerate(tokens) if t.start >= start), None)
    if i is None:
        return None
    depth = 0
    for j in range(i + 1, len(tokens)):
        kind = tokens[j].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
        elif kind == TokenType.ALIAS and depth == 0:
            break
    else:
        return None
    body = [t for t in itertools.takewhile(lambda t: t.token_type != TokenType.SEMICOLON,
                                           tokens[j + 1:])]
    if not body:
        return None
    return sql[body[0].start:body[-1].end + 1]


def _item_parent(node: exp.Expression) -> exp.Expression | None:
    """The node holding `node` as an item, past the parentheses and tuples around it."""
    parent = node.parent
    while isinstance(parent, (exp.Paren, exp.Tuple)):
        parent = parent.parent
    return parent


@functools.lru_cache(maxsize=256)
def _type_node(text: str) -> exp.DataType:
    return exp.DataType.build(text, dialect=DIALECT)


def _typed(text: str, type_text: str) -> exp.Cast:
    """CAST('text' AS type), the type's node parsed once per process (parsing it for every
    parameter was most of executemany's time)."""
    return exp.Cast(this=exp.Literal.string(text), to=_type_node(type_text).copy())


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
                raise TypeMismatchError(f"parameter {value} does not fit DECIMAL(38, 0)")
            return _typed(str(value), "DECIMAL(38, 0)")
        if value == -(1 << 63):
            # the literal would be -(9223372036854775808), a DECIMAL: the value is a BIGINT
            return _typed(str(value), "BIGINT")
        return exp.Literal.number(value)
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else
                                                          ("inf" if value > 0 else "-inf"))
        return _typed(text, "DOUBLE")
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise TypeMismatchError(f"parameter {value} is not a finite DECIMAL")
        sign, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        precision = max(len(digits) + max(0, int(exponent)), scale, 1)
        if precision > 38:
            raise TypeMismatchError(f"parameter {value} has more than 38 digits")
        return _typed(format(value, "f"), f"DECIMAL({max(precision, scale)}, {scale})")
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return exp.HexString(this=bytes(value).hex())  # a BLOB, as x'...' is
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            # (pqe has no TIMESTAMPTZ SQL type to give it; a zoned column is compared with
            # a naive value as its UTC instant)
            raise UnsupportedError(
                f"a timezone-aware datetime parameter ({value.isoformat(sep=' ')}) is not "
                f"supported; pass it as a naive datetime in UTC "
                f"(value.astimezone(timezone.utc).replace(tzinfo=None))")
        return _typed(value.isoformat(sep=" "), "TIMESTAMP")
    if isinstance(value, datetime.date):
        return _typed(value.isoformat(), "DATE")
    if isinstance(value, datetime.time) and value.tzinfo is None:
        return _typed(value.isoformat(), "TIME")
    # SQL values pqe has no literal for are not supported (yet); other objects are the
    # caller's mistake, as in sqlite3 and psycopg (a ProgrammingError)
    error = UnsupportedError if isinstance(
        value, (datetime.time, datetime.timedelta, list, tuple, dict)) else BindError
    kind = type(value).__name__ + (" with a zone" if isinstance(value, datetime.time) else "")
    raise error(f"a parameter of type {kind} cannot be bound (use None, bool, int, float, "
                f"Decimal, str, bytes, date, naive datetime or naive time)")


def builtin_call(name: str) -> str | None:
    """What SQL parses `name(x)` as, when that is not a plain call of a function named
    `name` (a keyword or a built-in sqlglot knows): a user function cannot take that name."""
    for args in ("x", "x, y", "x, y, z"):  # a known function may refuse some counts
        try:
            (stmt,) = sqlglot.parse(f"SELECT {name}({args})", read=DIALECT)
        except _ArgumentDropped as e:
            return e.kind
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
        if _SENTINEL.search(desc):
            # the text ended where more was expected: point just past its last token
            # (sqlglot named its internal end-of-input token, and pointed at the token
            # before it)
            if line is not None and col is not None and highlight:
                col += len(highlight)
            highlight = None
        if line is not None and col is not None and _after_x(sql, line, col):
            message = "x'...' is a BLOB literal of hex digits (x'4142')"
            col -= 1
        raise SQLSyntaxError(message, line, col, highlight) from None
    except _ArgumentDropped as e:
        raise e.error(sql) from None
    except TokenError as e:
        if isinstance(e.__cause__, _NumberJunk):
            raise SQLSyntaxError(e.__cause__.message, *position(sql, e.__cause__.offset)) \
                from None
        open_ = _unterminated(sql)
        if open_ is not None:
            # where the comment, string or quoted name that never ends starts
            start, what = open_
            raise SQLSyntaxError(f"unterminated {what}", *position(sql, start)) from None
        bad_hex = re.search(r"(?<![\w'])[xX]'([^']*[^0-9a-fA-F'][^']*)'", sql)
        if bad_hex is not None:  # (sqlglot's tokenizer fails on them)
            raise SQLSyntaxError(f"x'{bad_hex.group(1)}' is not a BLOB: x'...' takes hex "
                                 f"digits only", *position(sql, bad_hex.start())) from None
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
    statements = [s for s in statements if s is not None]
    if re.search(r"within\s+group", sql, re.IGNORECASE):  # (no walk for every other query)
        for s in statements:
            _ordered_set_aggregates(s)
    if re.search(r"\(\s*\(", sql):
        for s in statements:
            _redundant_parentheses(s)
    return statements


def _redundant_parentheses(ast: exp.Expression) -> None:
    """`FROM ((t JOIN u USING (a)))`: parentheses around parentheses, with nothing of their
    own (no alias, ORDER BY, LIMIT), are one pair. The binder knows a parenthesized join;
    two levels of them were refused naming a sqlglot node."""
    # (innermost first: a pair taken out of the tree is never visited after)
    for node in reversed(list(ast.find_all(exp.Subquery))):
        inner = node.this
        while isinstance(inner, exp.Subquery) and not any(
                v not in (None, False, [], "") for k, v in inner.args.items() if k != "this"):
            inner = inner.this
        if inner is not node.this:
            node.set("this", inner)
        if (isinstance(inner, exp.Values) and not inner.args.get("alias")
                and isinstance(node.parent, (exp.From, exp.Join))
                and all(k in ("this", "alias") or v in (None, False, [], "")
                        for k, v in node.args.items())):
            # `FROM ((VALUES ...)) v(x, y)` is `FROM (VALUES ...) v(x, y)`, which sqlglot
            # reads as the VALUES with the alias (as a subquery its columns were lost)
            alias = node.args.get("alias")
            if alias is not None:
                inner.set("alias", alias.pop())
            node.replace(inner.pop())


# PostgreSQL's ordered-set aggregates: `percentile_cont(q) WITHIN GROUP (ORDER BY x)` is
# quantile_cont(x, q) (DuckDB's reading too); over a descending order, the fraction 1 - q
_WITHIN_GROUP = {exp.PercentileCont: "quantile_cont", exp.PercentileDisc: "quantile_disc",
                 exp.Mode: "mode"}


def _ordered_set_aggregates(ast: exp.Expression) -> None:
    """`f(...) WITHIN GROUP (ORDER BY x)` as the aggregate of x it is. Left as it is (and
    refused by name) where the order matters in a way the aggregate does not follow: more
    than one sort key, a list of fractions, percentile_disc or mode over a descending order
    (ties and the discrete position are not mirror images of the ascending ones)."""
    for node in list(find_all(ast, exp.WithinGroup)):
        fn, order = node.this, node.expression
        target = _WITHIN_GROUP.get(type(fn))
        if target is None or not isinstance(order, exp.Order) or len(order.expressions) != 1:
            continue
        key = order.expressions[0]
        if not isinstance(key, exp.Ordered):
            continue
        x, desc = key.this, bool(key.args.get("desc"))
        # (any argument but the fraction, `percentile_cont(0.5, 0.6)`, is left to be refused)
        extra = any(v not in (None, [], False) for k, v in fn.args.items() if k != "this")
        if target == "mode":
            if desc or fn.this is not None or extra:
                continue
            node.replace(exp.Anonymous(this="mode", expressions=[x.copy()]))
            continue
        q = fn.this
        if q is None or isinstance(q, exp.Array) or extra \
                or (desc and target == "quantile_disc"):
            continue
        if desc:  # (a number written out: the fraction must be a constant)
            if not (isinstance(q, exp.Literal) and q.is_number):
                continue
            q = exp.Literal.number(str(1 - decimal.Decimal(q.this)))
        node.replace(exp.Anonymous(this=target, expressions=[x.copy(), q.copy()]))


def _unterminated(sql: str) -> tuple[int, str] | None:
    """Where the first comment, string or quoted name that is never closed starts, and what
    it is (the tokenizer's rules: '' and "" inside quotes, nested /* */ comments)."""
    closers = {"'": ("'", "string"), '"': ('"', "quoted name")}
    i, n = 0, len(sql)
    while i < n:
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i) or sql.startswith("{#", i):
            opener, closer = ("/*", "*/") if sql[i] == "/" else ("{#", "#}")
            depth, j = 1, i + 2
            while j < n and depth:
                if sql.startswith(opener, j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith(closer, j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if depth:
                return i, "comment"
            i = j
        elif sql[i] in closers:
            quote, what = closers[sql[i]]
            j = i + 1
            while True:
                k = sql.find(quote, j)
                if k < 0:
                    return i, what
                if sql.startswith(quote * 2, k):
                    j = k + 2
                    continue
                i = k + 1
                break
        else:
            i += 1
    return None


def _after_x(sql: str, line: int, col: int) -> bool:
    """Whether the offending token is a quoted string right after an `x` or `X` (a BLOB
    literal, which the default dialect reads as a name followed by a string)."""
    lines = sql.split("\n")
    if not 1 <= line <= len(lines):
        return False
    text, i = lines[line - 1], col - 1
    return 1 <= i < len(text) and text[i] == "'" and text[i - 1] in "xX" \
        and (i == 1 or not (text[i - 2].isalnum() or text[i - 2] == "_"))


_SENTINEL = re.compile(r"<Token token_type: TokenType\.SENTINEL\b")
_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+.*?>", re.S)
_REQUIRED = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _describe(desc: str) -> str:
    """sqlglot's description of a parse error in the user's terms: no token reprs or
    argument names of its classes."""
    if desc.startswith("Invalid expression / Unexpected token"):
        return "unexpected token"
    m = _REQUIRED.match(desc)
    if m:
        cls = getattr(exp, m.group(2), None)
        if isinstance(cls, type) and issubclass(cls, exp.Func) \
                and not re.search(r"(^|_)[A-Z](_|$)", cls.sql_name()):
            # (an operator sqlglot reads as a function, `date ?` its JSONB `?`, has a name
            # no one wrote: J_S_O_N_B_CONTAINS_TOP_KEY)
            return f"incomplete statement: {cls.sql_name()}() is missing an argument"
        if isinstance(cls, type) and issubclass(cls, exp.Func):
            return "incomplete statement"
        return f"incomplete statement: {m.group(2).upper()} is missing what follows it"
    if desc.startswith("Required keyword:"):
        return "incomplete statement"
    desc = desc.split(". Line", 1)[0]
    m = re.match(r"Expected (.+?) but got ", desc)
    if m and _SENTINEL.search(desc):
        what = m.group(1)
        article = "" if what.split()[0].lower() in ("a", "an", "the") else (
            "an " if what[0].lower() in "aeiou" else "a ")
        return f"unexpected end of input: expected {article}{what}"
    if _SENTINEL.search(desc):
        return "unexpected end of input"
    return _TOKEN.sub(lambda t: f"'{t.group(2)}'", desc)
