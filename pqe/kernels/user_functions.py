"""Running user-defined functions (pqe.plan.udf) inside tasks.

Scalar: each function becomes an Arrow scalar kernel named by its content token, registered
in the running process the first time an expression calling it is compiled (on a worker:
when the task that needs it runs), so Acero calls it on whole batches like a built-in.

Aggregate: the partial step groups by Arrow (`hash_list` of row numbers in the same Acero
pass as the built-in aggregates) and calls `update` once per group on that group's argument
slices; combining calls `merge` once per group on its partial states; the final step calls
`finalize` once on all groups' states.

What the user's code raises, or returns wrongly (not an array, wrong length, wrong type),
becomes one `UserFunctionError` line naming the function; the task runner adds the
partition.
"""

from __future__ import annotations

import atexit
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..errors import UserFunctionError
from .layout import to_engine

_LOCK = threading.Lock()
_REGISTERED: set[str] = set()
# the running task's cancellation check (set by the task runner for its thread): a user
# function called batch after batch stops at the next batch once its query is cancelled or
# timed out, on threads and on a cluster's workers, instead of running to its end
CURRENT = threading.local()


def check_cancelled() -> None:
    check = getattr(CURRENT, "check", None)
    if check is not None:
        check()


# Python kernels in flight on Arrow's threads. A query that times out or is cancelled returns
# at once while a batch may still be in a Python function on an Arrow thread, which is no
# Python thread: the interpreter does not wait for it, and a call that ends while the
# interpreter finalizes aborts the process ("PyGILState_Release ... must be current"). At
# exit new calls are refused and the ones in flight are waited for, up to EXIT_WAIT_SECONDS.
_FLIGHT = threading.Condition()
_IN_FLIGHT = 0
_EXITING = False
# (bounded: a function that never returns must not hang the exit; one that returns within
# it ends before the interpreter finalizes)
EXIT_WAIT_SECONDS = 10.0


def in_flight(fn):
    """`fn` (a Python kernel Arrow calls) counted while it runs; refused once exiting."""
    def kernel(*args):
        global _IN_FLIGHT
        with _FLIGHT:
            if _EXITING:
                raise UserFunctionError("the process is exiting: no more Python functions run")
            _IN_FLIGHT += 1
        try:
            return fn(*args)
        finally:
            with _FLIGHT:
                _IN_FLIGHT -= 1
                _FLIGHT.notify_all()
    return kernel


def _wait_for_kernels() -> None:
    global _EXITING
    with _FLIGHT:
        _EXITING = True
        waited = _FLIGHT.wait_for(lambda: _IN_FLIGHT == 0, EXIT_WAIT_SECONDS)
        busy = _IN_FLIGHT
    if busy:
        return  # (a function still running after the wait: nothing more to do)
    if waited:
        time.sleep(0.05)  # (the last call's thread hands the GIL back after its count)


atexit.register(_wait_for_kernels)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().split("\n")[0]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def kernel_name(udf, guarded: bool = False, tagged: bool = False) -> str:
    """The Arrow function running `udf` in this process (registered on first use). The
    guarded form takes one more argument, a boolean per row: the function is called on the
    rows where it is TRUE only (the rows a CASE branch, a later COALESCE argument or an
    AND/OR term reaches, expressions.Compiler.guard), the others are NULL, as a built-in
    that can fail is computed only where SQL computes it. The tagged form, for a volatile
    function, takes a last argument it ignores (expressions.volatile_tag, other in each
    call the query writes, an array of the batch's rows): Arrow takes two equal calls for
    one value (`f(a) < 0.5 OR f(a) < 0.5` ran f once) and calls a function of constants
    once per batch."""
    name = f"pqe_user_{udf.token}" + ("_guarded" if guarded else "") \
        + ("_tagged" if tagged else "")
    if name in _REGISTERED:
        return name
    with _LOCK:
        if name not in _REGISTERED:
            try:
                pc.get_function(name)
            except (KeyError, pa.ArrowKeyError):
                doc = {"summary": f"user function {udf.name}", "description": ""}
                in_types = {f"arg{i}": t for i, t in enumerate(udf.arg_types)}
                if guarded:
                    in_types["guard"] = pa.bool_()
                if tagged:
                    in_types["tag"] = pa.float64()
                pc.register_scalar_function(in_flight(_scalar_kernel(udf, guarded, tagged)), name, doc,
                                            in_types, udf.return_type)
            _REGISTERED.add(name)
    return name


