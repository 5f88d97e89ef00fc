"""The walk order of a scope's functions: callers before callees, constructors before the
methods they set attributes for; the same order as the graph of function-to-function edges,
which `callers_first` does not build."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from gpulens.analysis.call_order import callers_first


def reference(
    keys: list[str],
    calls: list[frozenset[str]],
    classes: list[int | None],
    constructors: list[bool],
    entries: list[bool],
) -> list[int]:
    """The order as an explicit graph of function-to-function edges gives it."""
    count = len(keys)
    if count < 2:
        return list(range(count))
    by_key: dict[str, set[int]] = {}
    for index, key in enumerate(keys):
        by_key.setdefault(key, set()).add(index)
    callees: list[set[int]] = []
    for index in range(count):
        found: set[int] = set()
        for name in calls[index]:
            found |= by_key.get(name, set())
        found.discard(index)
        callees.append(found)
    for index in range(count):
        if classes[index] is not None and constructors[index]:
            callees[index] |= {
                j
                for j in range(count)
                if classes[j] == classes[index] and not constructors[j] and j != index
            }
    callers = [0] * count
    for found in callees:
        for callee in found:
            callers[callee] += 1
    rank = sorted(range(count), key=lambda i: (not constructors[i], not entries[i], -i))
    place = {index: r for r, index in enumerate(rank)}
    ready = [r for r, i in enumerate(rank) if callers[i] == 0]
    heapq.heapify(ready)
    done = [False] * count
    ordered: list[int] = []
    while len(ordered) < count:
        while ready and done[rank[ready[0]]]:
            heapq.heappop(ready)
        if ready:
            index = rank[heapq.heappop(ready)]
        else:
            index = next(i for i in rank if not done[i])
        done[index] = True
        ordered.append(index)
        for callee in callees[index]:
            callers[callee] -= 1
            if callers[callee] == 0 and not done[callee]:
                heapq.heappush(ready, place[callee])
    return ordered


NAMES = ["f", "g", "h", "step", "C", "__init__", "setup", "forward"]
functions = st.lists(
    st.tuples(
        st.sampled_from(NAMES),
        st.frozensets(st.sampled_from([*NAMES, "print", "torch"]), max_size=4),
        st.one_of(st.none(), st.integers(0, 2)),
        st.booleans(),
        st.booleans(),
    ),
    max_size=14,
)


@settings(max_examples=400, deadline=None)
@given(functions)
def test_the_order_is_that_of_the_function_graph(
    found: list[tuple[str, frozenset[str], int | None, bool, bool]],
) -> None:
    keys = [key for key, _, _, _, _ in found]
    calls = [called for _, called, _, _, _ in found]
    classes = [cls for _, _, cls, _, _ in found]
    constructors = [cls is not None and ctor for _, _, cls, ctor, _ in found]
    entries = [cls is not None and entry for _, _, cls, _, entry in found]
    assert callers_first(keys, calls, classes, constructors, entries) == reference(
        keys, calls, classes, constructors, entries
    )


def test_callers_come_before_callees_and_constructors_before_methods() -> None:
    keys = ["helper", "train", "C", "fit"]
    calls = [frozenset(), frozenset({"helper", "C"}), frozenset(), frozenset({"helper"})]
    classes = [None, None, "C", "C"]
    constructors = [False, False, True, False]
    order = callers_first(keys, calls, classes, constructors)
    assert order.index(1) < order.index(0)  # train before helper
    assert order.index(1) < order.index(2) < order.index(3)  # train, C.__init__, C.fit
    assert order.index(3) < order.index(0)  # fit calls helper too
