"""Walks over sqlglot trees, as sqlglot's `Expression.find_all` / `find` / `walk` do, faster.

The binder's passes walk each query's tree a few hundred times (finding CTEs, tables,
aliases, columns, subqueries...): with sqlglot's own walk (a generator over `bfs`, itself over
a generator of each node's children) that was a fifth of all of TPC-DS's planning time. These
are one generator each, with the same order (breadth first) and the same laziness: a node's
children are read when the walk moves past it, after the caller saw it, so a caller that
changes a node it was handed sees the walk go on into the node's new children, as sqlglot's
would.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

# every node's class (sqlglot 30 puts Expression under Expr; a child that is a plain Expr
# is walked too, as sqlglot's iter_expressions walks it)
_NODE = getattr(exp, "Expr", exp.Expression)


def walk(root: exp.Expression) -> Iterator[exp.Expression]:
    """Every node under `root` (itself first), breadth first: `root.walk()`."""
    return find_all(root, _NODE)


def find_all(root: exp.Expression, *types: type) -> Iterator[exp.Expression]:
    """The nodes under `root` (itself included) of any of `types`, breadth first:
    `root.find_all(*types)`."""
    queue = [root]
    for node in queue:
        if isinstance(node, types):
            yield node
        for value in node.args.values():
            if isinstance(value, list):
                for v in value:
                    if isinstance(v, _NODE):
                        queue.append(v)
            elif isinstance(value, _NODE):
                queue.append(value)


def find(root: exp.Expression, *types: type) -> exp.Expression | None:
    """The first node of `find_all(root, *types)`, or None: `root.find(*types)`."""
    return next(find_all(root, *types), None)
