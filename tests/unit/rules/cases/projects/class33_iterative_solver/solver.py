"""The solver's methods: nothing in this file calls step() or log() in a loop; the driver in
run.py does, once per iteration."""

import cupy as cp

from .operators import Operators


class Solver:
    def __init__(self, n):
        self.x = cp.zeros(n)
        self.history = []
        self.ops = Operators.from_size(n)

    def prepare(self):
        # once per trial (run.py calls it outside its loop)
        self.scale = float(cp.abs(self.x).max())  # must not: GPU001

    def step(self, i):
        update = self.ops.apply(self.x)
        self.x += update
        return cp.linalg.norm(update)

    def log(self):
        self.history.append(float(cp.abs(self.x).max()))  # expect: GPU001

    def summary(self):
        # called by nothing in the project
        return float(self.x.sum())  # must not: GPU001
