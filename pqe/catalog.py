"""Tables pqe can read, their statistics, and the name -> table catalog.

A `TableProvider` describes data, it does not read it: the physical planner asks it for scan
partitions (files and row groups for Parquet, slices for in-memory tables) and the execution
layer reads each partition inside a task. Statistics come from Parquet footers (row counts,
min/max, null counts), read once per table and cached.
"""

from __future__ import annotations

import glob as globlib
import itertools
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from . import types as T
from .errors import CatalogError, UnknownTableError, suggest

_TOKENS = itertools.count(1)


@dataclass
class ColumnStats:
    min: Any = None
    max: Any = None
    null_count: int | None = None
    distinct_count: int | None = None
    bytes: int = 0  # uncompressed bytes in the files (for memory estimates)


@dataclass
class TableStats:
    num_rows: int | None
    total_bytes: int | None = None
    columns: dict[str, ColumnStats] = field(default_factory=dict)


class TableProvider:
    """Base class of table sources."""

    kind = "table"
    schema: pa.Schema  # engine types: text is pa.string()

    def __init__(self) -> None:
        # Identity for plan tokens: unique per provider object, stable within the session.
        self.token = f"{self.kind}{next(_TOKENS)}"

    def statistics(self) -> TableStats:
        return TableStats(None)

    def key_sample_unique(self, column: str) -> bool:
        """Whether an integer column looks like a unique key: no duplicate in a sample of its
        values (the planner builds joins once on such keys; a wrong guess costs time, never
        answers). False when unknown."""
        return False

    def describe(self) -> str:
        return self.kind


@dataclass(frozen=True)
class ScanUnit:
    """One readable piece of a Parquet table: a file fragment restricted to some row groups."""

    fragment: Any  # pyarrow.dataset.ParquetFileFragment (picklable)
    row_groups: tuple[int, ...]
    num_rows: int
    num_bytes: int

    def __repr__(self) -> str:  # deterministic, used in task tokens
        return f"{self.fragment.path}[{','.join(map(str, self.row_groups))}]"


def _all_distinct(values) -> bool:
    """At least two non-NULL values, none repeated (the sample test of `key_sample_unique`)."""
    import pyarrow.compute as pc

    values = values.drop_null()
    return len(values) > 1 and pc.count_distinct(values).as_py() == len(values)


def _stat_value(v: Any, t: pa.DataType) -> Any:
    """Keep statistics only for types the estimator understands (numbers and dates)."""
    if v is None:
        return None
    if T.is_numeric(t) or T.is_temporal(t):
        return v
    return None


def _unified_schema(dataset, fragments, path) -> pa.Schema:
    """One schema for every file of a table: identical files pass; files that differ are
    unified when that is safe (a missing column reads as NULL, int32 widens to int64, ...);
    otherwise the error names the two files and the column."""
    first = dataset.schema
    partition_fields = [f for f in first if f.name not in fragments[0].physical_schema.names]
    schemas = []
    for frag in fragments:
        try:
            schemas.append(frag.physical_schema)
        except (OSError, pa.ArrowException) as e:
            raise CatalogError(f"cannot read the Parquet footer of {frag.path}: "
                               f"{str(e).splitlines()[0]}") from e
    if all(sch.equals(schemas[0]) for sch in schemas[1:]):
        return first
    try:
        unified = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        base = schemas[0]
        for frag, sch in zip(fragments, schemas, strict=True):
            for f in sch:
                idx = base.get_field_index(f.name)
                if idx >= 0 and base.field(idx).type != f.type:
                    raise CatalogError(
                        f"files of {path!s} disagree on column '{f.name}': "
                        f"{fragments[0].path} has {base.field(idx).type}, {frag.path} has "
                        f"{f.type}") from e
        raise CatalogError(f"files of {path!s} have incompatible schemas: {e}") from e
    for f in partition_fields:
        if unified.get_field_index(f.name) < 0:
            unified = unified.append(f)
    return pa.schema([f.with_nullable(True) if any(sch.get_field_index(f.name) < 0 for sch in schemas)
                      else f for f in unified])


LOW_CARDINALITY = 1000


