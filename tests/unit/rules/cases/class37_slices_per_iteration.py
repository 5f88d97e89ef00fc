"""A loop whose index is only the start of a strided slice (`out[i::n] = parts[i]`) writes
every n-th row per iteration: n parts interleaved into one array, one strided copy each,
not one element per iteration. An index that picks one position is still an element."""

import torch

device = torch.device("cuda")


def interleave(parts):
    n = len(parts)
    rows, cols = parts[0].size()
    out = torch.zeros((rows * n, cols), device=device)
    for i in range(n):
        out[i::n] = parts[i]  # must not: GPU009
    return out


def deinterleave_columns(parts, width):
    out = torch.zeros(8, width * len(parts), device=device)
    for j, part in enumerate(parts):
        out[:, j :: len(parts)] = part  # must not: GPU009
    return out


def cumulative(values):
    out = torch.zeros(len(values), device=device)
    for i in range(1, len(values)):
        out[i] = out[i - 1] + values[i]  # expect: GPU009
    return out
