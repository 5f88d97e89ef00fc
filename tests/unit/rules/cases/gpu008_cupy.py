import cupy as cp
import numpy as np

u = cp.zeros((512, 512))
energy = []
for step in range(100):
    u = u + 1
    energy.append(np.sum(cp.asnumpy(u) ** 2))  # expect: GPU008
    host = u.get()  # expect: GPU008
final = cp.asnumpy(u)
