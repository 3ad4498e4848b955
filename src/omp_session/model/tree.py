"""The entry tree: id index, paths, children, labels and omp's ``getTree`` (spec S6, S1.6).

Works on plain per-entry lists (ids, parentIds) so a 1 GB session needs no object per entry.
Where omp's ``getTree`` would loop forever (a duplicate id that makes a node its own
descendant) we cut the cycle and report it instead of hanging.
"""

from __future__ import annotations

import math
import operator
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress
from typing import Any, Protocol

from omp_session.format.columns import FixedWidthIds
from omp_session.js.codec import UNDEFINED
from omp_session.js.date import date_parse

from .jsstring import js_string

__all__ = [
    "Tree",
    "TreeNode",
    "branch_tips",
    "build_index",
    "chained_flags",
    "js_date_ms",
    "js_key",
    "leaf_of",
    "nonlinear_entries",
    "parent_indices",
    "parent_indices_linear",
    "path_runs",
    "path_to",
]


_ZERO = re.compile(b"\x00")


class _ObjectKey:
    """Identity key: JS Maps compare objects by identity, so a parsed object id never matches."""

    __slots__ = ()


def js_key(value: Any) -> Any:
    """A dict key with JavaScript ``Map`` semantics (type-sensitive; ``1`` and ``"1"`` differ)."""
    if type(value) is str:
        return value
    if value is None or value is UNDEFINED:
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        try:
            f = float(value)
        except OverflowError:  # an int beyond a double is Infinity in JavaScript
            f = math.inf if value > 0 else -math.inf
        return ("num", 0.0 if f == 0 else f) if not math.isnan(f) else ("num", "NaN")
    return _ObjectKey()


def build_index(ids: Sequence[Any]) -> dict[Any, int]:
    """id key -> index of the *last* entry with that id (omp's Map overwrites, S1.6.1)."""
    if isinstance(ids, FixedWidthIds) or set(map(type, ids)) <= {str}:  # (a packed column: strings only)
        return dict(zip(ids, range(len(ids)), strict=True))
    return {js_key(i): n for n, i in enumerate(ids)}


def js_truthy(value: Any) -> bool:
    if value is None or value is UNDEFINED or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return not (value == 0 or (isinstance(value, float) and math.isnan(value)))
    if isinstance(value, str):
        return value != ""
    return True


def parent_indices(ids: Sequence[Any], parents: Sequence[Any], index: Callable[[], dict[Any, int]],
                   unique_strings: bool) -> array[int]:
    """For each entry, the index its parentId resolves to when walking a path, -1 for none (S6.3):
    a falsy parentId ends the path, otherwise it names the last entry with that id, if any.

    ``unique_strings``: every id is a distinct non-empty string; see :func:`parent_indices_linear`.
    """
    if unique_strings:
        return parent_indices_linear(ids, parents, chained_flags(ids, parents))[0]
    out = array("i", [-1]) * len(ids)
    table = index()
    for k, parent in enumerate(parents):
        if type(parent) is str:
            found = table.get(parent) if parent else None
        else:
            found = table.get(js_key(parent)) if js_truthy(parent) else None
        if found is not None:
            out[k] = found
    return out


def chained_flags(ids: Sequence[Any], parents: Sequence[Any]) -> bytearray:
    """1 where an entry's parentId equals the previous entry's id (the reader keeps these flags;
    this rebuilds them, e.g. after a migration rewrote the ids)."""
    return bytearray(map(operator.eq, parents, [None, *ids[:-1]]))


def parent_indices_linear(ids: Sequence[str], parents: Sequence[Any],
                          linear: bytes | bytearray) -> tuple[array[int], list[int], bool]:
    """:func:`parent_indices` and :func:`nonlinear_entries` at once for distinct non-empty string
    ids, given the reader's flags of entries whose parentId is the previous entry's id: only the
    unflagged entries (roots, branch points, chunk starts) take a Python step."""
    n = len(ids)
    out = array("i", range(-1, n - 1))
    pending = [m.start() for m in _ZERO.finditer(linear)]
    wanted = {parents[k] for k in pending if type(parents[k]) is str and parents[k]}
    where = {ids[k]: k for k in compress(range(n), map(wanted.__contains__, ids))} if wanted else {}
    nonlinear: list[int] = []
    forward = False
    for k in pending:
        p = parents[k]
        found = where.get(p, -1) if type(p) is str and p else -1
        out[k] = found
        if found != k - 1:
            nonlinear.append(k)
            if found >= k:
                forward = True
    return out, nonlinear, forward


