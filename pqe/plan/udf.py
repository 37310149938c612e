"""User-defined functions: Python functions over Arrow arrays, registered per Context.

A user function is one object holding its name, signature, result type and code (as the
built-ins are one `FunctionDef`): the binder puts the object itself into the plan
(`UserCall`, `AggCall.udf`), so the code travels with the task graph to the workers and no
process-wide registry has to know about it. Each object has a content token (a hash of its
cloudpickled code and signature): task keys stay deterministic, and a worker registers an
Arrow kernel for it once.

Scalar: `fn(*arrays) -> array`, called on batches of rows (one call per batch, never per row).

Aggregate, in two phases so it runs partitioned like SUM (partial states per partition, then
states merged per group):

- `update(*arrays) -> state`: the argument values of ONE group within one partition (rows
  where an argument is NULL are left out unless `skip_nulls=False`) -> that group's partial
  state, a Python value or pyarrow scalar of `state_type`;
- `merge(states: pa.Array) -> state`: the partial states of one group (from the partitions
  that saw it) -> one state;
- `finalize(states: pa.Array) -> pa.Array`: the merged states of many groups -> their
  results, vectorized (default: the states themselves, when state and return types agree).

Grouping is done by Arrow; Python is called once per group (update, merge) and once per
output partition (finalize).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from .. import types as T
from ..errors import CatalogError, TypeMismatchError, UnsupportedError
from . import functions as F

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, eq=False)
class ScalarUDF:
    """A vectorized Python scalar function (see the module docstring)."""

    name: str
    fn: Callable
    arg_types: tuple[pa.DataType, ...]
    return_type: pa.DataType
    token: str
    # the same arguments always give the same result (register_udf(deterministic=True)): the
    # optimizer may then compute it again where a query reads its result twice
    deterministic: bool = False

    def __repr__(self) -> str:  # deterministic: task keys hash it
        return f"ScalarUDF({self.name}, {self.token})"


@dataclass(frozen=True, eq=False)
class AggregateUDF:
    """A Python aggregate in two phases: update per group, merge, finalize."""

    name: str
    update: Callable
    merge: Callable
    finalize: Callable | None
    arg_types: tuple[pa.DataType, ...]
    return_type: pa.DataType
    state_type: pa.DataType
    skip_nulls: bool
    token: str

    def __repr__(self) -> str:
        return f"AggregateUDF({self.name}, {self.token})"


def check_name(name: object, builtin: Callable[[str], str | None]) -> str:
    """The SQL name of a new user function: an identifier that is not a built-in.
    `builtin(name)` (from the SQL front end) names what SQL would parse `name(...)` as, if
    not a plain call."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CatalogError(f"a function name must be an identifier, got {name!r}")
    low = name.lower()
    canon = F.canonical(low)
    if canon in F.SCALAR or canon in F.AGGREGATE or canon in F.WINDOW or low in F.ALIASES \
            or low in ("date_part", "grouping", "grouping_id", "read_parquet", "read_csv"):
        raise CatalogError(f"{name} is a built-in function: a user function cannot replace it "
                           f"(choose another name)")
    other = builtin(low)
    if other is not None:
        raise CatalogError(f"{name} is a built-in SQL function ({other}): a user function "
                           f"cannot replace it (choose another name)")
    return low


def _types(types: Sequence[str | pa.DataType], what: str) -> tuple[pa.DataType, ...]:
    if isinstance(types, (str, pa.DataType)):
        raise TypeMismatchError(f"{what}: argument types must be a list, got {types!r}")
    return tuple(_type(t, what) for t in types)


def _type(t: str | pa.DataType, what: str) -> pa.DataType:
    try:
        out = T.parse_type(t)
    except (UnsupportedError, TypeMismatchError) as e:
        raise TypeMismatchError(f"{what}: {e}") from e
    if T.is_null(out):
        raise TypeMismatchError(f"{what}: NULL is not a type a function can take or return")
    return out


