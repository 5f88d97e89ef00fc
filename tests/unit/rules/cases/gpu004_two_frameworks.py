import time

import cupy as cp
import torch


def both(x, a):
    start = time.perf_counter()
    y = x @ x
    b = a @ a
    return time.perf_counter() - start  # expect: GPU004


both(torch.randn(3, device="cuda"), cp.zeros(3))
