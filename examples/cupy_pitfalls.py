"""A CuPy heat-diffusion loop that copies to the host every step, and times it wrong."""

import time

import cupy as cp
import numpy as np

u = cp.zeros((1024, 1024), dtype=cp.float32)
u[512, 512] = 1000.0
energy = []
start = time.perf_counter()
for step in range(200):
    u = u + 0.1 * (cp.roll(u, 1, 0) + cp.roll(u, -1, 0) + cp.roll(u, 1, 1) + cp.roll(u, -1, 1) - 4 * u)
    energy.append(np.sum(cp.asnumpy(u) ** 2))
elapsed = time.perf_counter() - start
peak = cp.zeros(1024)
for i in range(1024):
    peak[i] = u[i].max()
print(f"{elapsed * 1e3:.1f} ms, final energy {energy[-1]:.3e}, peak {float(peak.max()):.3f}")

a = cp.random.rand(4096, 4096, dtype=cp.float32)
start = time.perf_counter()
b = a @ a
print(f"matmul: {(time.perf_counter() - start) * 1e3:.2f} ms")
