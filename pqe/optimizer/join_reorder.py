"""Rule: order inner joins by estimated intermediate sizes.

A tree of inner joins is flattened into its inputs and conditions. Up to DP_MAX_INPUTS inputs
linked by join keys are ordered by dynamic programming over the sets of inputs (`_dp`, as
System R and DuckDB do for small join graphs): the cheapest tree, where a tree costs the rows
its joins output plus the rows they build hash tables of, among all trees that join only
inputs linked by keys. More inputs, or inputs no keys link, are ordered greedily (`_greedy`,
Greedy Operator Ordering): the pair of inputs connected by a condition whose join is
estimated smallest is joined first, until one input remains. Inputs with no connecting
condition are joined (cross product) only when nothing connected is left, so a query never
builds a cross product while join keys exist. The larger input of each join goes left (the
probe side).

Estimates come from `pqe.plan.stats` (Parquet row counts and min/max, filter selectivity).
"""

from __future__ import annotations

from .. import types as T
from ..plan.expr import Call, ColumnRef, Expr, and_, column_ids, column_ids_all, conjuncts
from ..plan.logical import Filter, Join, LogicalPlan, Project, with_kids
from ..plan.stats import Estimator
from .extract_join_keys import _keys  # (equalities only: an OR of them is not a key, and
# its computed sides are projected by extract_join_keys itself, which runs again after)

MAX_GREEDY_INPUTS = 256
DP_MAX_INPUTS = 6  # exhaustive search up to this many inputs: 3^n splits of sets (729 at 6)
DP_MIN_INPUTS = 4  # (three inputs make three trees; greedy's first pair is rarely far off)
DP_GAIN = 1 / 3  # the search's tree replaces greedy's when estimated 3x cheaper
TIE = 0.01  # joins whose estimated outputs are this close count as equal (_greedy)


def join_reorder(plan: LogicalPlan) -> LogicalPlan:
    return _visit(plan, Estimator.shared())


def _visit(plan: LogicalPlan, est: Estimator) -> LogicalPlan:
    if isinstance(plan, Join) and plan.kind == "inner" and not plan.null_aware:
        if est.derived.get(("join_reorder:out", id(plan))) is plan:
            return plan  # ordered by this rule earlier in the run: it would give it back
        leaves: list[LogicalPlan] = []
        conds: list[Expr] = []
        _flatten(plan, leaves, conds)
        leaves = [_visit(leaf, est) for leaf in leaves]
        if len(leaves) > MAX_GREEDY_INPUTS:
            return plan.with_children(tuple(_visit(k, est) for k in plan.children()))
        new = _lift_left_joins(leaves, conds, est) or _order(leaves, conds, est)
        top = new
        while isinstance(top, (Filter, Project)):
            top = top.input
        for node in (new, top):  # (the entry keeps the node, so its id stays its own)
            est.derived[("join_reorder:out", id(node))] = node
        if new.column_ids != plan.column_ids:
            new = Project(new, tuple(ColumnRef(f) for f in plan.schema), plan.schema)
        return new
    kids = plan.children()
    if not kids:
        return plan
    return with_kids(plan, tuple(_visit(k, est) for k in kids))


def _lift_left_joins(leaves: list[LogicalPlan], conds: list[Expr], est: Estimator):
    """The join with each `A LEFT JOIN B` input whose B no inner condition reads joined last,
    after its A has met the other inputs: `(A LEFT JOIN B) JOIN C ON a = c` is `(A JOIN C ON
    a = c) LEFT JOIN B` (each row of A JOIN C finds the same B rows its A row did). When C
    filters A (a date range on a fact table) the outer join then probes far fewer rows: TPC-DS
    Q80 joined 2.9M store_sales rows to their returns before the 31-day date range kept 63k.
    None when no input is such a left join or the other inputs would not shrink its A.

    A filter over the left join is lifted with it, since a filter commutes with an inner
    join: `(A LEFT JOIN B WHERE b IS NULL) JOIN C` is `((A JOIN C) LEFT JOIN B) WHERE b IS
    NULL` (TPC-DS Q78's sales without returns: 2.9M store_sales rows probed the returns
    before the one-year date join kept 500k)."""
    read = column_ids_all(conds)
    lifted: list[tuple[Join, list[Expr]]] = []
    inner: list[LogicalPlan] = []
    for leaf in leaves:
        j, above = _left_join_under(leaf)
        if j is not None and not read & set(j.right.column_ids):
            lifted.append((j, above))
            inner.append(j.left)
        else:
            inner.append(leaf)
    if not lifted:
        return None
    plan = _order(inner, conds, est)
    if all(est.rows(plan) >= est.rows(j.left) for j, _ in lifted):
        return None
    for j, above in lifted:
        plan = Join(plan, j.right, "left", j.on, j.filter)
        for p in reversed(above):  # innermost first, as they were
            plan = Filter(plan, p)
    return plan


