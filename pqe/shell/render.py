"""Printing results: a rich box table for people, text modes for pipes and files.

Table mode keeps results readable on a terminal: long results show their first and last rows
with a footer "N rows, M shown", and tables wider than the terminal drop middle columns (as
DuckDB's CLI does) instead of wrapping every cell into a narrow column. Box mode draws the same
box (square corners) around every row and column. Both show each column's SQL type under its
name, as DuckDB's shell does. The text modes (csv, json, markdown, and sqlite3's line, list and
tabs) print every row and column, with no colours, types or boxes, so their output can be
parsed.

A Renderer writes results to `out`, which `.output`/`.once` may point at a file, and status
lines (timer, settings) to `screen`, which stays the terminal.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import math
from collections.abc import Iterator
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc
from rich import box

from .. import types as T
from rich.console import Console
from rich.table import Table
from rich.text import Text

MODES = ("table", "box", "csv", "json", "markdown", "line", "list", "tabs")
BOXED = ("table", "box")  # the modes that draw a box, show types and print plans as text
MAX_CELL = 48  # widest a column gets in table mode before its cells are cut with an ellipsis
# Control characters (C0, DEL, C1) in values and names shown to people are escaped: raw, an
# ESC or CSI from the data would drive the terminal (clear it, recolour it, retitle it).
_ESCAPES = str.maketrans({**{c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]},
                          "\n": "\\n", "\r": "\\r", "\t": "\\t"})
# JSON escapes C0 controls itself; DEL and C1 may be raw in JSON but are as unsafe on a
# terminal
_JSON_ESCAPES = str.maketrans({c: f"\\u{c:04x}" for c in range(0x7F, 0xA0)})
# non-finite floats in json mode: strings, so they differ from SQL NULL's null (JSON has no
# NaN or Infinity; DuckDB prints them bare, which JSON parsers reject)
_JSON_NONFINITE = {"NaN": '"NaN"', "Infinity": '"Infinity"', "-Infinity": '"-Infinity"'}


def escape_controls(text: str) -> str:
    """`text` with every control character spelled out (\\n, \\t, \\x1b, ...)."""
    return text.translate(_ESCAPES)


def is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def interval_text(months: int, days: int, nanoseconds: int) -> str:
    """An INTERVAL as DuckDB prints it: `1 year 2 months 3 days 01:30:00`, each part with its
    own sign, the time part's fraction without trailing zeros (to the nanosecond)."""
    parts = []
    sign = -1 if months < 0 else 1
    years, months = (sign * n for n in divmod(abs(months), 12))
    for n, unit in ((years, "year"), (months, "month"), (days, "day")):
        if n:
            parts.append(f"{n} {unit}{'' if abs(n) == 1 else 's'}")
    if nanoseconds or not parts:
        sign, ns = ("-" if nanoseconds < 0 else ""), abs(nanoseconds)
        seconds, fraction = divmod(ns, 10**9)
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        time = f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
        if fraction:
            time += "." + f"{fraction:09d}".rstrip("0")
        parts.append(time)
    return " ".join(parts)


def format_value(v: Any, null: str = "NULL") -> str:
    """One value as text, the same in every mode (except how NULL is spelled)."""
    if v is None:
        return null
    if isinstance(v, pa.MonthDayNano):  # (a namedtuple: before the generic cases)
        return interval_text(v.months, v.days, v.nanoseconds)
    if isinstance(v, datetime.timedelta):  # a DURATION column: an interval of days and time
        sign = -1 if v < datetime.timedelta(0) else 1
        v = abs(v)
        return interval_text(0, sign * v.days,
                             sign * (v.seconds * 10**9 + v.microseconds * 1000))
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, bytes):
        return "\\x" + v.hex()
    if isinstance(v, (list, dict)):
        return json.dumps(_jsonable(v), ensure_ascii=False)
    return str(v)


def type_label(t: pa.DataType) -> str:
    """A column's SQL type as shown under its name in table and box modes (lowercase, as
    DuckDB's shell shows it: `bigint`, `varchar`, `decimal(15,2)`)."""
    try:
        from ..types import type_name

        return type_name(t).lower()
    except Exception:  # pragma: no cover - engine helper moved
        return str(t).lower()


def _jsonable(v: Any) -> Any:
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float) and math.isfinite(v):
        return v
    return format_value(v)