def content_token(name: str, *parts: object) -> str:
    """A hash of a function's name, code and signature (cloudpickled): its identity in task
    keys and the name of its Arrow kernel; refuses code that does not pickle."""
    import cloudpickle

    try:
        blob = cloudpickle.dumps((name, *parts))
    except Exception as e:  # whatever cloudpickle raises: say which function
        raise CatalogError(f"function {name} cannot be pickled ({type(e).__name__}: {e}): "
                           f"user functions are shipped with the query's tasks, so their "
                           f"code and what it refers to must pickle with cloudpickle") from e
    return hashlib.sha256(blob).hexdigest()[:16]


def scalar_udf(name: str, fn: Callable, arg_types: Sequence[str | pa.DataType],
               return_type: str | pa.DataType, deterministic: bool = False) -> ScalarUDF:
    if not callable(fn):
        raise CatalogError(f"function {name}: {fn!r} is not callable")
    args = _types(arg_types, f"function {name}")
    if not args:
        raise CatalogError(f"function {name} needs at least one argument (Arrow calls a "
                           f"function without arguments once, not per batch)")
    ret = _type(return_type, f"function {name}")
    if not isinstance(deterministic, bool):
        raise CatalogError(f"function {name}: deterministic must be True or False")
    return ScalarUDF(name, fn, args, ret, content_token(name, fn, args, ret, deterministic),
                     deterministic)


def aggregate_udf(name: str, update: Callable, merge: Callable, arg_types, return_type,
                  state_type=None, finalize: Callable | None = None,
                  skip_nulls: bool = True) -> AggregateUDF:
    for what, f in (("update", update), ("merge", merge), ("finalize", finalize)):
        if f is not None and not callable(f):
            raise CatalogError(f"aggregate {name}: {what} {f!r} is not callable")
    if not isinstance(skip_nulls, bool):  # ("no" was read as True)
        raise CatalogError(f"aggregate {name}: skip_nulls must be True or False")
    args = _types(arg_types, f"aggregate {name}")
    if not args:
        raise CatalogError(f"aggregate {name} needs at least one argument")
    ret = _type(return_type, f"aggregate {name}")
    state = ret if state_type is None else _type(state_type, f"aggregate {name}")
    if finalize is None and state != ret:
        raise CatalogError(f"aggregate {name}: its state is {T.type_name(state)} but it "
                           f"returns {T.type_name(ret)}: give a finalize function")
    token = content_token(name, update, merge, finalize, args, ret, state, bool(skip_nulls))
    return AggregateUDF(name, update, merge, finalize, args, ret, state, bool(skip_nulls), token)


def check_arguments(udf: ScalarUDF | AggregateUDF, types: Sequence[pa.DataType]) -> None:
    """Arguments are implicitly cast to the declared types; refuse a count or a type that
    cannot be cast so without losing the value's kind (at bind time, naming the function):
    numbers widen (an integer to any number, a decimal to a decimal or a float), text stays
    text, DATE becomes TIMESTAMP; a float never silently becomes an integer or a decimal."""
    want = udf.arg_types
    if len(types) != len(want):
        raise TypeMismatchError(f"function {udf.name} takes {len(want)} argument"
                                f"{'s' if len(want) != 1 else ''}, got {len(types)}")
    for i, (got, w) in enumerate(zip(types, want, strict=True)):
        if T.is_null(got) or got == w:
            continue
        ok = T.common_type(got, w) == w or (T.is_integer(got) and T.is_numeric(w)) \
            or (T.is_decimal(got) and (T.is_decimal(w) or T.is_floating(w))) \
            or (T.is_text(got) and T.is_text(w)) or _same_instants(got, w)
        if not ok:
            raise TypeMismatchError(
                f"function {udf.name}: argument {i + 1} is {T.shown_type(got, w)}, expected "
                f"{T.shown_type(w, got)}")


def _same_instants(got: pa.DataType, want: pa.DataType) -> bool:
    """A TIMESTAMPTZ in one zone passed as one declared in another: the same instants (the
    cast changes only the zone the function sees), of the same unit."""
    return (pa.types.is_timestamp(got) and pa.types.is_timestamp(want)
            and got.unit == want.unit and got.tz is not None and want.tz is not None)
