"""A function whose returns give a GPU value on every path but one that returns a plain number
(an error code, `-1.` for an unknown option; `0.0` for an empty input) returns that GPU
value: the number marks a path that computed nothing, and names bound on several branches
hold what the others bound, as after any branch. A caller's per-iteration comparison or
formatting of the result reads it on the host. Functions whose other returns are host
values, or unknown ones, stay what they were."""

import cupy as cp


class Solver:
    def __init__(self, volume, algorithms):
        self.x = cp.asarray(volume)
        self.algorithms = algorithms

    def _step_a(self):
        diff = cp.abs(self.x) - self.x
        self.x += diff
        return cp.linalg.norm(diff) / cp.sqrt(diff.size)

    def run_iteration(self, i):
        algo = self.algorithms[i]
        if algo == "A":
            error = self._step_a()
        elif algo == "B":
            error = cp.linalg.norm(self.x)
        else:
            print("unknown algorithm", algo)
            error = -1.0
        return error

    def residual(self, y):
        if y is None:
            return 0.0
        return cp.linalg.norm(self.x - y)

    def count(self, y):
        if y is None:
            return 0
        return len(y)

    def first(self, y):
        if not y:
            return -1
        return y[0]


def reconstruct(volume, algorithms, target, items):
    solver = Solver(volume, algorithms)
    for i in range(len(algorithms)):
        error = solver.run_iteration(i)
        if error < 0:  # hint: GPU001
            break
        print("iteration %d (%e)" % (i, error))  # expect: GPU001
        if solver.residual(target) < 1e-6:  # hint: GPU001
            break
        if solver.count(items) > 3:  # must not: GPU001
            break
        if solver.first(items) > 3:  # must not: GPU001
            break
