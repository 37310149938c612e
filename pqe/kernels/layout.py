"""Arrow data in the layouts pqe's kernels take (`to_engine`): registered tables and the
results of user functions both come through here, so another encoding of a type (a list
view, a large list, a run-end encoded or extension array) becomes the same values."""

from __future__ import annotations

import pyarrow as pa

from .. import types as T


def to_engine(arr: pa.Array, want: pa.DataType, column: str) -> pa.Array:
    """One array as its engine type `want` (`context._engine_type`), nested values too: a UUID, JSON
    or bool8 extension (`_from_extension`) and a DURATION (T.duration_interval) inside a
    list, struct, map or dictionary convert as they do in a column of their own (a UUID in a
    list was its 16 raw bytes read as text, a DURATION in a struct refused by Arrow's cast);
    the rest by Arrow's cast."""
    import pyarrow.compute as pc

    t = arr.type
    if t == want and not holds_interval(t):
        return arr
    if pa.types.is_interval(t) and t == want:
        return T.interval_micros(arr)
    if pa.types.is_run_end_encoded(t):
        return to_engine(pc.run_end_decode(arr), want, column)
    if isinstance(t, pa.BaseExtensionType):
        return to_engine(_from_extension(arr), want, column)
    if pa.types.is_duration(t) and pa.types.is_interval(want):
        return T.duration_interval(arr, column)
    if pa.types.is_dictionary(t) and pa.types.is_dictionary(want):
        values = to_engine(arr.dictionary, want.value_type, column)
        return pa.DictionaryArray.from_arrays(arr.indices, values, ordered=want.ordered)
    if (pa.types.is_list(want) or pa.types.is_large_list(want)) and (
            pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return _as_list(arr, want, column)
    if pa.types.is_struct(t) and pa.types.is_struct(want) and t.num_fields == want.num_fields:
        children = [to_engine(arr.field(k), want.field(k).type, column)
                    for k in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(want),
                                          mask=pc.is_null(arr) if arr.null_count else None)
    if pa.types.is_map(t) and pa.types.is_map(want):
        # (the offsets, absolute, index the whole key and item children, which convert so;
        # Arrow builds no map from sliced offsets and a NULL mask: a slice is copied first)
        if arr.offset and arr.null_count:
            arr = pa.concat_arrays([arr])
        keys = to_engine(arr.keys, want.key_type, column)
        items = to_engine(arr.items, want.item_type, column)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=want,
                                       mask=pc.is_null(arr) if arr.null_count else None)
    return arr.cast(want)


def holds_interval(t: pa.DataType) -> bool:
    """Whether an INTERVAL is `t` or nested in it at any depth (`T.interval_micros` cuts
    its values: a registered list of INTERVALs kept 1 ns that printed as 00:00:00 yet was
    not equal to INTERVAL '0 seconds')."""
    if pa.types.is_interval(t):
        return True
    if pa.types.is_dictionary(t):
        return holds_interval(t.value_type)
    return any(holds_interval(t.field(k).type) for k in range(t.num_fields))


def _from_extension(arr: pa.Array) -> pa.Array:
    """An array of a canonical extension type as its engine type (`context._engine_type`): a UUID as
    its 36 characters of lower-case hex (8-4-4-4-12), JSON as its text, bool8 as booleans."""
    import pyarrow.compute as pc

    name = arr.type.extension_name
    storage = arr.storage
    if name == "arrow.json":
        return storage.cast(pa.string())
    if name == "arrow.bool8":
        return pc.not_equal(storage, 0)
    return T.uuid_text(storage)


def _as_list(arr: pa.Array, want: pa.DataType, column: str) -> pa.Array:
    """A list-like array (fixed-size list, list view, list) as a `want` list whose NULL
    entries are empty: Arrow's cast keeps a fixed-size list's slots under its NULLs, which
    list kernels pairing flattened values with their rows do not expect, and its cast of
    a list view with NULLs gives an invalid array."""
    import numpy as np
    import pyarrow.compute as pc

    # the values of the non-NULL lists
    values = to_engine(pc.list_flatten(arr), want.value_type, column)
    sizes = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
    large = pa.types.is_large_list(want)
    offsets = pa.array(np.concatenate([[0], np.cumsum(sizes)]),
                       pa.int64() if large else pa.int32())
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(offsets, values, type=want, mask=pc.is_null(arr))
