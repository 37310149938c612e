"""Tables pqe can read, their statistics, and the name -> table catalog.

A `TableProvider` describes data, it does not read it: the physical planner asks it for scan
partitions (files and row groups for Parquet, slices for in-memory tables) and the execution
layer reads each partition inside a task. Statistics come from Parquet footers (row counts,
min/max, null counts), read once per table and cached.
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import math
import os
import pickle
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from . import access
from . import types as T
from .errors import CatalogError, Error, UnknownTableError, UnsupportedError, suggest
from .filesystems import (
    LOCAL,
    WEAK,
    FileInfo,
    FileSystemSpec,
    _first_line,
    glob_base,
    list_files,
    resolve,
    source_kind,
)

_TOKENS = itertools.count(1)
# Tokens name a table's data and tasks on a dask cluster, where names are global: two client
# processes (or a process and its fork) counting from 1 gave `memory1` to different tables,
# and the scheduler handed one client's data to the other's query (sum 6 for 600). A random
# part per process keeps them apart.
_PROCESS = os.urandom(6).hex()


def unreadable_columns(names: list[str], what: str, fix: str) -> str | None:
    """Why pqe cannot query a table with these column names, or None: a table without
    columns, or with one name twice (a scan reads columns by name). `what` names the table
    in the message and `fix` says how to mend it. One rule for SQL and the DataFrame API."""
    if not names:
        return f"{what} has no columns; pqe cannot query a table without columns"
    seen: set[str] = set()
    for n in names:
        if n in seen:
            return (f"{what} has more than one column named {n!r}; pqe cannot read a table "
                    f"with repeated column names ({fix})")
        seen.add(n)
    return None


def _new_process_token() -> None:
    global _PROCESS
    _PROCESS = os.urandom(6).hex()


os.register_at_fork(after_in_child=_new_process_token)


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
        self.token = f"{self.kind}{next(_TOKENS)}-{_PROCESS}"

    def statistics(self) -> TableStats:
        return TableStats(None)

    def key_sample_unique(self, column: str) -> bool:
        """Whether an integer column looks like a unique key: no duplicate in a sample of its
        values (the planner builds joins once on such keys; a wrong guess costs time, never
        answers). False when unknown."""
        return self.keys_sample_unique((column,))

    def keys_sample_unique(self, columns: tuple[str, ...]) -> bool:
        """Whether a combination of integer columns looks like a unique key (partsupp's
        (partkey, suppkey)): no duplicate combination in a sample. Steers plans only. False
        when unknown."""
        return False

    def sample_values(self, column: str):
        """Some of a text column's values (a pyarrow Array, cached), for estimating how many
        rows a pattern keeps; None when there is no cheap sample."""
        return None

    def describe(self) -> str:
        return self.kind


@dataclass(frozen=True)
class ScanUnit:
    """One readable piece of a file table: some row groups of one Parquet file (or a whole CSV
    file). Plain data: tasks carry it and open the file only when they run (kernels.scan), so
    unpickling one (on the dask scheduler, say) never touches the file system."""

    path: str  # absolute local path, or a URL (s3://bucket/key) read through `fs`
    row_groups: tuple[int, ...]
    num_rows: int
    num_bytes: int
    file_size: int = 0
    version: str = ""  # short hash of the file's version when planned (size, mtime, etag)
    partition: tuple[tuple[str, Any], ...] = ()  # hive partition values, (name, value) pairs
    fs: FileSystemSpec = LOCAL

    def __repr__(self) -> str:  # deterministic, used in task tokens: a changed file, new keys
        return f"{self.path}@{self.version}[{','.join(map(str, self.row_groups))}]"


def _top_level_leaves(f: _File) -> dict[str, int]:
    """A Parquet file's top-level columns of one leaf (not nested) -> that leaf's index among
    its column chunks, whose statistics are the column's. A leaf's own name is no key: a
    STRUCT's field `s.k`, a MAP's `key` or a LIST's `element` stored before a column `k`,
    `key` or `element` lent it their statistics (a SUM's overflow bound, a scan taken as
    grouped, row groups a join pruned: wrong answers). A name held twice has none."""
    schema = f.schema
    if schema is None:
        try:
            schema = f.metadata.schema.to_arrow_schema()
        except (pa.ArrowException, ValueError):  # (no statistics then, not a failed query)
            return {}
    out: dict[str, int] = {}
    twice: set[str] = set()
    leaf = 0
    for field in schema:
        n = _leaf_count(field.type)
        if n == 1 and not T.is_nested_layout(field.type):
            if field.name in out:
                twice.add(field.name)
            out[field.name] = leaf
        leaf += n
    for name in twice:
        del out[name]
    return out


def _leaf_count(t: pa.DataType) -> int:
    """How many Parquet leaf columns (column chunks) an Arrow type is stored as."""
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return _leaf_count(t.value_type)
    return 1


def _all_distinct_rows(table) -> bool:
    """At least two rows without NULLs, no combination of their values repeated (the sample
    test of `keys_sample_unique`, over integer columns). The columns' values, less each one's
    minimum, make one int64 key in mixed radix when their spans' product fits: a key of a
    narrow range is marked in an array of flags, a wider one sorted for equal neighbours.
    Grouping by the columns took 14 ms for two key columns of TPC-DS's first
    store_sales row group and 30 ms for customer_demographics' 960k keys (the first
    planning of the 99 queries checks 82 samples, 1.4 s of it)."""
    import numpy as np
    import pyarrow.compute as pc

    table = table.drop_null()
    n = table.num_rows
    if n <= 1:
        return False
    key, spans = None, 1
    for col in table.columns:
        try:
            v = pc.cast(col, pa.int64()).to_numpy()
        except pa.ArrowInvalid:  # (a UBIGINT past int64)
            key = None
            break
        lo, hi = int(v.min()), int(v.max())
        spans *= hi - lo + 1
        if spans >= 1 << 62:
            key = None
            break
        key = v - lo if key is None else key * (hi - lo + 1) + (v - lo)
    if key is not None:
        if spans < n:
            return False  # (more rows than values they can take)
        if spans <= 8 * n:  # a mark per value: no hashing (TPC-DS's 960k demographics keys)
            marks = np.zeros(spans, dtype=bool)
            marks[key] = True
            return int(np.count_nonzero(marks)) == n
        ordered = np.sort(key)  # (numpy's sort: 2 ms where Arrow's count_distinct took 20)
        return not bool(np.any(ordered[1:] == ordered[:-1]))
    return table.group_by(table.column_names).aggregate([]).num_rows == n


def _min_max(s) -> tuple[Any, Any] | None:
    """A column chunk's statistics' (min, max) as Python values, or None where it has none or
    Python cannot hold them (a DATE or TIMESTAMP past year 9999: pyarrow raises; planning a
    query over such a file failed with an InternalError)."""
    if s is None or not s.has_min_max:
        return None
    try:
        return s.min, s.max
    except (OverflowError, ValueError):
        return None


def _stat_value(v: Any, t: pa.DataType) -> Any:
    """Keep statistics only for types the estimator understands (numbers and dates)."""
    if v is None:
        return None
    if T.is_numeric(t) or T.is_temporal(t):
        return v
    return None


def _version_token(version: tuple) -> str:
    # "" for a weak version: the scan parses such a file's footer on each read instead of
    # keeping it under a version that does not tell a rewrite apart (kernels.scan._fragment)
    if WEAK in version:
        return ""
    return hashlib.sha1(repr(version).encode()).hexdigest()[:10]


@dataclass
class _File:
    """A data file as the client knows it: listing info, and for Parquet its footer (read once
    per file version) as a fragment used for planning only (never sent to tasks)."""

    url: str
    info: FileInfo
    partition: tuple[tuple[str, Any], ...] = ()
    fragment: Any = None  # pyarrow.dataset.ParquetFileFragment with its metadata loaded
    metadata: Any = None  # pyarrow.parquet.FileMetaData
    schema: pa.Schema | None = None  # the file's own Arrow schema


_PRUNED_KEPT = 256  # filter expressions whose matching row groups a snapshot remembers


class _Snapshot:
    """The files of a table at one validation, with what is derived from them (units,
    statistics, unit ranges, key samples, dictionary NDV). A change of files makes a new
    snapshot, so no derived value outlives the files it came from."""

    def __init__(self, files: list[_File]) -> None:
        self.files = files
        self.listing = tuple((f.url, f.info.version) for f in files)
        self.units: list[ScanUnit] | None = None
        self.stats: TableStats | None = None
        self.ranges: dict[str, Any] = {}
        self.unique: dict[tuple[str, ...], bool] = {}
        self.samples: dict[str, Any] = {}
        self.pruned: dict[bytes, dict[str, set[int] | None]] = {}


def _holds(wide: pa.DataType, narrow: pa.DataType) -> bool:
    """Whether every value of the number type `narrow` is a value of `wide` (a float holds
    any number, approximately, as in DuckDB's union of BIGINT and DOUBLE). Types other than
    numbers: as pyarrow promoted them (timestamp units: a value the finer one cannot hold
    fails the read with an error, as in DuckDB)."""
    if wide == narrow or pa.types.is_floating(wide):
        return True
    if pa.types.is_integer(narrow):
        if pa.types.is_integer(wide):
            if pa.types.is_signed_integer(wide) == pa.types.is_signed_integer(narrow):
                return wide.bit_width >= narrow.bit_width
            return pa.types.is_signed_integer(wide) and wide.bit_width > narrow.bit_width
        return pa.types.is_decimal(wide) and wide.precision - wide.scale >= _int_digits(narrow)
    if pa.types.is_decimal(narrow):
        return pa.types.is_decimal(wide) and wide.scale >= narrow.scale and \
            wide.precision - wide.scale >= narrow.precision - narrow.scale
    # a float never fits an integer or DECIMAL; anything else (NULL, text, timestamps) as
    # pyarrow promoted it
    return not (pa.types.is_floating(narrow)
                and (pa.types.is_integer(wide) or pa.types.is_decimal(wide)))


def _int_digits(t: pa.DataType) -> int:
    """Decimal digits the values of an integer type need (uint64's 18446744073709551615: 20)."""
    return {8: 3, 16: 5, 32: 10, 64: 19}[t.bit_width] + \
        (t.bit_width == 64 and pa.types.is_unsigned_integer(t))


def _wider(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The narrowest type holding the values of both numbers `a` and `b` where pyarrow's
    promotion is too narrow (int8 with uint64 gave int64, int32 with DECIMAL(12,3) gave
    DECIMAL(12,3): registration succeeded, then a read failed or a value was cut): a signed
    integer wider than the unsigned one, else a DECIMAL (DuckDB: HUGEINT, DECIMAL(13,3));
    None when no type holds both (past DECIMAL(38))."""
    if _holds(a, b):
        return a
    if _holds(b, a):
        return b
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        u = a if pa.types.is_unsigned_integer(a) else b
        if u.bit_width < 64:
            return pa.int64() if u.bit_width == 32 else pa.int32() if u.bit_width == 16 \
                else pa.int16()
    if not all(pa.types.is_integer(t) or pa.types.is_decimal(t) for t in (a, b)):
        return None
    whole = max(_int_digits(t) if pa.types.is_integer(t) else t.precision - t.scale
                for t in (a, b))
    scale = max(0 if pa.types.is_integer(t) else t.scale for t in (a, b))
    return pa.decimal128(whole + scale, scale) if whole + scale <= 38 else None


def _widened(unified: pa.Schema, files: list[_File], schemas: list[pa.Schema], path) -> pa.Schema:
    """`unified` with each number column that some file's type does not fit (`_holds`)
    widened to one that holds every file's values, or a CatalogError naming the column and
    two files no type holds together."""
    fields = list(unified)
    for i, fld in enumerate(fields):
        if not (pa.types.is_integer(fld.type) or pa.types.is_decimal(fld.type)):
            continue
        typed = [(f, s.field(fld.name).type) for f, s in zip(files, schemas, strict=True)
                 if s.get_field_index(fld.name) >= 0]
        if all(_holds(fld.type, t) for _, t in typed):
            continue
        wide, first = typed[0][1], typed[0][0]
        for f, t in typed[1:]:
            w = _wider(wide, t)
            if w is None:
                raise CatalogError(
                    f"files of {path!s} disagree on column '{fld.name}': no type holds both "
                    f"{first.url}'s {wide} and {f.url}'s {t}")
            if w != wide:
                wide, first = w, f
        fields[i] = fld.with_type(wide)
    return pa.schema(fields)


def _plain_text(schema: pa.Schema) -> pa.Schema:
    """Text columns as plain text, for unifying files that store one column differently
    (dictionary-encoded in one file, as pandas writes a Categorical, plain or string_view
    in another: "files disagree" where DuckDB reads them); files that agree keep theirs."""
    def plain(t: pa.DataType) -> pa.DataType:
        if pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or
                                          pa.types.is_large_string(t.value_type) or
                                          pa.types.is_string_view(t.value_type)):
            t = t.value_type
        return pa.string() if pa.types.is_string_view(t) else t

    if not any(plain(f.type) != f.type for f in schema):
        return schema
    return pa.schema([f.with_type(plain(f.type)) for f in schema], metadata=schema.metadata)


# field metadata of a unified column some file stores as another view type (string_view
# beside string): Arrow's scanner evaluated a pushed-down filter on the file's own type
# ("no kernel matching input types (string, string_view)"), so filters on it run after the
# read (kernels.scan.extension_columns)
CONVERTED_VIEW = b"pqe_converted_view"


def _mark_converted_views(unified: pa.Schema, schemas: list[pa.Schema]) -> pa.Schema:
    fields = []
    for fld in unified:
        types = {s.field(fld.name).type for s in schemas if s.get_field_index(fld.name) >= 0}
        viewed = any(pa.types.is_string_view(t) or pa.types.is_binary_view(t) or (
            pa.types.is_dictionary(t) and (pa.types.is_string_view(t.value_type)
                                           or pa.types.is_binary_view(t.value_type)))
            for t in types)
        if viewed and types != {fld.type}:
            fld = fld.with_metadata({**(fld.metadata or {}), CONVERTED_VIEW: b"1"})
        fields.append(fld)
    return pa.schema(fields, metadata=unified.metadata)


def _unified_schema(files: list[_File], path, partition_fields: list[pa.Field]) -> pa.Schema:
    """One schema for every file of a table: identical files pass; files that differ are
    unified when that is safe (a missing column reads as NULL, int32 widens to int64, int8
    and uint64 meet in DECIMAL(20,0), ...); otherwise the error names the two files and the
    column."""
    schemas = [f.schema.remove_metadata() for f in files]
    if all(sch.equals(schemas[0]) for sch in schemas[1:]):
        unified = schemas[0]
        nullable: set[str] = set()
    else:
        try:
            unified = pa.unify_schemas([_plain_text(sch) for sch in schemas],
                                       promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            base = schemas[0]
            for f, sch in zip(files, schemas, strict=True):
                for fld in sch:
                    idx = base.get_field_index(fld.name)
                    if idx >= 0 and base.field(idx).type != fld.type:
                        raise CatalogError(
                            f"files of {path!s} disagree on column '{fld.name}': "
                            f"{files[0].url} has {base.field(idx).type}, {f.url} has "
                            f"{fld.type}") from e
            raise CatalogError(f"files of {path!s} have incompatible schemas: {e}") from e
        unified = _widened(unified, files, schemas, path)
        nullable = {fld.name for fld in unified if any(s.get_field_index(fld.name) < 0 for s in schemas)}
        unified = _mark_converted_views(unified, schemas)
    fields = [fld.with_nullable(True) if fld.name in nullable else fld for fld in unified]
    names = {fld.name for fld in fields}
    for part in partition_fields:
        if part.name in names:
            stored = unified.field(part.name).type
            if stored != part.type and T.common_type(part.type, stored) != stored:
                # the directory's value is the column's, read in the files' type: 1 and 2
                # under DATE files were 1970-01-02 and 1970-01-03, 5 under BOOLEAN True
                raise CatalogError(
                    f"{path!s}: hive partition column '{part.name}' is also stored in the "
                    f"files, as {T.type_name(T.normalize(stored))}, which its directory values "
                    f"({T.type_name(part.type)}) do not fit; rename one of them")
    out = pa.schema(fields + [f for f in partition_fields if f.name not in names])
    _refuse_case_variants(out, [list(sch) for sch in schemas], files, path)
    return out


def _refuse_case_variants(schema: pa.Schema, per_file: list[list[pa.Field]], files,
                          path, where: str = "column") -> None:
    """Names of one table (or struct) that differ only in case and that no file holds
    together: `Name` in one file, `name` in another (or a hive directory `K=2/` beside
    `k=1/`) became two columns, each NULL in the other's rows, and an unquoted `name` read
    one of them (DuckDB reads them as one column). pqe reads names case-insensitively, so
    it refuses them by name. Names one file holds together are two columns, as written.
    Struct fields are checked alike."""
    spellings: dict[str, list[str]] = {}
    for fld in schema:
        spellings.setdefault(fld.name.lower(), []).append(fld.name)
    for variants in spellings.values():
        if len(variants) > 1 and not any(
                set(variants) <= {f.name for f in fields} for fields in per_file):
            holders = [f"{variants[0]!r}"] + [
                f"{v!r}" + next((f" ({files[i].url})" for i, fields in enumerate(per_file)
                                 if any(f.name == v for f in fields)), " (a partition)")
                for v in variants[1:]]
            raise CatalogError(f"files of {path!s} name a {where} differently in case: "
                               f"{' and '.join(holders)}; pqe reads names without regard to "
                               f"case: rename them alike, or register the files as separate "
                               f"tables")
    for fld in schema:
        if pa.types.is_struct(fld.type):
            kids = [[k for f in fields if f.name == fld.name and pa.types.is_struct(f.type)
                     for k in f.type] for fields in per_file]
            _refuse_case_variants(pa.schema(list(fld.type)), kids, files, path,
                                  f"field of struct {fld.name!r}")


LOW_CARDINALITY = 1000


# bytes per dictionary entry of fixed-width Parquet types (FIXED_LEN_BYTE_ARRAY: its length)
_ENTRY_BYTES = {"INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}


def _dictionary_ndv(chunk, entry_bytes: int = 5) -> int | None:
    """An estimate of a column chunk's distinct values from the size of its dictionary page
    (`entry_bytes` per entry: text 5+, a 4-byte length and the characters; fixed-width types
    their width; ~16 bytes of page header), or None when the chunk has no dictionary page.
    The page may be compressed, so it can count fewer values than there are (TPC-H's int64
    decimals: 29 for l_quantity's 50), never many more."""
    if not chunk.has_dictionary_page or chunk.dictionary_page_offset is None:
        return None
    size = chunk.data_page_offset - chunk.dictionary_page_offset
    if size <= 0:
        return None
    return max(1, (size - 16) // entry_bytes)


def _numeric_ndv(dtype: pa.DataType, lo, hi, per_group: int, widths: list[float]) -> int | None:
    """A decimal or float column's distinct values from its row groups' dictionaries
    (`per_group`: the most one row group's holds; `widths`: each row group's max - min) and
    its [lo, hi]. Integers and dates keep the width of their range as their count: it is
    what a join on them is estimated by (inventory's 261 weekly dates span 1,821 days, and a
    month of date_dim rows meets 4 of them, not 31), and on TPC-DS it was as good a count.

    A row group holds only its own slice of a clustered column (a fact table's dates: 211
    of catalog_sales' 1,830 sold dates each), so the count is scaled by how many row-group
    widths the whole range spans. The range of a decimal (in steps of its scale) bounds the
    count, and when the dictionaries count at least half of it the range is taken
    (compressed pages undercount); otherwise the dictionaries are the better guess
    (ca_gmt_offset, DECIMAL(5,2) in [-10, -5]: 6 values, a range of 501 steps)."""
    num = _ordinal(lo), _ordinal(hi)
    if num[0] is None or num[1] is None:
        return None
    span = num[1] - num[0]
    mean = sum(widths) / len(widths) if widths else 0
    groups = max(1, len(widths))  # (each row group holds at most per_group of the values)
    if span <= 0:
        est = 1
    else:
        est = per_group * min(groups, max(1.0, span / mean) if mean > 0 else groups)
    if not pa.types.is_decimal(dtype):  # a float: no count of steps bounds it
        return int(est)
    whole = span * 10 ** dtype.scale + 1
    return int(min(whole, whole if 2 * est >= whole else est))


def _ordinal(v) -> float | None:
    """A statistic as a number; None for an infinite or NaN one (it bounds nothing)."""
    if v is None:
        return None
    if hasattr(v, "toordinal"):
        return float(v.toordinal())
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def partition_expression(fields: list[pa.Field], pairs: tuple[tuple[str, Any], ...]):
    """What a file's hive partition values guarantee, as a pyarrow.dataset expression (lets
    the reader fill partition columns and row-group pruning skip whole files); None if none."""
    types = {f.name: T.normalize(f.type) for f in fields}
    expr = None
    for name, value in pairs:
        e = (ds.field(name).is_null() if value is None
             else ds.field(name) == pa.scalar(value, types[name]))
        expr = e if expr is None else expr & e
    return expr


def _hive_pairs(rel: str) -> list[tuple[str, str | None]]:
    """key=value directory names of a file's path below its table directory."""
    from urllib.parse import unquote

    def text(part: str, seg: str) -> str:
        try:  # (the default replaced bytes that are not UTF-8 with U+FFFD: k=%FE and k=%FF
            # were one value)
            return unquote(part, errors="strict")
        except UnicodeDecodeError:
            raise CatalogError(f"hive partition directory {seg!r} (in {rel!r}): its "
                               f"%-escapes are not UTF-8 text") from None

    out = []
    for seg in rel.replace("\\", "/").split("/")[:-1]:
        if "=" in seg:
            k, v = seg.split("=", 1)
            v = text(v, seg)
            out.append((text(k, seg), None if v == _HIVE_NULL else v))
    return out


def _as_int(v: str) -> int | None:
    """A partition value as an integer when it reads back as the same text; None otherwise:
    `01`, `007`, `+1`, `1_000` are codes kept as text (DuckDB keeps them VARCHAR; as
    integers `k=01` and `k=1` were one group and `zip=01234` lost its zero)."""
    try:
        i = int(v)
    except ValueError:
        return None
    return i if str(i) == v and -(1 << 63) <= i < (1 << 63) else None


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _as_date(v: str) -> datetime.date | None:
    """A partition value as a DATE when it is one written as YYYY-MM-DD (`dt=2024-01-05`, as
    DuckDB reads it); None otherwise (`2024-1-5`, `2024-02-30` stay text)."""
    if not _ISO_DATE.fullmatch(v):
        return None
    try:
        return datetime.date.fromisoformat(v)
    except ValueError:
        return None


def _infer_partition_type(values: list[str | None]) -> pa.DataType:
    """int32 / int64 when every value is an integer written as one (`_as_int`), DATE when
    every value is a date written as YYYY-MM-DD (`_as_date`), else text. (The few directory
    names of a table, once at registration.)"""
    present = [v for v in values if v is not None]
    if not present:
        return pa.string()
    ints = [_as_int(v) for v in present]
    if None not in ints:
        if all(-(1 << 31) <= i < (1 << 31) for i in ints):
            return pa.int32()
        return pa.int64()
    if all(_as_date(v) is not None for v in present):
        return pa.date32()
    return pa.string()


def _as_partition_value(v: str | None, t: pa.DataType, url: str, name: str) -> Any:
    """A partition directory's value in the type registration inferred: a later directory
    whose value that type does not hold (`k=01` or `k=x` beside integers, `k=9999999999`
    beside int32 ones, `dt=x` beside dates) is refused, as a changed schema is."""
    if v is None:
        return v
    if pa.types.is_date(t):
        d = _as_date(v)
        if d is None:
            raise CatalogError(f"{url}: hive partition {name}={v!r} is not a date like the "
                               f"table's other partitions; register it again")
        return d
    if not pa.types.is_integer(t):
        return v
    i = _as_int(v)
    if i is None or (t.bit_width == 32 and not -(1 << 31) <= i < (1 << 31)):
        raise CatalogError(f"{url}: hive partition {name}={v!r} is not an {t} like the "
                           f"table's other partitions; register it again")
    return i


class FileTable(TableProvider):
    """Files listed from paths, directories or globs, locally or through fsspec / pyarrow
    filesystems. The listing and each file's version are validated when a query is planned
    (`refresh`): changed, added and deleted files are seen; what was derived from the old files
    is dropped. What travels in tasks is small: paths, schema, filesystem spec."""

    _format_name = "file"

    def __init__(self, path: Any, storage_options: dict | None = None,
                 filesystem: Any = None) -> None:
        super().__init__()
        self.path = path
        items = list(path) if isinstance(path, (list, tuple)) else [path]
        if not items:
            raise CatalogError("no paths given")
        for item in items:
            if not isinstance(item, (str, os.PathLike)):
                raise CatalogError(f"a path must be a string or an os.PathLike, got "
                                   f"{type(item).__name__}")
        # SQL text named these paths (read_csv('...'), FROM 'x.parquet'): the session's access
        # policy applies, before anything is opened, and to every file they expand to later
        self._policy = access.current()
        if self._policy is not None:
            if storage_options is not None or filesystem is not None:
                raise access.AccessError("storage options cannot come from SQL")
            for item in items:
                self._policy.check_source(item, f"read_{self.kind}")
        self.sources: list[tuple[str, str]] = []  # (kind, filesystem path)
        self.fs: FileSystemSpec = LOCAL
        for item in items:
            spec, p = resolve(item, storage_options, filesystem)
            if self.sources and spec != self.fs:
                raise CatalogError(f"files of one table must be on one filesystem: {item!s}")
            self.fs = spec
            self.sources.append((source_kind(spec, p), p))
        self._lock = threading.Lock()
        self._state: _Snapshot | None = None
        self.partition_fields: list[pa.Field] = []

    # tasks carry the provider to workers: only what reading needs travels
    _TASK_FIELDS = ("token", "path", "fs", "schema", "physical_schema", "partition_fields")

    def __getstate__(self):
        return {k: self.__dict__[k] for k in self._TASK_FIELDS + self._task_extra if k in self.__dict__}

    _task_extra: tuple[str, ...] = ()

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._state = None
        self._policy = None
        self.sources = []

    def describe(self) -> str:
        return f"{self.kind}:{self.path}"

    # ---- listing and validation -----------------------------------------------------------

    def _listing_note(self) -> str:
        return (" (only files inside the allowed paths are listed)"
                if self._policy is not None and self._policy.allowed_paths is not None else "")

    def _list(self) -> list[tuple[FileInfo, str | None]]:
        """(file, partition base directory or None) for every file of every source, now. A
        file two sources name is refused: DuckDB's read_parquet(['a', 'a']) reads it twice,
        pqe read it once, silently (each source lists a file once)."""
        out, seen = [], {}
        for kind, p in self.sources:
            base = p if kind == "dir" else glob_base(p) if kind == "glob" else None
            for info in list_files(self.fs, p, kind):
                if self._policy is not None and kind != "file":
                    # a file a glob or directory expanded to, outside the allowed paths
                    # (through a symlink): left out, as if absent. Refusing it named it, and
                    # told SQL which names exist where it may not look (`link/*/s.c*` vs
                    # `link/*/zz*`): the same "no files found" either way
                    try:
                        self._policy.check_listed(info.path, self.fs.url(info.path),
                                                  f"read_{self.kind}")
                    except access.AccessError:
                        continue
                elif self._policy is not None:
                    self._policy.check_listed(info.path, self.fs.url(info.path),
                                              f"read_{self.kind}")
                if info.path in seen:
                    raise CatalogError(
                        f"{self.fs.url(info.path)} is named twice (by {seen[info.path]!s} and "
                        f"{p!s}); name each file once")
                seen[info.path] = p
                out.append((info, base))
        return out

    def _snapshot(self) -> _Snapshot:
        st = self._state
        if st is None:
            if not self.sources:
                raise CatalogError(f"{self.describe()}: a task-side copy of a table cannot plan")
            self.refresh()
            st = self._state
        return st

    def refresh(self) -> None:
        """Re-list the files and compare versions with the cached ones (one stat or one object
        store listing per source): a changed file's footer is re-read, new files are read,
        deleted ones dropped, and the derived caches start over. Called when a query is
        planned (catalog lookup, physical scan planning)."""
        if not self.sources:
            return
        listed = self._list()
        with self._lock:
            old = self._state
            if old is not None and old.listing == tuple(
                    (self.fs.url(i.path), i.version) for i, _ in listed):
                return
            known = {f.url: f for f in old.files} if old is not None else {}
        files = self._load(listed, known)
        with self._lock:
            self._state = _Snapshot(files)

    def _load(self, listed, known: dict[str, _File]) -> list[_File]:
        """_File entries for the listed files, reusing cached ones whose version is unchanged."""
        files: list[_File] = []
        fresh: list[_File] = []
        raw_parts: list[list[tuple[str, str | None]]] = []
        for info, base in listed:
            url = self.fs.url(info.path)
            hit = known.get(url)
            if hit is not None and hit.info.version == info.version:
                files.append(hit)
                raw_parts.append([])
                continue
            rel = info.path[len(base.rstrip("/")):] if base and info.path.startswith(base.rstrip("/")) else ""
            f = _File(url, info)
            files.append(f)
            fresh.append(f)
            raw_parts.append(_hive_pairs(rel) if base else [])
        first = self._state is None and not known
        if first:
            self.partition_fields = self._partition_fields(raw_parts)
        types = {f.name: f.type for f in self.partition_fields}
        for f, pairs in zip(files, raw_parts, strict=True):
            new = [k for k, _ in pairs if k not in types]
            if new:
                # a key=value directory added since registration: its column would exist in
                # a fresh registration of the same path, here its values were dropped
                raise CatalogError(f"{f.url} is under partition key {new[0]!r}, which "
                                   f"{self.path!s} did not have when registered; register "
                                   f"it again")
            if pairs:
                f.partition = tuple((k, _as_partition_value(v, types[k], f.url, k))
                                    for k, v in pairs if k in types)
        self._read_footers(fresh)
        if first:
            self._set_schema(files)
        elif fresh:
            self._check_schema(files, fresh)
        return files

    def _partition_fields(self, raw_parts) -> list[pa.Field]:
        values: dict[str, list] = {}
        for pairs in raw_parts:
            for k, v in pairs:
                values.setdefault(k, []).append(v)
        return [pa.field(k, _infer_partition_type(vs)) for k, vs in values.items()]

    def _read_footers(self, files: list[_File]) -> None:
        pass

    def _set_schema(self, files: list[_File]) -> None:
        raise NotImplementedError

    def _check_schema(self, files: list[_File], fresh: list[_File]) -> None:
        """Refuse files added or changed (`fresh`) since registration that no longer fit the
        registered schema."""

    def files(self) -> list[str]:
        """The table's files now (paths or URLs)."""
        return [f.url for f in self._snapshot().files]

    def units(self) -> list[ScanUnit]:
        raise NotImplementedError

    def _unit(self, f: _File, row_groups: tuple[int, ...], rows: int, size: int) -> ScanUnit:
        return ScanUnit(f.url, row_groups, rows, size, f.info.size, _version_token(f.info.version),
                        f.partition, self.fs)


def _logical_types(schema: pa.Schema, metadata, url) -> pa.Schema:
    """A Parquet file's Arrow schema with the logical types pyarrow leaves as bytes when the
    writer stored no Arrow schema (DuckDB, Spark): a UUID column (FIXED_LEN_BYTE_ARRAY(16))
    as Arrow's UUID type, read as its canonical text like a pyarrow-written one (it came
    back as 16 raw bytes that compared with no text). A column of Parquet's INTERVAL
    (12 bytes: months, days, milliseconds) is refused by name: its bytes are no SQL value."""
    leaves = {}
    for i in range(metadata.num_columns):
        col = metadata.schema.column(i)
        leaves[col.path] = col
    for i, field in enumerate(schema):
        col = leaves.get(field.name)
        if col is None or not pa.types.is_fixed_size_binary(field.type):
            continue
        if col.converted_type == "INTERVAL":
            raise UnsupportedError(f"column {field.name!r} of {url} is a Parquet INTERVAL, "
                                   "which pqe does not read")
        if field.type.byte_width == 16 and col.logical_type.type == "UUID":
            schema = schema.set(i, pa.field(field.name, pa.uuid(), field.nullable,
                                            field.metadata))
    return schema


def _parquet_read_options(dict_columns: tuple[str, ...] = ()):
    """How every Parquet file is opened (footers and schema at registration, reads in
    tasks: one schema for both). INT96 timestamps (Spark's and Impala's default) are read in
    microseconds, as DuckDB reads them: in pyarrow's nanoseconds a value outside 1677-2262,
    such as Spark's 9999-12-31 "valid to" sentinel, wrapped silently (to 1816-03-29)."""
    return ds.ParquetReadOptions(dictionary_columns=list(dict_columns),
                                 coerce_int96_timestamp_unit="us")


class ParquetTable(FileTable):
    """A Parquet file, directory (recursive, hive partitions), glob, or list of paths; local, or
    a URL read through fsspec (s3://bucket/t/*.parquet with `storage_options`), or a path on
    `filesystem` (an fsspec or pyarrow filesystem)."""

    kind = "parquet"

    def __init__(self, path: str | os.PathLike | list, filesystem: Any = None,
                 storage_options: dict | None = None):
        try:
            super().__init__(path, storage_options, filesystem)
        except CatalogError:
            raise
        except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
            raise CatalogError(f"cannot open Parquet data at {path!s}: {_first_line(e)}") from e
        self.refresh()
        if not self._state.files:
            raise CatalogError(f"no Parquet files found at {path!s}{self._listing_note()}")

    def _read_footers(self, files: list[_File]) -> None:
        """Read the footers of new or changed files (in parallel: object stores answer slowly)."""
        if not files:
            return
        fmt = ds.ParquetFileFormat(read_options=_parquet_read_options())
        fs = self.fs.arrow_fs()

        def read(f: _File) -> None:
            try:
                frag = fmt.make_fragment(self.fs.fs_path(f.url), fs,
                                         partition_expression(self.partition_fields, f.partition),
                                         file_size=f.info.size)
                frag.ensure_complete_metadata()
                f.fragment, f.metadata = frag, frag.metadata
                f.schema = _logical_types(frag.physical_schema, frag.metadata, f.url)
            except (OSError, pa.ArrowException) as e:
                raise CatalogError(f"cannot read the Parquet footer of {f.url}: "
                                   f"{_first_line(e)}") from e
        if len(files) < 4:
            for f in files:
                read(f)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(16, len(files))) as pool:
            list(pool.map(read, files))

    def _set_schema(self, files: list[_File]) -> None:
        if not files:
            raise CatalogError(f"no Parquet files found at {self.path!s}{self._listing_note()}")
        self.physical_schema = _unified_schema(files, self.path, self.partition_fields)
        # Text is read as `string` (not the `string_view` tpchgen-cli writes): ~5x faster to
        # decode, and every kernel supports it.
        self.schema = T.normalize_schema(self.physical_schema)

    def _check_schema(self, files: list[_File], fresh: list[_File] = ()) -> None:
        """Files added or rewritten after registration must still fit the registered schema
        (queries were bound to it): same columns and types, up to NULL-ability."""
        if not files:
            return
        now = T.normalize_schema(_unified_schema(files, self.path, self.partition_fields))
        was = self.schema
        if now.names != was.names or now.types != was.types:
            changed = [f"{f.name} {f.type}" for f in now if was.get_field_index(f.name) < 0
                       or was.field(f.name).type != f.type]
            missing = [n for n in was.names if now.get_field_index(n) < 0]
            what = ", ".join(changed + [f"no {n}" for n in missing]) or "column order"
            raise CatalogError(f"the files of {self.path!s} changed schema since it was "
                               f"registered ({what}); register it again")

    def units(self) -> list[ScanUnit]:
        """Every row group of every file, in file order (cached per file version)."""
        st = self._snapshot()
        if st.units is None:
            units = []
            for f in st.files:
                md = f.metadata
                for i in range(md.num_row_groups):
                    rg = md.row_group(i)
                    units.append(self._unit(f, (i,), rg.num_rows, rg.total_byte_size))
            st.units = units
        return st.units

    def matching_row_groups(self, expr) -> dict[str, set[int] | None]:
        """Path -> ids of the row groups whose statistics (and hive partition values) do not
        prove `expr` (a pyarrow.dataset expression) false; None where that cannot be told.
        Remembered per snapshot by the expression's serialized form (its text is ambiguous:
        `a == 1` and `a == 1.0` print alike): Arrow derives each row group's statistics
        expression again on every call, ~4 ms for lineitem's 53 row groups (a tenth of
        planning the 22 TPC-H queries)."""
        st = self._snapshot()
        key = pickle.dumps(expr)
        found = st.pruned.get(key)
        if found is not None:
            return found
        out: dict[str, set[int] | None] = {}
        for f in st.files:
            try:
                sub = f.fragment.subset(filter=expr, schema=self.schema)
                out[f.url] = {rg.id for rg in sub.row_groups}
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OSError,
                    Error):
                # (also pqe's checked kernels, run on a row group's min = max: CAST('n/a' AS
                # INTEGER) failed the query where `kind = 'num'` drops that row first)
                out[f.url] = None
        if len(st.pruned) >= _PRUNED_KEPT:  # (a long session of ever new constants)
            st.pruned.clear()
        st.pruned[key] = out
        return out

    def _partition_names(self) -> set[str]:
        return {f.name for f in self.partition_fields}

    def unit_ranges(self, column: str) -> dict | None:
        """ScanUnit -> (min, max) of an integer or date column from row-group statistics
        (None for units without them); None when the column has no statistics at all."""
        st = self._snapshot()
        if column in st.ranges:
            return st.ranges[column]
        units = self.units()
        if column in self._partition_names():
            # a hive partition column: its unit's value, whatever a file stores under the
            # name (the directory's value is the column's, as pyarrow and DuckDB read it)
            out = {}
            for u in units:
                v = dict(u.partition).get(column)
                out[u] = (v, v) if isinstance(v, (int, datetime.date)) and \
                    not isinstance(v, bool) else None
            found = any(r is not None for r in out.values())
            st.ranges[column] = result = out if found else None
            return result
        columns: dict[str, tuple] = {}  # path -> (metadata, leaf index of the column or -1)
        for f in st.files:
            md = f.metadata
            columns[f.url] = (md, _top_level_leaves(f).get(column, -1))
        out: dict = {}
        found = False
        for u in units:
            md, idx = columns[u.path]
            rng = None
            if idx >= 0:
                lo = hi = None
                for r in u.row_groups:
                    mm = _min_max(md.row_group(r).column(idx).statistics)
                    if mm is None:
                        lo = None
                        break
                    lo = mm[0] if lo is None else min(lo, mm[0])
                    hi = mm[1] if hi is None else max(hi, mm[1])
                if lo is not None:
                    rng = (lo, hi)
                    found = True
            out[u] = rng
        st.ranges[column] = result = out if found else None
        return result

    def units_with_nulls(self, column: str) -> set:
        """The ScanUnits whose row groups may hold NULLs in `column` (a NULL count above 0,
        or none recorded). Ranges from min/max leave NULLs out: units of disjoint ranges
        can still share the NULL group."""
        st = self._snapshot()
        key = (column, "nulls")
        if key in st.ranges:
            return st.ranges[key]
        if column in self._partition_names():  # (its unit's value: NULL or not)
            out = {u for u in self.units() if dict(u.partition).get(column) is None}
            st.ranges[key] = out
            return out
        columns: dict[str, tuple] = {}  # path -> (metadata, leaf index of the column or -1)
        for f in st.files:
            md = f.metadata
            columns[f.url] = (md, _top_level_leaves(f).get(column, -1))
        out = set()
        for u in self.units():
            md, idx = columns[u.path]
            for r in u.row_groups:
                if idx < 0:  # (a file without the column: its rows read NULL there)
                    if md.row_group(r).num_rows:
                        out.add(u)
                        break
                    continue
                s = md.row_group(r).column(idx).statistics
                if s is None or not s.has_null_count or s.null_count > 0:
                    out.add(u)
                    break
        st.ranges[key] = out
        return out

    def keys_sample_unique(self, columns: tuple[str, ...]) -> bool:
        """No duplicate combination among the columns' values in the first row group (their
        column chunks read once per snapshot of the files). A foreign key stored in key order
        (lineitem's orderkey) repeats within any row group; random ones collide in a sample
        of this size."""
        st = self._snapshot()
        if columns in st.unique:
            return st.unique[columns]
        result = False
        if all(c in self.schema.names and T.is_integer(self.schema.field(c).type)
               for c in columns):
            first = next((f for f in st.files if f.metadata.num_row_groups), None)
            if first is not None and all(first.schema.get_field_index(c) >= 0 for c in columns):
                try:
                    t = first.fragment.subset(row_group_ids=[0]).to_table(columns=list(columns))
                    result = _all_distinct_rows(t)
                except (OSError, pa.ArrowException):
                    result = False
        st.unique[columns] = result
        return result

    SAMPLE_GROUPS = 3  # row groups read for a text column's sample: first, middle, last
    SAMPLE_VALUES = 16_384  # values kept from each

    def sample_values(self, column: str):
        """The first SAMPLE_VALUES values of a text column in the first, middle and last row
        groups (a column chunk each, read once per snapshot of the files)."""
        st = self._snapshot()
        if column in st.samples:
            return st.samples[column]
        result = None
        if column in self.schema.names and T.is_text(self.schema.field(column).type):
            groups = [(f, i) for f in st.files if f.schema.get_field_index(column) >= 0
                      for i in range(f.metadata.num_row_groups)]
            if groups:
                picks = sorted({0, len(groups) // 2, len(groups) - 1})[:self.SAMPLE_GROUPS]
                try:
                    # (cast before combining: dictionary chunks decode chunk by chunk, where
                    # combining them unified dictionaries, which Arrow refuses with a NULL)
                    parts = [groups[k][0].fragment.subset(row_group_ids=[groups[k][1]])
                             .to_table(columns=[column]).column(0)
                             .slice(0, self.SAMPLE_VALUES).cast(pa.large_string())
                             .combine_chunks() for k in picks]
                    result = pa.concat_arrays(parts)
                except (OSError, pa.ArrowException):
                    result = None
        st.samples[column] = result
        return result

    def statistics(self) -> TableStats:
        st = self._snapshot()
        if st.stats is not None:
            return st.stats
        units = self.units()
        cols: dict[str, ColumnStats] = {}
        rows = sum(u.num_rows for u in units)
        total = sum(u.num_bytes for u in units)
        names = self.schema.names
        partitioned = self._partition_names()
        # min/max/null counts per column, merged over row groups
        dict_ndv: dict[str, int] = {}
        widths: dict[str, list[float]] = {}  # numeric columns: each row group's max - min
        no_dict: set[str] = set()  # numeric columns some row group stores without a dictionary
        for f in st.files:
            md = f.metadata
            phys = _top_level_leaves(f)
            for name in names:
                if name in partitioned:
                    continue  # (a hive partition column: not what a file stores under it)
                if name not in phys:
                    continue
                t = self.schema.field(name).type
                cs = cols.setdefault(name, ColumnStats(null_count=0))
                low_card = T.is_text(t)
                entry = 5
                if not low_card and (pa.types.is_floating(t) or pa.types.is_decimal(t)):
                    pcol = md.schema.column(phys[name])
                    entry = _ENTRY_BYTES.get(pcol.physical_type, 0) if \
                        pcol.physical_type != "FIXED_LEN_BYTE_ARRAY" else (pcol.length or 0)
                    low_card = entry > 0 and name not in no_dict
                    if low_card:
                        widths.setdefault(name, [])
                for r in range(md.num_row_groups):
                    chunk = md.row_group(r).column(phys[name])
                    cs.bytes += chunk.total_uncompressed_size
                    if low_card:
                        est = _dictionary_ndv(chunk, entry)
                        if est is None:
                            low_card = False
                            no_dict.add(name)
                            dict_ndv.pop(name, None)
                        else:
                            dict_ndv[name] = max(dict_ndv.get(name, 0), est)
                    s = chunk.statistics
                    mm = _min_max(s)
                    if name in widths and name not in no_dict:
                        lo_hi = (_ordinal(_stat_value(mm[0], t)), _ordinal(_stat_value(mm[1], t))) \
                            if mm is not None else (None, None)
                        if lo_hi[0] is None or lo_hi[1] is None:
                            no_dict.add(name)  # a row group without a range: no estimate
                            dict_ndv.pop(name, None)
                        else:
                            widths[name].append(lo_hi[1] - lo_hi[0])
                    if s is None:
                        cs.null_count = None
                        continue
                    if cs.null_count is not None:
                        cs.null_count += s.null_count or 0
                    if mm is not None:
                        lo, hi = _stat_value(mm[0], t), _stat_value(mm[1], t)
                        if lo is not None:
                            cs.min = lo if cs.min is None else min(cs.min, lo)
                        if hi is not None:
                            cs.max = hi if cs.max is None else max(cs.max, hi)
        for name, ndv in dict_ndv.items():
            cs = cols.get(name)
            if cs is None or name in no_dict:
                continue
            if name in widths:  # numeric: scaled to the whole range (_numeric_ndv)
                ndv = _numeric_ndv(self.schema.field(name).type, cs.min, cs.max, ndv,
                                   widths[name])
            if ndv is not None and ndv <= LOW_CARDINALITY:
                cs.distinct_count = ndv
        st.stats = TableStats(rows, total, cols)
        return st.stats

    def file_format(self, dict_columns: tuple[str, ...] = ()):
        """The pyarrow.dataset format a task reads with (low-cardinality text as dictionaries).

        Local files are read without pre-buffering: pre_buffer first copies every column
        chunk into memory on the I/O threads, which coalesces the requests an object store
        answers slowly but on a local (page-cached) file only adds a copy: reading the
        columns TPC-H Q3 needs from half of lineitem took 0.108-0.128 CPU-seconds without it,
        0.138-0.164 with it."""
        return ds.ParquetFileFormat(
            read_options=_parquet_read_options(dict_columns),
            default_fragment_scan_options=ds.ParquetFragmentScanOptions(
                pre_buffer=not self.fs.is_local))


def _leading_zero(col) -> bool:
    """Whether a text column holds a number with a leading zero (`007`, `0123`, `00.5`: a
    code, which CSV inference keeps text, as DuckDB does)."""
    import pyarrow.compute as pc

    return bool(pc.any(pc.match_substring_regex(pc.utf8_trim_whitespace(col),
                                                r"^[+-]?0\d")).as_py())


# a tab separates the fields of these (compressed or not) unless a delimiter is given
_TAB_SUFFIXES = (".tsv", ".tab")
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zst", ".lz4")


# Arrow's CSV reader decompresses a file by its suffix as written: .gz, .bz2, .lz4, .zstd. The
# others DuckDB reads and pqe's COPY writes (.zst, and any suffix in capitals, .CSV.GZ) were
# read as text (a UnicodeDecodeError, or a one-column table of binary): pqe decompresses those
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".lz4": "lz4", ".zst": "zstd", ".zstd": "zstd"}
_ARROW_CODEC_SUFFIXES = (".gz", ".bz2", ".lz4", ".zstd")


def csv_codec(url: str) -> str | None:
    """The compression of a CSV file, from its suffix in any case (None: plain text)."""
    low = url.lower()
    return next((c for suffix, c in _CODECS.items() if low.endswith(suffix)), None)


def csv_source(fs, url: str) -> tuple[Any, Any]:
    """(source, filesystem) for Arrow's CSV format to read a file: its path, or, for a
    compression Arrow does not tell from the suffix, the file decompressed into memory (a CSV
    file is one task's input; Arrow's own reader holds a block of it at a time)."""
    path = fs.fs_path(url)
    if csv_codec(url) is None or url.endswith(_ARROW_CODEC_SUFFIXES):
        return path, fs.arrow_fs()
    with fs.arrow_fs().open_input_stream(path, compression=csv_codec(url)) as stream:
        return pa.BufferReader(stream.read_buffer()), None


def is_csv_name(url: str) -> bool:
    """Whether a file name says CSV (`.csv`, `.tsv`, `.tab`, compressed or not, any case):
    `FROM 'x.tsv.gz'` reads it as CSV, not as Parquet."""
    low = url.lower()
    for suffix in _COMPRESSED_SUFFIXES + (".zstd",):
        low = low.removesuffix(suffix)
    return low.endswith((".csv",) + _TAB_SUFFIXES)


def _tab_separated(url: str) -> bool:
    low = url.lower()
    for suffix in _COMPRESSED_SUFFIXES:
        low = low.removesuffix(suffix)
    return low.endswith(_TAB_SUFFIXES)


def _column_difference(has: list[str], want: list[str]) -> str:
    """How a CSV file's columns differ from the table's, for an error message."""
    missing = [n for n in want if n not in has]
    extra = [n for n in has if n not in want]
    parts = ([f"no column {', '.join(map(repr, missing))}"] if missing else []) + \
        ([f"an extra column {', '.join(map(repr, extra))}"] if extra else [])
    return "has " + " and ".join(parts)


_SNIFF_COLUMNS = 4096  # (a wider file's header is taken as given)


# a timestamp as Arrow's CSV reader parses one in microseconds (at most 6 digits of fraction)
_CSV_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$"


def _native_csv_type(t: pa.DataType) -> bool:
    """A type Arrow's CSV converter reads as CAST reads text, where it reads it at all
    (integers, DOUBLE, REAL, BOOLEAN, DATE: checked value by value against CAST; not
    TIMESTAMP, which it reads from '2024-01-05 10' that CAST refuses, nor DECIMAL, where it
    stored 1000.5 in a DECIMAL(5,2))."""
    return T.is_integer(t) or T.is_floating(t) or T.is_boolean(t) or pa.types.is_date32(t)


def _check_csv_type(name: str, t: pa.DataType) -> None:
    """Refuse a schema type that no CAST from text reaches (kernels.scan converts a CSV's
    text by CAST): Arrow's CSV reader failed with a raw ArrowNotImplementedError."""
    if T.is_interval(t) or pa.types.is_duration(t):
        raise UnsupportedError(
            f"register_csv: column {name!r} cannot be read as {T.type_name(t)} (CAST of text "
            f"to INTERVAL is not supported); read it as VARCHAR")
    if T.is_nested(t):
        raise UnsupportedError(
            f"register_csv: column {name!r} cannot be read as {T.type_name(t)} (a CSV value "
            f"is text, and CAST of text to {T.type_name(t)} is not supported); read it as "
            f"VARCHAR")


class CsvTable(FileTable):
    """CSV file(s): one partition per file. `schema` maps column names to types (others are
    inferred); empty fields are NULL."""

    kind = "csv"
    _task_extra = ("delimiter", "header", "column_types", "one_column", "cast_columns",
                   "_file_names")
    # a file of one column: an empty line is a row whose value is NULL (DuckDB; pqe's own
    # COPY writes a NULL so), which Arrow's reader skipped as a blank line ([1, NULL, 3] was
    # read back as [1, 3]); with more columns a blank line is no row (DuckDB skips it too)
    one_column = False

    def __init__(self, path, schema: dict | None = None, delimiter: str | None = None,
                 header: bool | None = None, filesystem: Any = None,
                 storage_options: dict | None = None):
        # None: a tab for .tsv / .tab files, else a comma (_set_schema); a delimiter given
        # is used as given
        self._delimiter_given = delimiter is not None
        if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1
                                      or delimiter in '"\n\r'):
            raise CatalogError(f"a CSV delimiter is one character (not a quote or a line "
                               f"break), got {delimiter!r}")
        self.delimiter = delimiter or ","
        if header is not None and not isinstance(header, bool):
            raise CatalogError(f"header must be True, False or None (detect), got {header!r}")
        self.header = header  # None: detected from the first file (_sniff_header)
        if schema is not None and not isinstance(schema, dict):
            raise CatalogError(f"schema must be a dict of column name to type, got "
                               f"{type(schema).__name__}")
        self.column_types = {k: T.parse_type(v) for k, v in (schema or {}).items()}
        self._given_types = dict(self.column_types)  # (the rest is inferred on each refresh)
        # columns the schema gives a type other than text are read as text and converted
        # by pqe's own CAST in the scan (kernels.scan), so a CSV value reads as CAST reads
        # the same text: Arrow's CSV converter stored 1000.5 in a DECIMAL(5,2), kept
        # DuckDB's BLOB escapes '\x00' as four characters, and refused '2024/01/05', 't',
        # '1.0' and '24:00:00' that CAST and DuckDB read
        for name, t in self.column_types.items():
            _check_csv_type(name, t)
        self.cast_columns = tuple(k for k, t in self.column_types.items() if not T.is_text(t))
        try:
            super().__init__(path, storage_options, filesystem)
            self.refresh()
        except CatalogError:
            raise
        except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
            raise CatalogError(f"cannot read CSV data at {path!s}: {_first_line(e)}") from e

    def _set_schema(self, files: list[_File]) -> None:
        if not files:
            raise CatalogError(f"no CSV files found at {self.path!s}{self._listing_note()}")
        if not self._delimiter_given:  # (read with commas, a .tsv was one column "a\tb")
            delimiter = "\t" if all(_tab_separated(f.url) for f in files) \
                else self._sniff_delimiter(files[0])
            if delimiter != self.delimiter:
                self.delimiter = delimiter
                self.__dict__.pop("_format", None)
        if self.header is None:
            try:
                self.header = self._sniff_header(files[0])
            except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
                raise CatalogError(f"cannot read CSV data at {self.path!s}: "
                                   f"{_first_line(e)}") from e
            self.__dict__.pop("_format", None)
        if self.column_types != self._given_types:  # inferred again from the files as they are
            self.column_types = dict(self._given_types)
            self.__dict__.pop("_format", None)
        try:
            file_schema = self._file_schema(files[0])
        except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
            raise CatalogError(f"cannot read CSV data at {self.path!s}: {_first_line(e)}") from e
        unknown = set(self._given_types) - set(file_schema.names)
        if unknown:
            raise CatalogError(f"schema names columns not in {self.path!s}: {sorted(unknown)}")
        wide = self._inferred_types(files[0], file_schema)
        # the schema is the first file's: every other file must have its columns (Arrow read
        # a missing one as NULL and dropped an extra one), and a code with a leading zero in
        # another file's first block makes its column text too (DuckDB reads such a glob as
        # VARCHAR; as a number '01234' became 1234)
        names = file_schema.names
        for f, (has, codes) in zip(files[1:], self._first_blocks(files[1:], file_schema),
                                   strict=True):
            if set(has) != set(names):
                raise CatalogError(
                    f"CSV files of {self.path!s} have different columns: {f.url} "
                    f"{_column_difference(has, names)} ({files[0].url} has "
                    f"{', '.join(names)}); register them as separate tables")
            wide.update((n, pa.string()) for n in codes)
        wide.update(self._null_column_types(files, file_schema, wide))
        if {**self._given_types, **wide} != self.column_types:
            self.column_types = {**self._given_types, **wide}
            self.__dict__.pop("_format", None)
            file_schema = self._file_schema(files[0])
        if (len(names) == 1) != self.one_column:
            self.one_column = len(names) == 1
            self.__dict__.pop("_format", None)
        self._file_names = names  # the columns files have (the table's, less partitions)
        # hive partition columns (dir/k=1/d.csv) are filled from the path, as for Parquet
        # (the scan reads each file with its partition expression)
        self.physical_schema = pa.schema(list(file_schema) + [
            f for f in self.partition_fields if f.name not in names])
        schema = T.normalize_schema(self.physical_schema)
        for name in self.cast_columns:  # (read as text, the engine type after the cast)
            i = schema.get_field_index(name)
            schema = schema.set(i, schema.field(i).with_type(self._given_types[name]))
        self.schema = schema

    def _sniff_delimiter(self, f: _File) -> str:
        """The delimiter of a CSV file none was given for, as DuckDB's sniffer finds it: of
        `,` `|` `;` and tab, the one that splits every whole line of the first 64 KiB into
        the same number of fields, the most fields winning (a comma on a tie, and when no
        candidate splits the lines: one column). Read with commas, `a;b` / `1;2` was one
        text column holding '1;2'."""
        import io

        import pyarrow.csv as pcsv

        with self.fs.arrow_fs().open_input_stream(
                self.fs.fs_path(f.url), compression=csv_codec(f.url)) as stream:
            sample = stream.read(1 << 16)
        if len(sample) == 1 << 16:  # whole lines only (a line cut short has fewer fields)
            sample = sample[:sample.rfind(b"\n") + 1]
        best, width = ",", 1
        for candidate in (",", "|", ";", "\t"):
            if candidate.encode() not in sample:
                continue
            try:
                table = pcsv.read_csv(
                    io.BytesIO(sample),
                    parse_options=pcsv.ParseOptions(delimiter=candidate,
                                                    newlines_in_values=True),
                    read_options=pcsv.ReadOptions(autogenerate_column_names=True),
                    convert_options=pcsv.ConvertOptions(
                        column_types={f"f{i}": pa.string() for i in range(_SNIFF_COLUMNS)}))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue  # lines of different widths (or a quote left open): not this one
            if table.num_columns > width:
                best, width = candidate, table.num_columns
        return best

    def _sniff_header(self, f: _File) -> bool:
        """Whether the file's first line is a header, as DuckDB decides it: not when each
        column whose later lines (of the first 64 KiB) all read as one type (a number, a
        date, a timestamp, a boolean) reads its first line as that type too; a header when
        some such column does not, or when no column has such a type (all text); a line
        alone is data when one of its values has a type. Read as a header, `1,a` / `2,b` lost its first row and named the columns
        '1' and 'a'."""
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv

        with self.fs.arrow_fs().open_input_stream(
                self.fs.fs_path(f.url), compression=csv_codec(f.url)) as stream:
            reader = pcsv.open_csv(
                stream, parse_options=pcsv.ParseOptions(
                                delimiter=self.delimiter, newlines_in_values=True),
                read_options=pcsv.ReadOptions(autogenerate_column_names=True,
                                              block_size=1 << 16),
                convert_options=pcsv.ConvertOptions(
                    column_types={f"f{i}": pa.string() for i in range(_SNIFF_COLUMNS)},
                    null_values=[""], strings_can_be_null=True))
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return True
        if batch.num_rows == 0 or batch.num_columns > _SNIFF_COLUMNS:
            return True
        kinds = (pa.int64(), pa.float64(), pa.date32(), pa.timestamp("us"), pa.bool_())

        def kind_of(values: pa.Array, among=kinds) -> pa.DataType | None:
            # the first type all these (text, non-null) values read as; the exceptions
            # are Arrow's "not that type" and "no cast to that type", not failures
            for want in among:
                try:
                    pc.cast(values, want)
                    return want
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    continue
            return None

        columns = [c for c in batch.columns if pa.types.is_string(c.type)]
        if batch.num_rows == 1:  # a line alone: data when a value of it has a type (42,7)
            return not any(c[0].is_valid and kind_of(c) for c in columns)
        typed = False
        for col in columns:
            rest = col.slice(1).drop_null()
            want = kind_of(rest) if len(rest) else None
            if want is None:
                continue
            typed = True
            if col[0].is_valid and kind_of(col.slice(0, 1), (want,)) is None:
                return True  # a name above values of a type
        return not typed

    def _null_column_types(self, files: list[_File], first: pa.Schema, wide: dict) -> dict:
        """Types for the columns the first file's first block holds no value of (Arrow infers
        the type `null`, and every later value failed the read: "CSV conversion error to
        null", a header-only first file or a PARTITION_BY directory whose first file's
        column is empty): the type the next file that has values infers, else VARCHAR."""
        nulls = [f.name for f in first if pa.types.is_null(f.type)
                 and f.name not in self._given_types and f.name not in wide]
        out: dict = {}
        for f in files[1:]:
            if not nulls:
                break
            try:
                schema = self._file_schema(f)
            except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
                continue
            for name in list(nulls):
                idx = schema.get_field_index(name)
                if idx >= 0 and not pa.types.is_null(schema.field(idx).type):
                    t = schema.field(idx).type
                    out[name] = pa.timestamp("us", t.tz) if pa.types.is_timestamp(t) else t
                    nulls.remove(name)
        out.update((name, pa.string()) for name in nulls)
        return out

    def _file_schema(self, first: _File) -> pa.Schema:
        """The table's columns as Arrow's CSV format reads them from the first file (as a
        dataset of the files would: it inspects the first)."""
        return self.file_format(text=True).inspect(*csv_source(self.fs, first.url))

    def _check_schema(self, files: list[_File], fresh: list[_File] = ()) -> None:
        """Files added or rewritten after registration must still have the registered columns
        (queries were bound to them; Arrow read a renamed column as NULL), and no number
        column may hold a code with a leading zero in their first block (it is read as a
        number): else the error Parquet gives, to register the table again. Only the new
        files' first blocks are read (on a query's planning, when files changed)."""
        names = self._file_names
        for f, (has, codes) in zip(fresh, self._first_blocks(fresh, self.physical_schema,
                                                             names), strict=True):
            if set(has) != set(names):
                what = _column_difference(has, names)
            elif codes:
                name = sorted(codes)[0]
                what = (f"column {name!r}, read as {self.physical_schema.field(name).type}, "
                        f"holds a number with a leading zero, a code read as text")
            else:
                continue
            raise CatalogError(f"the files of {self.path!s} changed schema since it was "
                               f"registered ({f.url} {what}); register it again")

    def _first_blocks(self, files: list[_File], schema: pa.Schema,
                      names: list[str] | None = None) -> list[tuple[list[str], set[str]]]:
        """Each file's column names (from its first 64 KiB, or 1 MiB when a row is longer)
        and the number columns of `schema` (inferred, not given) holding a number with a
        leading zero there. Read in parallel (object stores answer slowly)."""
        import pyarrow.csv as pcsv

        names = schema.names if names is None else names
        numbers = [n for n in names if n not in self._given_types
                   and (pa.types.is_integer(t := schema.field(n).type) or pa.types.is_floating(t))]
        text = {n: pa.string() for n in names}

        def read(f: _File) -> tuple[list[str], set[str]]:
            for block in (1 << 16, 1 << 20):
                try:
                    with self.fs.arrow_fs().open_input_stream(
                            self.fs.fs_path(f.url), compression=csv_codec(f.url)) as stream:
                        reader = pcsv.open_csv(
                            stream, parse_options=pcsv.ParseOptions(
                                delimiter=self.delimiter, newlines_in_values=True),
                            read_options=pcsv.ReadOptions(
                                autogenerate_column_names=not self.header, block_size=block),
                            convert_options=pcsv.ConvertOptions(
                                column_types=text, null_values=[""], strings_can_be_null=True))
                        has = reader.schema.names
                        try:
                            batch = reader.read_next_batch()
                        except StopIteration:  # a header alone
                            return has, set()
                    break
                except pa.ArrowInvalid as e:
                    if block == 1 << 20:
                        raise CatalogError(f"cannot read CSV file {f.url}: "
                                           f"{_first_line(e)}") from e
                except OSError as e:
                    raise CatalogError(f"cannot read CSV file {f.url}: {_first_line(e)}") from e
            return has, {n for n in numbers if n in has and _leading_zero(batch.column(n))}

        if len(files) < 4:
            return [read(f) for f in files]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(16, len(files))) as pool:
            return list(pool.map(read, files))

    def _inferred_types(self, first, schema: pa.Schema) -> dict:
        """Types in place of some Arrow infers, from the text of the first file's first block
        (where Arrow infers them): a number column holding a number with a leading zero
        (`007`, `0123`, `00.5`: codes, not numbers; Arrow made 007 the number 7) is text, as
        in DuckDB; a DOUBLE column Arrow inferred because an integer passed BIGINT
        (9223372036854775808: every value read as a float, and two integers it cannot tell
        apart became equal, or because one was written `+1`) that holds only integers of at
        most 38 digits, one of them past 15 digits, is a DECIMAL(38,0) (DuckDB: HUGEINT), read
        exactly."""
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv

        # timestamps in microseconds, as DuckDB reads them: Arrow infers seconds (no fraction
        # in the first block) or nanoseconds, which hold only 1677-2262 (a later row of year
        # 3000 failed the read; a COPY round trip changed the column's type)
        stamps = {f.name: pa.timestamp("us", f.type.tz) for f in schema
                  if pa.types.is_timestamp(f.type) and f.type.unit != "us"
                  and f.name not in self._given_types}
        # times of day (`09:30:00`) stay text, as the README says (CAST(x AS TIME) reads
        # them): Arrow infers TIME32 in seconds, whose fraction a later row may not fit
        stamps.update({f.name: pa.string() for f in schema if pa.types.is_time(f.type)
                       and f.name not in self._given_types})
        floats = [f.name for f in schema if (pa.types.is_float64(f.type)
                                             or pa.types.is_integer(f.type))
                  and f.name not in self._given_types]
        # text Arrow could not read as its nanosecond timestamps: a fraction of a second with
        # a value outside 1677-2262 (COPY writes '9999-12-31 00:00:00.000000'; the column was
        # VARCHAR where DuckDB reads a TIMESTAMP)
        texts = [f.name for f in schema if pa.types.is_string(f.type)
                 and f.name not in self._given_types]
        if not floats and not texts:
            return stamps
        try:
            with self.fs.arrow_fs().open_input_stream(
                    self.fs.fs_path(first.url), compression=csv_codec(first.url)) as stream:
                reader = pcsv.open_csv(stream, parse_options=pcsv.ParseOptions(
                    delimiter=self.delimiter, newlines_in_values=True),
                    read_options=pcsv.ReadOptions(
                    autogenerate_column_names=not self.header), convert_options=pcsv.ConvertOptions(
                    include_columns=floats + texts,
                    column_types={c: pa.string() for c in floats + texts},
                    null_values=[""], strings_can_be_null=True))
                batch = reader.read_next_batch()
        except (OSError, StopIteration, pa.ArrowInvalid):
            return stamps
        out = dict(stamps)
        for name in texts:
            col = batch.column(name).drop_null()
            if len(col) and pc.all(pc.match_substring_regex(col, _CSV_TIMESTAMP)).as_py():
                out[name] = pa.timestamp("us")
        for name in floats:
            col = pc.utf8_trim_whitespace(batch.column(name))
            if _leading_zero(col):
                out[name] = pa.string()
                continue
            if not pa.types.is_float64(schema.field(name).type):
                continue
            whole = pc.match_substring_regex(col, r"^[+-]?\d{1,38}$")
            # (past 15 digits a DOUBLE may round: a `+1` beside 9007199254740993 made the
            # column DOUBLE, Arrow's integers taking no `+`, and the big value ...992)
            big = pc.greater(pc.utf8_length(pc.utf8_ltrim(col, characters="+-")), 15)
            if pc.all(whole).as_py() and pc.any(big).as_py():
                out[name] = pa.decimal128(38, 0)
        return out

    def file_format(self, dict_columns: tuple[str, ...] = (), text: bool = False):
        """The dataset format reading the files. A column the schema gives a type of
        `_native_csv_type` is read by Arrow's converter, which takes a subset of the text
        CAST takes and reads it as CAST does, and is faster; any other typed column as text,
        converted by CAST in the scan (kernels.scan._read_csv). `text`: every typed column
        as text, what a file Arrow's converter refuses is read with (CAST reads '1.0',
        'yes', '2024/01/05', or names the value it refuses)."""
        formats = self.__dict__.get("_format")
        if formats is None:
            formats = tuple(self._make_format({
                k: pa.string() if k in self.cast_columns and (every or not _native_csv_type(t))
                else t for k, t in self.column_types.items()}) for every in (False, True))
            self.__dict__["_format"] = formats
        return formats[text]

    def _make_format(self, column_types: dict):
        import pyarrow.csv as pcsv

        return ds.CsvFileFormat(
            # a quoted value may hold a newline (as COPY writes one): without this, a file
            # past Arrow's first block (1 MiB) was cut into blocks inside such values and
            # failed to read ("CSV parser got out of sync with chunker"); as fast (a 263
            # MiB file: 1.03-1.18 s either way)
            parse_options=pcsv.ParseOptions(delimiter=self.delimiter,
                                            ignore_empty_lines=not self.one_column,
                                            newlines_in_values=True),
            read_options=pcsv.ReadOptions(autogenerate_column_names=not self.header),
            # only an empty, unquoted field is NULL (PostgreSQL's COPY; DuckDB reads a
            # quoted "" as NULL too unless allow_quoted_nulls=false): Arrow's default
            # list also made the text 'NA', 'NULL', 'null', 'N/A' and 'nan' NULL (a NaN
            # too), quoted or not, and a quoted "" stays '' (as COPY ... TO writes '')
            convert_options=pcsv.ConvertOptions(column_types=column_types,
                                                null_values=[""], strings_can_be_null=True,
                                                quoted_strings_can_be_null=False))

    def units(self) -> list[ScanUnit]:
        st = self._snapshot()
        if st.units is None:
            st.units = [self._unit(f, (), max(1, f.info.size // 64), f.info.size) for f in st.files]
        return st.units

    def statistics(self) -> TableStats:
        st = self._snapshot()
        if st.stats is None:
            units = self.units()
            st.stats = TableStats(sum(u.num_rows for u in units), sum(u.num_bytes for u in units))
        return st.stats


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

    def sample_values(self, column: str):
        cache = self.__dict__.setdefault("_samples", {})  # (a new version is a new table)
        if column not in cache:
            ok = column in self.table.column_names and T.is_text(self.schema.field(column).type)
            sample = None
            if ok:
                # cast chunk by chunk, then combine: combining dictionary chunks first unified
                # their dictionaries, which Arrow refuses when one holds a NULL ('Cannot yet
                # unify dictionaries with nulls' failed a LIKE query); an estimate never
                # fails a query, so anything else Arrow refuses means no sample
                try:
                    sample = self.table.column(column).slice(0, 3 * ParquetTable.SAMPLE_VALUES) \
                        .cast(pa.large_string()).combine_chunks()
                except pa.ArrowException:
                    sample = None
            cache[column] = sample
        return cache[column]

    def keys_sample_unique(self, columns: tuple[str, ...]) -> bool:
        cache = self.__dict__.setdefault("_unique", {})
        if columns not in cache:
            ok = all(c in self.table.column_names and T.is_integer(self.schema.field(c).type)
                     for c in columns)
            cache[columns] = ok and _all_distinct_rows(
                self.table.select(list(columns)).slice(0, self.EXACT_NDV_ROWS))
        return cache[columns]

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
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                pass  # statistics only steer plans (a DATE past 9999 has no Python form)
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

    def __init__(self, tables: dict[str, Any], sql_made: frozenset[str] = frozenset(),
                 functions: dict[str, Any] | None = None) -> None:
        self._tables = tables
        self._sql_made = sql_made
        self._functions = functions or {}

    def function(self, name: str) -> Any:
        """The user-defined function registered as `name` (any case), or None."""
        return self._functions.get(name.lower())

    def functions(self) -> dict[str, Any]:
        return dict(self._functions)

    def made_by_sql(self, key: str) -> bool:
        """Whether SQL created this table or view (SQL may change or drop only those; what
        the application registered from Python stays as it registered it)."""
        return key in self._sql_made

    def find(self, name: str, exact: bool | None = None) -> str | None:
        """The stored name matching `name` (exactly, or case-insensitively: `_find_name`), or
        None."""
        return _find_name(self._tables, name, exact)

    def lookup(self, name: str, exact: bool | None = None) -> tuple[str, Any]:
        key = self.find(name, exact)
        if key is None:
            raise UnknownTableError(f"table '{name}' does not exist{suggest(name, self._tables)}")
        return key, self._tables[key]

    def names(self) -> list[str]:
        return sorted(self._tables)

    def get(self, key: str) -> Any:
        return self._tables.get(key)

    def with_entry(self, key: str, provider: Any) -> CatalogSnapshot:
        """This snapshot plus one more entry, for binding only (UPDATE ... FROM reads its
        target, its rows numbered, under a name of its own); the catalog is not changed."""
        tables = dict(self._tables)
        tables[key] = provider
        return CatalogSnapshot(tables, self._sql_made, self._functions)


def _find_name(tables: dict, name: str, exact: bool | None) -> str | None:
    """The stored name a table reference means. In SQL a quoted name (`exact=True`) is only
    itself; an unquoted one (`exact=False`) folds to lower case first (PostgreSQL's rule:
    with tables t and "T", T is t), then matches the one name differing only in case (a
    table registered as "Sales" is sales), then itself as written: SQL's reads and writes
    resolve through here alike (SELECT took "T" where INSERT took t). A name from Python
    (`exact=None`: ctx.table, deregister) is itself first, then the one name differing only
    in case."""
    if exact:
        return name if name in tables else None
    if exact is None and name in tables:
        return name
    low = name.lower()
    if low in tables:
        return low
    hits = [k for k in tables if k.lower() == low]
    if len(hits) == 1:
        return hits[0]
    return name if name in tables else None


class Catalog:
    """Name -> table provider or view. Unquoted names match case-insensitively."""

    def __init__(self) -> None:
        self._tables: dict[str, Any] = {}
        self._sql_made: set[str] = set()
        # user-defined functions (pqe.plan.udf objects) by lower-case name: Python registers
        # them (Context.register_udf / register_udaf); SQL cannot create or drop them
        self._functions: dict[str, Any] = {}
        self._lock = threading.RLock()

    def frozen(self) -> CatalogSnapshot:
        """A consistent snapshot for binding one statement."""
        with self._lock:
            return CatalogSnapshot(dict(self._tables), frozenset(self._sql_made),
                                   dict(self._functions))

    def register_function(self, name: str, udf: Any, replace: bool = True) -> None:
        """Add or replace the user-defined function `name` (checked by pqe.plan.udf)."""
        with self._lock:
            if not replace and name.lower() in self._functions:
                raise CatalogError(f"function {name!r} already exists")
            self._functions[name.lower()] = udf

    def drop_function(self, name: str) -> bool:
        with self._lock:
            return self._functions.pop(name.lower(), None) is not None

    def function(self, name: str) -> Any:
        with self._lock:
            return self._functions.get(name.lower())

    def function_names(self) -> list[str]:
        with self._lock:
            return sorted(self._functions)

    def register(self, name: str, provider: Any, replace: bool = True,
                 by_sql: bool = False) -> None:
        """Add or replace `name`. `by_sql`: created by a SQL statement (SQL may later change
        or drop it); otherwise the application's own."""
        if not isinstance(name, str) or not name:
            raise CatalogError(f"table name must be a non-empty string, got {name!r}")
        with self._lock:
            existing = self._find(name, exact=True)
            if existing is not None:
                if not replace:
                    raise CatalogError(f"table {name!r} already exists")
                del self._tables[existing]
                self._sql_made.discard(existing)
            self._tables[name] = provider
            if by_sql:
                self._sql_made.add(name)

    def drop(self, name: str, exact: bool | None = None) -> bool:
        with self._lock:
            key = self._find(name, exact)
            if key is None:
                return False
            del self._tables[key]
            self._sql_made.discard(key)
            return True

    def made_by_sql(self, key: str) -> bool:
        with self._lock:
            return key in self._sql_made

    def find(self, name: str, exact: bool | None = None) -> str | None:
        """The stored name matching `name` (exactly, or case-insensitively), or None."""
        with self._lock:
            return self._find(name, exact)

    def _find(self, name: str, exact: bool | None) -> str | None:
        return _find_name(self._tables, name, exact)

    def lookup(self, name: str, exact: bool | None = None) -> tuple[str, Any]:
        """The stored name and its entry; a file table's listing and file versions are
        validated (queries bind through here, so statistics are those of the files now)."""
        with self._lock:
            key = self._find(name, exact)
            if key is None:
                raise UnknownTableError(
                    f"table '{name}' does not exist{suggest(name, self._tables)}")
            entry = self._tables[key]
        if isinstance(entry, FileTable):
            entry.refresh()
        return key, entry

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._tables)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._tables)