def nonlinear_entries(parent_index: Sequence[int]) -> tuple[list[int], bool]:
    """Entries whose parent is not the entry just before them (roots, branch points), in order,
    and whether any parent comes at or after its child (then runs cannot be used)."""
    out: list[int] = []
    forward = False
    for k, p in enumerate(parent_index):
        if p != k - 1:
            out.append(k)
            if p >= k:
                forward = True
    return out, forward


def _run_first(k: int, nonlinear: list[int]) -> int:
    """The first entry of the run of consecutive entries ending at ``k`` on its path: the last
    entry at or before ``k`` whose parent is not the entry before it (0 if none)."""
    return nonlinear[bisect_right(nonlinear, k) - 1] if nonlinear and nonlinear[0] <= k else 0


def path_runs(start: int | None, parent_index: Sequence[int], nonlinear: list[int]) -> list[tuple[int, int]]:
    """The path root -> ``start`` as runs of consecutive entries ``(first, last)``, root first.

    Only valid when every parent precedes its child (see :func:`nonlinear_entries`): then a path
    is a few runs of entries each the parent of the next, and walking it costs one step per run.
    """
    runs: list[tuple[int, int]] = []
    cursor = -1 if start is None else start
    while cursor >= 0:
        first = _run_first(cursor, nonlinear)
        runs.append((first, cursor))
        cursor = parent_index[first]
    runs.reverse()
    return runs


def on_path(target: int, start: int, parent_index: Sequence[int], nonlinear: list[int]) -> bool:
    """Whether entry ``target`` is on the path root -> ``start``, as :func:`path_runs` would hold
    it (and only as valid), walked up from ``start`` a run at a time: indices fall along such a
    path, so the walk stops at the run that reaches ``target`` or passes below it."""
    cursor = start
    while cursor >= target >= 0:
        first = _run_first(cursor, nonlinear)
        if first <= target:
            return True
        cursor = parent_index[first]
    return False


def path_to(start: int | None, parent_index: Sequence[int]) -> array[int]:
    """Indices root -> ``start``; stops at a missing parent or a repeated entry (S6.3).

    Every step goes through the id index, so a repeated id is exactly a repeated index: a flag per
    entry is enough to stop on cycles.
    """
    out = array("i")  # C ints: a 300,000-entry path costs 1.2 MB, not 10
    seen = bytearray(len(parent_index))
    cursor = -1 if start is None else start
    while cursor >= 0 and not seen[cursor]:
        seen[cursor] = 1
        out.append(cursor)
        cursor = parent_index[cursor]
    out.reverse()
    return out


def js_date_ms(value: Any) -> float:
    """``new Date(value).getTime()`` for a JSON value."""
    if isinstance(value, str):
        return date_parse(value)
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        f = float(value)
        if math.isnan(f) or abs(f) > 8.64e15:
            return math.nan
        return float(math.trunc(f))
    if value is UNDEFINED:
        return math.nan
    if isinstance(value, list):
        return date_parse(js_string(value))  # String([...]) joins nested arrays; iterative at any depth
    return math.nan