def _scalar_kernel(udf, guarded: bool = False, tagged: bool = False):
    def call(arrays, n):
        try:
            out = udf.fn(*arrays)
        except Exception as e:  # noqa: BLE001 - the user's code: report it as theirs
            raise UserFunctionError(f"function {udf.name} failed: {_one_line(e)}") from None
        return checked(out, n, udf.return_type, f"function {udf.name}")

    def kernel(ctx, *args):
        check_cancelled()
        n = ctx.batch_length
        if tagged:
            args = args[:-1]
        if guarded:
            *args, guard = args
            if isinstance(guard, pa.Scalar):
                if not guard.is_valid or not guard.as_py():
                    return pa.nulls(n, udf.return_type)
            else:
                mask = pc.fill_null(guard, False)
                taken = pc.sum(mask).as_py() or 0
                if taken == 0:
                    return pa.nulls(n, udf.return_type)
                if taken < n:
                    rows = pc.indices_nonzero(mask)
                    arrays = [pa.repeat(a, taken) if isinstance(a, pa.Scalar) else a.take(rows)
                              for a in args]
                    out = call(arrays, taken)
                    return pc.replace_with_mask(pa.nulls(n, udf.return_type), mask, out)
        arrays = [pa.repeat(a, n) if isinstance(a, pa.Scalar) else a for a in args]
        return call(arrays, n)
    return kernel


def checked(out, n: int, dtype: pa.DataType, what: str) -> pa.Array:
    """`out` as an array of `n` values of `dtype`, or a UserFunctionError saying why not."""
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    if not isinstance(out, pa.Array):
        raise UserFunctionError(f"{what} returned {type(out).__name__}, not a pyarrow array")
    if len(out) != n:
        raise UserFunctionError(f"{what} returned {len(out)} values for {n} rows")
    if pa.types.is_run_end_encoded(out.type) and not pa.types.is_run_end_encoded(dtype):
        out = pc.run_end_decode(out)  # (another encoding: as one inside a STRUCT is taken)
    if out.type != dtype:
        if T.is_null(out.type):
            return out.cast(dtype)
        if _plain(T.normalize(out.type)) == _plain(dtype):
            # another encoding of the declared type, converted as registered data is (Arrow's
            # cast of a list view gave an invalid array: lists read as [] of length -2)
            return to_engine(out, dtype, what)
        if (pa.types.is_timestamp(out.type) and pa.types.is_timestamp(dtype)
                and out.type.unit == dtype.unit and out.type.tz is not None
                and dtype.tz is not None):
            return out.cast(dtype)  # the same instants, in the declared zone
        raise UserFunctionError(f"{what} returned {T.shown_type(out.type, dtype)} values, but "
                                f"it was declared to return {T.shown_type(dtype, out.type)}")
    return out


def _plain(t: pa.DataType) -> pa.DataType:
    """`t` with its 64-bit-offset layouts as the 32-bit ones (large_list as list, at any
    depth): another encoding of the same values, cast when a function returns it."""
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_plain(t.field(i).type))
                          for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain(t.key_type)),
                       t.item_field.with_type(_plain(t.item_type)), t.keys_sorted)
    return t


# ---- aggregates ----------------------------------------------------------------------------------


def _states_array(states: list, udf, step: str) -> pa.Array:
    """The states as an array of the declared state type. pyarrow builds one leniently
    (1.5 into BIGINT is 1, 1e300 into REAL inf, a struct missing its field NULL): the values
    are also read as what they are and cast to it the checked way, which refuses those."""
    values = [s.as_py() if isinstance(s, pa.Scalar) else s for s in states]
    want = udf.state_type

    def wrong(detail: str) -> UserFunctionError:
        return UserFunctionError(f"aggregate {udf.name}: {step} returned a value that is not "
                                 f"a {T.type_name(want)} ({detail})")

    try:
        typed = pa.array(values, type=want)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise wrong(_one_line(e)) from None
    try:
        plain = pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return typed  # (values of several kinds: the typed build is what there is)
    if plain.type == want or pa.types.is_null(plain.type):
        return typed
    try:
        checked_ = plain.cast(want)  # safe: truncation, overflow and lost fields fail
    except pa.ArrowNotImplementedError:
        return typed
    except (pa.ArrowException, ValueError, OverflowError) as e:
        raise wrong(_one_line(e)) from None
    if pa.types.is_floating(want) and pa.types.is_floating(plain.type):
        if pc.sum(pc.and_(pc.is_finite(plain), pc.invert(pc.is_finite(checked_)))).as_py():
            raise wrong(f"a value past the range of {T.type_name(want)}")
    if pa.types.is_struct(want) and pa.types.is_struct(plain.type):
        unknown = {plain.type.field(i).name for i in range(plain.type.num_fields)} - {
            want.field(i).name for i in range(want.num_fields)}
        if unknown:  # (its value was dropped and the state's field left NULL)
            raise wrong(f"a field {sorted(unknown)[0]!r} the state does not have")
    return typed


