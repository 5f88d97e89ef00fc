"""A loop over indices that reads a GPU array one element at a time (`for i in range(n): …
x[i] …`) launches kernels per element, as iterating the array would. Not so where each
index runs a whole-array step (a function, a filter), where it takes a plane or a slice,
or where it only writes (reported on the write) or reads the element on the host
(reported as a sync).

"""

import cupy as cp
import torch
from scipy import signal


def rotate(rf, x):
    rf = cp.asarray(rf)
    a = cp.ones(x.shape[0])
    for m in range(rf.shape[0]):  # expect: GPU009
        phi = cp.sqrt(cp.abs(rf[m]) ** 2 + x**2)
        a = a * cp.cos(phi / 2)
    return a


def weighted_sum(rows, weights):
    xp = cp.get_array_module(rows)
    total = xp.zeros(rows.shape[1])
    for m in range(0, rows.shape[0], 1):  # hint: GPU009
        total = total + weights[m] * rows[m] * xp.conj(rows[m])
    return total


def per_plane(image):
    image = cp.asarray(image)
    out = []
    for c in range(image.shape[-1]):
        out.append(image[..., c] * 2)  # a plane per channel
    for c in range(image.shape[0]):
        out.append(signal.correlate(image[c], image[c]))  # a whole step per index
    return out


def chunks(x, n):
    x = torch.as_tensor(x).cuda()
    parts = []
    for start in range(0, x.shape[0], n):
        parts.append(x[start] * 2)  # the starts of chunks
    return parts


def on_host(x):
    x = torch.as_tensor(x).cuda()
    values = []
    for i in range(x.shape[0]):
        values.append(x[i].item())  # expect: GPU001
    return values