def _left_join_under(leaf: LogicalPlan) -> tuple[Join | None, list[Expr]]:
    """(`A LEFT JOIN B`, the predicates of the filters over it, outermost first) for an input
    that is such a join under nothing but filters, else (None, [])."""
    above: list[Expr] = []
    node = leaf
    while isinstance(node, Filter):
        above.append(node.predicate)
        node = node.input
    if isinstance(node, Join) and node.kind == "left" and not node.null_aware:
        return node, above
    return None, []


def _flatten(plan: LogicalPlan, leaves: list[LogicalPlan], conds: list[Expr]) -> None:
    if isinstance(plan, Join) and plan.kind == "inner" and not plan.null_aware:
        for a, b in plan.on:
            conds.append(Call("eq", (a, b), T.BOOLEAN, a.nullable or b.nullable))
        conds.extend(conjuncts(plan.filter))
        _flatten(plan.left, leaves, conds)
        _flatten(plan.right, leaves, conds)
    else:
        leaves.append(plan)


def _order(leaves: list[LogicalPlan], conds: list[Expr], est: Estimator) -> LogicalPlan:
    """The inputs joined by `_greedy`, or by `_dp` when there are few enough inputs, keys
    link them all, and its tree is estimated far cheaper (DP_GAIN) than greedy's.

    Both trees are costed the same way, on their own joins' estimates (`_tree_cost`). The
    margin is wide because the estimates are rough where the search looks hardest: a set
    of inputs joined by another path is estimated differently (TPC-H Q18's seven inputs:
    1,321 rows by greedy's joins, 19,044 by another order), and a small build that prunes
    its probe's row groups is not costed at all. Trees estimated 1.5-2x cheaper than
    greedy's ran 40% slower (TPC-DS Q17, Q25, Q29: greedy's tree probes store_sales with a
    build of a few thousand rows, which reads 6 of its 19 row groups)."""
    greedy = _greedy(leaves, conds, est)
    if DP_MIN_INPUTS <= len(leaves) <= DP_MAX_INPUTS:
        found = _dp(leaves, conds, est)
        if found is not None and found is not greedy:
            ids = {id(leaf) for leaf in leaves}
            if _tree_cost(found, ids, est) < DP_GAIN * _tree_cost(greedy, ids, est):
                return found
    return greedy


def _tree_cost(plan: LogicalPlan, leaves: set[int], est: Estimator) -> float:
    """The rows a tree of joins over `leaves` (by id) outputs below its top join, plus the
    rows its joins build hash tables of (each join's smaller input). The top join's output
    is every tree's same rows and left out: estimated by another path it differed 14x."""
    total = 0.0
    top = True
    stack = [plan]
    while stack:
        node = stack.pop()
        if id(node) in leaves:
            continue
        if isinstance(node, Join):
            if not top:
                total += est.rows(node)
            top = False
            total += min(est.rows(node.left), est.rows(node.right))
        stack.extend(node.children())
    return total


