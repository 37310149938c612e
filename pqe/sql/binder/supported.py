"""Refuse by default: the declared table of what the SQL front end consumes.

`CONSUMED` maps every sqlglot class the front end handles (in a SELECT, or in the expressions
of DML) to the arguments it reads, each with the values it accepts (None: any). Before
binding, `check_supported` walks the whole statement: a node of a class not in the table, or
an argument set on a node that its class does not declare, is a construct pqe has not
implemented. It is refused with an `UnsupportedError` that names it as the user wrote it (with
its line and column when sqlglot recorded them), instead of being silently ignored.

"Set" means what sqlglot fills in when the clause is written: None, False, "" and [] are the
parser's defaults for absent clauses and flags; a default the parser always fills in (such as
`Count.big_int` or `DPipe.safe`) is declared, with the reason, where pqe's own semantics
already are the ones it names.

Arguments consumed by sqlglot's `qualify` (which pqe runs before binding) count as consumed:
`*` EXCLUDE/REPLACE/RENAME, JOIN USING and NATURAL JOIN are expanded there.
"""

from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedError
from ...plan import functions as F
from ..parser import PQEDialect, node_position
from .expressions import BINARY, FUNCS
from .grouping import AGGS
from .scope import at, positioned
from .windows import WINDOW_FUNCS

ANY = None  # an argument that may take any value


def _args(*names: str, **values) -> dict[str, frozenset[str] | None]:
    """Consumed arguments: names with any value, keywords with their allowed values."""
    out: dict[str, frozenset[str] | None] = {n: ANY for n in names}
    for k, allowed in values.items():
        out[k] = frozenset(a.upper() for a in allowed)
    return out


_QUERY_TAIL = ("with_", "order", "limit", "offset")

