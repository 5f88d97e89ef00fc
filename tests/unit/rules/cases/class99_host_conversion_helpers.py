"""Packages written for NumPy or CuPy arrays keep a helper of their own that brings an array
back to the host, named for it (`to_numpy(x)`, `to_cpu(x)`, `to_host(x)`): on a CuPy
array it is `cupy.asnumpy` inside, a device-to-host copy that waits for the GPU. Called on a
device value in every step of an iterative solver, it is one copy and one wait per
iteration, as `cupy.asnumpy` there would be. The helper's body is in another module, so the
copy is taken from its name: a hint, and only for values the file shows (or guesses) on the
GPU; host values, values of unknown place, and a call outside any loop are left alone.
"""

import numpy as np

from .backend import get_array_module, to_cpu, to_numpy


class Bidiagonalization:
    def setup(self, y, damp=0.0):
        self.ncp = get_array_module(y)
        self.u = y.copy()
        self.beta = self.ncp.linalg.norm(self.u)
        self.damp = damp
        self.weights = np.ones(3)
        self.scale = to_numpy(self.beta)  # must not: GPU008

    def step(self, x, Op):
        self.u = Op.matvec(x) - self.beta * self.u
        self.beta = self.ncp.linalg.norm(self.u)
        self.rho = np.hypot(to_numpy(self.beta), self.damp)  # hint: GPU008
        self.table = to_numpy(self.weights)  # must not: GPU008
        self.other = to_cpu(self.u)  # hint: GPU008
        self.given = to_numpy(x)  # must not: GPU008
        return x

    def run(self, x, Op, niter):
        for _ in range(niter):
            x = self.step(x, Op)
        return x