def _json_value(v: Any) -> str:
    """JSON text for one value: decimals stay exact numbers, dates become strings."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else _JSON_NONFINITE[format_value(v)]
    if isinstance(v, decimal.Decimal):
        return format(v, "f") if v.is_finite() else "null"
    if isinstance(v, list):
        return "[" + ",".join(_json_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{_json_value(str(k))}:{_json_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).translate(_JSON_ESCAPES)
    return json.dumps(format_value(v), ensure_ascii=False).translate(_JSON_ESCAPES)


def _with_floats(t: pa.DataType, to: pa.DataType) -> pa.DataType:
    """`t` with `to` for every float32 in it (in lists, structs and maps too)."""
    if pa.types.is_float32(t):
        return to
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_with_floats(t.value_type, to)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_with_floats(t.value_type, to)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_with_floats(f.type, to)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_with_floats(t.key_type, to)),
                       t.item_field.with_type(_with_floats(t.item_type, to)))
    return t


def _shortest_floats(column: Any) -> Any:
    """`column` with its REAL (float32) values as the doubles of their shortest decimal text
    (Arrow's float32 -> text is the shortest that round-trips), so CAST(1.1 AS REAL) shows
    1.1 as DuckDB does, not the float32's exact 1.100000023841858."""
    t = column.type
    if _with_floats(t, pa.float64()) == t:
        return column
    try:
        return column.cast(_with_floats(t, pa.string())).cast(_with_floats(t, pa.float64()))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # a nesting Arrow cannot cast
        return column


def _values(column: Any, name: str) -> list[Any]:
    """A result column as the Python values to print: a MAP as a dict (Arrow gives a list of
    (key, value) tuples, which printed as Python's tuple text); a date or timestamp Python
    cannot hold (past year 9999 or before year 1, or a nanosecond that microseconds lose)
    as Arrow's text of it, where to_pylist() would fail the whole result."""
    column = _shortest_floats(column)
    maps = _has(column.type, pa.types.is_map)
    try:
        return _pylist(column, maps)
    except (OverflowError, ValueError):
        texty = _with_text_times(column.type)
        if texty != column.type:
            try:
                return _pylist(column.cast(texty), maps)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, OverflowError, ValueError):
                pass
        return T.python_values(column, name)  # (its one-line error)


def _pylist(column: Any, maps: bool) -> list[Any]:
    """to_pylist(), MAPs as dicts; a MAP holding a key twice (Arrow and Parquet allow it) as
    its list of {key, value} entries, every one shown (a dict kept the last value only)."""
    if not maps:
        return column.to_pylist()
    try:
        return column.to_pylist(maps_as_pydicts="strict")
    except (KeyError, ValueError) as e:
        # (a repeated key: KeyError for a map, ValueError for one inside a STRUCT)
        if "duplicate" not in str(e):
            raise
        return column.cast(_maps_as_entries(column.type)).to_pylist()


def _maps_as_entries(t: pa.DataType) -> pa.DataType:
    """`t` with every MAP in it as a list of {key, value} structs."""
    if pa.types.is_map(t):
        return pa.list_(pa.struct([t.key_field.with_type(_maps_as_entries(t.key_type)),
                                   t.item_field.with_type(_maps_as_entries(t.item_type))]))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_maps_as_entries(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_maps_as_entries(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_maps_as_entries(f.type)) for f in t])
    return t