CONSUMED: dict[type, dict[str, frozenset[str] | None]] = {
    # ---- queries ----------------------------------------------------------------------------
    exp.Select: _args("expressions", "distinct", "from_", "joins", "where", "group", "having",
                      "qualify", "windows", "sample", *_QUERY_TAIL),
    exp.Union: _args("this", "expression", "distinct", *_QUERY_TAIL),
    exp.Intersect: _args("this", "expression", "distinct", *_QUERY_TAIL),
    exp.Except: _args("this", "expression", "distinct", *_QUERY_TAIL),
    exp.Subquery: _args("this", "alias", "sample", *_QUERY_TAIL),
    exp.Values: _args("expressions", "alias", "order", "limit", "offset"),
    exp.Tuple: _args("expressions"),
    exp.With: _args("expressions", "recursive"),
    # MATERIALIZED / NOT MATERIALIZED only advise how to run a CTE; pqe binds each CTE once
    exp.CTE: _args("this", "alias", "materialized"),
    exp.TableAlias: _args("this", "columns"),
    exp.From: _args("this"),
    # SEMI / ANTI are refused by the binder with advice (use EXISTS); USING and NATURAL are
    # expanded by qualify
    exp.Join: _args("this", "on", "using", side=("LEFT", "RIGHT", "FULL"),
                    kind=("INNER", "OUTER", "CROSS", "SEMI", "ANTI"), method=("NATURAL",)),
    exp.Table: _args("this", "alias", "joins", "sample"),
    # LATERAL (subquery) in FROM: a subquery that reads the columns of the items before it
    # (not LATERAL VIEW, CROSS / OUTER APPLY or WITH ORDINALITY)
    exp.Lateral: _args("this", "alias"),
    exp.Where: _args("this"),
    exp.Having: _args("this"),
    exp.Qualify: _args("this"),
    exp.Group: _args("expressions", "all"),
    exp.Rollup: _args("expressions"),
    exp.Cube: _args("expressions"),
    exp.GroupingSets: _args("expressions"),
    # `this`: the argument of an aggregate ordered inside it (STRING_AGG(x, ',' ORDER BY y));
    # the binder refuses it elsewhere
    exp.Order: _args("this", "expressions"),
    exp.Ordered: _args("this", "desc", "nulls_first"),
    exp.Limit: _args("expression", "limit_options"),
    exp.Offset: _args("expression"),
    exp.Fetch: _args("count", "limit_options", direction=("FIRST", "NEXT")),
    exp.LimitOptions: _args("percent", "rows", "with_ties"),
    exp.TableSample: _args("method", "percent", "size", "rows", "seed"),
    exp.Distinct: _args("expressions", "on"),
    exp.Star: _args("except_", "replace", "rename"),  # expanded by qualify
    # a.b.c may be a struct field (s.x.y, t.s.x): qualify makes those Dots; a column still
    # qualified by a database afterwards is refused by the binder
    exp.Column: _args("this", "table", "db"),
    exp.Identifier: _args("this", "quoted"),
    exp.Alias: _args("this", "alias"),
    exp.Var: _args("this"),
    exp.Window: _args("this", "partition_by", "order", "spec", "alias", "over"),
    exp.WindowSpec: _args("start", "start_side", "end", "end_side",
                          kind=("ROWS", "RANGE", "GROUPS"),
                          exclude=("NO OTHERS", "CURRENT ROW", "GROUP", "TIES")),
    exp.Filter: _args("this", "expression"),
    exp.RespectNulls: _args("this"),  # the default: window functions read NULLs
    # FIRST_VALUE/LAST_VALUE/NTH_VALUE/LAG/LEAD(...) IGNORE NULLS; the window binder refuses
    # it on any other function, and no other binder accepts the node
    exp.IgnoreNulls: _args("this"),
    # ---- expressions ---------------------------------------------------------------------------
    exp.Literal: _args("this", "is_string"),
    exp.Boolean: _args("this"),
    exp.HexString: _args("this"),  # x'4142': a BLOB
    exp.Null: _args(),
    exp.Paren: _args("this"),
    exp.Neg: _args("this"),
    exp.BitwiseNot: _args("this"),
    exp.Not: _args("this"),
    exp.Is: _args("this", "expression"),
    exp.Like: _args("this", "expression", "negate"),
    exp.ILike: _args("this", "expression", "negate"),
    exp.Escape: _args("this", "expression"),
    exp.In: _args("this", "expressions", "query"),
    exp.Between: _args("this", "low", "high"),
    exp.Case: _args("this", "ifs", "default"),
    exp.If: _args("this", "true", "false"),
    exp.Cast: _args("this", "to", "safe"),
    exp.TryCast: _args("this", "to", "safe"),
    exp.Interval: _args("this", "unit", "fraction_in_string"),
    exp.Extract: _args("this", "expression"),
    exp.Substring: _args("this", "start", "length"),
    exp.Trim: _args("this", "expression", position=("BOTH", "LEADING", "TRAILING")),
    exp.DateTrunc: _args("unit", "this"),
    exp.Exists: _args("this"),
    exp.Anonymous: _args("this", "expressions"),
    # UNNEST(list) as a select item (select.py); elsewhere the binder refuses it by name
    exp.Unnest: _args("expressions"),
    exp.Any: _args("this"),
    exp.All: _args("this"),
    exp.Grouping: _args("expressions"),
    # FROM read_csv('path') / read_parquet('path'): extra arguments are refused when bound
    exp.ReadCSV: _args("this", "expressions"),
    exp.ReadParquet: _args("expressions"),
    # ---- aggregates (`this`, or DISTINCT / * in it, then `expressions`) ------------------------
    **{cls: _args(*(k for k in ("this", "expressions", *F.AGGREGATE[name].args)
                    if k in cls.arg_types)) for cls, name in AGGS.items()},
    # COUNT is always BIGINT in pqe: the parser's big_int flag says just that
    exp.Count: _args("this", "expressions", "big_int"),
    # APPROX_COUNT_DISTINCT(x): COUNT(DISTINCT x), exact (grouping.agg_call refuses accuracy)
    exp.ApproxDistinct: _args("this", "accuracy"),
    # ---- window functions (every argument is read, then checked for arity) ---------------------
    **{cls: _args(*(k for k in cls.arg_types if k != "from_first")) for cls in WINDOW_FUNCS},
}

