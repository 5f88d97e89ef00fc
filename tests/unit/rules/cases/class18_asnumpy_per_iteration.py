"""`cp.asnumpy(a)` is made for device arrays: inside a loop it is a copy and a wait per
iteration if the array is on the GPU, which a function's parameter does not show (a hint)."""

import cupy as cp


def simplify(coords, tolerance):
    stack = [(0, coords.shape[0] - 1)]
    kept = []
    while stack:
        start, end = stack.pop()
        r0, c0 = cp.asnumpy(coords[start, :])  # hint: GPU008
        r1, c1 = cp.asnumpy(coords[end, :])  # hint: GPU008
        if abs(r1 - r0) + abs(c1 - c0) > tolerance and end - start > 1:
            middle = (start + end) // 2
            stack += [(start, middle), (middle, end)]
        else:
            kept.append(start)
    return kept


def once(coords):
    return cp.asnumpy(coords)  # must not: GPU008
