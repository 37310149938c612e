"""pqe.sql.walk: the binder's tree walks give what sqlglot's own give, in the same order and
with the same laziness (a pass that rewrites a node while walking sees the new children)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from pqe.sql.parser import DIALECT
from pqe.sql.walk import find, find_all, walk

QUERIES = [
    "SELECT a, b + 1 AS c FROM t WHERE a IN (SELECT x FROM u WHERE u.y = t.b) ORDER BY 2",
    "WITH w AS (SELECT k, sum(v) AS s FROM t GROUP BY k) "
    "SELECT * FROM w JOIN (SELECT k FROM w WHERE s > 1) z USING (k) "
    "UNION ALL SELECT 1, 2 FROM (VALUES (1), (2)) v(a)",
    "SELECT CASE WHEN a > 1 THEN 'x' ELSE NULL END, row_number() OVER (PARTITION BY b "
    "ORDER BY c ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t, u WHERE EXISTS "
    "(SELECT 1 FROM v WHERE v.z = t.a) AND b BETWEEN 1 AND 3",
]


def _tree(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=DIALECT)


def test_same_nodes_in_the_same_order_as_sqlglot():
    kinds = [(exp.Column,), (exp.Select,), (exp.Table, exp.Subquery), (exp.Identifier,),
             (exp.Literal, exp.Column, exp.Alias)]
    for sql in QUERIES:
        tree = _tree(sql)
        assert [id(n) for n in walk(tree)] == [id(n) for n in tree.walk()]
        for types in kinds:
            ours = [id(n) for n in find_all(tree, *types)]
            assert ours == [id(n) for n in tree.find_all(*types)], (sql, types)
            assert ours  # (every query has some of each: the comparison means something)
            assert find(tree, *types) is tree.find(*types)
    assert find(_tree("SELECT 1"), exp.Window) is None


def test_a_node_rewritten_during_the_walk_is_walked_as_rewritten():
    # (the binder's passes replace children of the node they were handed; sqlglot's walk
    # reads a node's children after handing it out, and so must this one)
    def rewritten(finder):
        tree = _tree("SELECT f(a, b) FROM t")
        seen = []
        for node in finder(tree):
            seen.append(node.sql())
            if isinstance(node, exp.Anonymous):
                node.set("expressions", [exp.column("z"), exp.column("y")])
        return seen

    ours = rewritten(lambda t: find_all(t, exp.Column, exp.Anonymous))
    assert ours == rewritten(lambda t: t.find_all(exp.Column, exp.Anonymous))
    assert ours[-2:] == ["z", "y"]  # the new arguments, not a and b