# binary operators: both operands
for _cls in BINARY:
    CONSUMED.setdefault(_cls, _args("this", "expression"))
# functions with a fixed argument list: exactly the arguments the binder passes on
for _cls, (_fn, _keys) in FUNCS.items():
    CONSUMED.setdefault(_cls, _args(*_keys))

CONSUMED[exp.IntDiv] = _args("this", "expression")  # `//` of integers (expressions._int_div)
# flags the parser always sets, whose meaning pqe's functions already have
CONSUMED[exp.DPipe] = _args("this", "expression", "safe")  # `||`: NULL in, NULL out
CONSUMED[exp.Log] = _args("this", "expression")  # LOG(x), LOG10(x), LOG2(x), LOG(b, x)
CONSUMED[exp.Concat] = _args("expressions", "safe", "coalesce")  # concat() skips NULLs (DuckDB)
CONSUMED[exp.Coalesce] = _args("this", "expressions", "is_nvl", "is_null")  # NVL, IFNULL
CONSUMED[exp.Greatest] = _args("this", "expressions", "ignore_nulls")  # NULLs skipped (DuckDB)
CONSUMED[exp.Least] = _args("this", "expressions", "ignore_nulls")
CONSUMED[exp.Pad] = _args("this", "expression", "fill_pattern", "is_left")  # LPAD / RPAD
CONSUMED[exp.ConcatWs] = _args("expressions", "safe")  # NULL arguments skipped (DuckDB)
CONSUMED[exp.Bracket] = _args("this", "expressions")  # l[i] (1-based), s['field']
CONSUMED[exp.Dot] = _args("this", "expression")  # s.field (qualify makes it from a column)

# the functions IGNORE NULLS applies to (windows.py binds it)
_IGNORE_NULLS = frozenset({exp.FirstValue, exp.LastValue, exp.NthValue, exp.Lag, exp.Lead})

# bound by their text (pqe.types parses it): nothing inside is walked
OPAQUE: frozenset[type] = frozenset({exp.DataType})

