"""NumPy functions of a CuPy array run CuPy's own (CuPy arrays implement NumPy's
`__array_function__`): `np.linalg.norm(r)` of a device residual is a device scalar, and
reading it per iteration waits for the GPU. Where the array is CuPy only by a guess (code
written for NumPy or CuPy arrays) the read is a hint. NumPy's conversions (`np.asarray`)
make host arrays, and NumPy functions of host arrays stay on the host."""

import cupy as cp
import numpy as np


def solve(a, b, steps):
    x = cp.zeros_like(b)
    r = cp.asarray(b)
    costs = []
    for _ in range(steps):
        x = x + 0.1 * (a @ r)
        r = b - a @ x
        costs.append(float(np.linalg.norm(r)))  # expect: GPU001
        if np.all(r == 0):  # hint: GPU001 (a test that ends the loop)
            break
        host = np.asarray([1.0, 2.0])
        print(float(np.sum(host)))  # must not: GPU001
    return x, costs


def solve_any(op, y, steps):
    ncp = cp.get_array_module(y)
    x = ncp.zeros_like(y)
    cost = []
    for _ in range(steps):
        res = y - op @ x
        x = x + 0.5 * (op.T @ res)
        cost.append(float(0.5 * np.linalg.norm(res) ** 2))  # hint: GPU001
    return x, cost
