"""The exact one-sided Mann–Whitney test (`profiler.rank_test`) against published values, the
critical values of the standard tables, and a brute-force enumeration of every split."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from gpulens.profiler.rank_test import doubled_midranks, rank_test


def with_u(n: int, u: int) -> tuple[list[float], list[float]]:
    """Two samples of `n` distinct values each whose Mann–Whitney U (pairs where the first
    sample's value is the larger) is `u`."""
    below, left = [], u
    for _ in range(n):
        below.append(min(n, left))
        left -= below[-1]
    first = [count + 0.5 + index / 1000 for index, count in enumerate(below)]
    return first, [float(value) for value in range(1, n + 1)]


def enumerated_p(first: list[float], second: list[float]) -> tuple[Fraction, Fraction]:
    """The one-sided p-values by listing every split of the pooled values (U with ties as
    halves): the definition, independent of the counting in `rank_test`."""

    def u_of(a: list[float], b: list[float]) -> Fraction:
        return sum((Fraction(x > y) + Fraction(x == y, 2) for x in a for y in b), Fraction(0))

    pooled = [*first, *second]
    observed = u_of(first, second)
    greater = less = 0
    splits = list(itertools.combinations(range(len(pooled)), len(first)))
    for chosen in splits:
        a = [pooled[i] for i in chosen]
        b = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        u = u_of(a, b)
        greater += u >= observed
        less += u <= observed
    return Fraction(greater, len(splits)), Fraction(less, len(splits))


def test_the_published_exact_example() -> None:
    # SciPy's documented example (exact method): U = 17, two-sided p = 1/9
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    result = rank_test(males, females)
    assert result.u == 17
    assert result.p_greater == pytest.approx(7 / 126)
    assert 2 * result.p_greater == pytest.approx(1 / 9)


@pytest.mark.parametrize(("n", "floor"), [(3, 1 / 20), (5, 1 / 252), (7, 1 / 3432)])
def test_runs_that_never_overlap_give_the_smallest_p_their_number_allows(
    n: int, floor: float
) -> None:
    slow, fast = [1.0 + i for i in range(n)], [0.1 * i for i in range(n)]
    result = rank_test(slow, fast)
    assert result.u == n * n
    assert result.p_greater == pytest.approx(floor) == result.p_floor
    assert result.p_less == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("n", "alpha", "critical"),
    # the largest U still significant, from the standard tables of the Mann–Whitney U
    [
        *[(5, 0.05, 4), (5, 0.025, 2), (5, 0.01, 1)],
        *[(7, 0.05, 11), (7, 0.025, 8), (7, 0.01, 6)],
        *[(10, 0.05, 27), (10, 0.025, 23), (10, 0.01, 19)],
    ],
)
def test_the_critical_values_of_the_tables(n: int, alpha: float, critical: int) -> None:
    assert rank_test(*with_u(n, critical)).p_less <= alpha
    assert rank_test(*with_u(n, critical + 1)).p_less > alpha


def test_the_h200_runs_of_the_training_cell() -> None:
    # seven runs each of the example's cell as it was timed (profiled first runs), 2026-11:
    # 40 of the 49 pairs have the fixed run shorter; the runs' spread is ±15 %
    before = [0.3151, 0.3540, 0.3757, 0.3505, 0.3035, 0.2826, 0.3113]
    after = [0.2731, 0.3183, 0.2847, 0.3254, 0.2230, 0.2381, 0.2409]
    result = rank_test(before, after)
    assert result.u == 40
    assert result.p_greater == pytest.approx(91 / 3432)  # 0.027: faster at 0.05, not at 0.01


def test_ties_get_mid_ranks_and_the_distribution_counts_them() -> None:
    assert doubled_midranks([3.0, 1.0, 3.0, 2.0, 3.0]) == [8, 2, 8, 4, 8]
    first, second = [1.0, 2.0, 2.0, 4.0], [2.0, 3.0, 3.0]
    greater, less = enumerated_p(first, second)
    result = rank_test(first, second)
    assert result.u == 4  # 4 beats three, each 2 ties one: 3 + 2 × 0.5
    assert (result.p_greater, result.p_less) == pytest.approx((float(greater), float(less)))


def test_every_split_enumerated_agrees_on_samples_with_and_without_ties() -> None:
    pick = random.Random(14)
    for _ in range(60):
        n1, n2 = pick.randint(1, 6), pick.randint(1, 6)
        levels = pick.choice([3, 5, 1000])  # few levels: many ties
        first = [float(pick.randrange(levels)) for _ in range(n1)]
        second = [float(pick.randrange(levels)) for _ in range(n2)]
        greater, less = enumerated_p(first, second)
        result = rank_test(first, second)
        assert (result.p_greater, result.p_less) == pytest.approx((float(greater), float(less)))
        assert result.p_floor == pytest.approx(1 / math.comb(n1 + n2, n1))
        # the same test read the other way round
        mirrored = rank_test(second, first)
        assert mirrored.p_less == pytest.approx(result.p_greater)
        assert mirrored.u == n1 * n2 - result.u


def test_an_empty_sample_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        rank_test([], [1.0])