def _call(udf, step: str, fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - the user's code: report it as theirs
        raise UserFunctionError(f"aggregate {udf.name} failed in {step}: {_one_line(e)}") from None


def group_slices(lists, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row numbers ordered by group, and each group's [start, end) in them: from a
    `hash_list` of row numbers (grouped) or None (no group keys: all rows are one group)."""
    if lists is None:
        return np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64)
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks() if lists.num_chunks else pa.array([], lists.type)
    rows = lists.flatten().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    offsets = lists.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    return rows, offsets - offsets[0]


def partial_states(table: pa.Table, spec, rows: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """`update` per group over the group's argument values (NULL rows left out unless the
    aggregate asked for them)."""
    udf = spec.udf
    take = pa.array(rows, pa.int64())
    cols = []
    for name in (spec.arg, *spec.more):
        col = table.column(name).take(take)
        cols.append(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
    if udf.skip_nulls and any(c.null_count for c in cols):
        valid = np.ones(len(rows), dtype=bool)
        for c in cols:
            if c.null_count:
                valid &= pc.is_valid(c).to_numpy(zero_copy_only=False)
        before = np.concatenate([[0], np.cumsum(valid)])
        offsets = before[offsets]
        keep = pa.array(valid)
        cols = [c.filter(keep) for c in cols]
    states = []
    for i in range(len(offsets) - 1):
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        # a group with no values here (a partition without rows, all NULL, filtered out):
        # no state, as SUM has none, rather than `update` of an empty array; otherwise the
        # answer would depend on how the rows fall into partitions
        states.append(None if hi == lo else
                      _call(udf, "update", udf.update, *[c.slice(lo, hi - lo) for c in cols]))
    return _states_array(states, udf, "update")


def merged_states(states, udf, offsets: np.ndarray, rows: np.ndarray) -> pa.Array:
    """`merge` per group over the group's partial states, those there are (none: NULL)."""
    col = states.combine_chunks() if isinstance(states, pa.ChunkedArray) else states
    col = col.take(pa.array(rows, pa.int64()))
    if col.null_count:  # (the partitions where a group had no values: no state)
        valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
        counts = np.concatenate([[0], np.cumsum(valid)])  # states there are, up to each row
        col = col.filter(pa.array(valid))
        offsets = counts[offsets]
    out = []
    for i in range(len(offsets) - 1):
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        out.append(None if hi == lo else _call(udf, "merge", udf.merge, col.slice(lo, hi - lo)))
    return _states_array(out, udf, "merge")


def final_values(states, udf) -> pa.Array:
    """`finalize` over every group's merged state (the states themselves without one); a
    group without a state is NULL."""
    col = states.combine_chunks() if isinstance(states, pa.ChunkedArray) else states
    if udf.finalize is None:
        return col
    if not col.null_count:
        out = _call(udf, "finalize", udf.finalize, col)
        return checked(out, len(col), udf.return_type, f"aggregate {udf.name} (finalize)")
    # groups without a state (no values anywhere) are NULL, as SUM's are: finalize sees
    # only the states there are
    valid = pc.is_valid(col)
    some = col.filter(valid)
    out = checked(_call(udf, "finalize", udf.finalize, some) if len(some) else
                  pa.array([], udf.return_type), len(some), udf.return_type,
                  f"aggregate {udf.name} (finalize)")
    where = np.cumsum(valid.to_numpy(zero_copy_only=False)) - 1
    return pc.if_else(valid, out.take(pa.array(np.maximum(where, 0))) if len(out) else
                      pa.nulls(len(col), udf.return_type), pa.scalar(None, udf.return_type))
