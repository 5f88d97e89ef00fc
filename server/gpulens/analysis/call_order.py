"""The order a scope's functions are walked in: callers before callees.

Pure: it sees each function as the name its calls are written with, the names its text
calls, and, for a method, its class and whether it is a constructor.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from collections.abc import Hashable, Sequence


def callers_first(
    keys: Sequence[str],
    calls: Sequence[frozenset[str]],
    classes: Sequence[Hashable | None],
    constructors: Sequence[bool],
    entries: Sequence[bool] = (),
) -> list[int]:
    """The indices of the functions, each after every function that may call it: function
    ``i`` may call ``j`` when ``keys[j]`` is among ``calls[i]``, and a constructor of a class
    (``classes[i]``) calls the other methods of that class. Among the functions ready,
    constructors first, then ``entries`` (methods a framework calls, which start the calls
    within their class), then the later definition; a cycle is broken the same way.

    Time linear in the edges between names, not between functions: a file that defines the
    same name a thousand times costs as much as one that defines it once."""
    count = len(keys)
    if count < 2:
        return list(range(count))
    by_key: defaultdict[str, list[int]] = defaultdict(list)
    for index, key in enumerate(keys):
        by_key[key].append(index)
    called = [frozenset(c for c in calls[i] if c in by_key) for i in range(count)]
    # an edge i -> j: a call of j's name (not from j itself), or i constructs j's class;
    # callers of j = callers of its name, less j itself, plus constructors not already so
    name_callers: defaultdict[str, int] = defaultdict(int)
    for names in called:
        for name in names:
            name_callers[name] += 1
    methods: defaultdict[Hashable, list[int]] = defaultdict(list)
    for index in range(count):
        if classes[index] is not None and not constructors[index]:
            methods[classes[index]].append(index)
    constructed: list[list[int]] = [[] for _ in range(count)]  # edges by construction only
    constructor_callers = [0] * count
    for index in range(count):
        if classes[index] is not None and constructors[index]:
            for method in methods[classes[index]]:
                if keys[method] not in called[index]:
                    constructed[index].append(method)
                    constructor_callers[method] += 1
    done = [False] * count

    def waiting(j: int) -> int:
        own = keys[j] in called[j] and not done[j]
        return name_callers[keys[j]] - own + constructor_callers[j]

    entry = [bool(entries) and entries[i] for i in range(count)]
    rank = sorted(range(count), key=lambda i: (not constructors[i], not entry[i], -i))
    place = {index: r for r, index in enumerate(rank)}
    ready = [place[i] for i in range(count) if waiting(i) == 0]
    heapq.heapify(ready)
    ordered: list[int] = []
    cursor = 0  # rank[:cursor] are done
    while len(ordered) < count:
        while ready and done[rank[ready[0]]]:
            heapq.heappop(ready)
        if ready:
            index = rank[heapq.heappop(ready)]
        else:  # a cycle: take the most preferred of what is left
            while done[rank[cursor]]:
                cursor += 1
            index = rank[cursor]
        done[index] = True
        ordered.append(index)
        for name in called[index]:
            name_callers[name] -= 1
            # a function of that name is free once no other function left calls it
            if name_callers[name] <= 1:
                for j in by_key[name]:
                    if not done[j] and waiting(j) == 0:
                        heapq.heappush(ready, place[j])
        for j in constructed[index]:
            constructor_callers[j] -= 1
            if not done[j] and waiting(j) == 0:
                heapq.heappush(ready, place[j])
    return ordered


def held_calls_only(names: frozenset[str], text: str) -> frozenset[str]:
    """Those of ``names`` that ``text`` calls only as a method of an object the instance
    holds (`self.model.train()`, `self.a.b.eval()`): a trainer's `train()` that puts its
    model in training mode calls the model's method, not its own class's `train` nor the
    file's function of that name (a false cycle between the two hid which of them runs
    per step). The `def name(` of the function itself does not count as a call."""
    held = set()
    for name in names:
        escaped = re.escape(name)
        every = len(re.findall(rf"(?<![\w])(?<!def ){escaped}\s*\(", text))
        through = len(re.findall(rf"\bself(?:\.[A-Za-z_]\w*)+\.{escaped}\s*\(", text))
        if every and every == through:
            held.add(name)
    return frozenset(held)