def _has(t: pa.DataType, test) -> bool:
    if test(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has(t.value_type, test)
    if pa.types.is_struct(t):
        return any(_has(f.type, test) for f in t)
    if pa.types.is_map(t):
        return _has(t.key_type, test) or _has(t.item_type, test)
    return False


def _with_text_times(t: pa.DataType) -> pa.DataType:
    """`t` with text for every DATE, TIME and TIMESTAMP in it (in lists, structs and maps
    too)."""
    if pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return pa.string()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_with_text_times(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_with_text_times(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_with_text_times(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_with_text_times(t.key_type)),
                       t.item_field.with_type(_with_text_times(t.item_type)))
    return t


def _texts(column: pa.Array, name: str) -> pa.Array:
    """A result column as format_value's texts (NULL stays NULL): by Arrow's cast where that
    gives the same text (text, integers, booleans, dates, decimals but those Arrow writes
    with an exponent, 1E-7), else value by value."""
    t = column.type
    if pa.types.is_dictionary(t):
        column, t = column.dictionary_decode(), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return column.cast(pa.string())
    if _plain(t):
        text = column.cast(pa.string())
        if not (pa.types.is_decimal(t) and pc.any(pc.match_substring(text, "E")).as_py()):
            return text
    return pa.array([None if v is None else format_value(v) for v in _values(column, name)],
                    pa.string())


TEXT_BATCH_ROWS = 65_536  # rows the text modes format at a time


def _plain(t: pa.DataType) -> bool:
    """Types whose texts are Arrow's cast to text (see _texts), never empty nor holding a
    delimiter, quote or control character."""
    return pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_date32(t) \
        or pa.types.is_decimal(t)


# what _ESCAPES spells out
_CONTROLS = "[\\x00-\\x1f\\x7f-\\x9f]"


def _rows(table: pa.Table, batch_rows: int = 8192) -> Iterator[list[Any]]:
    """Rows as lists, a batch at a time, so big results are not all turned into Python at once."""
    names = table.column_names
    for batch in table.to_batches(max_chunksize=batch_rows):
        columns = [_values(batch.column(i), names[i]) for i in range(len(names))]
        yield from (list(r) for r in zip(*columns, strict=True))


class Renderer:
    """Prints results to `out` in one of MODES, and status lines to `screen`."""

    def __init__(self, out: TextIO, mode: str = "table", max_rows: int = 40,
                 color: bool | None = None):
        self.out = out
        self.screen = out  # status lines: the terminal even while results go to a file
        self.mode = mode
        self.max_rows = max_rows
        self.terminal = out.isatty() if color is None else color
        self.screen_terminal = self.terminal

    def redirect(self, out: TextIO, terminal: bool = False) -> tuple[TextIO, bool]:
        """Send results to `out` (a file: no colours); returns what to `restore`."""
        previous = (self.out, self.terminal)
        self.out, self.terminal = out, terminal
        return previous

    def restore(self, previous: tuple[TextIO, bool]) -> None:
        self.out, self.terminal = previous

    def console(self, width: int | None = None) -> Console:
        if self.terminal:
            return Console(file=self.out, highlight=False, soft_wrap=False, width=width)
        return Console(file=self.out, color_system=None, force_terminal=False, highlight=False,
                       width=width or 10_000, soft_wrap=False)

    def message(self, text: str, style: str | None = None) -> None:
        """A line that belongs to a result (the row-count footer): styled only on a
        terminal."""
        self._line(self.out, self.terminal, text, style)

    def status(self, text: str, style: str | None = None) -> None:
        """A line for the user (timer, settings, "OK"): always on the screen."""
        self._line(self.screen, self.screen_terminal, text, style)

    @staticmethod
    def _line(out: TextIO, terminal: bool, text: str, style: str | None) -> None:
        if terminal and style:
            Console(file=out, highlight=False, soft_wrap=True).print(Text(text, style=style))
        else:
            out.write(text + "\n")
        out.flush()

    def lines(self, lines: list[str]) -> None:
        """Plain text such as a query plan: printed as is in table and box modes (control
        characters escaped: a plan quotes names and literals), as rows otherwise."""
        if self.mode in BOXED:
            self.out.write("\n".join(escape_controls(x) for x in lines) + "\n")
            self.out.flush()
        else:
            self.result(pa.table({"plan": lines}))

    def result(self, table: pa.Table, types: bool = True) -> None:
        """A result in the current mode; `types=False` leaves the column types out of the
        header (for the shell's own lists, such as .tables)."""
        if self.mode == "table":
            self._table(table, types)
        elif self.mode == "box":
            self._box(table, types)
        else:
            {"csv": self._csv, "json": self._json, "markdown": self._markdown,
             "line": self._line_mode, "list": self._list, "tabs": self._tabs}[self.mode](table)
        self.out.flush()

    # ---- text modes ------------------------------------------------------------------------

    def _csv(self, table: pa.Table) -> None:
        # as COPY ... TO writes CSV: NULL an empty field, the empty text "" (the csv module
        # wrote both as an empty field, or both as "" in a row of one field, so a NULL read
        # back as '' or an '' as NULL); a field holding the delimiter, a quote, '\r' or '\n'
        # quoted, its quotes doubled
        def field(text: str) -> str:
            if text == "" or any(c in text for c in ',"\r\n'):
                return '"' + text.replace('"', '""') + '"'
            return text

        def fields(text: pa.Array) -> pa.Array:  # field() on a column of texts
            quote = pc.or_(pc.equal(text, ""), pc.match_substring_regex(text, '[,"\r\n]'))
            quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'),
                                                 '"', "")
            return pc.fill_null(pc.if_else(quote, quoted, text), "")

        self.out.write(",".join(field(n) for n in table.column_names) + "\n")
        self._text_lines(table, fields, ",")

    def _text_lines(self, table: pa.Table, cells, sep: str) -> None:
        """Each row as its values' text (format_value's, NULL left NULL) made cells by `cells`
        (a column of texts -> a column of cells), joined by `sep`: whole columns at a time
        through Arrow, not a Python call per value (600k rows of TPC-H's lineitem took 49 s
        as CSV, DuckDB's shell 1.8 s)."""
        names = table.column_names
        for batch in table.to_batches(max_chunksize=TEXT_BATCH_ROWS):
            if not batch.num_rows:
                continue
            cols = [_texts(batch.column(i), names[i]) for i in range(len(names))]
            # (numbers, dates and booleans need no quotes nor escapes)
            cols = [pc.fill_null(c, "") if _plain(batch.column(i).type) else cells(c)
                    for i, c in enumerate(cols)]
            lines = cols[0] if len(cols) == 1 else pc.binary_join_element_wise(*cols, sep)
            self.out.write("\n".join(lines.to_pylist()) + "\n")

    def _json(self, table: pa.Table) -> None:
        names = [json.dumps(n, ensure_ascii=False).translate(_JSON_ESCAPES)
                 for n in table.column_names]
        self.out.write("[")
        for i, row in enumerate(_rows(table)):
            body = ",".join(f"{n}:{_json_value(v)}" for n, v in zip(names, row, strict=True))
            self.out.write(("" if i == 0 else ",\n ") + "{" + body + "}")
        self.out.write("]\n")

    def _markdown(self, table: pa.Table) -> None:
        def cell(s: str) -> str:
            return s.translate(_ESCAPES).replace("|", "\\|")

        self.out.write("| " + " | ".join(cell(n) for n in table.column_names) + " |\n")
        self.out.write("|" + "|".join("---:" if is_numeric(f.type) else "---"
                                      for f in table.schema) + "|\n")
        for row in _rows(table):
            self.out.write("| " + " | ".join(cell(format_value(v)) for v in row) + " |\n")

    def _line_mode(self, table: pa.Table) -> None:
        """sqlite3's line mode: `name = value` per column, names right-aligned (at least 5
        wide), a blank line between rows. Newlines and tabs in values are escaped."""
        names = [escape_controls(n) for n in table.column_names]
        width = max([5, *(len(n) for n in names)])
        names = [n.rjust(width) for n in names]
        for i, row in enumerate(_rows(table)):
            if i:
                self.out.write("\n")
            for n, v in zip(names, row, strict=True):
                self.out.write(f"{n} = {format_value(v).translate(_ESCAPES)}\n")

    def _separated(self, table: pa.Table, sep: str) -> None:
        def cells(text: pa.Array) -> pa.Array:  # NULL empty, control characters spelled out
            text = pc.fill_null(text, "")
            if pc.any(pc.match_substring_regex(text, _CONTROLS)).as_py():
                text = pa.array([t.translate(_ESCAPES) for t in text.to_pylist()], pa.string())
            return text

        self.out.write(sep.join(n.translate(_ESCAPES) for n in table.column_names) + "\n")
        self._text_lines(table, cells, sep)

    def _list(self, table: pa.Table) -> None:
        """sqlite3's list mode: a header, then values separated by `|` (NULL empty)."""
        self._separated(table, "|")

    def _tabs(self, table: pa.Table) -> None:
        """Tab-separated values with a header (NULL empty; tabs and newlines in values are
        escaped as \\t and \\n, so every row is one line)."""
        self._separated(table, "\t")

    # ---- table and box modes ---------------------------------------------------------------

    def _table(self, table: pa.Table, types: bool = True) -> None:
        n = table.num_rows
        limit = self.max_rows if self.max_rows > 0 else n
        if n > limit:
            head = (limit + 1) // 2
            tail = limit - head
            shown = [table.slice(0, head), table.slice(n - tail, tail)]
        else:
            shown = [table]
        console = self.console()
        t, dropped = self._draw(table, shown, types, console.width if self.terminal else None,
                                box.ROUNDED if self.terminal else box.SQUARE)
        if not self.terminal:  # off a terminal every column shows, however wide a cell is
            console = self._wide_enough(console, t)
        console.print(t)
        footer = f"{n} row{'s' if n != 1 else ''}"
        if n > limit:
            footer += f", {limit} shown"
        if dropped:
            footer += f" ({table.num_columns} columns, {table.num_columns - dropped} shown)"
        self.message(footer, style="dim")

    def _box(self, table: pa.Table, types: bool = True) -> None:
        """Every row and column in a square box (as sqlite3's box mode), whatever the
        terminal's width; the row count after it."""
        t, _ = self._draw(table, [table], types, None, box.SQUARE, max_cell=None)
        self._wide_enough(self.console(width=10_000), t).print(t)
        n = table.num_rows
        self.message(f"{n} row{'s' if n != 1 else ''}", style="dim")

    def _wide_enough(self, console: Console, t: Table) -> Console:
        """A console as wide as the table (a 12,000-character cell made rich squeeze the
        other columns of a piped table into '…')."""
        need = self.console(width=1 << 24).measure(t).maximum  # (measure stops at the width)
        return console if need <= console.width else self.console(width=need)

    def _draw(self, table: pa.Table, shown: list[pa.Table], types: bool, width: int | None,
              style: box.Box, max_cell: int | None = MAX_CELL) -> tuple[Table, int]:
        """The rich Table of `shown` (one part, or head and tail with a `·` row between) and
        how many columns were dropped to fit `width`."""
        names = table.column_names
        labels = [escape_controls(type_label(f.type)) if types else None for f in table.schema]
        cols = [[[format_value(v).translate(_ESCAPES) if v is not None else None
                  for v in _values(part.column(i), names[i])] for part in shown]
                for i in range(len(names))]
        names = [escape_controls(n) for n in names]  # (as shown, and measured to fit)
        keep = self._fit_columns(names, cols, width, labels)
        t = Table(box=style, header_style="bold", show_edge=True, pad_edge=True)
        numeric = [is_numeric(f.type) for f in table.schema]
        for i in keep:
            if i < 0:
                t.add_column("…", no_wrap=True)
                continue
            header = Text(names[i])
            if labels[i] is not None:
                header.append("\n")
                header.append(labels[i], style="not bold dim")
            t.add_column(header, justify="right" if numeric[i] else "left",
                         no_wrap=True, overflow="ellipsis",
                         max_width=max_cell if self.terminal else None)
        for p in range(len(shown)):
            if p == 1:
                t.add_row(*[Text("·", style="dim") for _ in keep])
            for r in range(shown[p].num_rows):
                t.add_row(*[Text("…") if i < 0 else
                            (Text(cols[i][p][r]) if cols[i][p][r] is not None
                             else Text("NULL", style="dim")) for i in keep])
        return t, len(names) - len([i for i in keep if i >= 0])

    @staticmethod
    def _fit_columns(names: list[str], cols: list[list[list[str | None]]],
                     width: int | None, labels: list[str | None] | None = None) -> list[int]:
        """Column indexes to show, -1 standing for the '…' of dropped middle columns: as many
        from both ends as fit in `width` (all of them when width is None)."""
        if width is None or not names:
            return list(range(len(names)))
        labels = labels or [None] * len(names)

        def natural(i: int) -> int:
            cells = [len(c) if c is not None else 4 for part in cols[i] for c in part]
            return min(MAX_CELL, max([len(names[i]), len(labels[i] or ""), *cells])) + 3

        widths = [natural(i) for i in range(len(names))]
        if 1 + sum(widths) <= width:
            return list(range(len(names)))
        left: list[int] = []
        right: list[int] = []
        used = 1 + 4  # outer border + the '…' column
        lo, hi = 0, len(names) - 1
        take_left = True
        while lo <= hi:
            # alternate ends; when one end's next column is too wide, the other may still fit
            for side in (take_left, not take_left):
                i = lo if side else hi
                if used + widths[i] <= width or not (left or right):
                    break
            else:
                break
            used += widths[i]
            if side:
                left.append(i)
                lo += 1
            else:
                right.insert(0, i)
                hi -= 1
            take_left = not side
        if lo <= hi:
            return [*left, -1, *right]
        return [*left, *right]


def render_to_string(table: pa.Table, mode: str, max_rows: int = 40) -> str:
    """A result as text (for tests and for callers that want a string)."""
    buf = io.StringIO()
    Renderer(buf, mode, max_rows, color=False).result(table)
    return buf.getvalue()
