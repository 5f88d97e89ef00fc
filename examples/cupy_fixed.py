"""`cupy_pitfalls.py` kept on the device, timed after a synchronize."""

import time

import cupy as cp

u = cp.zeros((1024, 1024), dtype=cp.float32)
u[512, 512] = 1000.0
energy = []
start = time.perf_counter()
for _ in range(200):
    u = u + 0.1 * (cp.roll(u, 1, 0) + cp.roll(u, -1, 0) + cp.roll(u, 1, 1) + cp.roll(u, -1, 1) - 4 * u)
    energy.append(cp.sum(u**2))
cp.cuda.Device().synchronize()
elapsed = time.perf_counter() - start
peak = u.max(axis=1)
energy = cp.asnumpy(cp.stack(energy))
print(f"{elapsed * 1e3:.1f} ms, final energy {energy[-1]:.3e}, peak {float(peak.max()):.3f}")

a = cp.random.rand(4096, 4096, dtype=cp.float32)
start = time.perf_counter()
b = a @ a
cp.cuda.Device().synchronize()
print(f"matmul: {(time.perf_counter() - start) * 1e3:.2f} ms")
