"""Code written for NumPy or CuPy arrays picks its library from its inputs (`xp =
cp.get_array_module(x)`, `xp = device.xp`): what `xp` computes is on the GPU where the
inputs are, which the file does not show, so per-iteration reads and element loops are
hints. Shapes and sizes `xp` reports are host values; a class built from such arrays is an
object, not an array; a body a JIT compiles has no Python loop."""

import cupy as cp
import numba


def power_iteration(A, x, iterations):
    xp = cp.get_array_module(x)
    for _ in range(iterations):
        y = A @ x
        norm = xp.linalg.norm(y).item()  # hint: GPU001
        x = y / norm
    return x


def residuals(rows, device):
    xp = device.xp
    out = xp.zeros(len(rows))
    for i in range(len(rows)):
        out[i] = xp.linalg.norm(rows[i])  # hint: GPU009
    return out


def simulate(rf, state):
    xp = cp.get_array_module(rf)
    for t in xp.arange(rf.shape[0]):  # hint: GPU009
        state = state * xp.cos(rf[t])
    return state


def axes(x):
    xp = cp.get_array_module(x)
    sizes = []
    for axis in range(x.ndim):
        if xp.ndim(x) > 2:  # must not: GPU001
            sizes.append(xp.size(x))
    return sizes


class Reconstruction:
    def __init__(self, A, y):
        xp = cp.get_array_module(y)
        self.alg = GradientMethod(A, xp.zeros_like(y))

    def run(self):
        while not self.alg.done():  # must not: GPU001
            self.alg.update()


@numba.njit
def gather_blocks(output, data, n):
    for i in range(n):
        output[i] = data[i]  # must not: GPU009


def blocks(data, n):
    xp = cp.get_array_module(data)
    output = xp.zeros(n)
    gather_blocks(output, data, n)
    return output


class GradientMethod:
    pass
