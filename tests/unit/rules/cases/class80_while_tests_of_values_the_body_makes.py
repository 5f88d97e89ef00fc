"""A `while` loop's test runs before every iteration; from the second on, it reads what the
body bound last. `norm = 0` before the loop is a Python number, but `norm = xp.linalg.norm(v)`
in the body makes it a GPU value: each later test copies it to the host and waits for the
GPU, to decide whether the loop stops (a hint: the loop cannot end without it). A rejection
draw of three numbers, or a convergence test, costs a wait per iteration; drawing on the
host, or testing every N iterations, saves them. A body that binds the name to a host
value (`.item()`, `float()`), and a test already on the GPU before the loop (reported once,
where it stands), say nothing more."""

import cupy as cp


def blur(volume, sigma, samples):
    total = cp.zeros_like(volume)
    for _ in range(samples):
        norm = 0
        while norm < 1:  # hint: GPU001
            axis = cp.random.rand(3, dtype="f4") * 2 - 1
            norm = cp.linalg.norm(axis)
        total += volume * (sigma / norm)
    return total


def relax(field, tol, steps):
    change = tol + 1
    count = 0
    while change > tol and count < steps:  # hint: GPU001
        previous = field
        field = 0.5 * (cp.roll(field, 1) + cp.roll(field, -1))
        change = cp.abs(field - previous).max()
        count += 1
    return field


def relax_on_host(field, tol):
    change = tol + 1
    while change > tol:  # must not: GPU001
        previous = field
        field = 0.5 * (cp.roll(field, 1) + cp.roll(field, -1))
        change = float(cp.abs(field - previous).max())  # expect: GPU001
    return field


def refine(field, tol):
    error = cp.abs(field).max()
    while error > tol:  # hint: GPU001
        field = field * 0.5
        error = cp.abs(field).max()
    return field


class Solver:
    def __init__(self, tol):
        self.tol = tol
        self.residual = float("inf")

    def solve(self, x, b):
        while self.residual > self.tol:  # hint: GPU001
            x = x + 0.1 * (b - x)
            self.residual = cp.linalg.norm(b - x)
        return x