def _stable_merge_sort(items: list[int], keys: dict[int, float]) -> list[int]:
    """Bottom-up merge sort taking from the left on ties or NaN, like JavaScriptCore's sort."""

    def le(a: int, b: int) -> bool:
        d = keys[a] - keys[b]
        return not d > 0  # NaN compares as "equal" (+0), so the left item goes first

    n = len(items)
    src = list(items)
    width = 1
    while width < n:
        dst: list[int] = []
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, k = lo, mid
            while i < mid and k < hi:
                if le(src[i], src[k]):
                    dst.append(src[i])
                    i += 1
                else:
                    dst.append(src[k])
                    k += 1
            dst.extend(src[i:mid])
            dst.extend(src[k:hi])
        src = dst
        width *= 2
    return src


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A view of one node of a :class:`Tree` (made on access, not stored)."""

    tree: Tree
    index: int

    # Public views return plain JSON values: an entry without an id, and a node without a label,
    # give None here, never the codec's UNDEFINED (docs/compatibility.md, "JSON out").
    @property
    def id(self) -> Any:
        ident = self.tree.ids[self.index]
        return None if ident is UNDEFINED else ident

    @property
    def entry(self) -> Any:
        return self.tree.entry(self.index)

    @property
    def label(self) -> Any:
        return self.tree.labels.get(js_key(self.tree.ids[self.index]), None)

    @property
    def children(self) -> list[TreeNode]:
        return [TreeNode(self.tree, c) for c in self.tree.child_indices(self.index)]


class Tree:
    """omp's ``getTree()``: roots in journal order, children sorted by timestamp (S6.4).

    Children are kept in one flat array (CSR) so that a session of a million entries costs a
    few arrays, not a million lists.
    """

    def __init__(self, ids: Sequence[Any], parents: Sequence[Any], index: Callable[[], dict[Any, int]],
                 timestamp_of: Callable[[int], Any], entry_of: Callable[[int], Any],
                 labels: dict[Any, Any] | Callable[[], dict[Any, Any]], unique_parents: Sequence[int] | None = None,
                 nonlinear: list[int] | None = None) -> None:
        """``labels``: the label map, or what makes it when a node's label is first asked for (a
        tree built only to find cycles reads no label entry). ``unique_parents``: the path parent
        index, when every id is a distinct non-empty string; then it is also the tree's parent
        relation (no lookups needed). ``nonlinear``: the entries whose parent is not the entry
        before them, when every parent precedes its child; then only those need any work (see
        :func:`nonlinear_entries`)."""
        self.ids = ids
        self._labels = labels
        self.entry = entry_of
        self._linear: tuple[set[int], dict[int, list[int]]] | None = None
        self.shared = False  # some node is listed twice (as a root or a child): see walk()
        self.cut = False
        n = len(ids)
        if unique_parents is not None and nonlinear is not None:
            self._build_linear(unique_parents, nonlinear, timestamp_of)
            return
        if unique_parents is not None:
            self._build_unique(unique_parents, timestamp_of)
            return
        table = index()
        unique = len(table) == n
        simple = all(type(i) is str for i in ids) and \
            all(type(p) is str or p is None or p is UNDEFINED for p in parents)
        # node of entry k: duplicate ids share the node of their last entry
        if simple:
            nodes = range(n) if unique else [table[i] for i in ids]
            parent_nodes: list[int | None] = list(map(table.get, parents))
        else:
            nodes = [table.get(js_key(i), k) for k, i in enumerate(ids)]
            parent_nodes = [None if p is None or _js_strict_equal(p, i) else table.get(js_key(p))
                            for p, i in zip(parents, ids, strict=True)]
        pk = [-1 if p is None or p == q else p for p, q in zip(parent_nodes, nodes, strict=True)]
        del parent_nodes
        order = sorted(range(n), key=pk.__getitem__)  # stable: journal order within each parent
        nroots = pk.count(-1)
        counts = Counter(pk)
        sizes = [0] * (n + 1)
        multi: list[int] = []
        for parent, c in counts.items():
            if parent >= 0:
                sizes[parent + 1] = c
                if c > 1:
                    multi.append(parent)
        self._starts = array("i", accumulate(sizes))
        del sizes, counts, pk
        if unique and simple:
            self.roots_idx = order[:nroots]
            self._items = array("i", order[nroots:])
        else:
            self.roots_idx = [nodes[k] for k in order[:nroots]]
            self._items = array("i", [nodes[k] for k in order[nroots:]])
        del order
        for parent in multi:
            lo, hi = self._starts[parent], self._starts[parent + 1]
            segment = list(self._items[lo:hi])
            keys = {c: js_date_ms(timestamp_of(c)) for c in segment}
            self._items[lo:hi] = array("i", _stable_merge_sort(segment, keys))
        # Only a duplicate id can make a node reachable from itself or list it twice (S1.6.1).
        self.cycle_nodes: list[int] = [] if unique else self._find_cycles()
        self.shared = not unique and len(set(self._items).union(self.roots_idx)) < len(self._items) + nroots

    def _build_linear(self, parents: Sequence[int], nonlinear: list[int],
                      timestamp_of: Callable[[int], Any]) -> None:
        """Entry k + 1 is the first child of entry k unless it is in ``nonlinear``; the others
        come from ``nonlinear`` alone, so building costs one step per branch point or root."""
        n = len(parents)
        breaks = set(nonlinear)
        extra: dict[int, list[int]] = {}
        roots = [0] if n and 0 not in breaks else []
        for k in nonlinear:
            p = parents[k]
            if p < 0 or p == k:
                roots.append(k)
            else:
                extra.setdefault(p, []).append(k)
        self.roots_idx = roots
        self._linear = (breaks, extra)
        self.cycle_nodes = []
        for parent, kids in extra.items():
            if parent + 1 < n and parent + 1 not in breaks:
                kids.insert(0, parent + 1)  # the linear child comes first in file order
            if len(kids) > 1:
                keys = {c: js_date_ms(timestamp_of(c)) for c in kids}
                extra[parent] = _stable_merge_sort(kids, keys)

    def _build_unique(self, parents: Sequence[int], timestamp_of: Callable[[int], Any]) -> None:
        """The common case, every id distinct: node k is entry k and ``parents`` is the relation.

        Built with C-int arrays only, so a large session's tree costs a few MB.
        """
        n = len(parents)
        counts = array("i", [0]) * (n + 1)
        roots: list[int] = []
        for k in range(n):
            p = parents[k]
            if p < 0 or p == k:
                roots.append(k)
            else:
                counts[p + 1] += 1
        starts = array("i", accumulate(counts))
        items = array("i", [0]) * starts[n]
        fill = array("i", starts)
        for k in range(n):
            p = parents[k]
            if p >= 0 and p != k:
                items[fill[p]] = k
                fill[p] += 1
        del fill
        self.roots_idx = roots
        self._starts = starts
        self._items = items
        for parent in range(n):
            lo, hi = starts[parent], starts[parent + 1]
            if hi - lo > 1:
                segment = list(items[lo:hi])
                keys = {c: js_date_ms(timestamp_of(c)) for c in segment}
                items[lo:hi] = array("i", _stable_merge_sort(segment, keys))
        self.cycle_nodes = []

    def _find_cycles(self) -> list[int]:
        """Nodes that omp's getTree() would revisit forever, found by one depth-first walk."""
        starts, items = self._starts, self._items
        found: list[int] = []
        state: dict[int, int] = {}  # 1 = on the current path, 2 = done
        stack: list[tuple[int, int]] = [(r, 0) for r in reversed(self.roots_idx)]
        while stack:
            node, phase = stack.pop()
            if phase == 1:
                state[node] = 2
                continue
            if state.get(node):
                continue
            state[node] = 1
            stack.append((node, 1))
            for c in reversed(items[starts[node]:starts[node + 1]]):
                if state.get(c) == 1:
                    found.append(c)
                elif not state.get(c):
                    stack.append((c, 0))
        return found

    @property
    def labels(self) -> dict[Any, Any]:
        if callable(self._labels):
            self._labels = self._labels()
        return self._labels

    @property
    def hangs_in_omp(self) -> bool:
        return bool(self.cycle_nodes)

    def child_indices(self, node: int) -> Sequence[int]:
        if self._linear is not None:
            breaks, extra = self._linear
            kids = extra.get(node)
            if kids is not None:
                return kids
            return (node + 1,) if node + 1 < len(self.ids) and node + 1 not in breaks else ()
        return self._items[self._starts[node]:self._starts[node + 1]]

    @property
    def roots(self) -> list[TreeNode]:
        return [TreeNode(self, r) for r in self.roots_idx]

    def __iter__(self) -> Iterator[TreeNode]:
        return iter(self.roots)

    def __len__(self) -> int:
        return len(self.roots_idx)

    def walk(self) -> Iterator[tuple[int, int]]:
        """(node index, depth) in pre-order; a node on a cycle is not entered twice.

        Duplicate ids can list one node under several parents (S1.6.1); omp's tree then holds
        its subtree under each, and so does this walk, until it has given :attr:`row_budget`
        rows. Past that a node whose subtree was already walked is given again but not entered:
        doubled edges along a chain would otherwise take 2 ** depth rows. :attr:`cut` tells
        whether that happened.
        """
        stack: list[tuple[int, int]] = [(r, 0) for r in reversed(self.roots_idx)]
        self.cut = False
        if not self.cycle_nodes and not self.shared:
            while stack:
                node, depth = stack.pop()
                yield node, depth
                stack.extend((c, depth + 1) for c in reversed(self.child_indices(node)))
            return
        # One set of the nodes on the current path, left again by a marker (~node) pushed below
        # the children: a set copied per node made a long chain under a duplicated id quadratic.
        path: set[int] = set()
        entered: set[int] = set()
        rows = 0
        budget = self.row_budget
        while stack:
            node, depth = stack.pop()
            if node < 0:
                path.discard(~node)
                continue
            yield node, depth
            rows += 1
            kids = self.child_indices(node)
            if not kids:
                continue
            if node in entered and rows > budget:
                self.cut = True
                continue
            entered.add(node)
            path.add(node)
            stack.append((~node, depth))
            stack.extend((c, depth + 1) for c in reversed(kids) if c not in path)

    def walk_chains(self) -> Iterator[tuple[Sequence[int], int, int, bool]] | None:
        """:meth:`walk` a chain at a time, for a tree without cycles or shared nodes (None
        otherwise: then only :meth:`walk` is exact). A chain is a node and its descendants while
        each has exactly one child (its last node has none or several): (the chain's nodes, the
        first's depth, the walk's position of its parent or -1, whether it is its parent's last
        child or the last root). Where each node's first child is the next entry (the common
        case, ``_linear``) a chain is a range found by two bisections, not a step per node."""
        if self.cycle_nodes or self.shared:
            return None
        return self._chains()

    def _chains(self) -> Iterator[tuple[Sequence[int], int, int, bool]]:
        kids_of = self.child_indices
        n = len(self.ids)
        if self._linear is not None:
            breaks, extra = self._linear
            stops = sorted(breaks)  # a chain ends before a node that is not its predecessor's child
            forks = sorted(extra)  # or at a node whose children are listed apart
        roots = self.roots_idx
        stack: list[tuple[int, int, int, bool]] = [(r, 0, -1, k == len(roots) - 1) for k, r in
                                                   reversed(list(enumerate(roots)))]
        at = 0
        while stack:
            node, depth, above, last = stack.pop()
            if self._linear is not None:
                end = n - 1
                i = bisect_right(stops, node)
                if i < len(stops):
                    end = stops[i] - 1
                i = bisect_left(forks, node)
                if i < len(forks) and forks[i] < end:
                    end = forks[i]
                chain: Sequence[int] = range(node, end + 1)
            else:
                steps = [node]
                kids = kids_of(node)
                while len(kids) == 1:
                    steps.append(kids[0])
                    kids = kids_of(kids[0])
                chain = steps
            yield chain, depth, above, last
            at += len(chain)
            kids = kids_of(chain[-1])
            tail = at - 1
            below = depth + len(chain)
            stack.extend((c, below, tail, k == len(kids) - 1) for k, c in reversed(list(enumerate(kids))))

    @property
    def row_budget(self) -> int:
        """The rows :meth:`walk` gives before it stops repeating shared subtrees."""
        return 4 * len(self.ids) + 100_000


def _js_strict_equal(a: Any, b: Any) -> bool:
    if type(a) is str or type(b) is str:
        return a == b and type(a) is type(b)
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return a is b


class _Branched(Protocol):
    @property
    def parent_index(self) -> Sequence[int]: ...
    def __len__(self) -> int: ...
    def get_leaf_id(self) -> Any: ...


def branch_tips(session: _Branched) -> list[int]:
    """Entries no other entry continues from (the tips of the branches), in file order."""
    continued = set(session.parent_index)
    return [k for k in range(len(session)) if k not in continued]


def leaf_of(session: _Branched, leaf: str | None) -> Any:
    """The id a view follows: ``leaf`` if given, else the session's leaf (None when none)."""
    return leaf if leaf is not None else session.get_leaf_id()
