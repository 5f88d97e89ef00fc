"""`index in chosen` with a device scalar and a Python list runs `index == item` for the
items in turn and reads each answer as a bool: one wait for the GPU per item compared, every
time the test runs. Greedy selections keep the chosen positions in a list and test the new
one against it once per iteration. A set or a dict looks the value up by its hash (no
comparison to read), so only lists and tuples count, and not lists of strings (an array and
a string are simply unequal); a host index, or a test outside any loop, costs nothing of the
kind.
"""

import torch

from .backend import get_array_module


def greedy_pick(scores, steps):
    scores = scores.cuda()
    chosen = []
    seen = set()
    for _ in range(steps):
        best = torch.argmax(scores)
        if best not in chosen:  # expect: GPU001
            chosen.append(int(best))  # expect: GPU001
        if best in seen:  # must not: GPU001
            break
        if best in (0, 1):  # expect: GPU001
            scores[best] = 0
        if best in ["first", "last"]:  # must not: GPU001
            continue
        host_best = int(best)  # expect: GPU001
        if host_best in chosen:  # must not: GPU001
            continue
    return chosen


class Pursuit:
    def setup(self, y):
        self.ncp = get_array_module(y)
        self.res = y.copy()

    def step(self, cols):
        cres = self.ncp.abs(self.res)
        imax = self.ncp.argmax(cres)
        if imax not in cols:  # hint: GPU001
            cols.append(int(imax))  # hint: GPU001
        return cols

    def run(self, niter):
        cols = []
        for _ in range(niter):
            cols = self.step(cols)
        return cols


def once(scores, chosen):
    best = torch.argmax(scores.cuda())
    return best in chosen  # must not: GPU001
