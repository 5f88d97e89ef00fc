"""A loop whose every pass is a whole-array operation (a filter per sigma, a solve per label,
a reduction per chunk) is no element-wise loop; a Python list or dict of tensors is no GPU
array; sizes and shapes are Python ints, and so is what a helper computes from `len()`."""

import cupy as cp
import torch
from cupyx.scipy import ndimage as ndi

from .filters import gaussian

device = torch.device("cuda")


def scale_space(image, sigmas):
    image = cp.asarray(image)
    cube = cp.empty(image.shape + (len(sigmas),), dtype=image.dtype)
    for i, s in enumerate(sigmas):
        cube[..., i] = gaussian(image, sigma=s)  # must not: GPU009
    planes = cp.empty((len(sigmas),) + image.shape, dtype=bool)
    for i in range(len(sigmas)):
        planes[i, ...] = ndi.binary_erosion(image > 0)  # must not: GPU009
    return cube, planes


def per_channel(image, denoise):
    image = cp.asarray(image)
    out = cp.empty_like(image)
    for c in range(image.shape[-1]):
        out[..., c] = denoise(image[..., c])  # must not: GPU009
    return out


def per_function(functions, inputs, n):
    columns = torch.zeros(n, len(functions), device=device)
    for i, function in enumerate(functions):
        columns[:, i] = function(inputs)  # must not: GPU009
    return columns


def chunked_backward(grad_out, tile_size):
    grad_out = grad_out.to(device)
    grad_bias = torch.zeros(grad_out.shape[1], device=device)
    for start in range(0, grad_out.shape[1], tile_size):
        end = start + tile_size
        tile = grad_out[:, start:end]
        grad_bias[start:end] += tile.sum(dim=0)  # must not: GPU009
    return grad_bias


def per_image(prediction, bs):
    output = [torch.zeros((0, 6), device=prediction.device)] * bs
    for xi in range(bs):
        output[xi] = prediction[xi][:10]  # must not: GPU009
    losses = {}
    for k in ("box", "cls"):
        losses[k] = prediction.sum()
    for k, v in losses.items():
        losses[k] += v  # must not: GPU009
    return output, losses


def elementwise(x):
    x = x.to(device)
    y = torch.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = torch.exp(x[i]) + 1  # expect: GPU009
    return y


def _prepare(image, output_shape):
    return image, output_shape


def resize(image, output_shape):
    image = cp.asarray(image)
    resized, output_shape = _prepare(image, output_shape)
    for axis, (old_size, new_size) in enumerate(zip(image.shape, output_shape)):
        if old_size == new_size:  # must not: GPU001
            continue
        new = new_size - 1
        if new == 0:  # must not: GPU001
            break
    return resized


def overlap_add(x, segments, step, width):
    x = cp.asarray(x)
    segments = cp.asarray(segments)
    for i in range(segments.shape[-1]):
        x[..., i * step : i * step + width] += segments[..., i]  # expect: GPU009
    return x


class Beams:
    def __init__(self, beam_size):
        self.beam_size = beam_size

    def full(self, hyps):
        lengths = [len(h) for h in hyps]
        wanted = [self.beam_size for _ in range(len(lengths))]
        return lengths == wanted

    def search(self, scores, steps):
        scores = scores.to(device)
        hyps = []
        for _ in range(steps):
            hyps.append(scores.argmax(-1))
            if self.full(hyps):  # must not: GPU001
                break
        return hyps
