"""Helpers that turn whatever they are handed into host values: a tensor takes the
`isinstance` branch, which copies it to the host and waits for the GPU. The wait belongs to
the caller's loop, reported where the helper is called."""

import numpy as np
import torch


def to_float(x):
    if isinstance(x, torch.Tensor):
        return x.item()
    return x


def as_array(x):
    if isinstance(x, (torch.Tensor, np.ndarray)):
        return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x
    return np.asarray(x)


def first_valid(mask):
    # reads what it computes from its argument, not the argument: a caller hands it a mask
    # and gets a Python bool back; its own reads are its own
    return bool(mask.any())
