"""The exact one-sided Mann–Whitney (Wilcoxon rank-sum) test of two small samples of run times.

"Is the fixed cell faster?" asks whether its run times tend to be lower than the cell's as it
is. With a handful of runs each, an exact test is both possible and needed (the normal
approximation is poor below ~10 runs): under the hypothesis that the fix changes nothing, every
split of the pooled runs into two groups of the same sizes is equally likely, and the p-value is
the share of splits whose rank sum is at least as extreme as the one observed. Ties get their
mid-ranks and the distribution is counted with those ranks, so tied runs are handled exactly.

Pure Python (no SciPy in the profiler's dependencies): the distribution of the rank sum is
counted by dynamic programming over the pooled runs, a few milliseconds for 20 runs each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RankTest:
    """The test of `first` against `second`.

    `u`: the Mann–Whitney U of `first` (pairs where `first`'s run is the larger, ties count
    a half), from 0 to `len(first) * len(second)`; `p_greater`: the exact one-sided p-value
    for "`first`'s values tend to be larger", `p_less` for "smaller"; `p_floor`: the smallest
    p-value these sample sizes can give (1 / C(n1 + n2, n1)).
    """

    u: float
    p_greater: float
    p_less: float
    p_floor: float


def doubled_midranks(values: Sequence[float]) -> list[int]:
    """Twice each value's rank among `values` (1-based; tied values share the mean of their
    ranks), so that the mid-rank of a tie stays an integer."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + 1) + (end + 1)  # 2 × the mean of start+1..end+1
        start = end + 1
    return ranks


def rank_sum_counts(ranks: Sequence[int], size: int) -> dict[int, int]:
    """How many ways `size` of `ranks` can be chosen to give each possible sum."""
    ways: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(size)]
    for seen, rank in enumerate(ranks):
        for taken in range(min(seen + 1, size), 0, -1):  # downwards: each rank used once
            into = ways[taken]
            for total, count in ways[taken - 1].items():
                into[total + rank] = into.get(total + rank, 0) + count
    return ways[size]


def rank_test(first: Sequence[float], second: Sequence[float]) -> RankTest:
    """The exact one-sided tests of `first` against `second` (each needs a value)."""
    if not first or not second:
        raise ValueError("each sample needs at least one value")
    n1, n2 = len(first), len(second)
    ranks = doubled_midranks([*first, *second])
    observed = sum(ranks[:n1])
    counts = rank_sum_counts(ranks, n1)
    splits = math.comb(n1 + n2, n1)
    at_least = sum(count for total, count in counts.items() if total >= observed)
    at_most = sum(count for total, count in counts.items() if total <= observed)
    u = observed / 2 - n1 * (n1 + 1) / 2
    return RankTest(u, at_least / splits, at_most / splits, 1 / splits)
