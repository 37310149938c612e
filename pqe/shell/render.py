"""Printing results: a rich box table for people, csv/json/markdown text for pipes.

Table mode keeps results readable on a terminal: long results show their first and last rows
with a footer "N rows, M shown", and tables wider than the terminal drop middle columns (as
DuckDB's CLI does) instead of wrapping every cell into a narrow column. The text modes print
every row and column, with no colours or boxes, so their output can be parsed.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import io
import json
import math
from collections.abc import Iterator
from typing import Any, TextIO

import pyarrow as pa
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

MODES = ("table", "csv", "json", "markdown")
MAX_CELL = 48  # widest a column gets in table mode before its cells are cut with an ellipsis
_ESCAPES = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def format_value(v: Any, null: str = "NULL") -> str:
    """One value as text, the same in every mode (except how NULL is spelled)."""
    if v is None:
        return null
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
        return repr(v) if math.isfinite(v) else "null"
    if isinstance(v, decimal.Decimal):
        return format(v, "f") if v.is_finite() else "null"
    if isinstance(v, list):
        return "[" + ",".join(_json_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{_json_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    return json.dumps(format_value(v), ensure_ascii=False)


def _rows(table: pa.Table, batch_rows: int = 8192) -> Iterator[list[Any]]:
    """Rows as lists, a batch at a time, so big results are not all turned into Python at once."""
    names = table.column_names
    for batch in table.to_batches(max_chunksize=batch_rows):
        columns = [batch.column(i).to_pylist() for i in range(len(names))]
        yield from (list(r) for r in zip(*columns, strict=True))


class Renderer:
    """Prints results and messages to `out` in one of MODES."""

    def __init__(self, out: TextIO, mode: str = "table", max_rows: int = 40,
                 color: bool | None = None):
        self.out = out
        self.mode = mode
        self.max_rows = max_rows
        self.terminal = out.isatty() if color is None else color

    def console(self, width: int | None = None) -> Console:
        if self.terminal:
            return Console(file=self.out, highlight=False, soft_wrap=False)
        return Console(file=self.out, color_system=None, force_terminal=False, highlight=False,
                       width=width or 10_000, soft_wrap=False)

    def message(self, text: str, style: str | None = None) -> None:
        """A line for the user (footer, timer, notices): styled only on a terminal."""
        if self.terminal and style:
            self.console().print(Text(text, style=style))
        else:
            self.out.write(text + "\n")
        self.out.flush()

    def lines(self, lines: list[str]) -> None:
        """Plain text such as a query plan: printed as is in table mode, as rows otherwise."""
        if self.mode == "table":
            self.out.write("\n".join(lines) + "\n")
            self.out.flush()
        else:
            self.result(pa.table({"plan": lines}))

    def result(self, table: pa.Table) -> None:
        {"table": self._table, "csv": self._csv, "json": self._json,
         "markdown": self._markdown}[self.mode](table)
        self.out.flush()

    # ---- text modes ------------------------------------------------------------------------

    def _csv(self, table: pa.Table) -> None:
        w = csv.writer(self.out, lineterminator="\n")
        w.writerow(table.column_names)
        for row in _rows(table):
            w.writerow([format_value(v, null="") for v in row])

    def _json(self, table: pa.Table) -> None:
        names = [json.dumps(n, ensure_ascii=False) for n in table.column_names]
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

    # ---- table mode ------------------------------------------------------------------------

    def _table(self, table: pa.Table) -> None:
        n = table.num_rows
        limit = self.max_rows if self.max_rows > 0 else n
        if n > limit:
            head = (limit + 1) // 2
            tail = limit - head
            shown = [table.slice(0, head), table.slice(n - tail, tail)]
        else:
            shown = [table]
        names = table.column_names
        cols = [[[format_value(v).translate(_ESCAPES) if v is not None else None
                  for v in part.column(i).to_pylist()] for part in shown]
                for i in range(len(names))]
        console = self.console()
        keep = self._fit_columns(names, cols, console.width if self.terminal else None)

        t = Table(box=box.ROUNDED if self.terminal else box.SQUARE, header_style="bold",
                  show_edge=True, pad_edge=True)
        numeric = [is_numeric(f.type) for f in table.schema]
        for i in keep:
            if i < 0:
                t.add_column("…", no_wrap=True)
                continue
            t.add_column(Text(names[i]), justify="right" if numeric[i] else "left",
                         no_wrap=True, overflow="ellipsis",
                         max_width=MAX_CELL if self.terminal else None)
        for p in range(len(shown)):
            if p == 1:
                t.add_row(*[Text("·", style="dim") for _ in keep])
            for r in range(shown[p].num_rows):
                t.add_row(*[Text("…") if i < 0 else
                            (Text(cols[i][p][r]) if cols[i][p][r] is not None
                             else Text("NULL", style="dim")) for i in keep])
        console.print(t)
        footer = f"{n} row{'s' if n != 1 else ''}"
        if n > limit:
            footer += f", {limit} shown"
        hidden = len(names) - len([i for i in keep if i >= 0])
        if hidden:
            footer += f" ({len(names)} columns, {len(names) - hidden} shown)"
        self.message(footer, style="dim")

    @staticmethod
    def _fit_columns(names: list[str], cols: list[list[list[str | None]]],
                     width: int | None) -> list[int]:
        """Column indexes to show, -1 standing for the '…' of dropped middle columns: as many
        from both ends as fit in `width` (all of them when width is None)."""
        if width is None or not names:
            return list(range(len(names)))

        def natural(i: int) -> int:
            cells = [len(c) if c is not None else 4 for part in cols[i] for c in part]
            return min(MAX_CELL, max([len(names[i]), *cells])) + 3

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
