"""Compile pqe expressions to Arrow compute expressions, and evaluate them.

One dispatch table (`_CALLS`) maps every scalar function of `pqe.plan.functions` to an
`pyarrow.compute.Expression` builder. Compiled expressions run inside Acero (filter, project,
hash-join residual filters) and in pyarrow.dataset scans (filter pushdown). SQL semantics the
Arrow kernels do not have are expressed here: division by zero gives NULL, integer arithmetic
is overflow-checked, IN follows three-valued logic, decimal products keep within 38 digits.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import itertools
import math
import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.acero as ac
import pyarrow.compute as pc

from .. import types as T
from ..errors import DataValueError, ExecutionError, InternalError, UnsupportedError
from ..plan.expr import (Call, Case, Cast, ColumnRef, Expr, InList, Literal, UserCall,
                         conjuncts, flatten, is_volatile, may_raise)
from ..plan.temporal_text import TEMPORAL_TEXT, TIME_TEXT, UNIT_DIGITS
from . import udfs  # noqa: F401  (registers pqe_* functions)
from .udfs import EXACT_STEP, rescaled
from .relational import canonical_floats

E = pc.Expression
_call = E._call
field = pc.field


def scalar(value, dtype: pa.DataType) -> E:
    if T.is_null(dtype):
        return pc.scalar(pa.scalar(None, pa.null()))
    try:
        return pc.scalar(pa.scalar(value, dtype))
    except (OverflowError, pa.ArrowInvalid) as e:  # pyarrow's text names a C type, not SQL's
        text = str(e).lower()
        if isinstance(e, OverflowError) or any(w in text for w in _OUT_OF_RANGE_WORDS):
            raise DataValueError(f"value {value} is out of range for {T.type_name(dtype)}") from e
        raise DataValueError(f"value {value!r} is not a valid {T.type_name(dtype)}") from e


# how pyarrow says a value does not fit a type ('Decimal value does not fit in precision 10',
# 'Integer value out of bounds', 'Python int too large to convert to C long')
_OUT_OF_RANGE_WORDS = ("does not fit", "out of bounds", "out of range", "too large", "overflow")


def null_of(dtype: pa.DataType) -> E:
    return pc.scalar(pa.scalar(None, dtype))


class Compiler:
    """pqe Expr -> pc.Expression. `cast_fields` maps column ids whose stored type differs
    from the engine type (string_view files) to the engine type, for dataset filters;
    `rename` maps column ids to the field names of the data (file column names in scans).

    `share=True` (for expressions run by `project` and `filter_table`, see `unit`): Arrow's
    expressions share no subexpression, so one used twice is computed twice, and nesting
    doubles that per level: NULLIF(NULLIF(x, 1), 2) computes x four times, a CASE reading
    its operand in its condition and both branches (plus the guards below) three or more
    times per level (three nested such CASEs took 206 s over 200,000 rows). A sharing
    compiler computes such a subexpression once, as a column of an earlier projection
    stage (a "let"), and refers to it by name: a subexpression the query writes more than
    once, an operand a kernel reads twice (`share`), the guards of CASE branches."""

    decimals_as_int64 = False  # (kernels.decimals.Int64DecimalCompiler: unscaled int64)
    _level = 0  # calls of the compiler under way (the outermost checks the depth)

    def __init__(self, cast_fields: dict[str, pa.DataType] | None = None,
                 rename: dict[str, str] | None = None, share: bool = False):
        self.cast_fields = cast_fields or {}
        self.rename = rename or {}
        # the rows whose values are used (a boolean expression, None: every row): checked
        # casts inside a CASE branch or a later COALESCE argument fail only for rows that
        # take them, as SQL evaluates them (Arrow computes every branch for every row)
        self.guard: E | None = None
        self.sharing = share
        self._lets: list[tuple[int, str, E]] = []  # (stage, name, expression) of the unit
        self._memo: dict[Expr, list[tuple[frozenset, E]]] = {}
        self._repeated: frozenset = frozenset()  # subexpressions the unit holds twice or more
        self._frames: list[int] = [0]  # per let being compiled: the latest stage it reads
        self._guard_terms: frozenset = frozenset()  # the guard's conjuncts, as let names
        self._guard_stage = 0
        self._refs: dict[int, tuple[E, int]] = {}  # id of a let's reference -> (it, stage)
        self._count = 0

    def guarded(self, when: E, e: Expr) -> E:
        """`e` compiled for the rows where `when` (a non-NULL boolean) holds."""
        outer, terms, stage = self.guard, self._guard_terms, self._guard_stage
        if self.sharing:
            when = self.share(when)
            self._guard_terms = terms | {self._count}  # (the let just made)
        combined = when if outer is None else _call("and", [outer, when])
        self.guard = self.share(combined) if outer is not None else combined
        self._guard_stage = self._frames[-1]
        try:
            return self(e)
        finally:
            self.guard, self._guard_terms, self._guard_stage = outer, terms, stage

    def share(self, x: E) -> E:
        """`x` (an expression the caller reads more than once) as a let, when sharing: its
        stage follows every let the expressions compiled so far for the current let (or the
        unit) read, which includes those `x` reads."""
        if not self.sharing:
            return x
        known = self._refs.get(id(x))
        if known is not None and known[0] is x:  # a let already (CASE's guard is its `taken`)
            self._frames[-1] = max(self._frames[-1], known[1])
            return x
        return self._let(x, self._frames[-1] + 1)

    def _let(self, x: E, stage: int) -> E:
        self._count = next(_LET_NAMES)
        name = f"__pqe_let{self._count}"
        self._lets.append((stage, name, x))
        self._frames[-1] = max(self._frames[-1], stage)
        ref = field(name)
        self._refs[id(ref)] = (ref, stage)
        return ref

    def unit(self, exprs: list[Expr], build: Callable[[list[E]], E] | None = None):
        """Compile the expressions of one evaluation (a projection's outputs, or one stage
        of a filter) with the subexpressions they share computed once: the compiled
        expressions (or `build` of them, one expression) and the lets they read, as a
        `Shared` when there are any (`project` and `filter_table` run those first)."""
        self._lets, self._memo, self._refs = [], {}, {}
        self._frames, self._guard_terms, self._guard_stage = [0], frozenset(), 0
        self._repeated = _repeated(exprs) if self.sharing else frozenset()
        try:
            out = []
            for e in exprs:  # (each output in a frame of its own: the stages of one output's
                self._frames.append(0)  # lets do not follow another's, so the projections
                try:  # chained before the outputs are as few as the deepest output needs)
                    out.append(self(e))
                finally:
                    self._frames.pop()
            if build is not None:
                out = build(out)
            if not self._lets:
                return out
            stages: dict[int, list[tuple[str, E]]] = {}
            for stage, name, x in self._lets:
                stages.setdefault(stage, []).append((name, x))
            return Shared(tuple(tuple(stages[k]) for k in sorted(stages)), out)
        finally:
            self._lets, self._memo, self._repeated, self._refs = [], {}, frozenset(), {}

    def __call__(self, e: Expr) -> E:
        if self._level == 0:
            _check_depth(e)
        key = self._key(e)
        if key is not None:
            for terms, ref, stage in self._memo.get(key, ()):
                if terms <= self._guard_terms:  # computed for every row this use needs
                    self._frames[-1] = max(self._frames[-1], stage)
                    return ref
            self._frames.append(self._guard_stage)
        self._level += 1
        try:
            x = self.compile(e)
        finally:
            self._level -= 1
            if key is not None:
                reads = self._frames.pop()
        if key is None:
            return x
        # a value computed under the current guard is right wherever it holds: a later use
        # under a narrower guard (a CASE branch after its condition) reads the same let
        ref = self._let(x, reads + 1)
        self._memo.setdefault(key, []).append((self._guard_terms, ref, reads + 1))
        return ref

    def _key(self, e: Expr):
        """How a subexpression computed once is found again (None: it is not): by value, or,
        when volatile, as the one node object a rewrite shares (NULLIF(random(), b)'s
        operand is one value; two random() the query writes are two)."""
        if not self._repeated:
            return None
        if e in self._repeated:
            return e
        if id(e) in self._repeated:
            return ("node", id(e))
        return None

    def stages(self, predicate: Expr | None) -> list[E | Shared]:
        """A filter (WHERE, a join's condition) as the stages it runs in, each on the rows the
        ones before kept (`filter_table` and `project` chain one Acero filter node per stage):
        the conjuncts that cannot raise first, together, then each that may
        (`plan.expr.may_raise`) alone, in order. So `WHERE c > 0 AND -c < 5 AND c * 2 < 9`
        computes -c only for rows with c > 0 and c * 2 only where -c < 5 too, as SQL's AND
        stops at a FALSE term; and the later stages see fewer rows. Exact for a filter, which
        keeps only the rows where every conjunct is TRUE."""
        if predicate is None:
            return []
        terms = conjuncts(predicate)
        safe = [t for t in terms if not may_raise(t)]
        out = [self.unit(safe, lambda xs: _fold("and_kleene", xs))] if safe else []
        return out + [self.unit([t], lambda xs: xs[0]) for t in terms if may_raise(t)]

    def compile(self, e: Expr) -> E:
        if isinstance(e, ColumnRef):
            f = field(self.rename.get(e.id, e.id))
            want = self.cast_fields.get(e.id)
            return f.cast(want) if want is not None else f
        if isinstance(e, Literal):
            return scalar(e.value, e.dtype)
        if isinstance(e, Call):
            fn = _CALLS.get(e.fn)
            if fn is None:
                raise UnsupportedError(f"function {e.fn} has no kernel")
            if e.args and all(T.is_null(a.dtype) for a in e.args) and e.fn not in _NULL_AWARE:
                return null_of(e.dtype)  # a NULL-typed result stays NULL-typed
            return _as_planned(fn(self, e), e.dtype)
        if isinstance(e, UserCall):
            from .user_functions import kernel_name

            args = [self.compile(a) for a in e.args]
            guarded = self.guard is not None  # (called on the rows that reach it only)
            if guarded:
                args.append(self.guard)
            tagged = not getattr(e.udf, "deterministic", False)
            if tagged:  # (each call values of its own, one per row)
                args.append(volatile_tag())
            return _call(kernel_name(e.udf, guarded, tagged), args)
        if isinstance(e, Cast):
            return _cast(self, e)
        if isinstance(e, Case):
            return _case(self, e)
        if isinstance(e, InList):
            return _in_list(self, e)
        raise InternalError(f"cannot compile {type(e).__name__} ({e})")


_LET_NAMES = itertools.count()  # (names unique in the process: units of two compilers merge)
# tells apart the calls of volatile functions (random(), a user function not declared
# deterministic) the query writes: Arrow takes equal expressions for one value (its filter
# dropped the second `random() < 0.5` of an AND, keeping half the rows, not a quarter)
VOLATILE_CALLS = itertools.count(1)


def volatile_tag() -> E:
    """A value per row, other in each call: max(random(), -k), k new each time (random()'s
    values exactly, never below 0). It is random() itself, and a volatile user function's
    last argument (user_functions.kernel_name: called with constants only, Arrow ran the
    function once per batch, one value for 65,536 rows)."""
    draw = _call("random", [], pc.RandomOptions(initializer="system"))
    return _call("max_element_wise", [draw, pc.scalar(-float(next(VOLATILE_CALLS)))])


class Shared:
    """Compiled expressions (`exprs`: a list, or one expression for a filter stage) that
    read lets: named expressions computed before them, in `stages` (each stage reads only
    the input and the stages before it)."""

    __slots__ = ("stages", "exprs")

    def __init__(self, stages: tuple[tuple[tuple[str, E], ...], ...], exprs):
        self.stages, self.exprs = stages, exprs

    @staticmethod
    def merge(parts: list) -> Shared | list[E]:
        """The lists of expressions of several units (each a list or a `Shared`) as one:
        their expressions in order, the lets of each stage together."""
        stages: list[list[tuple[str, E]]] = []
        exprs: list[E] = []
        for part in parts:
            if isinstance(part, Shared):
                for k, stage in enumerate(part.stages):
                    if k == len(stages):
                        stages.append([])
                    stages[k].extend(stage)
                part = part.exprs
            exprs.extend(part)
        return Shared(tuple(map(tuple, stages)), exprs) if stages else exprs


def _repeated(exprs: list[Expr]) -> frozenset:
    """The subexpressions met more than once in `exprs`, worth computing once: not a
    column or a constant. A volatile one (random()) only as one node object the builder
    shares between the parts of a rewrite (NULLIF, BETWEEN), by its id: the query wrote it
    once; equal ones it writes twice are two values. A repeat is counted, not entered again
    (its own parts are parts of the one computation)."""
    seen: set[Expr] = set()
    seen_ids: set[int] = set()
    twice: set = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if isinstance(e, (ColumnRef, Literal)) or not e.children():
            continue
        if id(e) in seen_ids:
            twice.add(id(e))
            continue
        seen_ids.add(id(e))
        if e in seen:
            twice.add(e)
            continue
        seen.add(e)
        stack.extend(e.children())
    return frozenset(k for k in twice if isinstance(k, int) or not is_volatile(k))


def _as_planned(x: E, dtype: pa.DataType) -> E:
    """A call's compiled expression, made to yield the type the plan gives the call where a
    kernel may not: a REAL (float32) call whose kernel computes in DOUBLE (ROUND, TRUNC, a
    modulo through fmod) or gets a DOUBLE operand must still yield float32 values, rounded
    to single precision, or GROUP BY, DISTINCT, joins and comparisons see digits a REAL does
    not have (f4 + 1 = 1 was FALSE for f4 = 1e-8) and the next operator meets float64 where
    it expects float32 (EXCEPT's join keys, the REAL-to-text kernel). Rounding a DOUBLE
    result of +, -, *, / of float32 operands once to float32 is the IEEE single result
    (53 >= 2 * 24 + 2 bits). A cast of a float32 to float32 is a no-op; DOUBLE results are
    left alone (their kernels yield float64, checked by tests/test_real_arithmetic.py, and
    a no-op cast per arithmetic node costs a copy)."""
    if pa.types.is_float32(dtype):
        return x.cast(T.FLOAT32, safe=False)  # (a finite DOUBLE past REAL's range: inf)
    return x


# Arrow walks an expression recursively (Canonicalize, ModifyExpression) on the thread that
# runs it, whose stack is an ordinary one: `id + 1 + 1 ...` 4,500 terms deep crashed the
# process (SIGSEGV) where planning, on its large stack, had passed it. An expression deeper
# than this is refused instead (DuckDB's limit is 1,000); its Arrow form is at most a few
# times as deep (casts, checked arithmetic, CASE guards).
MAX_EXPRESSION_DEPTH = 1_200


def _check_depth(e: Expr) -> None:
    stack = [(e, 1)]
    deepest: dict[int, int] = {}  # (a node object shared by two parents: see expr.walk)
    while stack:
        x, d = stack.pop()
        if deepest.get(id(x), 0) >= d:
            continue
        deepest[id(x)] = d
        if d > MAX_EXPRESSION_DEPTH:
            from ..deep import TooDeepError

            raise TooDeepError(f"expression nested too deeply (more than "
                               f"{MAX_EXPRESSION_DEPTH:,} levels)")
        stack.extend((k, d + 1) for k in x.children())


# ---- arithmetic ----------------------------------------------------------------------------------


def _is_int(t): return T.is_integer(t)


def _arrow_decimal_precision(fn: str, pa_: int, sa: int, pb_: int, sb: int) -> int:
    """The precision of the result of Arrow's decimal kernel for `a fn b`."""
    if fn == "multiply":
        return pa_ + pb_ + 1
    return max(pa_ - sa, pb_ - sb) + max(sa, sb) + 1  # add, subtract


_MAX_DECIMAL256_PRECISION = 76


def _decimal_operands(c: Compiler, e: Call) -> tuple[E, E, pa.DataType]:
    """Decimal operands for Arrow's kernel. SQL caps a result at 38 digits and keeps its scale
    (the bound type); Arrow's decimal128 kernels instead refuse a result precision above 38
    (p1 + p2 + 1 for a product, one digit more than the wider operand for a sum). Such
    operations run on decimal256, exactly: the checked cast to the bound type then fails only
    when the value does not fit it. A product of two 38-digit operands needs 77 digits, one
    more than decimal256 has: the operand with more integral digits gives up a digit (a value
    that no longer fits fails that checked cast)."""
    a, b = e.args
    ta, tb = T.as_decimal(a.dtype), T.as_decimal(b.dtype)
    # (kept grouped: Acero regrouped (b + (1 + e)) + 999999999999999999 and typed the new
    # grouping's sums by its own rules, past 38 digits, 'Decimal precision out of range')
    ca, cb = (_kept_grouping(c(x), x, e.fn) for x in (a, b))
    pa_, pb_ = ta.precision, tb.precision
    scale = ta.scale + tb.scale if e.fn == "multiply" else max(ta.scale, tb.scale)
    out = _arrow_decimal_precision(e.fn, pa_, ta.scale, pb_, tb.scale)
    if out <= T.MAX_DECIMAL_PRECISION:  # (and the type of Arrow's result)
        return ca, cb, pa.decimal128(out, scale)
    while _arrow_decimal_precision(e.fn, pa_, ta.scale, pb_, tb.scale) > _MAX_DECIMAL256_PRECISION:
        if pa_ - ta.scale >= pb_ - tb.scale and pa_ > ta.scale + 1:
            pa_ -= 1
        elif pb_ > tb.scale + 1:
            pb_ -= 1
        else:
            break
    out = _arrow_decimal_precision(e.fn, pa_, ta.scale, pb_, tb.scale)
    return (ca.cast(pa.decimal256(pa_, ta.scale)), cb.cast(pa.decimal256(pb_, tb.scale)),
            pa.decimal256(out, scale))


def _used(c: Compiler, x: E, dtype: pa.DataType) -> E:
    """An operand of an overflow-checked integer kernel, NULL in the rows a CASE branch or a
    later COALESCE argument does not take (`Compiler.guard`): Arrow computes every branch for
    every row, SQL only the branch a row takes, so `CASE WHEN TRUE THEN NULL ELSE c - 2^63 + 1
    END` must not fail (fuzz seed 201 case 6757)."""
    if c.guard is None or T.is_null(dtype):
        return x
    return _call("if_else", [c.guard, x, null_of(dtype)])


_ASSOCIATIVE = {"add", "multiply"}


def _kept_grouping(x: E, arg: Expr, name: str) -> E:
    """An operand that is itself a sum (or product) cast to its own type: Acero's expression
    simplification treats add / multiply (checked too) as associative and commutative and
    regroups a chain's constants, so (a + 5) + 9223372036854775807 became a + (5 + ...), an
    overflow of two constants where the SQL grouping fits, a * 4 * 0 was 0 where a * 4
    overflows, and (x + 0.2) + 0.3 rounded differently. A cast is a barrier it does not
    flatten through; evaluating it to the same type is a no-op."""
    if name in _ASSOCIATIVE and isinstance(arg, Call) and arg.fn == name:
        return x.cast(arg.dtype)
    return x


def _arith(name: str) -> Callable[[Compiler, Call], E]:
    def build(c: Compiler, e: Call) -> E:
        a, b = e.args
        if any(T.is_null(x.dtype) or isinstance(x, Literal) and x.value is None for x in (a, b)):
            # x op NULL is NULL, of the bound type: the optimizer may type a folded NULL
            # after the bound type was decided (d * NULLIF(NULL, NULL) is DECIMAL(38,10) of
            # two DECIMAL(38,10), whose product kernel wanted scale 20; seed 302 case 62624)
            return null_of(e.dtype)
        if T.is_interval(e.dtype) and T.is_temporal(a.dtype) and T.is_temporal(b.dtype):
            # (kernels.udfs; a TIMESTAMPTZ by its UTC microseconds)
            naive = [c(x) if not x.dtype.tz else c(x).cast(T.INT64).cast(T.TIMESTAMP)
                     for x in (a, b)]
            return _call("pqe_timestamp_diff", naive)
        if T.is_temporal(e.dtype) or T.is_interval(a.dtype) or T.is_interval(b.dtype):
            return _temporal_arith(c, e)
        if pa.types.is_date(a.dtype) and pa.types.is_date(b.dtype):  # date - date = days
            days = [c(x).cast(pa.int32()).cast(T.INT64) for x in (a, b)]
            return _call("subtract_checked", days)  # in int64: int32 days may not fit
        if _is_int(e.dtype):
            return _call(name + "_checked", [_kept_grouping(_used(c, c(x), x.dtype), x, name)
                                             for x in (a, b)])
        if T.is_decimal(e.dtype):
            if name == "multiply" and _both_38_digits(e):
                return _wide_product(c, e)
            if name == "multiply" and _both_38_digits(e, simple=False):
                return _narrowed_product(c, e)
            ca, cb, out_type = _decimal_operands(c, e)
            out = _call(name, [ca, cb])
            if out_type == e.dtype:
                return out
            exact, exact_type = out, out_type
            if out_type.scale > e.dtype.scale:
                out = _round_decimal(out, out_type, e.dtype.scale)
                out_type = _rounded_type(out_type, e.dtype)
            return _checked_numeric_cast(c, out, out_type, e.dtype, exact, exact_type)
        return _call(name, [_kept_grouping(c(x), x, name) for x in (a, b)])
    return build


def _both_38_digits(e: Call, simple: bool = True) -> bool:
    """Both operands DECIMAL(38,s) with s <= 36; with `simple`, also both columns, constants or
    casts of them: `_wide_product` repeats each operand several times, which nested products
    would multiply (the expression has no shared subexpressions)."""
    ta, tb = (T.as_decimal(x.dtype) for x in e.args)
    if not (ta.precision == tb.precision == T.MAX_DECIMAL_PRECISION
            and ta.scale < T.MAX_DECIMAL_PRECISION - 1 and tb.scale < T.MAX_DECIMAL_PRECISION - 1):
        return False
    leaf = (ColumnRef, Literal)
    return not simple or all(isinstance(x, leaf) or isinstance(x, Cast) and isinstance(x.arg, leaf)
                             for x in e.args)


def _narrowed_product(c: Compiler, e: Call) -> E:
    """DECIMAL(38,a) * DECIMAL(38,b) of compound operands: the first is narrowed to 37 digits
    (a checked cast; a value that does not fit fails naming it and DECIMAL(37,a))."""
    a, b = e.args
    ta, tb = T.as_decimal(a.dtype), T.as_decimal(b.dtype)
    narrow = pa.decimal128(37, ta.scale)
    ca = _checked_numeric_cast(c, c(a), ta, narrow).cast(pa.decimal256(37, ta.scale))
    cb = c(b).cast(pa.decimal256(38, tb.scale))
    out_type = pa.decimal256(76, ta.scale + tb.scale)
    out = _call("multiply", [ca, cb])
    if out_type.scale > e.dtype.scale:
        out = _round_decimal(out, out_type, e.dtype.scale)
        out_type = _rounded_type(out_type, e.dtype)
    return _checked_numeric_cast(c, out, out_type, e.dtype)


def _wide_product(c: Compiler, e: Call) -> E:
    """DECIMAL(38,sa) * DECIMAL(38,sb): Arrow's decimal256 product needs 38 + 38 + 1 = 77
    digits, one more than it has, so one operand must fit 37 digits. Narrowing always the same
    one failed (with Arrow's raw 'Decimal value does not fit in precision 37') for
    9999999999999999999999999999.9999999999 * 0.0000000001, whose product fits DECIMAL(38,20).
    Per row, the operand that fits 37 digits is narrowed; when neither does, the product has
    at least 74 - sa - sb integer digits, past any result type, and fails naming both."""
    a, b = e.args
    ta, tb = T.as_decimal(a.dtype), T.as_decimal(b.dtype)
    ca, cb = c(a), c(b)
    false = scalar(False, T.BOOLEAN)
    a_fits = _call("coalesce", [_fits(ca, ta, pa.decimal128(37, ta.scale)), false])
    b_fits = _call("coalesce", [_fits(cb, tb, pa.decimal128(37, tb.scale)), false])
    a37 = _call("if_else", [a_fits, ca, scalar(decimal.Decimal(0), ta)]).cast(
        pa.decimal256(37, ta.scale))
    b37 = _call("if_else", [b_fits, cb, scalar(decimal.Decimal(0), tb)]).cast(
        pa.decimal256(37, tb.scale))
    product = _call("if_else", [a_fits,
                                _call("multiply", [a37, cb.cast(pa.decimal256(38, tb.scale))]),
                                _call("multiply", [ca.cast(pa.decimal256(38, ta.scale)), b37])])
    neither = _call("and", [_call("and", [_call("is_valid", [ca]), _call("is_valid", [cb])]),
                            _call("invert", [_call("or", [a_fits, b_fits])])])
    if c.guard is not None:
        neither = _call("and", [neither, c.guard])
    both = _call("binary_join_element_wise", [ca.cast(T.TEXT), cb.cast(T.TEXT),
                                              scalar(" * ", T.TEXT)])
    text = _call("if_else", [neither, both, null_of(T.TEXT)])
    check = _call("pqe_check_range", [text, neither, scalar(T.type_name(e.dtype), T.TEXT)])
    out_type = pa.decimal256(76, ta.scale + tb.scale)
    product = _call("if_else", [check, product, null_of(out_type)])
    if out_type.scale > e.dtype.scale:
        exact = product
        product = _round_decimal(product, out_type, e.dtype.scale)
        return _checked_numeric_cast(c, product, _rounded_type(out_type, e.dtype), e.dtype,
                                     exact, out_type)
    return _checked_numeric_cast(c, product, out_type, e.dtype, product, out_type)


def zeroed_null_slots(x: E, dtype: pa.DataType) -> E:
    """A DATE or TIMESTAMP with 0 (the epoch) in its NULL slots. Arrow leaves +-2^63 there
    (LEAST, a grouped MAX of no value, pandas' NaT), and its checked TIMESTAMP + INTERVAL
    kernel checks those slots too: `max(ts) - INTERVAL '1' HOUR` of a group without a ts
    was "integer overflow". (An if_else over a NULL scalar alone keeps the data buffer as
    it is: the slots are made 0 first.)"""
    null = _call("is_null", [x])
    bits = pa.int32() if dtype.bit_width == 32 else pa.int64()
    zero = pc.scalar(pa.array([0], bits).view(dtype)[0])  # (the epoch, 0 units)
    return _call("if_else", [null, null_of(dtype), _call("if_else", [null, zero, x])])


def _interval_constant(months: int, days: int, nanos: int, what: str) -> E:
    """A constant INTERVAL of its parts, or an error naming `what` when a part is past its
    range (months and days int32s, -2147483648 included, as DuckDB's; nanoseconds int64)."""
    if not (-2 ** 31 <= months < 2 ** 31 and -2 ** 31 <= days < 2 ** 31
            and -2 ** 63 <= nanos < 2 ** 63):
        raise DataValueError(f"interval out of range: the {what} overflows")
    return scalar(pa.MonthDayNano([months, days, nanos]), T.INTERVAL)


def _temporal_arith(c: Compiler, e: Call) -> E:
    a, b = e.args
    if e.fn == "multiply":  # interval * integer
        iv, n = (a, b) if T.is_interval(a.dtype) else (b, a)
        if isinstance(iv, Literal) and isinstance(n, Literal):
            v = iv.value
            k = n.value
            if k is None or v is None:
                return null_of(T.INTERVAL)
            return _interval_constant(v.months * k, v.days * k, v.nanoseconds * k, "product")
        return _call("pqe_interval_multiply", [c(iv), c(n).cast(T.INT64)])
    if T.is_interval(a.dtype) and T.is_interval(b.dtype):  # INTERVAL +/- INTERVAL, by part
        if not (isinstance(a, Literal) and isinstance(b, Literal)):
            return _call(f"pqe_interval_{e.fn}", [c(a), c(b)])
        if a.value is None or b.value is None:
            return null_of(T.INTERVAL)
        k = -1 if e.fn == "subtract" else 1
        return _interval_constant(a.value.months + k * b.value.months,
                                  a.value.days + k * b.value.days,
                                  a.value.nanoseconds + k * b.value.nanoseconds,
                                  "sum of the intervals")
    if e.fn == "add" and T.is_temporal(b.dtype):
        a, b = b, a
    sign = -1 if e.fn == "subtract" else 1
    x = zeroed_null_slots(c(a), a.dtype) if pa.types.is_timestamp(a.dtype) else c(a)
    if T.is_integer(b.dtype):  # date +/- n days
        days = c(b) if sign == 1 else _call("negate_checked", [c(b)])
        return _add_days(x, days, a.dtype, c)
    if not isinstance(b, Literal):
        return _add_interval_column(x, c(b), a.dtype, e.dtype, sign)
    if b.value is None:
        return null_of(e.dtype)
    months, days, nanos = b.value.months * sign, b.value.days * sign, b.value.nanoseconds * sign
    out = x
    if pa.types.is_date(a.dtype) and pa.types.is_timestamp(e.dtype):  # date + interval
        out = out.cast(e.dtype)
        a = Cast(a, e.dtype)
    if pa.types.is_date(a.dtype):
        if nanos:
            raise UnsupportedError("adding a time interval to a DATE is not supported; cast to TIMESTAMP")
        if months:
            out = _call("pqe_add_months", [out, scalar(months, T.INT64)])
        if days:
            out = _add_days(out, scalar(days, T.INT64), a.dtype)
        return out
    # timestamp
    if months:  # on the UTC calendar (see `utc`)
        out = utc(out, a.dtype)
        ut = utc_type(a.dtype)
        date_part = out.cast(pa.date32())
        tod = _call("subtract", [out, date_part.cast(ut)])
        moved = _call("pqe_add_months", [date_part, scalar(months, T.INT64)]).cast(ut)
        out = _call("add_checked", [moved, tod])
        if ut != a.dtype:
            out = out.cast(a.dtype)
    total = days * 86_400 * 10**9 + nanos
    if total:
        unit = a.dtype.unit
        per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
        if not -(2 ** 63) <= total // per < 2 ** 63:
            raise DataValueError("timestamp out of range: the interval does not fit a TIMESTAMP")
        out = _call("add_checked", [out, pc.scalar(pa.scalar(total // per, pa.duration(unit)))])
    return out


def _add_interval_column(ts: E, iv: E, src: pa.DataType, dst: pa.DataType, sign: int) -> E:
    """A timestamp (or a DATE, as its midnight) plus or minus a column of INTERVALs, as
    with a constant: the months first (the day clamped to the month's end), then the days
    and the rest; overflow is an error. Zone-less timestamps only (a zone's months and days
    need its calendar)."""
    if pa.types.is_timestamp(src) and src.tz is not None:
        raise UnsupportedError("adding a column of INTERVALs to a TIMESTAMP WITH TIME ZONE is "
                               "not supported")
    if pa.types.is_date(src):
        ts = ts.cast(dst)
    unit = dst.unit
    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
    raw = {f: _call(f"pqe_interval_raw_{f}", [iv]) for f in ("months", "days", "nanos")}
    if sign < 0:
        raw = {f: _call("negate_checked", [x]) for f, x in raw.items()}
    date_part = ts.cast(pa.date32())
    tod = _call("subtract", [ts, date_part.cast(dst)])
    moved = _call("pqe_add_months", [date_part, raw["months"]]).cast(dst)
    out = _call("add_checked", [moved, tod])
    day = scalar(86_400 * 10**9 // per, T.INT64)
    rest = _call("add_checked", [_call("multiply_checked", [raw["days"], day]),
                                 _call("divide", [raw["nanos"], scalar(per, T.INT64)])])
    return _call("add_checked", [out, rest.cast(pa.duration(unit))])


def utc_type(t: pa.DataType) -> pa.DataType:
    """The UTC version of a TIMESTAMPTZ type (others unchanged)."""
    if pa.types.is_timestamp(t) and t.tz is not None and t.tz != "UTC":
        return pa.timestamp(t.unit, "UTC")
    return t


def utc(x: E, t: pa.DataType) -> E:
    """A TIMESTAMPTZ is an instant, and pqe's session time zone is UTC: calendar fields,
    truncation, casts to DATE or text and month arithmetic see its UTC wall-clock time,
    whichever zone its Arrow type names (Arrow's kernels would use that zone). A cast
    between zones keeps the instant."""
    ut = utc_type(t)
    return x if ut == t else x.cast(ut)


def _add_days(date_expr: E, days: E, dtype: pa.DataType, c: Compiler | None = None) -> E:
    if pa.types.is_date(dtype):
        as_int = date_expr.cast(pa.int32()).cast(pa.int64())
        total = _call("add_checked", [as_int, days])
        # a day past DATE's range is pqe's error (in rows whose value is used), not Arrow's
        # "Integer value 2147501909 not in range"
        guard = c.guard if c is not None and c.guard is not None else scalar(True, T.BOOLEAN)
        total = _call("pqe_range_i64", [total, scalar(-(2 ** 31), T.INT64),
                                        scalar(2 ** 31, T.INT64), scalar(True, T.BOOLEAN), guard,
                                        scalar("DATE (days from 1970-01-01)", T.TEXT)])
        return total.cast(pa.int32()).cast(pa.date32())
    unit = dtype.unit
    per_day = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400 * 10**9}[unit]
    dur = _call("multiply_checked", [days, scalar(per_day, T.INT64)]).cast(pa.duration(unit))
    return _call("add_checked", [date_expr, dur])


def _bitwise(op: str):
    def build(c, e):
        return _call(f"bit_wise_{op}", [c(a) for a in e.args])
    return build


def _last_day(c: Compiler, e: Call) -> E:
    """The last day of the month: the month's first day, one month on, one day back."""
    t = e.args[0].dtype
    x, t = utc(c(e.args[0]), t), utc_type(t)  # (a TIMESTAMPTZ's UTC day)
    if _is_plain_ns(t):  # the day of the rounded TIMESTAMP, as DuckDB reads it
        x, t = ns_to_micros(c, x), pa.timestamp("us")
    day = x if pa.types.is_date32(t) else x.cast(pa.date32())
    first = _call("floor_temporal", [day], pc.RoundTemporalOptions(unit="month"))
    out = _add_days(_call("pqe_add_months", [first, scalar(1, T.INT64)]), scalar(-1, T.INT64),
                    pa.date32())
    return calendar_checked(out, pa.date32(), x, t, "LAST_DAY")


# seconds on either side of 1970 that a TIMESTAMP in microseconds (int64) holds, rounded in
_EPOCH_SECONDS = 9_223_372_036_854


def _to_timestamp(c: Compiler, e: Call) -> E:
    """to_timestamp(seconds): the TIMESTAMPTZ that many seconds after 1970-01-01 00:00 UTC.
    An integer count is exact; a DOUBLE one is rounded to the microsecond, half to even (as
    PostgreSQL's rint). Seconds past what a microsecond TIMESTAMP holds, NaN and infinity
    are an error naming the value (in the rows that use it)."""
    (a,) = e.args
    x = c(a)
    guard = c.guard if c.guard is not None else scalar(True, T.BOOLEAN)
    label = scalar("TIMESTAMPTZ (seconds since 1970-01-01)", T.TEXT)
    if pa.types.is_integer(a.dtype):
        x = _call("pqe_range_i64", [x.cast(T.INT64), scalar(-_EPOCH_SECONDS, T.INT64),
                                    scalar(_EPOCH_SECONDS + 1, T.INT64), scalar(True, T.BOOLEAN),
                                    guard, label])
        micros = _call("multiply", [x, scalar(10**6, T.INT64)])
    else:
        x = _call("pqe_range_f64", [x.cast(T.FLOAT64), scalar(float(-_EPOCH_SECONDS), T.FLOAT64),
                                    scalar(float(_EPOCH_SECONDS), T.FLOAT64),
                                    scalar(True, T.BOOLEAN), guard, label])
        scaled = _call("multiply", [x, scalar(1e6, T.FLOAT64)])
        micros = _call("round", [scaled], pc.RoundOptions(0, "half_to_even")).cast(T.INT64)
    return micros.cast(pa.timestamp("us")).cast(e.dtype)


def _zero_to_null(x: E, dtype: pa.DataType) -> E:
    zero = scalar(0, dtype) if not T.is_decimal(dtype) else scalar(decimal.Decimal(0), dtype)
    return _call("if_else", [_call("equal", [x, zero]), null_of(dtype), x])


def _divide(c: Compiler, e: Call) -> E:
    a, b = e.args
    if _with_ubigint(e):
        return _unsigned_divide(c, e)
    denom = _zero_to_null(c(b), b.dtype)
    if _is_int(e.dtype):
        # truncates toward zero; -2^63 / -1 overflows, so only in the rows that use it
        return _call("divide_checked", [_used(c, c(a), a.dtype), denom])
    return _call("divide", [c(a), denom])


def _modulo(c: Compiler, e: Call) -> E:
    a, b = e.args
    if T.is_decimal(e.dtype):
        if a.dtype != e.dtype or b.dtype != e.dtype:  # (operands past the remainder's type)
            return _modulo_by_wider(c(a), c(b), e.dtype)
        return _decimal_modulo(c(a), c(b), e.dtype)
    if _with_ubigint(e):
        return _unsigned_divide(c, e)
    ca, cb = c(a), _zero_to_null(c(b), b.dtype)
    if _is_int(e.dtype):
        # x % -1 is 0 (PostgreSQL, DuckDB), also for -2^63, whose quotient overflows: use 1
        cb = _call("if_else", [_call("equal", [cb, scalar(-1, e.dtype)]), scalar(1, e.dtype), cb])
        q = _call("divide_checked", [ca, cb])
        return _call("subtract_checked", [ca, _call("multiply_checked", [q, cb])])
    return _call("pqe_fmod", [ca.cast(T.FLOAT64), cb.cast(T.FLOAT64)]).cast(e.dtype)


def _with_ubigint(e: Call) -> bool:
    return any(pa.types.is_uint64(a.dtype) for a in e.args) \
        and all(pa.types.is_integer(a.dtype) for a in e.args)


def _magnitude(x: E, t: pa.DataType) -> tuple[E, E | None]:
    """|x| as UBIGINT, and whether x is negative (None for an unsigned type): -(x + 1) + 1
    does not overflow where -x would (|-2^63| is 2^63)."""
    if pa.types.is_unsigned_integer(t):
        return x.cast(pa.uint64()), None
    x = x.cast(T.INT64)
    neg = _call("less", [x, scalar(0, T.INT64)])
    down = _call("if_else", [neg, _call("negate", [_call("add", [x, scalar(1, T.INT64)])]), x])
    return _call("add", [down.cast(pa.uint64()), neg.cast(pa.uint64())]), neg


def _unsigned_divide(c: Compiler, e: Call) -> E:
    """a / b or a % b of integers, one a UBIGINT (functions._arith): the magnitudes divided as
    UBIGINT, the sign put back as PostgreSQL's truncating division has it (the quotient's
    from both operands, the remainder's the dividend's), through DECIMAL(20,0), which holds
    every result (2^64 - 1 / -1); / 0 and % 0 are NULL. Exact: no operand is cast to a type
    that cannot hold it (UBIGINT / 2 cast 2^64 - 1 to BIGINT and failed)."""
    a, b = e.args
    ma, na = _magnitude(c(a), a.dtype)
    mb, nb = _magnitude(c(b), b.dtype)
    mb = _zero_to_null(mb, pa.uint64())
    q = _call("divide", [ma, mb])
    if e.fn == "divide":
        out = q
        neg = nb if na is None else na if nb is None else _call("xor", [na, nb])
    else:
        out = _call("subtract", [ma, _call("multiply", [q, mb])])
        neg = na
    if neg is None:
        return out.cast(e.dtype)
    wide = out.cast(T.as_decimal(pa.uint64()))
    return _call("if_else", [neg, _call("negate", [wide]), wide]).cast(e.dtype)


# DECIMAL % is exact on unscaled int64 values of at most this many digits
_MODULO_DIGITS = 18


def _decimal_modulo(a: E, b: E, t: pa.DataType) -> E:
    """a % b for operands of the DECIMAL type t (the resolver casts both to it), exactly: the
    remainder of their unscaled integers, truncated toward zero so it has the dividend's sign
    (PostgreSQL); % 0 is NULL like integer % 0 (float64 answered 3.33 for 33.30 % 3.33).
    Up to 18 digits on unscaled int64; wider types with decimal256 kernels (`_wide_modulo`)."""
    if t.precision > _MODULO_DIGITS:
        return _wide_modulo(a, b, t)
    ua, ub = _unscaled(a, t.scale), _zero_to_null(_unscaled(b, t.scale), T.INT64)
    rem = _call("subtract", [ua, _call("multiply", [_call("divide", [ua, ub]), ub])])
    return _from_unscaled(rem, t)


def _wide_modulo(a: E, b: E, t: pa.DataType) -> E:
    """a % b for DECIMAL(p, s) operands of more than 18 digits, exactly (udfs.wide_modulo:
    Arrow's decimal division is not, by a divisor past one 32-bit limb)."""
    wide = pa.decimal256(_MAX_DECIMAL256_PRECISION, t.scale)
    return _call(f"pqe_mod_d{t.scale}", [a.cast(wide), b.cast(wide)]).cast(t)


def _modulo_by_wider(a: E, b: E, t: pa.DataType) -> E:
    """a % b where the divisor b has more integer digits than the remainder's type t, whose
    scale is the dividend's (T.arithmetic_type): where |b| > |a| the remainder is a; in the
    other rows |b| <= |a|, so both fit 38 digits at t's scale, as `_wide_modulo` needs (the
    other rows divide by a, a stand-in whose remainder is not used)."""
    wide = pa.decimal256(_MAX_DECIMAL256_PRECISION, t.scale)
    xa, xb = a.cast(wide), b.cast(wide)
    over = _call("greater", [_call("abs", [xb]), _call("abs", [xa])])
    rem = _call(f"pqe_mod_d{t.scale}", [xa, _call("if_else", [over, xa, xb])])
    return _call("if_else", [over, xa, rem]).cast(t)


def _unscaled(x: E, scale: int) -> E:
    """The unscaled int64 values of a DECIMAL of at most 18 digits: 3.33 -> 333."""
    if scale:
        ten_to_scale = scalar(decimal.Decimal(10 ** scale), pa.decimal128(scale + 1, 0))
        x = _call("multiply", [x, ten_to_scale])
    return x.cast(T.INT64)


def _from_unscaled(x: E, t: pa.DataType) -> E:
    """int64 unscaled values of at most 18 digits as DECIMAL t: 333 -> 3.33."""
    d = x.cast(pa.decimal128(19, 0))
    if t.scale:
        one_unit = scalar(decimal.Decimal(1).scaleb(-t.scale), pa.decimal128(t.scale, t.scale))
        d = _call("multiply", [d, one_unit])
    return d.cast(t)


def _negate(c: Compiler, e: Call) -> E:
    (a,) = e.args
    if T.is_interval(a.dtype):
        if isinstance(a, Literal) and a.value is not None:
            v = a.value
            return _interval_constant(-v.months, -v.days, -v.nanoseconds, "negation")
        return _call("pqe_interval_multiply", [c(a), scalar(-1, T.INT64)])
    if _is_int(e.dtype):
        return _call("negate_checked", [_used(c, c(a), a.dtype)])
    return _call("negate", [c(a)])


# ---- comparison and logic ----------------------------------------------------------------------

# functions whose result is not simply NULL when every argument is NULL
_NULL_AWARE = {"is_null", "is_not_null", "is_true", "is_false", "coalesce", "is_distinct_from",
               "is_not_distinct_from", "concat", "concat_skip_nulls"}

_CMP = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
        "ge": "greater_equal"}


def _compare(c: Compiler, e: Call) -> E:
    a, b = e.args
    if T.is_interval(a.dtype) and T.is_interval(b.dtype):
        return _compare_intervals(e.fn, c(a), c(b), c.share)
    if T.is_floating(a.dtype) and T.is_floating(b.dtype):
        return compare_floats(e.fn, c(a), c(b), _float_literal(a), _float_literal(b))
    return _call(_CMP[e.fn], [c(a), c(b)])


_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _compare_intervals(fn: str, a: E, b: E, share=lambda x: x) -> E:
    """INTERVALs compared as DuckDB and PostgreSQL compare them: a month is 30 days and a day
    24 hours (INTERVAL '1 month' = INTERVAL '30 days'), by their normalized (days, rest)
    keys (kernels.udfs). NULL in, NULL out."""
    da, ra = (share(_call(f"pqe_interval_{k}_key", [a])) for k in ("days", "rest"))
    db, rb = (share(_call(f"pqe_interval_{k}_key", [b])) for k in ("days", "rest"))
    same_days = _call("equal", [da, db])
    if fn in ("eq", "ne"):
        eq = _call("and", [same_days, _call("equal", [ra, rb])])
        return eq if fn == "eq" else _call("invert", [eq])
    strict = "less" if fn in ("lt", "le") else "greater"
    rest = _CMP[fn]  # (the rest decides between equal days: <, <=, >, >=)
    return _call("or", [_call(strict, [da, db]), _call("and", [same_days, _call(rest, [ra, rb])])])


def _float_literal(e: Expr) -> float | None:
    """The value of a non-NULL floating literal, else None."""
    return e.value if isinstance(e, Literal) and isinstance(e.value, float) else None


def compare_floats(fn: str, a: E, b: E, lit_a: float | None = None,
                   lit_b: float | None = None) -> E:
    """a <fn> b on floats with PostgreSQL's total order: NaN equals NaN and is greater than
    every number, infinity included (IEEE comparisons make NaN unequal and unordered);
    -0.0 equals 0.0 (as in IEEE). NULL in, NULL out. Comparing with a constant number costs
    no more than IEEE's comparison (> and >= add an is_nan)."""
    if lit_a is not None and lit_b is None:
        return compare_floats(_FLIP[fn], b, a, None, lit_a)
    base = _call(_CMP[fn], [a, b])
    na = _call("is_nan", [a])
    if lit_b is not None and not math.isnan(lit_b):  # a number: only a NaN `a` needs care
        return _call("or", [base, na]) if fn in ("gt", "ge") else base
    if lit_b is not None:  # NaN: equal to NaN, below nothing
        not_na = _call("invert", [na])
        return {"eq": na, "ne": not_na, "lt": not_na, "ge": na,
                "le": _call("or", [na, not_na]), "gt": _call("and", [na, not_na])}[fn]
    nb = _call("is_nan", [b])
    either = _call("or", [na, nb])
    nan_case = {"eq": _call("and", [na, nb]), "ne": _call("xor", [na, nb]),
                "lt": _call("and", [_call("invert", [na]), nb]), "le": nb,
                "gt": _call("and", [na, _call("invert", [nb])]), "ge": na}[fn]
    return _call("if_else", [either, nan_case, base])


def _equal(a: Expr, b: Expr, ca: E, cb: E) -> E:
    """a = b (NaN = NaN for floats; INTERVALs normalized, a month 30 days)."""
    if T.is_floating(a.dtype) and T.is_floating(b.dtype):
        return compare_floats("eq", ca, cb, _float_literal(a), _float_literal(b))
    if T.is_interval(a.dtype) and T.is_interval(b.dtype):
        return _compare_intervals("eq", ca, cb)
    return _call("equal", [ca, cb])


def _distinct(c: Compiler, e: Call) -> E:
    a, b = e.args
    ca, cb = c(a), c(b)
    if T.is_null(a.dtype) or T.is_null(b.dtype):
        # a bare NULL (no kernel compares null-typed values): the other side differs from it
        # exactly where it is not NULL; NULL IS DISTINCT FROM NULL is false
        differs = _call("is_valid", [cb if T.is_null(a.dtype) else ca])
    else:
        differs = _call("coalesce", [_call("invert", [_equal(a, b, ca, cb)]),
                                     _call("xor", [_call("is_null", [ca]), _call("is_null", [cb])])])
    if e.fn == "is_not_distinct_from":
        return _call("invert", [differs])
    return differs


def _logic(name):
    def build(c, e):
        return _call(name, [c(a) for a in e.args])
    return build


def _short_circuit(name: str, decides: bool):
    """AND (`decides` FALSE) or OR (TRUE) as SQL evaluates it: a term that may raise
    (`plan.expr.may_raise`: c0 + c0, -c0, a checked cast) is computed only for the rows the
    terms that cannot raise leave undecided: `WHERE c0 > 0 AND -c0 < 5` never negates
    c0 = -2^63, which `c0 > 0` rejects, and `c0 < 0 OR c0 + c0 > 4` never doubles it.
    Arrow's and_kleene / or_kleene compute every term for every row, so the safe terms are
    compiled first and each raising term for the rows where they are not `decides`
    (three-valued: a NULL term decides nothing). The value is unchanged (AND and OR commute);
    only errors from rows whose answer is already known are avoided.

    The guard holds the safe terms only, never an earlier raising term: Arrow has no common
    subexpressions, so a guard holding the terms before it (each holding its own guard)
    doubles the expression with every term and nesting level (a 4-deep AND/OR tree took
    minutes to compile). Two raising terms of one AND are both computed for the rows the safe
    ones keep."""
    def build(c, e):
        flat = flatten(e, e.fn)  # a AND b AND c folds to nested binary calls
        out = _fold(name, [c(a) for a in flat if not may_raise(a)])
        raising = [a for a in flat if may_raise(a)]
        if out is not None and raising:
            undecided = _call("coalesce", [out if not decides else _call("invert", [out]),
                                           scalar(True, T.BOOLEAN)])
            raised = [c.guarded(undecided, a) for a in raising]
        else:
            raised = [c(a) for a in raising]
        return _fold(name, ([] if out is None else [out]) + raised)
    return build


def _fold(name: str, terms: list[E]) -> E | None:
    """`terms` joined left to right by one binary kernel (and_kleene, or_kleene, ...); None
    for no terms."""
    out = None
    for x in terms:
        out = x if out is None else _call(name, [out, x])
    return out


def _is_true(c, e):
    return _call("coalesce", [c(e.args[0]), scalar(False, T.BOOLEAN)])


def _is_false(c, e):
    return _call("coalesce", [_call("invert", [c(e.args[0])]), scalar(False, T.BOOLEAN)])


def _const_text(e: Expr, what: str) -> str:
    if not (isinstance(e, Literal) and (e.value is None or isinstance(e.value, str))):
        raise UnsupportedError(f"{what} must be a constant string")
    return e.value


def _like(c, e):
    a, p = e.args
    pattern = _const_text(p, "LIKE pattern")
    if pattern is None:
        return null_of(T.BOOLEAN)
    if (len(pattern) - len(pattern.rstrip("\\"))) % 2:
        # an unpaired escape at the end: Arrow's match_like drops it ('a' LIKE 'a\' was TRUE)
        raise ExecutionError(f"LIKE pattern must not end with escape character: '{pattern}'")
    x = c(a)
    if e.fn == "ilike":
        # both sides lowered, as DuckDB and PostgreSQL compare them: Arrow's ignore_case
        # folds cases (RE2), so 'ΣΑΣ' ILIKE 'σας' was TRUE (σ and ς fold together) and
        # 'İstanbul' ILIKE 'i%' FALSE, each the other way round from both
        pattern = pc.utf8_lower(pa.scalar(pattern, pa.string())).as_py()
        x = _call("utf8_lower", [x])
    if "\\" in pattern:
        # Arrow's match_like reads X%, %X and %X% as the text X, escapes and all ('a\\b%'
        # found no 'a\b'; any pattern under ESCAPE '!' holding a backslash): as a regex
        return _call("match_substring_regex", [x], pc.MatchSubstringOptions(
            _like_regex(pattern)))
    return _call("match_like", [x], pc.MatchSubstringOptions(pattern))


def _like_regex(pattern: str) -> str:
    """A LIKE pattern (backslash escapes) as an anchored RE2 pattern: % any text, _ one
    character, \\c the character c."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return "(?s)^" + "".join(out) + "$"


def _substring_match(kernel):
    def build(c, e):
        a, p = e.args
        pattern = _const_text(p, f"{e.fn} argument")
        if pattern is None:
            return null_of(T.BOOLEAN)
        return _call(kernel, [c(a)], pc.MatchSubstringOptions(pattern))
    return build


# ---- text --------------------------------------------------------------------------------------


def _const_int(e: Expr, what: str) -> int | None:
    if not (isinstance(e, Literal) and (e.value is None or isinstance(e.value, int))):
        raise UnsupportedError(f"{what} must be a constant integer")
    return e.value


def _substring(c, e):
    s = c(e.args[0])
    start = _const_int(e.args[1], "SUBSTRING start")
    length = _const_int(e.args[2], "SUBSTRING length") if len(e.args) > 2 else None
    if start is None or (len(e.args) > 2 and length is None):
        return null_of(T.TEXT)
    if length is not None and length < 0:
        raise UnsupportedError("negative SUBSTRING length")
    begin = max(start, 1) - 1
    if length is None:
        return _call("utf8_slice_codeunits", [s], pc.SliceOptions(begin))
    stop = min(start - 1 + length, T.INT64_MAX)  # (past BIGINT it is past every string's end)
    if stop <= begin:
        return _call("if_else", [_call("is_null", [s]), null_of(T.TEXT), scalar("", T.TEXT)])
    return _call("utf8_slice_codeunits", [s], pc.SliceOptions(begin, stop))


def _text_unary(kernel):
    def build(c, e):
        return _call(kernel, [c(e.args[0])])
    return build


# what TRIM removes without a second argument: the Unicode space separators (category Zs), as
# DuckDB does; Arrow's *_trim_whitespace also removed tabs, newlines and other control
# characters ('\tx\n' came back 'x')
_SPACE_SEPARATORS = "".join(map(chr, (0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x202F,
                                      0x205F, 0x3000)))


def _trim(kernel_chars):
    """TRIM / LTRIM / RTRIM: space separators alone without a second argument."""
    def build(c, e):
        if len(e.args) == 1:
            return _call(kernel_chars, [c(e.args[0])], pc.TrimOptions(_SPACE_SEPARATORS))
        chars = _const_text(e.args[1], "TRIM characters")
        if chars is None:
            return null_of(T.TEXT)
        return _call(kernel_chars, [c(e.args[0])], pc.TrimOptions(chars))
    return build


def _replace(c, e):
    s, old, new = e.args
    a, b = _const_text(old, "REPLACE pattern"), _const_text(new, "REPLACE replacement")
    if a is None or b is None:
        return null_of(T.TEXT)
    if a == "":
        return c(s)
    return _call("replace_substring", [c(s)], pc.ReplaceSubstringOptions(a, b))


def _position(c, e):
    s, sub = e.args
    pattern = _const_text(sub, "POSITION substring")
    if pattern is None:
        return null_of(T.INT64)
    x = c(s)
    found = _call("find_substring", [x], pc.MatchSubstringOptions(pattern)).cast(T.INT64)
    if not pattern:  # '' is found at 1
        return _call("add", [found, scalar(1, T.INT64)])
    # find_substring counts bytes: count the characters before the match instead
    before = _call("list_element", [_call("split_pattern", [x], pc.SplitPatternOptions(
        pattern, max_splits=1)), scalar(0, T.INT64)])
    chars = _call("add", [_call("utf8_length", [before]).cast(T.INT64), scalar(1, T.INT64)])
    return _call("if_else", [_call("less", [found, scalar(0, T.INT64)]), scalar(0, T.INT64), chars])


def _concat(c, e):
    """`a || b` is NULL when an argument is; the CONCAT function skips NULL arguments
    (PostgreSQL, DuckDB: concat('a', NULL, 'b') = 'ab', concat(NULL) = '')."""
    args = [c(a) for a in e.args]
    nulls = pc.JoinOptions(null_handling="emit_null") if e.fn == "concat" else \
        pc.JoinOptions(null_handling="replace", null_replacement="")
    empty = scalar(b"", T.BINARY) if T.is_blob(e.dtype) else scalar("", T.TEXT)
    return _call("binary_join_element_wise", args + [empty], nulls)


def _split_part(c, e):
    s, d, n = e.args
    delim = _const_text(d, "SPLIT_PART delimiter")
    k = _const_int(n, "SPLIT_PART index")
    if delim is None or k is None:
        return null_of(T.TEXT)
    if k == 0:
        raise DataValueError("SPLIT_PART field position must not be zero (PostgreSQL)")
    return _call("pqe_split_part", [c(s), scalar(delim, T.TEXT), scalar(k, T.INT64)])


def _left_right(c, e):
    s, n = e.args
    k = _const_int(n, f"{e.fn.upper()} length")
    if k is None:
        return null_of(T.TEXT)
    if e.fn == "left":
        # negative k keeps all but the last |k| characters (PostgreSQL)
        return _call("utf8_slice_codeunits", [c(s)], pc.SliceOptions(0, k))
    if k == 0:
        return _call("utf8_slice_codeunits", [c(s)], pc.SliceOptions(0, 0))
    # (negative k drops the first |k| characters; -2^63's |k| is past every string's end)
    return _call("utf8_slice_codeunits", [c(s)], pc.SliceOptions(min(-k, T.INT64_MAX)))


def _pad(c, e):
    """LPAD/RPAD(s, k, fill): s cut or padded to k characters, repeating the whole fill string
    (Arrow's utf8_lpad pads with one character only; see udfs._padder)."""
    s, n, *rest = e.args
    k = _const_int(n, "pad length")
    fill = _const_text(rest[0], "pad string") if rest else " "
    if k is None or fill is None:
        return null_of(T.TEXT)
    return _call(f"pqe_{e.fn}", [c(s), scalar(k, T.INT64), scalar(fill, T.TEXT)])


def _repeat(c, e):
    s, n = e.args
    # a count below 0 repeats nothing (DuckDB, PostgreSQL); Arrow's kernel fails on it
    count = _call("max_element_wise", [c(n), scalar(0, n.dtype if T.is_integer(n.dtype) else T.INT64)],
                  pc.ElementWiseAggregateOptions(skip_nulls=False))
    return _call("binary_repeat", [c(s), count])


# ---- math --------------------------------------------------------------------------------------


def _round(c, e):
    x = c(e.args[0])
    nd = _const_int(e.args[1], "ROUND digits") if len(e.args) > 1 else 0
    if nd is None:
        return null_of(e.dtype)
    if T.is_integer(e.dtype) and nd >= 0:
        return x
    t = e.args[0].dtype
    if T.is_decimal(t):  # to the scale the result type has (functions.round_type)
        # one digit more than t for the carry (ROUND(9.5) is 10), checked against the result
        # type: a value past it fails naming it (not Arrow's 'does not fit in precision 38')
        kept = nd >= t.scale or -nd > t.precision - t.scale
        rounded_t = t if kept else _decimal_type(t.precision + 1, t.scale)
        return _checked_numeric_cast(c, _round_decimal(x, t, nd), rounded_t, e.dtype)
    if T.is_integer(t) and nd > -19:  # to tens, hundreds...: Arrow's integer kernel, exact
        return _call("round", [x], pc.RoundOptions(nd, "half_towards_infinity"))
    if T.is_integer(t):  # past 10^18, which Arrow refuses: as a DECIMAL, checked
        dt = T.as_decimal(t)
        rounded_t = dt if -nd > dt.precision else _decimal_type(dt.precision + 1, 0)
        return _checked_numeric_cast(c, _round_decimal(x.cast(dt), dt, nd), rounded_t, e.dtype)
    # a REAL in DOUBLE (its REAL result rounded back by `_as_planned`), as DuckDB computes it
    return _float_round_once(_in_double(x, t), e.args[0], nd, "half_towards_infinity",
                             exact_ties=True)


def _in_double(x: E, t: pa.DataType) -> E:
    """A floating operand as DOUBLE: Acero casts a DOUBLE constant to a float32 operand's
    type, so `_float_round`'s scaling of a REAL ran in single precision (ROUND(16057481::REAL,
    1) gave 16057482)."""
    return x.cast(T.FLOAT64) if pa.types.is_float32(t) else x


def _float_round_once(x: E, arg: Expr, nd: int, mode: str, exact_ties: bool = False) -> E:
    """`_float_round` of the compiled `x` of `arg`, which the rounding reads many times: an
    Arrow expression shares no subexpression, so each reading computed `arg` again (ROUND(a
    / b, 2) of two DECIMALs divided, each cast to DOUBLE through its text, some 50 times:
    TPC-DS Q2 0.12 -> 0.72 s). Unless `arg` is a column or a constant, `x` is computed once
    and rounded by a function of the array (`_round_array`)."""
    if isinstance(arg, (ColumnRef, Literal)) or (isinstance(arg, Cast)
                                                 and isinstance(arg.arg, ColumnRef)):
        return _float_round(x, nd, mode, exact_ties)
    name = f"pqe_round_double_{mode}_{int(exact_ties)}"
    udfs.register_once(name, functools.partial(_round_array, mode=mode, exact_ties=exact_ties),
                       {"x": pa.float64(), "nd": pa.int64()}, pa.float64(),
                       "A DOUBLE rounded to nd decimals (pqe's ROUND/TRUNC of a computed value)")
    return _call(name, [x, scalar(nd, T.INT64)])


def _round_array(ctx, x, nd, *, mode: str, exact_ties: bool):
    """The kernel of `_float_round_once`: the rounding's expression over the one array.
    `nd` is a constant, which Arrow may hand over as a scalar or as an array of the batch's
    length, and so may `x` be (a value folded to a constant: ROUND(d / 0, 1))."""
    if isinstance(nd, pa.Scalar):
        digits = nd.as_py()
    elif len(nd):
        digits = nd[0].as_py()
    else:  # an empty batch
        return pa.array([], pa.float64())
    one = isinstance(x, pa.Scalar) and isinstance(nd, pa.Scalar)
    arr = pa.array([x.as_py()] * (1 if one else len(nd)), pa.float64()) \
        if isinstance(x, pa.Scalar) else x
    t = project(pa.table({"x": arr}), [_float_round(pc.field("x"), digits, mode,
                                                    exact_ties)], ["r"])
    out = t.column(0).combine_chunks()
    return out[0] if one else out


def _float_round(x: E, nd: int, mode: str, exact_ties: bool = False) -> E:
    """A DOUBLE rounded to `nd` decimals: scaled by the correctly rounded double 10^|nd|,
    rounded to a whole number, scaled back (as DuckDB does). Arrow's own digits option is
    wrong past ten digits (its powers of ten are single precision: ROUND(3e11, -11) gave
    299999993856), fails on a batch holding a value whose scaled form is not finite ('overflow
    occurred during rounding' for an infinity, or 1e300 to 19 decimals) and gave back
    123.456 for ROUND(123.456, -400). A value of at least 10^(300 - nd) has no digits past
    the nd-th decimal (its last bit is above 10^-nd) and is kept, as NaN and the infinities
    are; one below 10^(-300 - nd) rounds to 0. DOUBLE to DECIMAL casts round this way
    before their digits are read (CAST(0.123456789012345 AS DECIMAL(38,12)) was
    0.123456789013 with Arrow's rounding).

    With `exact_ties` (ROUND), a scaled value that lands on a half is rounded by the exact
    value it stands for: the double 2.675 is 2.67499999999999982..., and 2.675 * 100 is
    267.5 in doubles, so ROUND(2.675, 2) gave 2.68 where DuckDB gives 2.67. The rounding error
    of the scaling is computed exactly (Dekker's product, or the division's remainder) when
    10^|nd| is itself exact (|nd| <= 22); its sign picks the side of a half. (Casts to DECIMAL
    keep the scaled rounding, as DuckDB's do.)"""
    zero = scalar(0.0, T.FLOAT64)
    ax = _call("abs", [x])
    if nd <= -309:  # every finite double is below half of 10^309
        return _call("if_else", [_call("is_finite", [x]), zero, x])
    if nd >= 309:  # 10^nd is past every double: only values below half a unit change
        unit = 10.0 ** -nd if nd <= 323 else 0.0
        small = _call("less", [ax, scalar(unit / 2 if mode != "towards_zero" else unit, T.FLOAT64)])
        return _call("if_else", [small, zero, x])
    # a value whose scaled form is at least 2^52 is whole there already: kept as it is (the
    # scaling would only add noise: 123456.789 to 15 decimals became 123456.78900000002)
    hi = 2.0 ** 52 * 10.0 ** -nd if nd >= -255 else math.inf
    hi = min(hi, 10.0 ** (300 - nd) if 300 - nd <= 308 else math.inf)
    lo = 10.0 ** (-300 - nd) if -300 - nd >= -307 else 0.0
    keep = _call("or_kleene", [_call("invert", [_call("is_finite", [x])]),
                               _call("greater_equal", [ax, scalar(hi, T.FLOAT64)])])
    tiny = _call("less", [ax, scalar(lo, T.FLOAT64)])
    safe = _call("if_else", [_call("or_kleene", [keep, tiny]), zero, x])
    scale = scalar(10.0 ** abs(nd), T.FLOAT64)
    scaled = _call("multiply" if nd >= 0 else "divide", [safe, scale])
    whole = _call("round", [scaled], pc.RoundOptions(0, mode))
    if exact_ties and 0 < abs(nd) <= 22:
        whole = _exact_half(safe, scaled, whole, 10.0 ** abs(nd), nd > 0)
    back = _call("divide" if nd >= 0 else "multiply", [whole, scale])
    # a tiny value rounds to a zero of its sign (x * 0.0), as DuckDB's: -0.0 and -1e-310
    # became +0.0
    signed_zero = _call("multiply", [x, zero])
    # a value rounded past the largest double (1.797e308 to -308 digits) stays as it is, as
    # DuckDB's does, not infinity
    keep = _call("or_kleene", [keep, _call("invert", [_call("is_finite", [back])])])
    return _call("if_else", [keep, x, _call("if_else", [tiny, signed_zero, back])])


def _two_product_error(a: E, t: E, b: float) -> E:
    """a * b - t exactly (t = a * b rounded; b a constant), by Dekker's splitting: finite for
    |a| below ~1e300 (callers zero larger values first)."""
    split = 134217729.0  # 2^27 + 1
    c = _call("multiply", [a, scalar(split, T.FLOAT64)])
    a_hi = _call("subtract", [c, _call("subtract", [c, a])])
    a_lo = _call("subtract", [a, a_hi])
    cb = split * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    f = lambda v: scalar(v, T.FLOAT64)  # noqa: E731
    mul = lambda u, v: _call("multiply", [u, v])  # noqa: E731
    err = _call("subtract", [mul(a_hi, f(b_hi)), t])
    err = _call("add", [err, mul(a_hi, f(b_lo))])
    err = _call("add", [err, mul(a_lo, f(b_hi))])
    return _call("add", [err, mul(a_lo, f(b_lo))])


def _exact_half(x: E, scaled: E, whole: E, scale: float, multiplied: bool) -> E:
    """`whole` (`scaled` rounded), corrected where `scaled` is exactly a half but the exact
    x * scale (or x / scale) is not: below it rounds down, above it up."""
    if multiplied:  # error = x * scale - scaled, exactly
        err = _two_product_error(x, scaled, scale)
    else:  # x - scaled * scale, exactly, has the sign of x / scale - scaled
        prod = _call("multiply", [scaled, scalar(scale, T.FLOAT64)])
        err = _call("subtract", [_call("subtract", [x, prod]),
                                 _two_product_error(scaled, prod, scale)])
    zero = scalar(0.0, T.FLOAT64)
    frac = _call("abs", [_call("subtract", [scaled, _call("trunc", [scaled])])])
    tie = _call("equal", [frac, scalar(0.5, T.FLOAT64)])
    down = _call("and", [tie, _call("less", [err, zero])])
    up = _call("and", [tie, _call("greater", [err, zero])])
    return _call("if_else", [down, _call("floor", [scaled]),
                             _call("if_else", [up, _call("ceil", [scaled]), whole])])


def _trunc(c, e):
    """TRUNC(x [, digits]): x cut toward zero to `digits` decimals (negative: to tens,
    hundreds, ...), exactly for integers and DECIMALs (`udfs.rescaled`)."""
    x = c(e.args[0])
    nd = _const_int(e.args[1], "TRUNC digits") if len(e.args) > 1 else 0
    if nd is None:
        return null_of(e.dtype)
    t = e.args[0].dtype
    if T.is_floating(t):
        return _float_round_once(_in_double(x, t), e.args[0], nd, "towards_zero")
    if T.is_integer(t) and nd >= 0:
        return x
    t = T.as_decimal(t) if T.is_integer(t) else t
    if nd >= t.scale:
        return x
    ip = t.precision - t.scale
    if -nd >= ip:  # left of every digit t has: always 0
        zero = scalar(decimal.Decimal(0) if T.is_decimal(e.dtype) else 0, e.dtype)
        return _call("if_else", [_call("is_valid", [x]), zero, null_of(e.dtype)])
    if nd >= 0:
        return rescaled(x.cast(t), t.scale, e.dtype, safe=False)
    cut = rescaled(x.cast(t), t.scale, _decimal_type(ip + nd, nd), safe=False)
    return cut.cast(_decimal_type(ip, 0)).cast(e.dtype)


def _floor_ceil(c, e):
    if T.is_integer(e.args[0].dtype):  # already whole (Arrow's kernel goes through float64)
        return c(e.args[0])
    t = e.args[0].dtype
    if T.is_decimal(t) and t.scale > EXACT_STEP:
        # Arrow's kernel divides by 10^scale (see `udfs.rescaled`). Shifted by K = 10^(integer
        # digits) to all positive values (FLOOR) or all negative ones (CEIL), truncating
        # toward zero rounds the way the function does: the value is cut to nine decimals
        # exactly, Arrow's kernel takes it from there, and K is taken back.
        ip = t.precision - t.scale
        k = scalar(decimal.Decimal(10 ** ip), pa.decimal256(ip + 1, 0))
        floor = e.fn == "floor"
        x = c(e.args[0]).cast(pa.decimal256(t.precision + 1, t.scale))
        shifted = _call("add" if floor else "subtract", [x, k])
        near_t = pa.decimal256(ip + 2 + EXACT_STEP, EXACT_STEP)
        near = _call(e.fn, [rescaled(shifted, t.scale, near_t, safe=False)])
        back = _call("subtract" if floor else "add", [near, k])
        return rescaled(back, EXACT_STEP, e.dtype)
    x = c(e.args[0])
    if T.is_decimal(t):
        # Arrow's kernel keeps the input's precision: FLOOR(-99999999.99) of a DECIMAL(10,2)
        # needs an eleventh digit, and on an array Arrow gave 0 without an error
        x = x.cast(_decimal_type(t.precision + 1, t.scale))
    out = _call(e.fn, [x])
    return out.cast(e.dtype) if out is not None else out


def _float_unary(kernel):
    def build(c, e):
        x = c(e.args[0])
        if kernel in ("sqrt", "ln", "log10", "log2"):
            bad = _call("less" if kernel == "sqrt" else "less_equal", [x, scalar(0.0, T.FLOAT64)])
            return _call("if_else", [bad, null_of(T.FLOAT64), _call(kernel, [x])])
        return _call(kernel, [x])
    return build


def _sign(c, e):
    x = _call("sign", [c(e.args[0])])
    if T.is_floating(e.args[0].dtype):  # SIGN(NaN) is 0 (DuckDB); Arrow's is NaN
        x = _call("if_else", [_call("is_nan", [x]), scalar(0.0, T.FLOAT64), x])
    return x.cast(T.INT64)


def _abs(c, e):
    if T.is_integer(e.dtype):
        return _call("abs_checked", [_used(c, c(e.args[0]), e.args[0].dtype)])
    return _call("abs", [c(e.args[0])])


def _power(c, e):
    return _call("power", [c(a) for a in e.args])


# ---- conditional ---------------------------------------------------------------------------------


def _coalesce(c, e):
    """Each argument is guarded by the rows where every earlier one is NULL (see `_case`);
    the guard holds the earlier arguments, so past a few it is left out (the expression
    would double with every argument)."""
    if len(e.args) == 1:
        return c(e.args[0])
    if len(e.args) > 4:
        return _call("coalesce", _same_decimal(c, [c(a) for a in e.args], e.dtype))
    args, all_null = [], None
    for a in e.args:
        args.append(c.share(c(a) if all_null is None else c.guarded(all_null, a)))
        null = _call("is_null", [args[-1]])
        all_null = null if all_null is None else c.share(_call("and", [all_null, null]))
    return _call("coalesce", _same_decimal(c, args, e.dtype))


def _same_decimal(c, args: list[E], dtype: pa.DataType) -> list[E]:
    """The arguments of a variadic kernel (coalesce, min/max_element_wise) of DECIMAL result,
    each cast to that type, although each already is: Arrow's dispatch of those kernels
    takes an argument that is itself decimal arithmetic for the type before its own cast
    and refuses the mix ('All types must be compatible, expected: decimal128(22, 2), but
    got: decimal128(23, 2)' for COALESCE(1.00 + c + 0, 1.00 + c) in a WHERE)."""
    if not T.is_decimal(dtype) or c.decimals_as_int64:
        return args
    return [a.cast(dtype) for a in args]


def _nullif(c, e):
    a, b = e.args
    ca = c.share(c(a)) if a.children() else c(a)
    same = _call("coalesce", [_equal(a, b, ca, c(b)), scalar(False, T.BOOLEAN)])
    return _call("if_else", [same, null_of(e.dtype), ca])


def _greatest(kernel):
    """GREATEST/LEAST skip NULLs: NULL only when every argument is (PostgreSQL, DuckDB). On
    floats NaN is the greatest value (compare_floats), where Arrow's kernels skip NaN: any
    NaN makes GREATEST NaN; LEAST is NaN only when every non-NULL argument is."""
    def build(c, e):
        args = _same_decimal(c, [c(a) for a in e.args if not T.is_null(a.dtype)], e.dtype)
        if not args:
            return null_of(e.dtype)
        if T.is_boolean(e.dtype):  # (Arrow has no element-wise max of booleans: as 0 / 1)
            ints = [x.cast(pa.int8()) for x in args]
            out = _call(kernel, ints, pc.ElementWiseAggregateOptions(skip_nulls=True))
            return out.cast(pa.bool_())
        zone = pa.types.is_timestamp(e.dtype) and e.dtype.tz is not None
        if zone:  # (Arrow has no element-wise max of zoned timestamps: their UTC instants)
            args = [x.cast(pa.timestamp(e.dtype.unit)) for x in args]
        out = _call(kernel, args, pc.ElementWiseAggregateOptions(skip_nulls=True))
        if zone:
            out = out.cast(e.dtype)
        if T.is_temporal(e.dtype):
            return zeroed_null_slots(out, e.dtype)
        if not T.is_floating(e.dtype) or kernel == "min_element_wise":
            return out  # (Arrow's LEAST is NaN only when all non-NULL arguments are)
        flag = None
        for x in args:
            nan = _call("coalesce", [_call("is_nan", [x]), scalar(False, T.BOOLEAN)])
            flag = nan if flag is None else _call("or", [flag, nan])
        return _call("if_else", [flag, scalar(float("nan"), e.dtype), out])
    return build


# WHEN conditions that may raise compiled guarded by "no earlier WHEN held", at most this
# many per CASE: each guard holds the earlier conditions (guarded ones with their own guards),
# so the expression doubles with every guarded WHEN
MAX_GUARDED_WHENS = 4


def _case(c: Compiler, e: Case) -> E:
    """Arrow's case_when computes every branch for every row: a branch is compiled guarded by
    the rows that take it, so its checked arithmetic and casts fail only there. A later WHEN
    condition that may raise (x * 2147483647 > 10 after WHEN x > 1000000) is guarded by the
    rows no earlier WHEN took, as SQL evaluates it; the others are not (see
    MAX_GUARDED_WHENS)."""
    conds, values = [], []
    before = None  # some earlier WHEN holds
    guarded = 0
    for w, t in e.whens:
        if before is not None and guarded < MAX_GUARDED_WHENS and may_raise(w):
            cond = c.guarded(_call("invert", [before]), w)
            guarded += 1
        else:
            cond = c(w)
        cond = c.share(cond)
        taken = c.share(_call("coalesce", [cond, scalar(False, T.BOOLEAN)]))
        here = taken if before is None else _call("and", [_call("invert", [before]), taken])
        conds.append(cond)
        values.append(c.guarded(here, t))
        before = taken if before is None else c.share(_call("or", [before, taken]))
    else_ = c.guarded(_call("invert", [before]), e.else_)
    names = [f"c{i}" for i in range(len(conds))]
    cond_struct = _call("make_struct", conds, pc.MakeStructOptions(names))
    return _call("case_when", [cond_struct, *values, else_])


def _in_list(c: Compiler, e: InList) -> E:
    arg = c(e.arg)
    # INTERVALs compare by length (a month is 30 days), which is_in's hashing of the
    # (months, days, nanoseconds) triple does not: each is an equality (`_equal`)
    hashed = not T.is_interval(e.arg.dtype)
    consts = [v for v in e.values if isinstance(v, Literal) and (hashed or v.value is None)]
    taken = {id(v) for v in consts}
    others = [v for v in e.values if id(v) not in taken]
    has_null = any(v.value is None for v in consts)
    parts = []
    vals = [v.value for v in consts if v.value is not None]
    if vals:
        value_set = pa.array(vals, type=e.arg.dtype)
        probe = arg
        if T.is_floating(e.arg.dtype):  # is_in hashes: -0.0 must find 0.0, NaN find NaN
            value_set = canonical_floats(value_set)
            probe = _canonical_float(arg, e.arg.dtype)
        match = _call("is_in", [probe], pc.SetLookupOptions(value_set, skip_nulls=True))
        # NULL input is unknown, not FALSE
        parts.append(_call("if_else", [_call("is_null", [arg]), null_of(T.BOOLEAN), match]))
    for v in others:
        parts.append(_equal(e.arg, v, arg, c(v)))
    if has_null:
        parts.append(null_of(T.BOOLEAN))
    if not parts:
        out = scalar(False, T.BOOLEAN)
    else:
        out = parts[0]
        for p in parts[1:]:
            out = _call("or_kleene", [out, p])
    return _call("invert", [out]) if e.negated else out


def _canonical_float(x: E, t: pa.DataType) -> E:
    """relational.canonical_floats as an expression: -0.0 as 0.0, every NaN as one NaN."""
    nan = scalar(float("nan"), t)
    return _call("if_else", [_call("is_nan", [x]), nan, _call("add", [x, scalar(0.0, t)])])


# ---- casts -------------------------------------------------------------------------------------


_UNITS = ("s", "ms", "us", "ns")


def _round_units(c: Compiler, x: E, per: int) -> E:
    """The int64 count of a timestamp `x` divided by `per`, rounded to the nearest, half away
    from zero, as DuckDB rounds a timestamp to a coarser unit; on the int64 count, since
    round_temporal wrapped near the int64 limits (2262-04-11 became 1677-09-21) and took
    -500 ns to 0 us."""
    v = c.share(x.cast(T.INT64))
    q = c.share(_call("divide", [v, scalar(per, T.INT64)]))  # towards zero
    rest = _call("subtract", [v, _call("multiply", [q, scalar(per, T.INT64)])])
    half = per // 2
    up = _call("greater_equal", [rest, scalar(half, T.INT64)]).cast(T.INT64)
    down = _call("less_equal", [rest, scalar(-half, T.INT64)]).cast(T.INT64)
    return _call("subtract", [_call("add", [q, up]), down])


def _is_plain_ns(t: pa.DataType) -> bool:
    """A TIMESTAMP_NS without a zone: DuckDB's date functions (CAST to DATE, date_trunc,
    last_day, date_diff, date_sub) first cast it to a TIMESTAMP, rounding to the
    microsecond; those reading fields (EXTRACT, strftime) do not, except EXTRACT(epoch),
    which floors to the microsecond, zoned or not (_extract). (Its TIMESTAMPTZ_NS otherwise
    truncates.)"""
    return pa.types.is_timestamp(t) and t.unit == "ns" and t.tz is None


def ns_to_micros(c: Compiler, x: E) -> E:
    """A zone-less TIMESTAMP_NS as a TIMESTAMP, rounded to the microsecond as DuckDB casts."""
    return _round_units(c, x, 1000).cast(pa.timestamp("us"))


def _cast(c: Compiler, e: Cast) -> E:
    src, dst = e.arg.dtype, e.dtype
    x = c(e.arg)
    if src == dst:
        return x
    if T.is_null(src):
        return null_of(dst)
    if T.is_interval(src) and T.is_text(dst):
        return _call("pqe_interval_text", [x])  # (kernels.udfs)
    if T.is_interval(src) and not T.is_interval(dst):
        raise UnsupportedError(f"CAST of an INTERVAL to {T.type_name(dst)} is not supported")
    if T.is_interval(dst) and not T.is_interval(src):  # (Arrow has none: a raw cast error)
        raise UnsupportedError(f"CAST of {T.type_name(src)} values to INTERVAL is not "
                               f"supported (an INTERVAL constant is: INTERVAL '1 day')")
    if T.is_decimal(src) and T.is_boolean(dst):  # (Arrow has no such cast: 0 is false)
        return _call("not_equal", [x, scalar(decimal.Decimal(0), src)])
    if T.is_boolean(src) and T.is_decimal(dst):  # (nor this one: true is 1)
        return x.cast(pa.int8()).cast(pa.decimal128(38, dst.scale)).cast(dst)
    if pa.types.is_duration(src) and T.is_text(dst):
        # (Arrow wrote the count of its units, '1000000' where DuckDB writes '00:00:01')
        raise UnsupportedError(f"CAST of a {T.type_name(src)} to {T.type_name(dst)} is not "
                               f"supported")
    if _is_plain_ns(src) and pa.types.is_date(dst):
        # a DATE of a TIMESTAMP_NS is its TIMESTAMP's, the nanoseconds rounded to the
        # microsecond first, as DuckDB casts (23:59:59.9999996 is the next day's date)
        x, src = ns_to_micros(c, x), pa.timestamp("us")
    if pa.types.is_timestamp(src) and (pa.types.is_timestamp(dst) or pa.types.is_time(dst)) \
            and _UNITS.index(src.unit) > _UNITS.index(dst.unit):
        # to a coarser unit (with or without a zone: the UTC instant, see `utc`): rounded to
        # the nearest, half away from zero, as DuckDB does (Arrow refused a value with digits
        # below the unit: 'would lose data'). A TIME of a finer TIMESTAMP is the rounded
        # TIMESTAMP's (CAST(ns AS TIME) failed so)
        rounded = _round_units(c, x, 1000 ** (_UNITS.index(src.unit) - _UNITS.index(dst.unit)))
        if pa.types.is_time(dst):
            return rounded.cast(pa.timestamp(dst.unit, src.tz)).cast(dst)
        return rounded.cast(dst)
    if pa.types.is_time(src) and pa.types.is_time(dst) and \
            _UNITS.index(src.unit) > _UNITS.index(dst.unit):
        # a time of day to a coarser unit: its digits below the unit cut, as a TIME's text
        # fraction is (Arrow refused any such digit: 'would lose data'); never past 23:59:59
        per = 1000 ** (_UNITS.index(src.unit) - _UNITS.index(dst.unit))
        wide = pa.int32() if pa.types.is_time32(src) else T.INT64
        q = _call("divide", [x.cast(wide).cast(T.INT64), scalar(per, T.INT64)])
        return q.cast(pa.int32() if pa.types.is_time32(dst) else T.INT64).cast(dst)
    if pa.types.is_float32(dst) and pa.types.is_float64(src):
        return _double_to_real(c, x, e.try_)
    if e.try_:
        return _try_cast(x, src, dst)
    if T.is_blob(src) and T.is_text(dst):
        # the bytes where they are UTF-8; an error naming the first that is not
        blob = x if _is_blob(src) else x.cast(T.BINARY)
        converted = c.share(_blob_to_text(blob, T.BINARY, dst))
        failed = _call("and", [_call("is_valid", [blob]), _call("is_null", [converted])])
        check = _call("pqe_check_utf8", [blob, failed, scalar(T.type_name(dst), T.TEXT)])
        return _call("if_else", [check, converted, null_of(dst)])
    if T.is_numeric(src) and (T.is_integer(dst) or T.is_decimal(dst)):
        return _checked_numeric_cast(c, _cast_rounding(x, src, dst), _rounded_type(src, dst),
                                     dst, x, src)
    if T.is_text(src) and not T.is_text(dst):
        # only the rows a CASE branch or COALESCE argument takes are converted (the others
        # NULL): `CASE WHEN s = '5' THEN s::INT END` failed on the 'x' it never takes
        x = _used(c, x, src)
    if T.is_text(src) and T.is_boolean(dst):
        return _checked_text_cast(x, _text_to_boolean(x), dst)
    if T.is_text(src) and _is_blob(dst):
        return _checked_text_cast(x, _text_to_blob(x, dst), dst)
    if T.is_text(src) and T.is_numeric(dst):
        return _text_to_number(x, dst, checked=True)
    if T.is_text(src) and _parsed_temporal(dst):
        return _text_to_temporal(x, dst, checked=True)
    if T.is_text(src) and T.is_temporal(dst):
        return _call("utf8_trim", [x], pc.TrimOptions(T.ASCII_SPACE)).cast(dst)
    return _total_cast(x, src, dst, safe=True)


def _total_cast(x: E, src: pa.DataType, dst: pa.DataType, safe: bool) -> E:
    """The conversions CAST and TRY_CAST share, which no value fails (TRY_CAST had its own
    copy, without the DECIMAL -> DOUBLE one: TRY_CAST(d AS DOUBLE) gave 3.3000000000000003
    where CAST gave 3.3); what is left goes to Arrow's cast, `safe` for CAST."""
    if T.is_text(dst) and (pa.types.is_date(src) or pa.types.is_timestamp(src)):
        # Arrow writes a value past year 32767 as '<value out of range: n>': an error under
        # CAST, NULL under TRY_CAST, never that text as the value
        text = _bc_text(_temporal_to_text(x, src, dst, safe))
        bad = _call("starts_with", [text], pc.MatchSubstringOptions("<value out of range"))
        if not safe:
            return _call("if_else", [bad, null_of(T.TEXT), text])
        check = _call("pqe_check_temporal_text",
                      [text, bad, scalar(T.type_name(src).split("(")[0], T.TEXT)])
        return _call("if_else", [check, text, null_of(T.TEXT)])
    return _plain_total_cast(x, src, dst, safe)


_YEAR_TEXT = r"^(?P<y>-?\d+)-(?P<md>\d\d-\d\d)(?P<rest>.*)$"


def _bc_text(text: E) -> E:
    """A date's or timestamp's text with a year before 1 as DuckDB writes it: the year BC
    and ' (BC)' after the date ('0049-03-01 (BC) 10:00:00'), where Arrow writes the
    astronomical year ('-0048-03-01 10:00:00'; 1 BC is its year 0)."""
    bc = _call("or", [_call("starts_with", [text], pc.MatchSubstringOptions("-")),
                      _call("starts_with", [text], pc.MatchSubstringOptions("0000-"))])
    parts = _call("extract_regex", [text], pc.ExtractRegexOptions(_YEAR_TEXT))
    field = lambda name: _call("struct_field", [parts], pc.StructFieldOptions(name))  # noqa: E731
    year = _call("subtract", [scalar(1, T.INT64), field("y").cast(T.INT64)]).cast(T.TEXT)
    year = _call("utf8_lpad", [year], pc.PadOptions(4, "0"))
    written = _call("binary_join_element_wise", [
        year, scalar("-", T.TEXT), field("md"), scalar(" (BC)", T.TEXT), field("rest"),
        scalar("", T.TEXT)])
    return _call("if_else", [bc, written, text])


def _temporal_to_text(x: E, src: pa.DataType, dst: pa.DataType, safe: bool) -> E:
    if pa.types.is_timestamp(src) and src.tz is not None:
        return _zoned_text(x, src)
    if _has_fraction_digits(src):
        return _temporal_text(x)
    return x.cast(dst, safe=safe)


def _rounds_only(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether a nested type's cast changes no value but by rounding integers to floats (an
    unsafe cast of it then cuts or wraps nothing): lists, structs and maps whose leaves are
    the same or integer to float."""
    if src == dst:
        return True
    if T.is_integer(src) and T.is_floating(dst):
        return True
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(f(src) for f in lists) and any(f(dst) for f in lists):
        return _rounds_only(src.value_type, dst.value_type)
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        return [f.name for f in src] == [f.name for f in dst] and all(
            _rounds_only(a.type, b.type) for a, b in zip(src, dst, strict=True))
    if pa.types.is_map(src) and pa.types.is_map(dst):
        return src.key_type == dst.key_type and _rounds_only(src.item_type, dst.item_type)
    return False


def _plain_total_cast(x: E, src: pa.DataType, dst: pa.DataType, safe: bool) -> E:
    if T.is_boolean(src) and T.is_text(dst):
        return _call("if_else", [x, scalar("true", T.TEXT), scalar("false", T.TEXT)])
    if pa.types.is_timestamp(src) and pa.types.is_date(dst):
        return utc(x, src).cast(dst, safe=False)
    if T.is_text(dst) and pa.types.is_timestamp(src) and src.tz is not None:
        return _zoned_text(x, src)
    if T.is_text(dst) and _has_fraction_digits(src):
        return _temporal_text(x)
    if T.is_integer(src) and T.is_floating(dst) or _rounds_only(src, dst):
        # rounds to the nearest DOUBLE (SQL); Arrow's safe cast refuses integers past 2^53
        # (also in lists and structs: BIGINT[] meeting DOUBLE[] in a UNION or COALESCE)
        return x.cast(dst, safe=False)
    if T.is_decimal(src) and T.is_text(dst):
        return _decimal_text(x, src)
    if T.is_floating(src) and T.is_text(dst):
        return _call("pqe_real_text" if pa.types.is_float32(src) else "pqe_float_text", [x])
    if T.is_decimal(src) and T.is_floating(dst):
        # Arrow scales the unscaled integer by an inexact power of ten (DECIMAL(38,10) 99.99
        # became 99.99000000000001, unequal to the DOUBLE 99.99 a DECIMAL(4,2) gave, so
        # `c IN (99.99, 3.0e0)` was false): its digits, parsed, are the nearest double
        return x.cast(T.TEXT).cast(pa.float64()).cast(dst)
    return x.cast(dst, safe=safe)


def _double_to_real(c: Compiler, x: E, try_: bool) -> E:
    """DOUBLE -> REAL: a finite value past REAL's range is an error (NULL under TRY_CAST),
    as in DuckDB and PostgreSQL; Arrow's cast makes it an infinity (CAST(1e40 AS REAL), or
    a DOUBLE column stored into a REAL one, gave inf)."""
    y = x.cast(T.FLOAT32, safe=False)
    over = _call("and", [_call("is_finite", [x]), _call("invert", [_call("is_finite", [y])])])
    if try_:
        return _call("if_else", [over, null_of(T.FLOAT32), y])
    if c.guard is not None:
        over = _call("and", [over, c.guard])
    text = _call("if_else", [over, x.cast(T.TEXT), null_of(T.TEXT)])
    check = _call("pqe_check_range", [text, over, scalar("REAL", T.TEXT)])
    return _call("if_else", [check, y, null_of(T.FLOAT32)])


def _decimal_text(x: E, t: pa.DataType) -> E:
    """DECIMAL as text in plain digits with every decimal of its scale ('-0.0000000001',
    '0.0000000000'), as PostgreSQL and DuckDB write it. Arrow writes a value below 1e-6 in
    scientific notation ('-1E-10', '0E-10'), but never one of at least 1: such values are
    written as |x| + 1 with the leading 1 turned into 0, and the sign put back."""
    if t.scale == 0:
        return x.cast(T.TEXT)
    # wide enough that |x| + 1 fits, and Arrow's type for that sum (one more digit) too: a
    # decimal128 of 38 digits (from DECIMAL(37,s)) made a sum of 39, 'precision out of range'
    wide = _decimal_type(t.precision + 1 if t.precision + 2 <= T.MAX_DECIMAL_PRECISION
                         else max(t.precision + 1, T.MAX_DECIMAL_PRECISION + 1), t.scale)
    a = _call("abs", [x.cast(wide)])
    one = scalar(decimal.Decimal(1), pa.decimal128(1, 0))
    shifted = _call("add", [a, one]).cast(wide).cast(T.TEXT)   # '1.0000000001'
    small = _call("replace_substring_regex", [shifted],
                  pc.ReplaceSubstringOptions(r"^1", "0", max_replacements=1))
    negative = _call("less", [x, scalar(decimal.Decimal(0), t)])
    small = _call("if_else", [negative, _call("binary_join_element_wise",
                                               [scalar("-", T.TEXT), small, scalar("", T.TEXT)]),
                              small])
    below_one = _call("less", [a, one.cast(wide)])
    return _call("if_else", [below_one, small, x.cast(T.TEXT)])


def _zoned_text(x: E, t: pa.DataType) -> E:
    """A TIMESTAMPTZ as text in UTC, the way DuckDB writes it in a UTC session:
    '2024-01-01 23:30:05.5+00'."""
    naive = x.cast(pa.timestamp(t.unit))  # the UTC wall-clock time
    text = _temporal_text(naive) if _has_fraction_digits(t) else naive.cast(T.TEXT)
    return _call("binary_join_element_wise", [text, scalar("+00", T.TEXT), scalar("", T.TEXT)])


def _has_fraction_digits(t: pa.DataType) -> bool:
    """Whether Arrow writes a timestamp or time of type t with fractional seconds."""
    return (pa.types.is_timestamp(t) or pa.types.is_time(t)) and t.unit != "s"


def _temporal_text(x: E) -> E:
    """A timestamp or time as text the way DuckDB writes it: fractional seconds without
    trailing zeros, none when they are zero ('13:45:10', '13:45:10.5'). Arrow always writes
    every digit of the unit ('13:45:10.000000')."""
    text = x.cast(T.TEXT)
    return _call("replace_substring_regex", [text],
                 pc.ReplaceSubstringOptions(r"\.?0+$", "", max_replacements=1))


def _cast_rounding(x: E, src: pa.DataType, dst: pa.DataType) -> E:
    """A number rounded as SQL casts it to an integer or decimal type (Arrow would refuse to
    drop digits): DOUBLE to integer ties to even (PostgreSQL, DuckDB), DOUBLE to DECIMAL and
    DECIMAL to fewer decimals tie away from zero. The result keeps the type of `x`, except
    that DECIMAL rounding may widen it (see `_round_decimal`)."""
    scale = dst.scale if T.is_decimal(dst) else 0
    if T.is_floating(src):
        mode = "half_to_even" if T.is_integer(dst) else "half_towards_infinity"
        return _float_round(x, scale, mode)
    if T.is_decimal(src):
        return _round_decimal(x, src, scale)
    return x


def _numeric_cast(x: E, src: pa.DataType, dst: pa.DataType, binary: bool = False) -> E:
    """The checked cast of an already rounded number (see `_cast_rounding`) to an integer or
    DECIMAL type: a value that does not fit `dst` fails. Arrow checks an integer -> DECIMAL
    cast against the integer type's width, not its values (BIGINT has 19 digits, so even
    10 -> DECIMAL(10,2) fails): integers go through a decimal that holds all of their type.
    A DOUBLE becomes a DECIMAL by its digits (`_float_as_decimal`), by its binary value only
    where `binary` (a DOUBLE read from text with an exponent)."""
    if T.is_floating(src) and T.is_decimal(dst) and not binary:
        return _float_as_decimal(x, dst)
    if T.is_integer(src) and T.is_decimal(dst):
        digits = T.as_decimal(src).precision
        if dst.precision - dst.scale < digits:
            x = x.cast(_decimal_type(digits + dst.scale, dst.scale))
    if T.is_decimal(src):
        return rescaled(x, src.scale, dst)
    return x.cast(dst)


def _float_as_decimal(x: E, dst: pa.DataType) -> E:
    """A DOUBLE (finite, in range, rounded) as a DECIMAL by the shortest text that reads back
    as it ('0.1', '-99999999.99'), as PostgreSQL and DuckDB cast the digits a double is
    written with, not its binary value (0.1000000000000000055511..., which Arrow's cast
    keeps: CAST(0.1::DOUBLE AS DECIMAL(38,20)) was 0.10000000000000000555). Text with an
    exponent (from 1e10, below 1e-4) is rewritten without it first (`_plain_float_text`):
    read as a DOUBLE again, it had its binary noise back (58085208435.006 -> .005997)."""
    name = _register_by_type("pqe_float_text", dst, pa.string(),
                             lambda ctx, v: _plain_float_text(v, dst.scale, ctx.batch_length),
                             {"x": pa.float64()}, "DOUBLE as plain text for a DECIMAL cast")
    return _text_to_number(_call(name, [x.cast(pa.float64())]), dst)


# Arrow's shortest text of a double with an exponent: '5.8085208435006e+10', '1.25e-7'
_FLOAT_EXPONENT_TEXT = r"^(?P<sign>-?)(?P<lead>\d)(?:\.(?P<frac>\d+))?e\+?(?P<exp>-?\d+)$"


def _plain_float_text(v, scale: int, n: int) -> pa.Array:
    """The shortest text of each double, with an exponent's decimal point shifted textually
    (digits then zeros up to `scale` decimals: '58085208435.006000'). A value with more
    decimals than `scale` keeps its exponent text (rounded by value, as before)."""
    v = pa.repeat(v, n) if isinstance(v, pa.Scalar) else v
    t = pc.cast(v, pa.string())
    has_e = pc.fill_null(pc.match_substring(t, "e"), False)
    if not pc.any(has_e).as_py():
        return t
    p = pc.extract_regex(pc.if_else(has_e, t, "0e+0"), _FLOAT_EXPONENT_TEXT)
    sign, lead, frac, exp = (p.field(k) for k in ("sign", "lead", "frac", "exp"))
    # the unscaled integer's digits: mantissa digits, then the zeros the exponent adds
    zeros = pc.add(pc.subtract(pc.cast(exp, pa.int64()), pc.utf8_length(frac)), scale)
    ok = pc.and_(has_e, pc.greater_equal(zeros, 0))
    fill = pc.binary_repeat(pa.repeat(pa.scalar("0"), len(t)), pc.max_element_wise(zeros, 0))
    digits = pc.utf8_lpad(pc.binary_join_element_wise(lead, frac, fill, ""), scale + 1, "0")
    if scale:
        digits = pc.replace_substring_regex(digits, rf"(\d{{{scale}}})$", r".\1")
    return pc.if_else(ok, pc.binary_join_element_wise(sign, digits, ""), t)


def _checked_numeric_cast(c: Compiler, x: E, t: pa.DataType, dst: pa.DataType,
                          shown: E | None = None, shown_type: pa.DataType | None = None) -> E:
    """`x` (type t, already rounded) cast to the integer or DECIMAL type `dst`: a value out of
    its range fails with pqe's error naming the value and the type, not Arrow's ('Integer
    value out of bounds', 'Decimal value does not fit in precision 10', 'Rescaling Decimal
    value would cause data loss'), and only in rows whose value is used (`c.guard`). The
    check is one registered function over `x` (udfs.range_checked): an expression that
    repeated `x` for the bounds, the check and the cast grew exponentially with nested
    arithmetic. (`shown` is kept for callers; the message shows the value checked.)"""
    bounds = _range_bounds(t, dst)
    if bounds is None:
        return _numeric_cast(x, t, dst)
    kind, wide = _range_kind(t)
    lo, hi, lo_inclusive = bounds
    value = (lambda v: v) if pa.types.is_int64(wide) else float if T.is_floating(wide) else \
        decimal.Decimal
    args = [x if t == wide else x.cast(wide),
            null_of(wide) if lo is None else scalar(value(lo), wide),
            null_of(wide) if hi is None else scalar(value(hi), wide),
            scalar(lo_inclusive, T.BOOLEAN),
            c.guard if c.guard is not None else scalar(True, T.BOOLEAN),
            scalar(T.type_name(dst), T.TEXT)]
    out = _call(f"pqe_range_{kind}", args)
    if T.is_floating(wide) and T.is_decimal(dst):
        return _float_as_decimal(out, dst)
    if pa.types.is_int64(wide) and T.is_decimal(dst):
        # Arrow checks an integer -> DECIMAL cast against BIGINT's 19 digits, even unsafe
        out = out.cast(_decimal_type(19 + dst.scale, dst.scale))
    if T.is_decimal(wide):
        return rescaled(out, wide.scale, dst, safe=False)
    return out.cast(dst, safe=False)


def _range_kind(t: pa.DataType) -> tuple[str, pa.DataType]:
    if T.is_floating(t):
        return "f64", pa.float64()
    if pa.types.is_uint64(t):  # past BIGINT: checked as an exact DECIMAL
        return "d0", pa.decimal256(76, 0)
    if T.is_integer(t):
        return "i64", pa.int64()
    return f"d{t.scale}", pa.decimal256(76, t.scale)


def _reach(t: pa.DataType) -> tuple[int, int]:
    """(lowest, past the highest) value an integer or DECIMAL type t can hold."""
    if T.is_integer(t):
        if pa.types.is_signed_integer(t):
            return -(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1)
        return 0, 2 ** t.bit_width
    return -(10 ** (t.precision - t.scale)), 10 ** (t.precision - t.scale)


def _range_bounds(t: pa.DataType, dst: pa.DataType):
    """(lo, hi exclusive, lo inclusive?) of `dst` as Python numbers, a bound None where no
    value of t reaches it; None when every value of t fits (see `_fits`)."""
    if T.is_integer(dst):
        signed = pa.types.is_signed_integer(dst)
        lo = -(2 ** (dst.bit_width - 1)) if signed else 0
        hi = 2 ** (dst.bit_width - 1) if signed else 2 ** dst.bit_width
        inclusive = True
    else:
        hi = 10 ** (dst.precision - dst.scale)
        lo, inclusive = -hi, False
    if T.is_floating(t):
        return lo, hi, inclusive
    low_reach, reach = _reach(t)
    lo = lo if lo > low_reach else None
    hi = hi if hi < reach else None
    if lo is None and hi is None:
        return None
    return lo, hi, inclusive


def _decimal_type(precision: int, scale: int) -> pa.DataType:
    """decimal128, or decimal256 for intermediate values wider than 38 digits, at most its 76
    (a product of two DECIMAL(38,s), 76 digits, rounded in place: its values have at most
    76 - scale integral digits, past any result type's 38; seed 302 case 62624)."""
    if precision <= T.MAX_DECIMAL_PRECISION:
        return pa.decimal128(precision, scale)
    return pa.decimal256(min(precision, _MAX_DECIMAL256_PRECISION), scale)


def _round_decimal(x: E, t: pa.DataType, digits: int) -> E:
    """`x` (DECIMAL t) rounded half away from zero to `digits` decimals (negative: to tens,
    hundreds, ...), at scale t.scale. Arrow's decimal round keeps the precision and silently
    wraps when the carry needs one more digit (ROUND(9.5) gave 0), so it runs one digit wider
    (decimal256 past 38 digits); the caller's checked cast to the result type follows."""
    if digits >= t.scale:
        return x
    if -digits > t.precision - t.scale:  # left of every digit t has: always 0
        zero = scalar(decimal.Decimal(0), t)
        return _call("if_else", [_call("is_valid", [x]), zero, null_of(t)])
    wide = _decimal_type(t.precision + 1, t.scale)
    half = pc.RoundOptions(digits, "half_towards_infinity")
    if t.scale - digits <= EXACT_STEP:
        return _call("round", [x.cast(wide)], half)
    # Arrow rounds by dividing by 10^k, wrongly past k = 9 (see `udfs.rescaled`). The digits
    # past the first nine dropped never decide a rounding half away from zero: they are cut
    # first, exactly, and Arrow rounds off the nine left.
    near_scale = digits + EXACT_STEP
    near_t = _decimal_type(t.precision - t.scale + 1 + near_scale, near_scale)
    near = rescaled(x, t.scale, near_t, safe=False)
    return _call("round", [near], half).cast(wide)




# Text read as a number (after trimming whitespace): an optional sign, digits with an
# optional decimal point (or a point then digits), single underscores between digits
# (PostgreSQL 16, DuckDB), an optional exponent. DOUBLE and REAL also read nan, inf and
# infinity in any case. Integer and DECIMAL targets round half away from zero (DuckDB).
_DIGITS = r"\d(?:_?\d)*"
_NUMBER_TEXT = rf"^[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?\d+)?$"
_SPECIAL_FLOAT_TEXT = r"(?i)^[+-]?(?:nan|inf|infinity)$"
_EXPONENT_TEXT = r"[eE]"
# without an exponent, text with at most this many integer digits (leading zeros dropped)
# is parsed exactly as DECIMAL(76, 38); more digits are past every integer and DECIMAL type
_EXACT_DIGITS = 38
_EXACT_TEXT_TYPE = pa.decimal256(76, 38)


def _regex(x: E, pattern: str) -> E:
    return _call("match_substring_regex", [x], pc.MatchSubstringOptions(pattern))


def _text_to_number(x: E, dst: pa.DataType, checked: bool = False) -> E:
    """Text -> DOUBLE, REAL, an integer or a DECIMAL type, NULL where the text is not a
    number of the grammar above or is out of the type's range (TRY_CAST); `checked` (CAST)
    fails naming the first such text instead. A registered function per target type
    (`_number_from_text`), not an expression: see `_Stages`."""
    return _text_function("number", x, dst, checked)


def _number_from_text(texts: pa.Array, dst: pa.DataType) -> pa.Array:
    """`_text_to_number` on an array. All vectorized: invalid rows are replaced by '0'
    before the Arrow casts (which fail a whole batch on one bad value), then masked out."""
    t = pc.utf8_trim(texts, T.ASCII_SPACE)
    if T.is_integer(dst):
        radix = pc.fill_null(pc.match_substring_regex(t, _RADIX_TEXT), False)
        if pc.any(radix).as_py():  # '0x1F', '0b101' (DuckDB, PostgreSQL 16)
            out = _number_from_text(pc.if_else(radix, "0", texts), dst)
            return pc.replace_with_mask(out, radix, _radix_integers(t.filter(radix), dst))
    pattern = _plain_number_text(dst)
    if pattern is None:
        return _any_number(t, dst)
    rest = (lambda r: _any_number(r, dst))
    if T.is_decimal(dst):
        # at most the scale's decimals: Arrow's cast reads them as they are; more decimals
        # are rounded (`_plain_number`), the rest takes the whole grammar
        exact = rf"^[+-]?\d{{1,{dst.precision - dst.scale}}}" + (
            rf"(\.\d{{0,{dst.scale}}})?$" if dst.scale else "$")
        return _split(t, exact, "0", lambda plain: pc.cast(plain, dst),
                      lambda r: _split(r, pattern, "0", lambda p: _plain_number(p, dst), rest))
    return _split(t, pattern, "0", lambda plain: _plain_number(plain, dst), rest)


# an integer in hexadecimal or binary: no sign, single underscores between digits (DuckDB)
_RADIX_TEXT = r"^0(?:[xX][0-9a-fA-F](?:_?[0-9a-fA-F])*|[bB][01](?:_?[01])*)$"
_HEX_DIGIT = np.full(256, 0, np.uint64)
_HEX_DIGIT[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10, dtype=np.uint64)
_HEX_DIGIT[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16, dtype=np.uint64)
_HEX_DIGIT[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16, dtype=np.uint64)


def _radix_integers(t: pa.Array, dst: pa.DataType) -> pa.Array:
    """Texts of `_RADIX_TEXT` as the integer type `dst`, NULL past its range: the digits
    left-padded to one width, read as a byte matrix, each column weighted by its place."""
    out = np.zeros(len(t), np.uint64)
    fits = np.ones(len(t), bool)
    digits = pc.utf8_slice_codeunits(pc.replace_substring(t, "_", ""), 2)
    for prefix, bits in (("x", 4), ("b", 1)):
        rows = np.asarray(pc.match_substring_regex(t, f"^0[{prefix}{prefix.upper()}]")
                          .to_numpy(zero_copy_only=False), bool)
        if not rows.any():
            continue
        d = pc.utf8_ltrim(digits.filter(pa.array(rows)), "0")
        width = 64 // bits
        fits[rows] = np.asarray(pc.less_equal(pc.utf8_length(d), width)
                                .to_numpy(zero_copy_only=False), bool)
        d = pc.utf8_lpad(pc.utf8_slice_codeunits(d, 0, width), width, "0")
        d = d.combine_chunks() if isinstance(d, pa.ChunkedArray) else d
        start = int(np.frombuffer(d.buffers()[1], np.int32)[d.offset])  # (every text: width)
        matrix = np.frombuffer(d.buffers()[2], np.uint8)[start:start + len(d) * width]
        values = _HEX_DIGIT[matrix.reshape(len(d), width)]
        places = (np.uint64(bits) * np.arange(width - 1, -1, -1, dtype=np.uint64))
        out[rows] = np.bitwise_or.reduce(values << places, axis=1)
    top = np.iinfo(dst.to_pandas_dtype()).max
    fits &= out <= np.uint64(top)
    return pa.array(np.where(fits, out, 0).astype(dst.to_pandas_dtype()), dst, mask=~fits)


def _any_number(t: pa.Array, dst: pa.DataType) -> pa.Array:
    """`_number_from_text` of trimmed text, by the whole grammar."""
    F = pc.field
    s = _Stages(t=t)
    ok = _regex(F("t"), _NUMBER_TEXT)
    if T.is_floating(dst):
        ok = _call("or", [ok, _regex(F("t"), _SPECIAL_FLOAT_TEXT)])
    s.add(ok=ok, clean=_call("replace_substring", [F("t")], pc.ReplaceSubstringOptions("_", "")))
    if T.is_floating(dst):
        conv = _call("if_else", [F("ok"), F("clean"), scalar("0", T.TEXT)]).cast(dst)
        return s.add(out=_call("if_else", [F("ok"), conv, null_of(dst)]))["out"]
    scale = dst.scale if T.is_decimal(dst) else 0
    # exact, as DECIMAL(76,38) (integer digits capped, decimals cut after 38, which rounding
    # half away from zero at <= 38 decimals never needs); with an exponent of at most
    # _EXACT_EXPONENT ('2.5e-1', '1E-3'), the digits before it, then moved by it
    s.add(has_exp=_regex(F("t"), _EXPONENT_TEXT))
    s.add(mantissa=_call("replace_substring_regex", [F("clean")], pc.ReplaceSubstringOptions(
              r"[eE][+-]?\d+$", "", max_replacements=1)),
          exponent=_call("if_else", [F("has_exp"), _call("extract_regex", [F("clean")],
                         pc.ExtractRegexOptions(r"[eE]\+?(?P<e>-?\d{1,4})$")), null_of(
                             pa.struct([("e", T.TEXT)]))]))
    plain = _call("replace_substring_regex", [F("mantissa")],
                  pc.ReplaceSubstringOptions(r"^([+-]?)0+(\d)", r"\1\2", max_replacements=1))
    plain = _call("replace_substring_regex", [plain],
                  pc.ReplaceSubstringOptions(r"(\.\d{38})\d+$", r"\1", max_replacements=1))
    exponent = _call("struct_field", [F("exponent")], pc.StructFieldOptions(["e"])).cast(T.INT64)
    s.add(plain=plain, exponent=_call("if_else", [F("has_exp"), exponent, scalar(0, T.INT64)]))
    near = _call("and", [_call("less_equal", [F("exponent"), scalar(2 * _EXACT_EXPONENT,
                                                                   T.INT64)]),
                         _call("greater_equal", [F("exponent"),
                                                 scalar(-_EXACT_EXPONENT, T.INT64)])])
    near = _call("coalesce", [near, scalar(False, T.BOOLEAN)])
    s.add(exact_ok=_call("and", [_call("and", [F("ok"), near]),
                                 _regex(F("plain"), rf"^[+-]?\d{{0,{_EXACT_DIGITS}}}(\.\d*)?$")]))
    s.add(exact=_call("if_else", [F("exact_ok"), F("plain"), scalar("0", T.TEXT)])
          .cast(_EXACT_TEXT_TYPE))
    _move_points(s, scale)
    s.add(float_ok=_call("and", [_call("and", [F("ok"), F("has_exp")]),
                                 _call("invert", [F("exact_ok")])]))
    exact_t = _EXACT_TEXT_TYPE
    if _EXACT_TEXT_TYPE.scale - scale > EXACT_STEP:  # rounded exactly (`_round_decimal`)
        near_scale = scale + EXACT_STEP
        exact_t = pa.decimal256(_MAX_DECIMAL256_PRECISION, near_scale)
        s.add(exact=rescaled(F("exact"), _EXACT_TEXT_TYPE.scale, exact_t, safe=False))
    if scale < exact_t.scale:
        s.add(exact=_call("round", [F("exact")], pc.RoundOptions(scale, "half_towards_infinity")))
    # with an exponent past -_EXACT_EXPONENT .. 2 * _EXACT_EXPONENT ('1e300', '5e-39'), or
    # more than 38 integer digits before it: read as DOUBLE, then as a DOUBLE is cast (such a value is past every DECIMAL or
    # rounds to 0 at its 38 decimals, unless written with many more digits than it has)
    s.add(approx=_call("if_else", [F("float_ok"), F("clean"), scalar("0", T.TEXT)])
          .cast(T.FLOAT64))
    s.add(approx=_float_round(F("approx"), scale, "half_towards_infinity"))
    for value, value_ok, t_ in (("exact", "exact_ok", exact_t), ("approx", "float_ok", T.FLOAT64)):
        fits = _fits(F(value), t_, dst)
        s.add(**{value_ok: F(value_ok) if fits is None else _call("and", [F(value_ok), fits])})
        zero = scalar(decimal.Decimal(0) if T.is_decimal(t_) else 0.0, t_)
        # (the exponent form's DOUBLE by its binary value: its text is what it was read from)
        s.add(**{value: _numeric_cast(_call("if_else", [F(value_ok), F(value), zero]), t_, dst,
                                      binary=True)})
    return s.add(out=_call("if_else", [F("exact_ok"), F("exact"), _call(
        "if_else", [F("float_ok"), F("approx"), null_of(dst)])]))["out"]


_EXACT_EXPONENT = 38  # (and up to twice as much for a positive one)


def _move_points(s: _Stages, scale: int) -> None:
    """The exact values (`exact`, DECIMAL(76,38) of the digits before the exponent) of texts
    with an exponent moved by it: a DECIMAL's unscaled digits are the same at another scale,
    so each exponent e is a view as scale 38 - e (negative past 38), then cast back to scale
    38. A negative e
    first rounds half away from zero to `scale` + e decimals (one rounding, from all the
    digits: round(v * 10^e, s) = round(v, s + e) * 10^e); a value whose integer digits e
    would take past 38 is out of range. One pass per distinct exponent, never per row; the
    rows it cannot take (exact_ok false) are read as DOUBLE."""
    has = np.asarray(pc.fill_null(pc.and_(s["exact_ok"], s["has_exp"]), False)
                     .to_numpy(zero_copy_only=False), bool)
    if not has.any():
        return
    exponents = np.asarray(pc.fill_null(s["exponent"], 0).to_numpy(zero_copy_only=False),
                           np.int64)
    exact, ok = s["exact"], s["exact_ok"]
    zero = pa.scalar(decimal.Decimal(0), _EXACT_TEXT_TYPE)
    for e in (int(x) for x in np.unique(exponents[has])):
        if e == 0:
            continue
        rows = pa.array(has & (exponents == e))
        values = exact.filter(rows)
        if e > 0:  # (|value| * 10^e < 10^38, compared before it is moved: in one type)
            fits = pc.less(pc.abs(values), pa.scalar(decimal.Decimal(10) ** (38 - e),
                                                     _EXACT_TEXT_TYPE))
            values = pc.if_else(fits, values, zero)
        else:
            try:
                values = pc.round(values, ndigits=scale + e, round_mode="half_towards_infinity")
                fits = pa.array(np.ones(len(values), bool))
            except pa.ArrowInvalid:  # (38 integer digits rounded up to 39)
                fits = pa.array(np.zeros(len(values), bool))
                values = pc.if_else(fits, values, zero)
        moved = values.view(pa.decimal256(76, _EXACT_TEXT_TYPE.scale - e)).cast(
            _EXACT_TEXT_TYPE)
        exact = pc.replace_with_mask(exact, rows, moved)
        ok = pc.replace_with_mask(ok, rows, fits)
    s.columns["exact"], s.columns["exact_ok"] = exact, ok


def _split(t: pa.Array, pattern: str, filler: str, fast, slow) -> pa.Array:
    """`fast` (Arrow's own cast) of the texts matching `pattern`, `slow` (the whole grammar)
    of the others, only those: text of numbers and dates mostly takes the common form, and
    the whole grammar costs ~10x as much. `fast` may fail on a text of the form that names
    no value (2023-02-29): then every text goes the slow way."""
    plain = pc.fill_null(pc.match_substring_regex(t, pattern), True)
    if pc.all(plain).as_py():
        try:
            return fast(t)
        except pa.ArrowInvalid:
            return slow(t)
    if not pc.any(plain).as_py():
        return slow(t)
    try:
        quick = fast(pc.if_else(plain, t, filler))
    except pa.ArrowInvalid:
        return slow(t)
    rest = pc.invert(plain)
    return pc.replace_with_mask(quick, rest, slow(pc.filter(t, rest)))


def _plain_number_text(dst: pa.DataType) -> str | None:
    """Text Arrow's cast reads exactly as `dst`: plain digits that fit (`-123`; `12.50`
    within the DECIMAL's digits), the common case (numbers in a CSV's text columns)."""
    if T.is_integer(dst):
        return r"^-?\d{1,18}$"
    if T.is_decimal(dst) and dst.precision > dst.scale:
        # (more decimals than the scale are rounded by `_plain_number`)
        return rf"^[+-]?\d{{1,{dst.precision - dst.scale}}}(\.\d+)?$"
    return None


def _plain_number(t: pa.Array, dst: pa.DataType) -> pa.Array:
    """Text of `_plain_number_text`'s form as `dst`; a DECIMAL's extra decimals are rounded
    half away from zero in a DECIMAL(38) one integer digit wider (Arrow's rounding wraps
    silently when the carry needs a digit the type lacks). Fails (and `_split` takes the
    whole grammar) where a text has more decimals than that type holds, or the rounded
    value has more integer digits than `dst`."""
    if T.is_decimal(dst):
        whole = dst.precision - dst.scale
        wide = pa.decimal128(38, 38 - whole - 1) if whole + 1 + dst.scale <= 38 else None
        if wide is None:
            return pc.cast(t, dst)
        v = pc.cast(t, wide)
        if wide.scale > dst.scale:
            v = pc.round(v, ndigits=dst.scale, round_mode="half_towards_infinity")
        return pc.cast(v, dst)
    v = pc.cast(t, pa.int64())
    if dst == pa.int64():
        return v
    lo, hi = _int_range(dst)
    fits = pc.and_(pc.greater_equal(v, lo), pc.less_equal(v, hi))
    return pc.cast(pc.if_else(fits, v, pa.scalar(None, pa.int64())), dst)


def _int_range(t: pa.DataType) -> tuple[int, int]:
    """The smallest and largest values of an integer type, clipped to int64 (`_reach`)."""
    lo, past = _reach(t)
    return lo, min(past - 1, 2 ** 63 - 1)


class _Stages:
    """Columns computed a few expressions at a time, each set by one Acero projection over
    the columns so far, for a conversion whose steps reuse earlier results: a pc.Expression
    has no common subexpressions, so a step used twice is computed twice, and the steps of
    `_number_from_text` as one expression ran its regular expressions ~105 times (CAST of
    2M texts AS INTEGER: 25 s; DuckDB 0.02 s). Each named column here is computed once."""

    def __init__(self, **columns: pa.Array):
        self.columns = dict(columns)

    def add(self, **exprs: E) -> _Stages:
        table = pa.table(self.columns)
        out = ac.Declaration.from_sequence([
            ac.Declaration("table_source", ac.TableSourceNodeOptions(table)),
            ac.Declaration("project", ac.ProjectNodeOptions(list(exprs.values()), list(exprs)))
        ]).to_table(use_threads=False)
        for name in exprs:
            col = out.column(name)
            self.columns[name] = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        return self

    def __getitem__(self, name: str) -> pa.Array:
        return self.columns[name]


def _register_by_type(prefix: str, t: pa.DataType, out_type: pa.DataType, fn, in_types: dict,
                      summary: str) -> str:
    """The name of `fn` registered for input type `t` (a registered function has fixed
    types: one per type, registered on first use in this process)."""
    name = prefix + "_" + re.sub(r"\W+", "_", str(t))
    udfs.register_once(name, fn, in_types, out_type, summary)
    return name


def _text_function(kind: str, x: E, dst: pa.DataType, checked: bool) -> E:
    """A call of the registered function converting text to `dst` (`kind`: "number" or
    "temporal"), registered on first use in this process (one per target type: a registered
    function has one result type); `checked` fails naming the first text that does not
    convert, else such rows are NULL."""
    convert = _number_from_text if kind == "number" else _temporal_from_text

    def fn(ctx, texts):
        if isinstance(texts, pa.Scalar):
            texts = pa.repeat(texts, ctx.batch_length)
        out = convert(texts, dst)
        if checked:
            failed = pc.and_(pc.is_valid(texts), pc.is_null(out))
            udfs.check_cast(ctx, texts, failed, pa.scalar(T.type_name(dst)))
        return out

    name = _register_by_type(f"pqe_text_{kind}_{'cast' if checked else 'try'}", dst, dst, fn,
                             {"text": pa.string()},
                             f"Text to {T.type_name(dst)} ({'CAST' if checked else 'TRY_CAST'})")
    return _call(name, [x.cast(pa.string())])


def _text_to_boolean(x: E) -> E:
    """Text -> BOOLEAN: TRUE for a true word ('true', 't', 'yes', 'on', '1', any case, spaces
    around), FALSE for a false one, NULL for anything else (TRY_CAST; CAST then fails naming
    it). Every other word was FALSE: '$1' stored in a BOOLEAN column silently became FALSE."""
    low = _call("utf8_lower", [_call("utf8_trim", [x], pc.TrimOptions(T.ASCII_SPACE))])
    truthy = _call("is_in", [low], pc.SetLookupOptions(pa.array(T.TRUE_TEXT)))
    falsy = _call("is_in", [low], pc.SetLookupOptions(pa.array(T.FALSE_TEXT)))
    return _call("if_else", [truthy, scalar(True, T.BOOLEAN),
                             _call("if_else", [falsy, scalar(False, T.BOOLEAN),
                                               null_of(T.BOOLEAN)])])


def _parsed_temporal(t: pa.DataType) -> bool:
    """Text casts to `t` go through `_text_to_temporal`: DATE, TIMESTAMP with or without a
    zone, TIME (Arrow has no cast from text to a time of day, and its cast to a zoned
    TIMESTAMP refused text without an offset)."""
    return pa.types.is_date32(t) or pa.types.is_timestamp(t) or pa.types.is_time(t)


def _text_to_temporal(x: E, dst: pa.DataType, checked: bool = False) -> E:
    """Text -> DATE or TIMESTAMP (without a zone), a registered function per target type
    (`_temporal_from_text`; see `_text_to_number`)."""
    return _text_function("temporal", x, dst, checked)


def _temporal_from_text(texts: pa.Array, dst: pa.DataType) -> pa.Array:
    """Text -> DATE or TIMESTAMP (without a zone): the value, or NULL where the text is not
    one (plan.temporal_text) or names no such day or time (2023-02-29, 10:61, 24:00:01; 24:00
    is the next day's midnight). Arrow's own parsers roll an impossible day over into the
    next month (strptime: TRY_CAST('2023-02-29' AS DATE) gave 2023-03-01), convert a zone
    offset to UTC (CAST('... 10:00+01:00' AS TIMESTAMP) gave 09:00) and fail the whole
    array on one bad value (so TRY_CAST could not give NULL)."""
    t = pc.utf8_trim(texts, T.ASCII_SPACE)
    if pa.types.is_time(dst):
        return _time_from_text(t, dst)
    if pa.types.is_timestamp(dst) and dst.tz is not None:
        return _zoned_from_text(t, dst)
    digits = UNIT_DIGITS[dst.unit] if pa.types.is_timestamp(dst) else 0
    # ISO text Arrow's cast reads the same way (the common case: it is fast), unless one
    # names a day the month lacks or a time past 23:59:59 (the cast fails on those)
    plain = r"^\d{4}-\d{2}-\d{2}"
    if pa.types.is_timestamp(dst):
        plain += r"(?:[ T]\d{2}:\d{2}(?::\d{2}" + (rf"(?:\.\d{{1,{digits}}})?" if digits else "") + ")?)?"
    return _split(t, plain + "$", "1970-01-01", lambda p: pc.cast(p, dst),
                  lambda rest: _any_temporal(rest, dst))


def _zoned_from_text(t: pa.Array, dst: pa.DataType) -> pa.Array:
    """Trimmed text -> a TIMESTAMPTZ (an instant): the time the text names at its zone
    offset (`+02`, `-05:30`, `Z`, ` UTC`), or in UTC without one (pqe's session time zone,
    as DuckDB's with TimeZone 'UTC'); NULL where the text names no such time."""
    from ..plan.temporal_text import ZONED_TEXT

    naive = _temporal_from_text(t, pa.timestamp(dst.unit))
    parts = pc.extract_regex(t, ZONED_TEXT)

    def number(name: str) -> pa.Array:
        text = pc.struct_field(parts, [name])
        return pc.if_else(pc.equal(text, ""), "0", text).cast(T.INT64)

    minutes = pc.add(pc.multiply(number("oh"), 60), number("om"))
    west = pc.equal(pc.struct_field(parts, ["sign"]), "-")
    offset = pc.multiply(pc.if_else(west, pc.negate(minutes), minutes),
                         60 * 10 ** UNIT_DIGITS[dst.unit])
    # a time the offset moves past the type's range names no such time: NULL (TRY_CAST),
    # and CAST then fails naming the text; the offset (under a day) cannot itself overflow
    raw = naive.cast(T.INT64)
    info = np.iinfo(np.int64)
    ok = pc.and_(pc.greater_equal(raw, pc.add(info.min, pc.max_element_wise(offset, 0))),
                 pc.less_equal(raw, pc.add(info.max, pc.min_element_wise(offset, 0))))
    ok = pc.and_(ok, pc.is_valid(parts))
    value = pc.if_else(ok, pc.subtract(raw, offset), pa.scalar(None, T.INT64))
    return value.cast(pa.timestamp(dst.unit)).cast(dst)


def _time_from_text(t: pa.Array, dst: pa.DataType) -> pa.Array:
    """Trimmed text -> a TIME of `dst`'s unit by plan.temporal_text's TIME_TEXT (the grammar
    constants are folded by): NULL where it does not match or names no time of day."""
    digits = UNIT_DIGITS[dst.unit]
    parts = pc.extract_regex(t, TIME_TEXT)
    hh, mi, ss = (pc.cast(pc.if_else(pc.equal(pc.struct_field(parts, [k]), ""), "0",
                                     pc.struct_field(parts, [k])), T.INT64) for k in "HMS")
    value = pc.add(pc.multiply(pc.add(pc.multiply(pc.add(pc.multiply(hh, 60), mi), 60), ss),
                               10 ** digits),
                   pc.cast(pc.utf8_slice_codeunits(pc.utf8_rpad(
                       pc.struct_field(parts, ["f"]), digits, "0"), 0, digits), T.INT64)
                   if digits else 0)
    ok = pc.and_(pc.and_(pc.less_equal(hh, 23), pc.less_equal(mi, 59)), pc.less_equal(ss, 59))
    value = pc.if_else(ok, value, pa.scalar(None, T.INT64))
    return value.cast(pa.int32() if pa.types.is_time32(dst) else T.INT64).cast(dst)


def _any_temporal(t: pa.Array, dst: pa.DataType) -> pa.Array:
    """`_temporal_from_text` of trimmed text, by the whole grammar."""
    digits = UNIT_DIGITS[dst.unit] if pa.types.is_timestamp(dst) else 0
    s = _Stages(t=t)
    s.add(parts=_call("extract_regex", [pc.field("t")], pc.ExtractRegexOptions(TEMPORAL_TEXT)))
    parts = pc.field("parts")

    def number(name: str, default: str = "0") -> E:
        text = _call("struct_field", [parts], pc.StructFieldOptions(name))
        text = _call("if_else", [_call("equal", [text, scalar("", T.TEXT)]),
                                 scalar(default, T.TEXT), text])
        return text.cast(T.INT64)

    def i(v: int) -> E:
        return scalar(v, T.INT64)

    def op(name: str, *args: E) -> E:
        return _call(name, list(args))

    s.add(y=number("y"), m=number("m"), d=number("d"), hh=number("H"), mi=number("M"),
          ss=number("S"))
    y, m, d, hh, mi, ss = (pc.field(n) for n in ("y", "m", "d", "hh", "mi", "ss"))
    leap = op("or", op("and", op("equal", op("subtract", y, op("multiply", op("divide", y, i(4)), i(4))), i(0)),
                        op("not_equal", op("subtract", y, op("multiply", op("divide", y, i(100)), i(100))), i(0))),
              op("equal", op("subtract", y, op("multiply", op("divide", y, i(400)), i(400))), i(0)))
    thirty = _call("is_in", [m], pc.SetLookupOptions(pa.array([4, 6, 9, 11], T.INT64)))
    days_in_month = op("if_else", op("equal", m, i(2)), op("add", i(28), leap.cast(T.INT64)),
                       op("if_else", thirty, i(30), i(31)))
    fraction = _call("struct_field", [parts], pc.StructFieldOptions("f"))
    if digits:
        fraction = _call("utf8_slice_codeunits", [_call("utf8_rpad", [fraction], pc.PadOptions(
            digits, "0"))], pc.SliceOptions(0, digits)).cast(T.INT64)
    else:
        fraction = i(0)
    s.add(fraction=fraction)
    fraction = pc.field("fraction")
    midnight = op("and", op("equal", mi, i(0)), op("and", op("equal", ss, i(0)),
                                                   op("equal", fraction, i(0))))
    ok = op("and", op("and", op("greater_equal", m, i(1)), op("less_equal", m, i(12))),
            op("and", op("greater_equal", d, i(1)), op("less_equal", d, days_in_month)))
    ok = op("and", ok, op("and", op("less_equal", mi, i(59)), op("less_equal", ss, i(59))))
    ok = op("and", ok, op("or", op("less_equal", hh, i(23)),
                          op("and", op("equal", hh, i(24)), midnight)))
    # days since 1970-01-01 of the proleptic Gregorian date (H. Hinnant's days_from_civil;
    # Arrow's integer division truncates, and every operand here is >= 0 but the year's)
    march = op("less_equal", m, i(2))
    yy = op("subtract", y, march.cast(T.INT64))
    era = op("divide", op("if_else", op("less", yy, i(0)), op("subtract", yy, i(399)), yy), i(400))
    yoe = op("subtract", yy, op("multiply", era, i(400)))
    mp = op("add", m, op("if_else", march, i(9), i(-3)))
    doy = op("add", op("divide", op("add", op("multiply", i(153), mp), i(2)), i(5)),
             op("subtract", d, i(1)))
    doe = op("add", op("subtract", op("add", op("multiply", yoe, i(365)), op("divide", yoe, i(4))),
                       op("divide", yoe, i(100))), doy)
    s.add(ok=ok, days=op("add", op("multiply", era, i(146_097)), op("subtract", doe, i(719_468))))
    ok, days = pc.field("ok"), pc.field("days")
    if pa.types.is_date(dst):
        value = days.cast(pa.int32()).cast(dst)
    else:
        per_second = 10 ** digits
        # the days a TIMESTAMP of this unit holds in int64 (ns: about 1677-09-21 to
        # 2262-04-11), less the day at each end, which is partly outside and refused whole
        bound = (2 ** 63 - 1) // (86_400 * per_second) - 1
        ok = op("and", ok, op("and", op("greater_equal", days, i(-bound)),
                              op("less_equal", days, i(bound))))
        seconds = op("add", op("add", op("multiply", days, i(86_400)), op("multiply", hh, i(3_600))),
                     op("add", op("multiply", mi, i(60)), ss))
        value = op("add", op("multiply", seconds, i(per_second)), fraction).cast(dst)
    # (a row that is not such text, or names no such day, is NULL before its value is made)
    valid = op("and_kleene", op("is_valid", parts), ok)
    return s.add(out=op("if_else", valid, value, null_of(dst)))["out"]


def _checked_text_cast(x: E, converted: E, dst: pa.DataType) -> E:
    """CAST of text: `converted`, or an error naming the first value that did not convert."""
    failed = _call("and", [_call("is_valid", [x]), _call("is_null", [converted])])
    check = _call("pqe_check_cast", [x, failed, scalar(T.type_name(dst), T.TEXT)])
    return _call("if_else", [check, converted, null_of(dst)])


def _is_blob(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


def _text_to_blob(x: E, dst: pa.DataType) -> E:
    """Text -> BLOB: its bytes where they are unambiguous, NULL where the text holds a
    backslash or a character past ASCII: DuckDB reads '\xAA' as one escaped byte (pqe stored
    the four characters) and refuses other characters past ASCII."""
    bad = _call("match_substring_regex", [x], pc.MatchSubstringOptions(T.BLOB_TEXT_REFUSED))
    return _call("if_else", [bad, null_of(dst), x.cast(dst)])


# Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), as
# Arrow's own check reads it. Arrow has no kernel that says whether bytes are UTF-8; its regex
# kernels read a BLOB as Latin-1, one character per byte, so this runs in RE2 over the bytes.
_UTF8_BYTES = (r"^(?:[\x00-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]"
               r"|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
               r"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
               r"|\xf4[\x80-\x8f][\x80-\xbf]{2})*$")


def _blob_to_text(x: E, src: pa.DataType, dst: pa.DataType) -> E:
    """TRY_CAST of a BLOB to text: the bytes where they are UTF-8, else NULL. The unchecked
    cast TRY_CAST used kept any bytes, and the column then held invalid UTF-8 (length()
    counted bytes, to_pandas failed, Parquet files were written with it)."""
    if not _is_blob(src):
        x, src = x.cast(T.BINARY), T.BINARY  # (fixed-size and view binaries)
    ok = _call("match_substring_regex", [x], pc.MatchSubstringOptions(_UTF8_BYTES))
    # only UTF-8 reaches the cast, so its (checking) conversion cannot fail
    return _call("if_else", [ok, x, null_of(src)]).cast(dst)


def _try_cast(x: E, src: pa.DataType, dst: pa.DataType) -> E:
    """TRY_CAST: NULL where the value does not convert (validated vectorially, not per row)."""
    if T.is_text(src) and _is_blob(dst):
        return _text_to_blob(x, dst)
    if T.is_blob(src) and T.is_text(dst):
        return _blob_to_text(x, src, dst)
    if T.is_text(src) and (T.is_numeric(dst)):
        return _text_to_number(x, dst)
    if T.is_text(src) and T.is_boolean(dst):
        return _text_to_boolean(x)
    if T.is_text(src) and _parsed_temporal(dst):
        return _text_to_temporal(x, dst)
    if T.is_numeric(src) and (T.is_integer(dst) or T.is_decimal(dst)):
        rounded = _cast_rounding(x, src, dst)
        t = _rounded_type(src, dst)
        ok = _fits(rounded, t, dst)
        if ok is None:
            return _numeric_cast(rounded, src, dst)
        # out-of-range values become 0 first, so the checked cast cannot fail
        zero = scalar(decimal.Decimal(0) if T.is_decimal(t) else 0.0 if T.is_floating(t) else 0, t)
        safe = _call("if_else", [ok, rounded, zero])
        return _call("if_else", [ok, _numeric_cast(safe, src, dst), null_of(dst)])
    return _total_cast(x, src, dst, safe=False)


def _rounded_type(src: pa.DataType, dst: pa.DataType) -> pa.DataType:
    """The type `_cast_rounding` gives."""
    scale = dst.scale if T.is_decimal(dst) else 0
    if T.is_decimal(src) and scale < src.scale:
        if -scale > src.precision - src.scale:
            return src
        return _decimal_type(src.precision + 1, src.scale)
    return src


def _fits(x: E, t: pa.DataType, dst: pa.DataType) -> E | None:
    """Whether each value of `x` (type t, already rounded) is in the range of `dst`, as a
    boolean expression (NULL for NULL, false for NaN); None when every value of t fits."""
    if T.is_integer(dst):
        signed = pa.types.is_signed_integer(dst)
        lo = -(2 ** (dst.bit_width - 1)) if signed else 0
        hi = 2 ** (dst.bit_width - 1) if signed else 2 ** dst.bit_width  # exclusive
    else:
        hi = 10 ** (dst.precision - dst.scale)
        lo = -hi  # DECIMAL: both bounds exclusive
    # the bounds as values of t; where t cannot reach a bound, that side always fits
    if T.is_floating(t):
        low, high = scalar(float(lo), t), scalar(float(hi), t)
    else:
        low_reach, reach = _reach(t)
        value = (lambda v: v) if T.is_integer(t) else decimal.Decimal
        low = scalar(value(lo), t) if lo > low_reach else None
        high = scalar(value(hi), t) if hi < reach else None
        if low is None and high is None:
            return None
    parts = []
    if low is not None:
        parts.append(_call("greater_equal" if T.is_integer(dst) else "greater", [x, low]))
    if high is not None:
        parts.append(_call("less", [x, high]))
    return parts[0] if len(parts) == 1 else _call("and_kleene", parts)


# ---- dates ---------------------------------------------------------------------------------------

_EXTRACT = {"year": "year", "month": "month", "day": "day", "quarter": "quarter",
            "hour": "hour", "minute": "minute", "second": "second", "doy": "day_of_year",
            "week": "iso_week", "isoyear": "iso_year", "millisecond": "millisecond",
            "microsecond": "microsecond"}


def _extract(part):
    def build(c, e):
        if T.is_interval(e.args[0].dtype):
            return _call(f"pqe_interval_{part}", [c(e.args[0])])  # (kernels.udfs)
        x = utc(c(e.args[0]), e.args[0].dtype)
        if part == "dow":
            return _call("day_of_week", [x], pc.DayOfWeekOptions(count_from_zero=True, week_start=7)).cast(T.INT64)
        if part == "isodow":
            return _call("day_of_week", [x], pc.DayOfWeekOptions(count_from_zero=False, week_start=1)).cast(T.INT64)
        t = e.args[0].dtype
        if part == "epoch" and pa.types.is_time(t):  # seconds since midnight (DuckDB)
            per = 10 ** UNIT_DIGITS[t.unit]
            units = x.cast(pa.int32() if pa.types.is_time32(t) else T.INT64).cast(T.FLOAT64)
            return _call("divide", [units, scalar(float(per), T.FLOAT64)])
        if part == "epoch":  # seconds since 1970 with their fraction, a DOUBLE (DuckDB)
            if pa.types.is_date(t):
                days = x.cast(pa.int32()).cast(T.INT64)
                return _call("multiply", [days, scalar(86_400, T.INT64)]).cast(T.FLOAT64)
            units = x.cast(pa.timestamp(utc_type(t).unit)).cast(T.INT64)
            per = 10 ** {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
            if pa.types.is_timestamp(t) and t.unit == "ns":
                # DuckDB's epoch of a TIMESTAMP_NS (with a zone too) counts whole
                # microseconds, the nanoseconds floored (23:59:59.9999996 is ...59.999999,
                # -500 ns -1e-06)
                v = c.share(units)
                q = c.share(_call("divide", [v, scalar(1000, T.INT64)]))  # towards zero
                below = _call("less", [v, _call("multiply", [q, scalar(1000, T.INT64)])])
                units = _call("subtract", [q, below.cast(T.INT64)])
                per = 10 ** 6
            return _call("divide", [units.cast(T.FLOAT64, safe=False), scalar(float(per), T.FLOAT64)])
        if part in ("hour", "minute", "second", "millisecond", "microsecond") \
                and pa.types.is_date(t):  # a date's time is midnight (DuckDB)
            return _call("if_else", [_call("is_valid", [x]), scalar(0, T.INT64), null_of(T.INT64)])
        if part in ("millisecond", "microsecond"):
            # the seconds with their fraction in that unit (DuckDB, PostgreSQL: 17.123457 s
            # is 17123 ms and 17123457 us; Arrow's kernels give the fraction's digits only)
            ms = _call("add", [_call("multiply", [_call("second", [x]).cast(T.INT64),
                                                  scalar(1000, T.INT64)]),
                               _call("millisecond", [x]).cast(T.INT64)])
            if part == "millisecond":
                return ms
            return _call("add", [_call("multiply", [ms, scalar(1000, T.INT64)]),
                                 _call("microsecond", [x]).cast(T.INT64)])
        kernel = _EXTRACT.get(part)
        if kernel is None:
            raise UnsupportedError(f"EXTRACT({part}) is not supported")
        if part in ("year", "isoyear", "doy", "week", "quarter", "month", "day"):
            return calendar_checked(_call(kernel, [x]).cast(T.INT64), T.INT64, x, t,
                                    f"EXTRACT({part})")
        return _call(kernel, [x]).cast(T.INT64)
    return build


# the days from 1970-01-01 to -32767-01-01 and to 32767-12-31: Arrow's calendar kernels
# (year, day_of_year, iso_week, strftime) keep the year in 16 bits
_CALENDAR_DAYS = (-12687428, 11248737)


def calendar_checked(value: E, out: pa.DataType, x: E, t: pa.DataType, what: str) -> E:
    """`value` (of type `out`, computed from the date or timestamp `x` of type `t` by a
    calendar kernel), or an error when some x lies past year +-32767, where that kernel's
    answer is wrong."""
    if pa.types.is_date32(t):
        days, days_t = x.cast(pa.int32()), pa.int32()
    elif pa.types.is_timestamp(t) and t.unit != "ns":  # (ns: the years 1677 to 2262 only)
        per = {"s": 1, "ms": 10**3, "us": 10**6}[t.unit] * 86_400
        days, days_t = _call("divide", [x.cast(pa.timestamp(t.unit)).cast(T.INT64),
                                        scalar(per, T.INT64)]), T.INT64
    else:
        return value
    lo, hi = _CALENDAR_DAYS
    bad = _call("or", [_call("less", [days, scalar(lo, days_t)]),
                       _call("greater", [days, scalar(hi, days_t)])])
    check = _call("pqe_check_calendar", [bad, scalar(what, T.TEXT)])
    return _call("if_else", [check, value, null_of(out)])


# DATE_TRUNC's parts of whole years: DuckDB's spellings, and the years in one
_TRUNC_YEARS = {"decade": 10, "decades": 10, "dec": 10, "decs": 10, "century": 100,
                "centuries": 100, "cent": 100, "c": 100, "millennium": 1000,
                "millennia": 1000, "millenniums": 1000, "millenium": 1000, "mil": 1000,
                "mils": 1000}


def _date_trunc(c, e):
    part = _const_text(e.args[0], "DATE_TRUNC part")
    units = ("year", "quarter", "month", "week", "day", "hour", "minute", "second",
             "millisecond", "microsecond")
    word = (part or "").lower()
    unit = "year" if word in _TRUNC_YEARS else _DIFF_PARTS.get(word, word)
    if part is None or unit not in units:
        raise UnsupportedError(f"DATE_TRUNC('{part}') is not supported")
    out = _date_trunc_to(c, e, unit)
    if unit in ("year", "quarter", "month"):
        # (Arrow's calendar fields wrap past year 32767: 40000-05-05 was in year -25586)
        out = c.share(calendar_checked(out, e.dtype, c(e.args[1]), e.args[1].dtype,
                                       "DATE_TRUNC"))
    years = _TRUNC_YEARS.get(word)
    if years is None:
        return out
    # a decade, century or millennium: the year's first day, moved back to the year cut
    # towards zero to a multiple of 10, 100 or 1000 (DuckDB: 50 is in century 0, 50 BC,
    # year -49, in decade -40). A TIMESTAMPTZ's (DuckDB's ICU calendar) cuts a year BC as
    # its era's year: 50 BC in decade 50 BC (-49), 3 BC in "0 BC", which is 1 AD
    day = c.share(out.cast(pa.timestamp("us", "UTC")).cast(pa.date32())
                  if pa.types.is_timestamp(e.dtype) else out)
    y = c.share(_call("year", [day]).cast(T.INT64))
    k = scalar(years, T.INT64)
    cut = _call("multiply", [_call("divide", [y, k]), k])
    t = e.args[1].dtype
    if pa.types.is_timestamp(t) and t.tz is not None:
        one = scalar(1, T.INT64)
        era = _call("multiply", [_call("divide", [_call("subtract", [one, y]), k]), k])
        cut = _call("if_else", [_call("less_equal", [y, scalar(0, T.INT64)]),
                                _call("subtract", [one, era]), cut])
    months = _call("multiply", [_call("subtract", [cut, y]), scalar(12, T.INT64)])
    moved = _call("pqe_add_months", [day, months])
    if pa.types.is_timestamp(e.dtype):
        return moved.cast(pa.timestamp("us", "UTC")).cast(e.dtype)
    return moved


def _date_trunc_to(c, e, unit: str) -> E:
    opts = pc.RoundTemporalOptions(1, unit, week_starts_monday=True)
    t = e.args[1].dtype
    x = utc(c(e.args[1]), t)
    if pa.types.is_timestamp(t) and t.tz is None:
        # a TIMESTAMP, as DuckDB truncates (its date_trunc of a TIMESTAMP_S, _MS or _NS is
        # the truncated TIMESTAMP, a TIMESTAMP_NS rounded to the microsecond first:
        # 23:59:59.9999996 is in the next day)
        us = ns_to_micros(c, x) if t.unit == "ns" else x.cast(pa.timestamp("us"))
        return _call("floor_temporal", [us], opts)
    if pa.types.is_timestamp(t) and t.unit == "ns":
        # floored in microseconds: floor_temporal wrapped within a unit of the int64
        # limits (1677-09-21 to 2262-04-11 23:34:33.7); the result stays a microsecond
        # TIMESTAMPTZ, as DuckDB's (a floor before 1677-09-21 failed the cast back to ns)
        v = c.share(x.cast(T.INT64))
        q = c.share(_call("divide", [v, scalar(1000, T.INT64)]))  # towards zero
        below = _call("less", [v, _call("multiply", [q, scalar(1000, T.INT64)])])
        us = _call("subtract", [q, below.cast(T.INT64)]).cast(pa.timestamp("us", utc_type(t).tz))
        return _call("floor_temporal", [us], opts).cast(e.dtype)
    out = _call("floor_temporal", [x], opts)
    if pa.types.is_date(t):  # (DuckDB's date_trunc of a DATE is a TIMESTAMP)
        return out.cast(e.dtype)
    return out if utc_type(t) == t else out.cast(t)


# DuckDB's other spellings of DATE_DIFF's parts (plurals, abbreviations)
_DIFF_PARTS = {"days": "day", "d": "day", "dd": "day", "weeks": "week", "w": "week",
               "months": "month", "mon": "month", "mons": "month", "years": "year", "y": "year",
               "yr": "year", "yrs": "year", "quarters": "quarter", "hours": "hour", "h": "hour",
               "hr": "hour", "hrs": "hour", "minutes": "minute", "min": "minute",
               "mins": "minute", "m": "minute", "seconds": "second", "s": "second",
               "sec": "second", "secs": "second", "milliseconds": "millisecond",
               "ms": "millisecond", "msec": "millisecond", "msecs": "millisecond",
               "microseconds": "microsecond", "us": "microsecond", "usec": "microsecond",
               "usecs": "microsecond"}


def _date_diff(c, e):
    part = _const_text(e.args[0], "DATE_DIFF part")
    # DuckDB counts the part boundaries crossed, except weeks: whole 7-day spans of days
    kern = {"day": "days_between", "week": "weeks_7_days", "month": "month_interval_between",
            "year": "years_between", "quarter": "quarters_between", "hour": "hours_between",
            "minute": "minutes_between", "second": "seconds_between",
            "millisecond": "milliseconds_between", "microsecond": "microseconds_between",
            }.get(_DIFF_PARTS.get((part or "").lower(), (part or "").lower()))
    if kern is None:
        raise UnsupportedError(f"DATE_DIFF('{part}') is not supported")
    if pa.types.is_time(e.args[1].dtype):
        # the part boundaries crossed between two times of day (DuckDB): each time's whole
        # parts since midnight, subtracted
        unit = _DIFF_PARTS.get(part.lower(), part.lower())
        if unit not in _SUB_MICROS or unit in ("day", "week"):
            raise UnsupportedError(f"DATE_DIFF('{part}') of a TIME is not supported (a TIME "
                                   f"has no date)")
        per = scalar(_SUB_MICROS[unit], T.INT64)
        whole = [_call("divide", [c(x).cast(pa.time64("us")).cast(T.INT64), per])
                 for x in e.args[1:]]
        return _call("subtract", [whole[1], whole[0]])
    a, b = utc(c(e.args[1]), e.args[1].dtype), utc(c(e.args[2]), e.args[2].dtype)
    if _is_plain_ns(e.args[1].dtype):
        # DuckDB counts two TIMESTAMP_NS as TIMESTAMPs, rounded to the microsecond (a
        # TIMESTAMPTZ_NS's own DATE_DIFF floors, as Arrow's counts do)
        a, b = ns_to_micros(c, a), ns_to_micros(c, b)
    if kern == "weeks_7_days":
        days = _call("days_between", [a, b]).cast(T.INT64)
        return _call("divide", [days, scalar(7, T.INT64)])  # truncates toward zero
    if kern == "month_interval_between":
        out = _call("add", [_call("multiply", [_call("years_between", [a, b]),
                                               scalar(12, T.INT64)]),
                            _call("subtract", [_call("month", [b]), _call("month", [a])])]
                    ).cast(T.INT64)
    else:
        out = _call(kern, [a, b]).cast(T.INT64)
    if kern in ("month_interval_between", "years_between", "quarters_between"):
        # (Arrow's calendar fields wrap past year 32767: 2020 to 40000 was -330672 months)
        for x, t in ((a, e.args[1].dtype), (b, e.args[2].dtype)):
            out = calendar_checked(out, T.INT64, x, utc_type(t), "DATE_DIFF")
    return out


# the microseconds in one of DATE_SUB's clock parts (a week is 7 days of them, as DuckDB counts)
_SUB_MICROS = {"week": 7 * 86_400 * 10**6, "day": 86_400 * 10**6, "hour": 3_600 * 10**6,
               "minute": 60 * 10**6, "second": 10**6, "millisecond": 1000, "microsecond": 1}


def _as_micros(c: Compiler, x: E, t: pa.DataType) -> E:
    """A DATE or TIMESTAMP as a TIMESTAMP in microseconds (a TIMESTAMP_NS rounded, zoned or
    not, as DuckDB casts it: a TIMESTAMPTZ_NS's sub-microsecond digits failed Arrow's cast;
    a zone's instant in UTC)."""
    x = utc(x, t)
    tz = utc_type(t).tz if pa.types.is_timestamp(t) else None
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return _round_units(c, x, 1000).cast(pa.timestamp("us", tz))
    return x.cast(pa.timestamp("us", tz))


# DATE_SUB parts DuckDB counts exactly in microseconds between two TIMESTAMPTZs (the others
# in milliseconds, see _date_sub)
_EXACT_ZONED_SUB = frozenset({"minute", "second", "millisecond", "microsecond"})


def _whole_millis(c: Compiler, x: E, floor: bool) -> E:
    """A microsecond TIMESTAMPTZ to its whole milliseconds, floored or cut towards zero."""
    v = c.share(x.cast(T.INT64))
    q = c.share(_call("divide", [v, scalar(1000, T.INT64)]))  # (towards zero)
    if floor:
        below = _call("less", [v, _call("multiply", [q, scalar(1000, T.INT64)])])
        q = _call("subtract", [q, below.cast(T.INT64)])
    return _call("multiply", [q, scalar(1000, T.INT64)]).cast(pa.timestamp("us", "UTC"))


def _date_sub(c, e):
    """DuckDB's DATE_SUB('part', start, end): the whole parts elapsed from start to end,
    negative when end is earlier. Clock parts (days and weeks too) divide the microseconds
    between, cut towards zero (23:00 to 01:00 the next day is 0 days); months, quarters
    and years count the months whose day and time of day end has reached, a last day of a
    month reaching any later day (01-31 to 02-29 is a month, 01-31 10:00 to 03-31 09:00 one)."""
    part = _const_text(e.args[0], "DATE_SUB part")
    part = _DIFF_PARTS.get((part or "").lower(), (part or "").lower())
    per_months = {"month": 1, "quarter": 3, "year": 12, "decade": 120, "decades": 120,
                  "century": 1200, "centuries": 1200, "millennium": 12000,
                  "millennia": 12000}.get(part)
    if part not in _SUB_MICROS and per_months is None:
        raise UnsupportedError(f"DATE_SUB('{part}') is not supported")
    t = e.args[1].dtype
    if pa.types.is_time(t):
        if per_months is not None or part in ("day", "week"):
            raise UnsupportedError(f"DATE_SUB('{part}') of a TIME is not supported (a TIME "
                                   f"has no date)")
        wide = lambda x: x.cast(pa.time64("us")).cast(T.INT64)  # noqa: E731
        micros = _call("subtract", [wide(c(e.args[2])), wide(c(e.args[1]))])
        return _call("divide", [micros, scalar(_SUB_MICROS[part], T.INT64)])
    a = c.share(_as_micros(c, c(e.args[1]), t))
    b = c.share(_as_micros(c, c(e.args[2]), e.args[2].dtype))
    zoned = pa.types.is_timestamp(t) and t.tz is not None
    if zoned and part not in _EXACT_ZONED_SUB:
        # DuckDB counts a TIMESTAMPTZ's days, weeks, hours and months on its ICU calendar,
        # in milliseconds: start floored to the millisecond, end cut towards zero (0.0005 s
        # to 0.000499 s a month later is a month, and so is 23:59:59.999001 to 00:00 before
        # 1970); in the session time zone, UTC, days and hours are fixed lengths
        a = c.share(_whole_millis(c, a, floor=True))
        b = c.share(_whole_millis(c, b, floor=False))
    if per_months is None:
        micros = _call("microseconds_between", [a, b]).cast(T.INT64)
        return _call("divide", [micros, scalar(_SUB_MICROS[part], T.INT64)])  # (towards zero)
    back = c.share(_call("less", [b, a]))
    if zoned:
        # the ICU calendar steps whole months from the start either way (end day clamped
        # to the month): 1970-02-28 back to 1968-07-31 is -18 months (to 1968-08-28), where
        # a TIMESTAMP counts the months from the earlier (07-31, a month's last day, to
        # 02-28, its last day: 19)
        start, end = a, b
    else:
        start = c.share(_call("if_else", [back, b, a]))
        end = c.share(_call("if_else", [back, a, b]))

    def fields(x):
        day_start = _call("floor_temporal", [x], pc.RoundTemporalOptions(unit="day"))
        clock = _call("microseconds_between", [day_start, x])
        return (_call("year", [x]), _call("month", [x]), c.share(_call("day", [x])), clock)

    ys, ms, ds, cs = fields(start)
    ye, me, de, ce = fields(end)
    end_date = end.cast(pa.date32())
    last_day = _call("not_equal", [_call("month", [_add_days(end_date, scalar(1, T.INT64),
                                                             pa.date32())]), me])
    # on the end month's last day, a later start day counts as that day (DuckDB)
    ds = c.share(_call("if_else", [_call("and", [last_day, _call("greater", [ds, de])]), de, ds]))
    short = _call("or", [_call("less", [de, ds]),
                         _call("and", [_call("equal", [de, ds]), _call("less", [ce, cs])])])
    between = _call("add", [_call("multiply", [_call("subtract", [ye, ys]),
                                               scalar(12, T.INT64)]),
                            _call("subtract", [me, ms])])
    if zoned:  # forward: a step past the end is one short; back: one before it, one over
        over = _call("or", [_call("less", [ds, de]),
                            _call("and", [_call("equal", [de, ds]), _call("less", [cs, ce])])])
        months = _call("if_else", [back, _call("add", [between, over.cast(T.INT64)]),
                                   _call("subtract", [between, short.cast(T.INT64)])])
    else:
        months = _call("subtract", [between, short.cast(T.INT64)])
        months = _call("if_else", [back, _call("negate", [months]), months])
    out = _call("divide", [months, scalar(per_months, T.INT64)])
    # (Arrow's calendar fields wrap past year 32767: 2020 to 40000 was -330672 months)
    for x in (a, b):
        out = calendar_checked(out, T.INT64, x, pa.timestamp("us"), "DATE_SUB")
    return out


def _current_date(c, e):
    return scalar(datetime.date.today(), T.DATE)


def _current_timestamp(c, e):
    return scalar(datetime.datetime.now(), T.TIMESTAMP)


def _mean(c, e):
    """pqe_mean(sum, count): AVG from its exact integer or DECIMAL sum and its count, rounded
    once (decimals.exact_mean), NULL where the count is 0 or NULL."""
    total_t = e.args[0].dtype

    def fn(ctx, total, count):
        from . import decimals  # (it builds on this module)

        n = ctx.batch_length
        total = pa.repeat(total, n) if isinstance(total, pa.Scalar) else total
        count = pa.repeat(count, n) if isinstance(count, pa.Scalar) else count
        return decimals.exact_mean(total, None, count)

    name = _register_by_type("pqe_mean", total_t, T.FLOAT64, fn,
                             {"total": total_t, "count": T.INT64}, "AVG from SUM and COUNT")
    return _call(name, [c(e.args[0]), c(e.args[1])])


def _pi(c, e):
    import math
    return scalar(math.pi, T.FLOAT64)


# with kernels.scalars' functions (text, dates, lists, structs, hashing), added by
# pqe.kernels when the package is imported (scalars builds on this module's helpers)
_CALLS: dict[str, Callable[[Compiler, Call], E]] = {
    "add": _arith("add"), "subtract": _arith("subtract"), "multiply": _arith("multiply"),
    "divide": _divide, "modulo": _modulo, "negate": _negate,
    **{k: _compare for k in _CMP},
    "is_distinct_from": _distinct, "is_not_distinct_from": _distinct,
    "and": _short_circuit("and_kleene", False), "or": _short_circuit("or_kleene", True),
    "not": _logic("invert"),
    "is_null": lambda c, e: _call("is_null", [c(e.args[0])]),
    "is_not_null": lambda c, e: _call("is_valid", [c(e.args[0])]),
    "is_true": _is_true, "is_false": _is_false,
    "like": _like, "ilike": _like,
    "starts_with": _substring_match("starts_with"), "ends_with": _substring_match("ends_with"),
    "contains": _substring_match("match_substring"),
    "regexp_matches": _substring_match("match_substring_regex"),
    "concat": _concat, "concat_skip_nulls": _concat, "substring": _substring,
    "upper": _text_unary("utf8_upper"), "lower": _text_unary("utf8_lower"),
    "reverse": _text_unary("utf8_reverse"),
    "trim": _trim("utf8_trim"), "ltrim": _trim("utf8_ltrim"), "rtrim": _trim("utf8_rtrim"),
    "replace": _replace, "position": _position,
    "split_part": _split_part, "left": _left_right, "right": _left_right,
    "lpad": _pad, "rpad": _pad, "repeat": _repeat,
    **{f"bitwise_{op}": _bitwise(op) for op in ("and", "or", "xor", "not")},
    "isnan": lambda c, e: _call("is_nan", [c(e.args[0])]), "last_day": _last_day,
    "to_timestamp": lambda c, e: _to_timestamp(c, e),
    "make_date": lambda c, e: _call("pqe_make_date", [  # (its arguments: BIGINT)
        *(c(a) for a in e.args), c.guard if c.guard is not None else scalar(True, T.BOOLEAN)]),
    "isinf": lambda c, e: _call("is_inf", [c(e.args[0])]),
    "isfinite": lambda c, e: _call("is_finite", [c(e.args[0])]),
    "abs": _abs, "round": _round, "trunc": _trunc, "floor": _floor_ceil, "ceil": _floor_ceil, "sign": _sign,
    "sqrt": _float_unary("sqrt"), "exp": _float_unary("exp"), "ln": _float_unary("ln"),
    "log10": _float_unary("log10"), "log2": _float_unary("log2"),
    "sin": _float_unary("sin"), "cos": _float_unary("cos"), "tan": _float_unary("tan"),
    "asin": _float_unary("asin"), "acos": _float_unary("acos"), "atan": _float_unary("atan"),
    "power": _power, "atan2": lambda c, e: _call("atan2", [c(a) for a in e.args]), "pi": _pi,
    "coalesce": _coalesce, "nullif": _nullif,
    "greatest": _greatest("max_element_wise"), "least": _greatest("min_element_wise"),
    **{f"extract_{p}": _extract(p) for p in
       ("year", "quarter", "month", "week", "day", "dow", "doy", "hour", "minute", "second",
        "millisecond", "microsecond", "epoch", "isodow", "isoyear")},
    "date_trunc": _date_trunc, "date_diff": _date_diff, "date_sub": _date_sub,
    "current_date": _current_date, "current_timestamp": _current_timestamp,
    "pqe_mean": _mean,
    **{f"pqe_interval_{k}_key": (lambda k: lambda c, e: _call(f"pqe_interval_{k}_key",
                                                             [c(e.args[0])]))(k)
       for k in ("days", "rest", "total")},
    "pqe_assert_single_row": lambda c, e: _call("pqe_assert_single_row", [c(e.args[0])]),
    # -0.0 alone is 0 with 1/x below 0 (Arrow's float division gives -inf there)
    "pqe_negative_zero": lambda c, e: _call("and", [
        _call("equal", [c(e.args[0]), scalar(0.0, e.args[0].dtype)]),
        _call("less", [_call("divide", [scalar(1.0, e.args[0].dtype), c(e.args[0])]),
                       scalar(0.0, e.args[0].dtype)])]),
}


# ---- evaluation ----------------------------------------------------------------------------------


def _with_lets(table: pa.Table, stages) -> list:
    """Acero nodes: the table, then one projection per stage of lets (`Shared`) keeping
    every column before it and adding the stage's."""
    decls = [ac.Declaration("table_source", ac.TableSourceNodeOptions(table))]
    width = table.num_columns
    names = list(table.column_names)
    for stage in stages:
        keep = [field(i) for i in range(width)]
        names = names + [n for n, _ in stage]
        decls.append(ac.Declaration("project", ac.ProjectNodeOptions(
            keep + [x for _, x in stage], names)))
        width += len(stage)
    return decls


def _filtered(table: pa.Table, predicate) -> pa.Table:
    """The rows where the predicate (or each of its stages, one after the other, each on the
    rows the ones before kept) is TRUE. Each stage is evaluated to a mask by an Acero
    projection and the table filtered by it once: Acero's filter node, which copies every
    column batch by batch, took 2-4x as long (store_sales, 2.9M rows of 8 columns: 0.137 s
    against 0.046 keeping half the rows, 0.029 against 0.007 keeping 3%), and a stage that
    keeps every row copies nothing. A stage may be `Shared` (its lets computed first)."""
    if predicate is None:
        return table
    stages = predicate if isinstance(predicate, list) else [predicate]
    for p in stages:
        if table.num_rows == 0:
            return table
        lets = ()
        if isinstance(p, Shared):
            lets, p = p.stages, p.exprs
        # (a table of no column carries its rows through a projection on a stand-in column)
        source = table if table.num_columns else pa.table({"__pqe_rows": pa.nulls(
            table.num_rows, pa.null())})
        mask = ac.Declaration.from_sequence(_with_lets(source, lets) + [
            ac.Declaration("project", ac.ProjectNodeOptions([p], ["m"]))]).to_table(
                use_threads=False).column(0)
        if pa.types.is_null(mask.type):
            return table.slice(0, 0)
        kept = pc.sum(mask).as_py() or 0
        if kept == table.num_rows:
            continue
        table = table.filter(mask) if kept else table.slice(0, 0)
    return table


def project(table: pa.Table, exprs, names: list[str], predicate=None) -> pa.Table:
    """Filter (a predicate, or its stages one after the other) then project a table through
    one Acero plan. `exprs`: a list of expressions, or a `Shared` one (`Compiler.unit`)."""
    table = _filtered(table, predicate)
    lets = ()
    if isinstance(exprs, Shared):
        lets, exprs = exprs.stages, exprs.exprs
    decls = _with_lets(table, lets) + [
        ac.Declaration("project", ac.ProjectNodeOptions(exprs, names))]
    return _consistent(ac.Declaration.from_sequence(decls).to_table(use_threads=False))


def _consistent(t: pa.Table) -> pa.Table:
    """Arrow (26) can return a chunk whose type differs from its column's: the sum of two
    DECIMALs of one scale, added to a third (1.00 + x + 3.33), is declared DECIMAL(12,2) and
    computed as DECIMAL(11,2); the next operator bound to the declared type then fails ('Referenced
    field ... was decimal128(11, 2) but should have been decimal128(12, 2)', fuzz seed 201 case
    5412). Such chunks are cast to the declared type (a widening: the values are the same)."""
    cols = None
    for i, col in enumerate(t.columns):
        ftype = t.schema.field(i).type
        if any(c.type != ftype for c in col.chunks):
            cols = cols if cols is not None else list(t.columns)
            cols[i] = pa.chunked_array([c.cast(ftype) for c in col.chunks], ftype)
    return t if cols is None else pa.Table.from_arrays(cols, schema=t.schema)


def filter_table(table: pa.Table, predicate: E | list[E]) -> pa.Table:
    """The rows where the predicate (or each of its stages, one after the other) is TRUE."""
    return _filtered(table, predicate)


_ONE_ROW = pa.table({"__one": pa.array([0], pa.int8())})


def evaluate_array(e: Expr) -> pa.Array:
    """Evaluate an expression without column references to a one-element array of its type."""
    out = project(_ONE_ROW, [Compiler()(e)], ["v"]).column(0)
    return out.combine_chunks() if out.num_chunks != 1 else out.chunk(0)


def evaluate_constant(e: Expr) -> Literal:
    """Evaluate an expression without column references to a literal (constant folding).
    OverflowError when the value has no Python form (a DATE past year 9999): keep the
    expression, or use `evaluate_array`."""
    return Literal(_py(evaluate_array(e)[0]), e.dtype)


def _tuples(v):
    """Lists as tuples, recursively: a list literal's value must be hashable (plans are)."""
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def _py(s: pa.Scalar):
    if isinstance(s, pa.MonthDayNanoIntervalScalar):
        return s.value
    v = _tuples(s.as_py())
    if isinstance(v, datetime.datetime) and v.tzinfo is None:
        return v
    return v
