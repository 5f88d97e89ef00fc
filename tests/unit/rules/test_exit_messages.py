"""A sync that decides an exit is a hint; its words say which exit. In a loop of the same
function the test decides whether the loop stops; in a function called per iteration, a
`return` or a `raise` ends the call, and the loop outside may go on (saying "the loop cannot
end without it" there misstated cuphaser's and trl's early returns). An assert stops nothing
when it holds: it is a check, which `python -O` drops."""

from __future__ import annotations

from gpulens.analysis import DEFAULT_CONFIG, Severity, analyze

SOURCE = """\
import torch

device = torch.device("cuda")


def accumulate(x):
    if torch.isnan(x).any():
        return None
    return x.sum()


def check(x):
    if torch.isinf(x).any():
        raise ValueError("inf")


def run(steps):
    x = torch.zeros(10, device=device)
    for step in range(steps):
        x = x + 1
        accumulate(x)
        check(x)
        if (x > 5).all():
            break


def advance(t, t1):
    limit = torch.tensor(100, device=device)
    n = 0
    while t < t1:
        assert n < limit, "too many steps"
        t = t + 1
        n += 1
    return t
"""


def messages() -> dict[int, tuple[Severity, str]]:
    findings = analyze(SOURCE, DEFAULT_CONFIG).findings
    return {f.span.line + 1: (f.severity, f.message) for f in findings if f.code == "GPU001"}


def test_an_exit_of_the_loop_itself_is_the_loops_stop_condition() -> None:
    severity, message = messages()[23]
    assert severity is Severity.HINT
    assert "the loop cannot end without it" in message


def test_an_early_return_or_raise_of_a_function_called_per_iteration_ends_the_call() -> None:
    found = messages()
    for line in (7, 13):
        severity, message = found[line]
        assert severity is Severity.HINT
        assert "may end the call early" in message
        assert "the loop cannot end" not in message


def test_an_assert_in_a_loop_is_a_check_not_the_loops_stop_condition() -> None:
    severity, message = messages()[31]
    assert severity is Severity.HINT
    assert "for an assert" in message and "python -O" in message
    assert "the loop cannot end" not in message