def _dp(leaves: list[LogicalPlan], conds: list[Expr], est: Estimator) -> LogicalPlan | None:
    """The cheapest join tree of the inputs, or None when keys do not link them all (cross
    products are `_greedy`'s to place).

    Every set of inputs that keys link is given one estimated row count, the output of the
    join of the first two of its parts found (the estimator may count one set differently by
    the joins that reach it, which is why `_order` compares the tree found with greedy's on
    each tree's own estimates), and its cheapest split into two linked
    parts: a set's cost is its rows plus its parts' costs plus the rows of the smaller part,
    the hash table built. Greedy ordering joins the smallest pair first and cannot undo it:
    TPC-H Q5 joined supplier to nation and region (one nation's 2k suppliers) and then had
    no way to filter customer by region but the last join, after 6M lineitem rows met 228k
    orders (910k rows); here customer meets nation and region first (30k customers, 45k
    orders, 182k lineitem rows), and supplier joins last on both its keys, as DuckDB's
    plan does.

    Sets are bit masks of the inputs, sorted by their places in the query (`_rank`), so the
    rule gives back its own output: ties keep the first split met."""
    leaves = sorted(leaves, key=_rank)
    n = len(leaves)
    items = [(leaf, set(leaf.column_ids), (_rank(leaf),)) for leaf in leaves]
    classes, conds = _equal_columns(leaves, conds)
    owner = {i: k for k, (_, ids, _r) in enumerate(items) for i in ids}
    refs = {id(c): column_ids(c) for c in conds}

    def mask(ids) -> int:
        m = 0
        for i in ids:
            k = owner.get(i)
            if k is not None:
                m |= 1 << k
        return m

    # the pairs of sets of inputs an equality joins by keys: (one side's inputs, the other's)
    links: list[tuple[int, int]] = []
    for c in conds:
        if isinstance(c, Call) and c.fn == "eq" and len(c.args) == 2:
            a, b = mask(column_ids(c.args[0])), mask(column_ids(c.args[1]))
            if a and b and not a & b:
                links.append((a, b))
    for members in classes:
        places = sorted({owner[c.id] for c in members})
        links.extend((1 << x, 1 << y) for k, x in enumerate(places) for y in places[k + 1:])

    def linked(s1: int, s2: int) -> bool:
        for a, b in links:
            if (a & s1 == a and b & s2 == b) or (a & s2 == a and b & s1 == b):
                return True
        return False

    built: dict[int, tuple] = {1 << k: items[k] for k in range(n)}
    rows: dict[int, float] = {1 << k: est.rows(leaves[k]) for k in range(n)}
    best: dict[int, tuple[float, int, int]] = {1 << k: (0.0, 0, 0) for k in range(n)}
    used: dict[int, list[Expr]] = {}

    def join(s1: int, s2: int):
        return _candidate(built[s1], built[s2], conds, est, refs, classes)

    full = (1 << n) - 1
    for s in range(3, full + 1):
        if s & (s - 1) == 0:
            continue  # one input
        low = s & -s
        # the splits of s into two parts, each once: the part holding s's lowest input first
        sub = (s - 1) & s
        choice = None
        while sub:
            if sub & low:
                other = s ^ sub
                if sub in best and other in best and linked(sub, other):
                    if s not in rows:
                        joined, _ = join(sub, other)
                        rows[s] = est.rows(joined)
                    cost = (rows[s] + best[sub][0] + best[other][0]
                            + min(rows[sub], rows[other]))
                    if choice is None or cost < choice[0]:
                        choice = (cost, sub, other)
            sub = (sub - 1) & s
        if choice is None:
            continue
        best[s] = choice
        # built now: the larger sets it is a part of join this set's plan
        _, a, b = choice
        joined, usable = join(a, b)
        if not joined.on:
            return None  # linked by an equality _keys did not take as a key
        built[s] = (joined, set(joined.column_ids), tuple(sorted(built[a][2] + built[b][2])))
        used[s] = usable
    if full not in best:
        return None
    taken: set[int] = set()
    stack = [full]
    while stack:
        s = stack.pop()
        if s in used:
            taken.update(id(c) for c in used[s])
            stack.extend(best[s][1:])
    plan = built[full][0]
    rest = and_([c for c in conds if id(c) not in taken])
    return Filter(plan, rest) if rest is not None else plan