# how constructs read when refused (a class, or a class and an argument)
_NAMES: dict = {
    exp.Unnest: "UNNEST", exp.Pivot: "PIVOT",
    exp.IgnoreNulls: "IGNORE NULLS", exp.Collate: "COLLATE", exp.AtTimeZone: "AT TIME ZONE",
    exp.Bracket: "subscripts ([...])", exp.Array: "ARRAY values", exp.Struct: "STRUCT values",
    exp.Dot: "field access (a.b.c)", exp.Lambda: "lambda functions",
    exp.Slice: "list slices (l[a:b])",
    # (DuckDB's DATE_SUB('part', start, end) is bound as a function; this is MySQL's form)
    exp.DateSub: "DATE_SUB(date, INTERVAL ...) (write date - INTERVAL ...)",
    exp.Placeholder: "parameters here", exp.Parameter: "parameters",
    exp.SimilarTo: "SIMILAR TO", exp.Glob: "GLOB", exp.Overlaps: "OVERLAPS",
    exp.BitwiseLeftShift: "<<",
    exp.BitwiseRightShift: ">>",
    (exp.Select, "kind"): "SELECT AS STRUCT/VALUE", (exp.Select, "hint"): "query hints",
    (exp.Select, "into"): "SELECT INTO", (exp.Select, "laterals"): "LATERAL VIEW",
    (exp.Select, "pivots"): "PIVOT", (exp.Select, "prewhere"): "PREWHERE",
    (exp.Select, "connect"): "CONNECT BY", (exp.Select, "distribute"): "DISTRIBUTE BY",
    (exp.Select, "sort"): "SORT BY", (exp.Select, "cluster"): "CLUSTER BY",
    (exp.Select, "locks"): "locking clauses (FOR UPDATE/SHARE)",
    (exp.Select, "settings"): "SETTINGS", (exp.Select, "format"): "FORMAT",
    (exp.Select, "options"): "OPTION (...)", (exp.Select, "for_"): "FOR XML/JSON",
    (exp.Select, "match"): "MATCH_RECOGNIZE", (exp.Select, "exclude"): "SELECT ... EXCLUDE",
    (exp.Select, "operation_modifiers"): "SELECT modifiers",
    (exp.Union, "by_name"): "UNION BY NAME", (exp.Intersect, "by_name"): "INTERSECT BY NAME",
    (exp.Except, "by_name"): "EXCEPT BY NAME",
    (exp.Ordered, "with_fill"): "ORDER BY ... WITH FILL",
    (exp.Order, "this"): "ORDER BY inside an aggregate",
    (exp.Order, "siblings"): "ORDER SIBLINGS BY",
    (exp.Between, "symmetric"): "BETWEEN SYMMETRIC",
    (exp.Limit, "expressions"): "LIMIT ... BY", (exp.Offset, "expressions"): "OFFSET ... BY",
    (exp.Star, "ilike"): "* ILIKE",
    (exp.Table, "db"): "qualified table names", (exp.Table, "catalog"): "qualified table names",
    (exp.Table, "version"): "time travel (AT / FOR SYSTEM_TIME)",
    (exp.Table, "pivots"): "PIVOT / UNPIVOT", (exp.Table, "laterals"): "LATERAL VIEW",
    (exp.Table, "hints"): "table hints", (exp.Table, "ordinality"): "WITH ORDINALITY",
    (exp.Column, "db"): "qualified column names", (exp.Column, "catalog"): "qualified column names",
    (exp.Column, "join_mark"): "(+) outer join marks",
    (exp.Cast, "format"): "CAST ... FORMAT", (exp.TryCast, "format"): "TRY_CAST ... FORMAT",
    (exp.Cast, "default"): "CAST ... DEFAULT ... ON CONVERSION ERROR",
    (exp.Window, "first"): "KEEP (DENSE_RANK FIRST/LAST)",
    (exp.NthValue, "from_first"): "NTH_VALUE ... FROM FIRST/LAST",
    (exp.Round, "truncate"): "ROUND(..., truncate)",
    (exp.StrPosition, "position"): "a start position in POSITION/STRPOS/INSTR",
    (exp.StrPosition, "occurrence"): "an occurrence in POSITION/STRPOS/INSTR",
    (exp.TableSample, "bucket_numerator"): "TABLESAMPLE BUCKET",
    (exp.In, "unnest"): "IN UNNEST", (exp.Trim, "collation"): "TRIM ... COLLATE",
    (exp.DateTrunc, "zone"): "DATE_TRUNC with a time zone",
    (exp.Join, "match_condition"): "ASOF JOIN MATCH_CONDITION",
    (exp.Join, "global_"): "GLOBAL JOIN",
    (exp.Group, "rollup"): "GROUP BY ... WITH ROLLUP", (exp.Group, "cube"): "GROUP BY ... WITH CUBE",
    (exp.Group, "grouping_sets"): "GROUP BY ... GROUPING SETS (in this form)",
    (exp.Group, "totals"): "GROUP BY ... WITH TOTALS",
}


def _is_set(value) -> bool:
    return value not in (None, False, "", [])


def _text(value) -> str:
    if isinstance(value, exp.Expression):
        try:
            return value.sql(dialect=PQEDialect)
        except Exception:  # (a node sqlglot cannot write back: SORTKEY (a) held a list)
            return value.key.upper().replace("PROPERTY", "")
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)


sql_text = _text  # (for refusals elsewhere in the front end)


def _value_key(value) -> str:
    return (value.name if isinstance(value, exp.Expression) else str(value)).upper()


def describe_node(node: exp.Expression, sql: str) -> str:
    """A construct as the user wrote it: the function's name, or the SQL text."""
    from .qualification import user_function_name

    if isinstance(node, (exp.IgnoreNulls, exp.RespectNulls)) and isinstance(node.this, exp.Func):
        inner = user_function_name(node.this, sql) or node.this.sql_name()
        return f"{_NAMES.get(type(node), 'RESPECT NULLS')} in {inner}(...)"
    name = _NAMES.get(type(node))
    if name is not None:
        return name
    if isinstance(node, exp.Func):
        fn = user_function_name(node, sql) or node.sql_name()
        kind = "aggregate function" if isinstance(node, exp.AggFunc) else "function"
        return f"{kind} {fn}"
    return _text(node)[:80]