def _dictionary_ndv(chunk) -> int | None:
    """An upper bound on a text column chunk's distinct values from the size of its dictionary
    page (5+ bytes per entry: a 4-byte length and the characters; ~16 bytes of page header),
    or None when the chunk has no dictionary page."""
    if not chunk.has_dictionary_page or chunk.dictionary_page_offset is None:
        return None
    size = chunk.data_page_offset - chunk.dictionary_page_offset
    if size <= 0:
        return None
    return max(1, (size - 16) // 5)


class ParquetTable(TableProvider):
    """A Parquet file, directory (recursive, hive partitions), glob, or list of paths."""

    kind = "parquet"

    def __getstate__(self):
        # tasks carry the provider to workers: only what reading needs travels
        state = dict(self.__dict__)
        state.pop("_lock", None)
        state["_units"] = None
        state["_stats"] = None
        state.pop("_ranges", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __init__(self, path: str | os.PathLike | list, filesystem: Any = None):
        super().__init__()
        self.path = path
        try:
            sources = self._expand(path, filesystem)
            dataset = ds.dataset(sources, format="parquet", filesystem=filesystem,
                                 partitioning="hive", exclude_invalid_files=False)
        except CatalogError:
            raise
        except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
            raise CatalogError(f"cannot open Parquet data at {path!s}: {str(e).splitlines()[0]}") from e
        fragments = list(dataset.get_fragments())
        if not fragments:
            raise CatalogError(f"no Parquet files found at {path!s}")
        self.physical_schema = _unified_schema(dataset, fragments, path)
        self.schema = T.normalize_schema(self.physical_schema)
        # The dataset is reopened with engine types: reading text as `string` instead of the
        # `string_view` tpchgen-cli writes is ~5x faster and every kernel supports it.
        self.dataset = ds.dataset(sources, format="parquet", filesystem=filesystem,
                                  partitioning="hive", schema=self.schema)
        self._lock = threading.Lock()
        self._units: list[ScanUnit] | None = None
        self._stats: TableStats | None = None

    @staticmethod
    def _expand(path: Any, filesystem: Any):
        if isinstance(path, (list, tuple)):
            return [os.fspath(p) for p in path]
        text = os.fspath(path)
        if filesystem is None and "://" not in text:
            if any(ch in text for ch in "*?["):
                files = sorted(globlib.glob(text, recursive=True))
                if not files:
                    raise CatalogError(f"no files match {text!r}")
                return files
            if not os.path.exists(text):
                raise CatalogError(f"no such file or directory: {text!r}")
        return text

    def describe(self) -> str:
        return f"parquet:{self.path}"

    def units(self) -> list[ScanUnit]:
        """Every row group of every file, in file order (cached)."""
        with self._lock:
            if self._units is None:
                units = []
                for frag in self.dataset.get_fragments():
                    md = frag.metadata
                    for i in range(md.num_row_groups):
                        rg = md.row_group(i)
                        units.append(ScanUnit(frag, (i,), rg.num_rows, rg.total_byte_size))
                self._units = units
            return self._units

    def unit_ranges(self, column: str) -> dict | None:
        """ScanUnit -> (min, max) of an integer or date column from row-group statistics
        (None for units without them); None when the column has no statistics at all."""
        with self._lock:
            cache = self.__dict__.setdefault("_ranges", {})
            if column in cache:
                return cache[column]
        out: dict = {}
        found = False
        for u in self.units():
            md = u.fragment.metadata
            idx = md.schema.to_arrow_schema().get_field_index(column)
            rng = None
            if idx >= 0:
                lo = hi = None
                for r in u.row_groups:
                    st = md.row_group(r).column(idx).statistics
                    if st is None or not st.has_min_max:
                        lo = None
                        break
                    lo = st.min if lo is None else min(lo, st.min)
                    hi = st.max if hi is None else max(hi, st.max)
                if lo is not None:
                    rng = (lo, hi)
                    found = True
            out[u] = rng
        result = out if found else None
        with self._lock:
            self.__dict__["_ranges"][column] = result
        return result

    def key_sample_unique(self, column: str) -> bool:
        """No duplicates among the column's values in the first row group (one column chunk
        read, cached). A foreign key stored in key order (lineitem's orderkey) repeats within
        any row group; random ones collide in a sample of this size."""
        with self._lock:
            cache = self.__dict__.setdefault("_unique", {})
            if column in cache:
                return cache[column]
        result = False
        if column in self.schema.names and T.is_integer(self.schema.field(column).type):
            units = self.units()
            if units:
                u = units[0]
                try:
                    t = u.fragment.subset(row_group_ids=[u.row_groups[0]]).to_table(columns=[column])
                    result = _all_distinct(t.column(0))
                except (OSError, pa.ArrowException):
                    result = False
        with self._lock:
            self.__dict__["_unique"][column] = result
        return result

    def statistics(self) -> TableStats:
        with self._lock:
            if self._stats is not None:
                return self._stats
        units = self.units()
        cols: dict[str, ColumnStats] = {}
        rows = 0
        total = 0
        names = self.schema.names
        for u in units:
            rows += u.num_rows
            total += u.num_bytes
        # min/max/null counts per column, merged over row groups
        dict_ndv: dict[str, int] = {}
        for frag in self.dataset.get_fragments():
            md = frag.metadata
            phys = {md.schema.column(i).name: i for i in range(md.num_columns)}
            for name in names:
                if name not in phys:
                    continue
                t = self.schema.field(name).type
                cs = cols.setdefault(name, ColumnStats(null_count=0))
                low_card = T.is_text(t)
                for r in range(md.num_row_groups):
                    chunk = md.row_group(r).column(phys[name])
                    cs.bytes += chunk.total_uncompressed_size
                    if low_card:
                        est = _dictionary_ndv(chunk)
                        if est is None:
                            low_card = False
                        else:
                            dict_ndv[name] = max(dict_ndv.get(name, 0), est)
                    st = chunk.statistics
                    if st is None:
                        cs.null_count = None
                        continue
                    if cs.null_count is not None:
                        cs.null_count += st.null_count or 0
                    if st.has_min_max:
                        lo, hi = _stat_value(st.min, t), _stat_value(st.max, t)
                        if lo is not None:
                            cs.min = lo if cs.min is None else min(cs.min, lo)
                        if hi is not None:
                            cs.max = hi if cs.max is None else max(cs.max, hi)
        for name, ndv in dict_ndv.items():
            if ndv <= LOW_CARDINALITY and cols.get(name) is not None:
                cols[name].distinct_count = ndv
        stats = TableStats(rows, total, cols)
        with self._lock:
            self._stats = stats
        return stats


class CsvTable(TableProvider):
    """CSV file(s): one partition per file. `schema` maps column names to types (others are
    inferred); empty fields are NULL."""

    kind = "csv"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_units"] = None
        return state

    def __init__(self, path, schema: dict | None = None, delimiter: str = ",",
                 header: bool = True, filesystem: Any = None):
        import pyarrow.csv as pcsv

        super().__init__()
        self.path = path
        types = {k: T.parse_type(v) for k, v in (schema or {}).items()}
        fmt = ds.CsvFileFormat(
            parse_options=pcsv.ParseOptions(delimiter=delimiter),
            read_options=pcsv.ReadOptions(autogenerate_column_names=not header),
            convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=True))
        try:
            sources = ParquetTable._expand(path, filesystem)
            dataset = ds.dataset(sources, format=fmt, filesystem=filesystem)
        except CatalogError:
            raise
        except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
            raise CatalogError(f"cannot read CSV data at {path!s}: {str(e).splitlines()[0]}") from e
        unknown = set(types) - set(dataset.schema.names)
        if unknown:
            raise CatalogError(f"schema names columns not in {path!s}: {sorted(unknown)}")
        self.physical_schema = dataset.schema
        self.schema = T.normalize_schema(dataset.schema)
        self.dataset = dataset if self.schema == dataset.schema else ds.dataset(
            sources, format=fmt, filesystem=filesystem, schema=self.schema)
        self._units: list[ScanUnit] | None = None

    def describe(self) -> str:
        return f"csv:{self.path}"

    def units(self) -> list[ScanUnit]:
        if self._units is None:
            units = []
            for frag in self.dataset.get_fragments():
                size = os.path.getsize(frag.path) if os.path.exists(frag.path) else 1 << 20
                units.append(ScanUnit(frag, (), max(1, size // 64), size))
            self._units = units
        return self._units

    def statistics(self) -> TableStats:
        units = self.units()
        return TableStats(sum(u.num_rows for u in units), sum(u.num_bytes for u in units))


class MemoryTable(TableProvider):
    """An Arrow table held in memory (never modified: text is normalized per partition).
    Its data enters a task graph once, as a graph key, which scan tasks depend on."""

    kind = "memory"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["table"] = None  # the data travels in the graph, not with every task
        return state

    def __init__(self, table: pa.Table, primary_key: tuple[str, ...] = (),
                 unique: tuple[tuple[str, ...], ...] = ()):
        super().__init__()
        self.table = table
        self.schema = T.normalize_schema(table.schema)
        self._stats: TableStats | None = None
        # constraints of a table created in SQL, enforced by the session's writes
        self.primary_key = tuple(primary_key)
        self.unique = tuple(tuple(k) for k in unique)

    def with_table(self, table: pa.Table) -> MemoryTable:
        """The next version of this table: new rows, the same constraints."""
        return MemoryTable(table, self.primary_key, self.unique)

    def describe(self) -> str:
        return f"memory:{self.table.num_rows} rows"

    # exact distinct counts up to this many rows (cheap next to any query over the table)
    EXACT_NDV_ROWS = 1_000_000

    def statistics(self) -> TableStats:
        if self._stats is None:
            self._stats = self._compute_stats()
        return self._stats

    def key_sample_unique(self, column: str) -> bool:
        cache = self.__dict__.setdefault("_unique", {})
        if column not in cache:
            ok = column in self.table.column_names and T.is_integer(self.schema.field(column).type)
            cache[column] = ok and _all_distinct(self.table.column(column).slice(0, self.EXACT_NDV_ROWS))
        return cache[column]

    def _compute_stats(self) -> TableStats:
        import pyarrow.compute as pc

        t = self.table
        cols: dict[str, ColumnStats] = {}
        for f, col in zip(t.schema, t.columns, strict=True):
            typ = T.normalize(f.type)
            cs = ColumnStats(null_count=col.null_count, bytes=col.nbytes)
            try:
                if T.is_numeric(typ) or T.is_temporal(typ):
                    mm = pc.min_max(col)
                    cs.min, cs.max = mm["min"].as_py(), mm["max"].as_py()
                if t.num_rows <= self.EXACT_NDV_ROWS:
                    cs.distinct_count = pc.count_distinct(col, mode="only_valid").as_py()
            except (pa.ArrowException, TypeError, ValueError):
                pass  # statistics only steer plans
            cols[f.name] = cs
        return TableStats(t.num_rows, t.nbytes, cols)


class DaskTable(TableProvider):
    """A dask DataFrame: each of its partitions is one pqe partition (read inside the task
    graph, never collected first)."""

    kind = "dask"

    def __init__(self, ddf):
        super().__init__()
        self.ddf = ddf
        try:
            meta = pa.Schema.from_pandas(ddf._meta, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise CatalogError(f"cannot map the dask DataFrame's columns to Arrow: {e}") from e
        self.schema = T.normalize_schema(pa.schema([pa.field(f.name, f.type) for f in meta]))

    def describe(self) -> str:
        return f"dask:{self.ddf.npartitions} partitions"

    def statistics(self) -> TableStats:
        return TableStats(self.ddf.npartitions * 100_000)


class CatalogSnapshot:
    """The catalog as it was at one moment: what one statement binds against, so every table
    a statement reads is the version of the same moment (writers replace entries, never
    change them)."""

    def __init__(self, tables: dict[str, Any]) -> None:
        self._tables = tables

    def find(self, name: str, exact: bool = False) -> str | None:
        """The stored name matching `name` (exactly, or case-insensitively), or None."""
        if name in self._tables:
            return name
        if exact:
            return None
        low = name.lower()
        hits = [k for k in self._tables if k.lower() == low]
        return hits[0] if len(hits) == 1 else None

    def lookup(self, name: str, exact: bool = False) -> tuple[str, Any]:
        key = self.find(name, exact)
        if key is None:
            raise UnknownTableError(f"table '{name}' does not exist{suggest(name, self._tables)}")
        return key, self._tables[key]

    def names(self) -> list[str]:
        return sorted(self._tables)

    def get(self, key: str) -> Any:
        return self._tables.get(key)


class Catalog:
    """Name -> table provider or view. Unquoted names match case-insensitively."""

    def __init__(self) -> None:
        self._tables: dict[str, Any] = {}
        self._lock = threading.RLock()

    def frozen(self) -> CatalogSnapshot:
        """A consistent snapshot for binding one statement."""
        with self._lock:
            return CatalogSnapshot(dict(self._tables))

    def register(self, name: str, provider: Any, replace: bool = True) -> None:
        if not isinstance(name, str) or not name:
            raise CatalogError(f"table name must be a non-empty string, got {name!r}")
        with self._lock:
            existing = self._find(name, exact=True)
            if existing is not None:
                if not replace:
                    raise CatalogError(f"table {name!r} already exists")
                del self._tables[existing]
            self._tables[name] = provider

    def drop(self, name: str, exact: bool = False) -> bool:
        with self._lock:
            key = self._find(name, exact)
            if key is None:
                return False
            del self._tables[key]
            return True

    def find(self, name: str, exact: bool = False) -> str | None:
        """The stored name matching `name` (exactly, or case-insensitively), or None."""
        with self._lock:
            return self._find(name, exact)

    def _find(self, name: str, exact: bool) -> str | None:
        if name in self._tables:
            return name
        if exact:
            return None
        low = name.lower()
        hits = [k for k in self._tables if k.lower() == low]
        return hits[0] if len(hits) == 1 else None

    def lookup(self, name: str, exact: bool = False) -> tuple[str, Any]:
        with self._lock:
            key = self._find(name, exact)
            if key is None:
                raise UnknownTableError(
                    f"table '{name}' does not exist{suggest(name, self._tables)}")
            return key, self._tables[key]

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._tables)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._tables)