def _greedy(leaves: list[LogicalPlan], conds: list[Expr], est: Estimator) -> LogicalPlan:
    """Greedy operator ordering over the join graph: only inputs linked by a condition are
    candidates (O(edges) per step, so 64-way joins plan quickly); unlinked inputs are cross
    joined, smallest first, only when nothing linked is left.

    Of joins with equal estimated outputs the one reading fewer rows goes first; remaining
    ties go by the inputs' places in the query (`_rank`), never by their places in the tree
    being reordered: the rule run on its own output must give it back, or each optimizer pass
    reorders the last one's joins again (TPC-DS Q13 swapped two 1-row joins on every pass,
    ran all four passes and stacked a projection per pass; 29 of the 99 queries did so).

    Column equalities are taken as classes of equal columns (`_equal_columns`): two inputs
    holding columns of one class are linked, and their join gets one equality per class
    they share, so `a.k = b.k AND b.k = c.k` also offers `a JOIN c` (TPC-H Q9's filtered
    part and partsupp, joined before lineitem, instead of 8M partsupp rows shuffled to meet
    lineitem's)."""
    items: list[tuple[LogicalPlan, set[str], tuple[int, ...]]] = [
        (leaf, set(leaf.column_ids), (_rank(leaf),)) for leaf in leaves]
    classes, conds = _equal_columns(leaves, conds)
    pending = list(conds)
    refs = {id(c): column_ids(c) for c in pending}  # each condition's columns, walked once
    # a pair's candidate join does not change while neither input does: built once
    memo: dict[tuple[int, int], tuple[Join, list]] = {}
    while len(items) > 1:
        owner: dict[str, int] = {}
        for k, (_, ids, _r) in enumerate(items):
            for i in ids:
                owner[i] = k
        pairs: set[tuple[int, int]] = set()
        for c in pending:
            touched = {owner[i] for i in refs[id(c)] if i in owner}
            if len(touched) == 2:
                pairs.add(tuple(sorted(touched)))
        for members in classes:
            touched = sorted({owner[c.id] for c in members})
            pairs.update((a, b) for n, a in enumerate(touched) for b in touched[n + 1:])
        scored = []
        for i, j in pairs:
            key = (id(items[i][0]), id(items[j][0]))
            if key not in memo:
                memo[key] = _candidate(items[i], items[j], pending, est, refs, classes)
            joined, used = memo[key]
            if not joined.on:
                continue
            scored.append(((est.rows(joined), est.rows(items[i][0]) + est.rows(items[j][0]),
                            *sorted((items[i][2], items[j][2]))), i, j, joined, used))
        best = None
        if scored:
            # equal outputs (within TIE: estimates of one size differ in their last digits
            # by the path that made them): the join reading fewer rows first, then the
            # query's order. TPC-DS Q25's returns met the 2.9M sales before the 1.4M catalog
            # sales, whose join was estimated 0.3 rows larger, and item (18k rows) not first
            least = min(c[0][0] for c in scored)
            best = min((c for c in scored if c[0][0] <= least * (1 + TIE)),
                       key=lambda c: c[0][1:])
        if best is None:  # nothing linked by keys: cross join the two smallest inputs
            order = sorted(range(len(items)), key=lambda k: (est.rows(items[k][0]), items[k][2]))
            i, j = sorted(order[:2])
            joined, used = _candidate(items[i], items[j], pending, est, refs, classes)
            best = (None, i, j, joined, used)
        _, i, j, joined, used = best
        pending = [c for c in pending if c not in used]
        rank = tuple(sorted(items[i][2] + items[j][2]))
        items = [it for k, it in enumerate(items) if k not in (i, j)]
        items.append((joined, set(joined.column_ids), rank))
    plan = items[0][0]
    rest = and_(pending)
    return Filter(plan, rest) if rest is not None else plan


def _rank(leaf: LogicalPlan) -> int:
    """The input's place in the query: the number of its first column id (ids are numbered
    as the binder meets the tables), the same however the joins above it are arranged."""
    best = None
    for i in leaf.column_ids:
        _, _, n = i.rpartition("#")
        if n.isdigit() and (best is None or int(n) < best):
            best = int(n)
    return best if best is not None else 1 << 62


