"""Operations whose result's size depends on the values of a GPU array: the host allocates
the result, so it waits for the GPU to count them. PyTorch's and CuPy's documentation say so
of `nonzero`, `argwhere`, `flatnonzero`, `where(mask)` with one argument, and
`repeat_interleave` given a tensor of repeats without `output_size`; `masked_select`,
`unique` and a gather by a boolean mask (`x[x > 0]`) size their results the same way.
`where(mask, x, 0)`, repeats by a Python int, `output_size=`, and an index tensor of
integers keep the size fixed: no wait."""

import cupy as cp
import torch

device = torch.device("cuda")


def train(model, loader, optimizer):
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        out = model(x)
        keep = (out > 0).nonzero()  # expect: GPU001
        positive = out[out > 0]  # expect: GPU001
        finite = out[torch.isfinite(out) & (out < 10)]  # expect: GPU001
        rows, cols = torch.where(out > 0)  # expect: GPU001
        clipped = torch.where(out > 0, out, 0)  # must not: GPU001
        labels = torch.unique(y)  # expect: GPU001
        counts = torch.bincount(y)
        spread = out.repeat_interleave(counts, dim=0)  # expect: GPU001
        sized = out.repeat_interleave(counts, dim=0, output_size=len(y))  # must not: GPU001
        twice = out.repeat_interleave(2, dim=0)  # must not: GPU001
        picked = out[y]  # must not: GPU001
        loss = (positive.sum() + clipped.sum() + spread.sum() + sized.sum() + twice.sum()) / 4
        loss = loss + picked.sum() + finite.sum() + keep.numel() + rows.numel() + labels.numel()
        loss.backward()
        optimizer.step()


def peaks(volume, levels):
    image = cp.asarray(volume)
    for level in levels:
        coords = cp.nonzero(image > level)  # expect: GPU001
        smooth = cp.where(image > level, image, 0)  # must not: GPU001
        yield coords, smooth


def prox(values, threshold):
    xp = cp.get_array_module(values)
    for _ in range(10):
        indices = xp.where(abs(values) > threshold)  # hint: GPU001
        values[indices] = threshold
    return values
