"""A boolean mask made by a comparison (`sel = (observed > 0)`) indexes an array the code keeps
on the GPU: the gather's result has as many elements as the mask has True values, so the
host waits for the GPU to count them before it can allocate the result, every iteration.
Where the compared array comes from is not shown (an attribute another module sets, a
parameter): the wait is the same either way, since a host mask is copied to the device and
counted there. A masked arithmetic (`np.where(sel, a / b, 0)`) keeps the size fixed. A
comparison of loop counters or numbers is a Python bool (`x[i == 0]` is a view), and the
array's own device decides: a mask indexing an array of unknown device says nothing."""

import cupy as cp


class Reconstruction:
    def __init__(self, size):
        self.model = cp.zeros((size, size), dtype="f4")
        self.observed = None  # set by the file reader
        self.support = None

    def fourier_step(self, estimate):
        sel = self.observed > 0
        ratio = self.observed[sel] / self.model[sel]  # expect: GPU001
        estimate[sel] *= ratio
        return estimate

    def run(self, estimate, iterations):
        for i in range(iterations):
            estimate = self.fourier_step(estimate)
            first = self.model[i == 0]  # must not: GPU001
            inside = self.support == 1
            average = self.model[0, inside].mean()  # expect: GPU001
            self.model[0] /= average + first.sum()
        return estimate


def masked_ratios(observed, predicted, steps):
    for _ in range(steps):
        keep = observed > 0
        ratio = observed[keep] / predicted[keep]  # must not: GPU001
        predicted = predicted * ratio.mean()
    return predicted