def _equal_columns(leaves: list[LogicalPlan], conds: list[Expr]):
    """(classes, other conditions): the conditions `x = y` between columns of one type in
    two different inputs, merged into classes of columns that all hold the same value in a
    joined row, and the conditions that are not such equalities.

    Equality of columns of one type is transitive (NULL equals nothing, so a row with a NULL
    in a class fails every equality of it), so a join between any two inputs may use any
    column of a class on each side, and one equality per class shared by the two sides
    suffices once each side's own columns of that class are equal: true of a join's output
    by the same argument, and checked for the inputs (a class with two columns in one input,
    `a.x = b.k AND a.y = b.k`, would also need `a.x = a.y`: then no classes are used). Only
    when some class spans three or more inputs; otherwise every condition is kept as given
    (classes of two columns are exactly the conditions)."""
    owner = {i: n for n, leaf in enumerate(leaves) for i in leaf.column_ids}
    parent: dict[str, str] = {}
    cols: dict[str, ColumnRef] = {}

    def find(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    rest: list[Expr] = []
    for c in conds:
        if (isinstance(c, Call) and c.fn == "eq" and len(c.args) == 2
                and all(isinstance(a, ColumnRef) for a in c.args)
                and c.args[0].dtype == c.args[1].dtype
                and c.args[0].id in owner and c.args[1].id in owner
                and owner[c.args[0].id] != owner[c.args[1].id]):
            for a in c.args:
                cols.setdefault(a.id, a)
                parent.setdefault(a.id, a.id)
            parent[find(c.args[0].id)] = find(c.args[1].id)
        else:
            rest.append(c)
    groups: dict[str, list[ColumnRef]] = {}
    for i in cols:
        groups.setdefault(find(i), []).append(cols[i])
    classes = [sorted(m, key=_column_order) for m in groups.values()]
    if not any(len(m) > 2 for m in classes):
        return [], list(conds)
    for m in classes:
        places = [owner[c.id] for c in m]
        if len(set(places)) != len(places):
            return [], list(conds)
    return classes, rest


def _column_order(c: ColumnRef) -> tuple[int, str]:
    _, _, n = c.id.rpartition("#")
    return (int(n) if n.isdigit() else 1 << 62, c.id)


def _class_equalities(classes, ia: set[str], ib: set[str]) -> list[Expr]:
    """One equality per class with columns on both sides: each side's first column."""
    out: list[Expr] = []
    for members in classes:
        a = next((c for c in members if c.id in ia), None)
        b = next((c for c in members if c.id in ib), None)
        if a is not None and b is not None:
            out.append(Call("eq", (a, b), T.BOOLEAN, a.nullable or b.nullable))
    return out


def _candidate(a, b, pending, est: Estimator, refs: dict, classes=()):
    """The join of two inputs on the pending conditions linking them. Built once per optimizer
    run for the same two input nodes and conditions: the next pass's join_reorder meets the
    same inputs again, and rebuilding and re-estimating every candidate was most of its
    time (and the joins it picks are then the very nodes it picked before)."""
    (pa_, ia, ra), (pb, ib, rb) = a, b
    union = ia | ib
    usable = [c for c in pending if refs[id(c)] <= union
              and not refs[id(c)] <= ia and not refs[id(c)] <= ib]
    usable += _class_equalities(classes, ia, ib)
    key = ("join_reorder", id(pa_), id(pb), tuple(usable))
    try:
        hit = est.derived.get(key)
    except TypeError:  # a condition holding an unhashable value: built every time
        key, hit = None, None
    if hit is not None and hit[0] is pa_ and hit[1] is pb:
        return hit[2], usable
    # probe (left) = the larger estimated input; of equal ones, the one met first in the query
    left, right = (pa_, pb) if (-est.rows(pa_), ra) <= (-est.rows(pb), rb) else (pb, pa_)
    cand = Join(left, right, "inner", (), and_(usable))
    cand = _keys(cand) or cand
    if key is not None:
        est.derived[key] = (pa_, pb, cand)
    return cand, usable
