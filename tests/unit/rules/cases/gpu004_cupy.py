import time

import cupy as cp

a = cp.random.rand(4096, 4096)
start = time.perf_counter()
b = a @ a
stop = time.perf_counter()  # expect: GPU004