def describe_arg(node: exp.Expression, key: str, value, what: str | None = None,
                 sql: str = "") -> str:
    """A clause or argument as the user wrote it (for refusals)."""
    if isinstance(node, exp.WindowSpec):
        if key == "exclude":
            return f"window frame EXCLUDE {_value_key(value)}"
        if key == "kind":
            return f"{_value_key(value)} window frames"
    if isinstance(node, exp.Join) and key in ("kind", "side", "method"):
        return f"{_value_key(value)} JOIN"
    if isinstance(node, exp.Order) and key == "this" and isinstance(node.parent, exp.Func):
        from .qualification import user_function_name

        fn = user_function_name(node.parent, sql) or node.parent.sql_name()
        return f"ORDER BY inside {fn}(...)"
    if isinstance(node, exp.Fetch) and key == "direction":
        return f"FETCH {_value_key(value)}"
    if isinstance(node, exp.Trim) and key == "position":
        return f"TRIM({_value_key(value)} ...)"
    name = _NAMES.get((type(node), key))
    if name is None and isinstance(node, exp.SetOperation):
        name = _NAMES.get((exp.Union, key))
    if name is not None:
        return name
    label = key.rstrip("_").upper().replace("_", " ")
    shown = _text(value)
    detail = f" ({shown[:60]})" if shown and shown not in ("True", "1") else ""
    owner = what or (describe_node(node, sql) if isinstance(node, exp.Func)
                     else node.key.upper())
    return f"{owner}: {label}{detail}"


def refusal(message: str, sql: str, *nodes: exp.Expression | None) -> UnsupportedError:
    """The refusal, positioned at the first of `nodes` (or, failing that, of the last one's
    ancestors) whose position sqlglot recorded."""
    pos = None
    if sql and nodes:
        candidates = [n for n in nodes if n is not None]
        parent = candidates[-1].parent if candidates else None
        while parent is not None and len(candidates) < len(nodes) + 4:
            candidates.append(parent)
            parent = parent.parent
        for n in candidates:
            pos = node_position(sql, n)
            if pos:
                break
    return positioned(UnsupportedError(f"{message} is not supported{at(pos)}"), pos)


def check_supported(root: exp.Expression, sql: str = "") -> None:
    """Refuse the first node (pre-order) that pqe would otherwise ignore in part or in
    whole. Iterative: a statement may be nested thousands of levels deep."""
    stack = [root]
    while stack:
        node = stack.pop()
        cls = type(node)
        if cls in OPAQUE:
            continue
        spec = CONSUMED.get(cls)
        if spec is None or (cls is exp.IgnoreNulls and type(node.this) not in _IGNORE_NULLS):
            raise refusal(describe_node(node, sql), sql, node)
        children = []
        for key, value in node.args.items():
            if not _is_set(value):
                continue
            if key not in spec:
                raise refusal(describe_arg(node, key, value, sql=sql), sql,
                              value if isinstance(value, exp.Expression) else None, node)
            allowed = spec[key]
            if allowed is not None and _value_key(value) not in allowed:
                raise refusal(describe_arg(node, key, value, sql=sql), sql, node)
            if isinstance(value, exp.Expression):
                children.append(value)
            elif isinstance(value, list):
                children += [v for v in value if isinstance(v, exp.Expression)]
        stack.extend(reversed(children))


def refuse_unknown_args(node: exp.Expression, consumed: set[str], what: str,
                        sql: str = "") -> None:
    """The same rule for one statement node (DDL, DML): an argument of `node` this front end
    does not read is a construct pqe has not implemented, and must not be silently ignored."""
    for key, value in node.args.items():
        if _is_set(value) and key not in consumed:
            raise refusal(describe_arg(node, key, value, what, sql), sql,
                          value if isinstance(value, exp.Expression) else None, node)
