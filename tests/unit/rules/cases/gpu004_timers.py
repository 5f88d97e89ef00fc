import time

import torch

device = torch.device("cuda")
model = torch.nn.Linear(1024, 1024).to(device)
x = torch.randn(64, 1024, device=device)

start = time.perf_counter()
y = model(x)
elapsed = time.perf_counter() - start  # expect: GPU004

start = time.perf_counter()
y = model(x)
torch.cuda.synchronize()
elapsed = time.perf_counter() - start

t0 = time.time()
total = model(x).sum().item()
t1 = time.time()


def bench():
    begin = time.monotonic()
    for _ in range(10):
        out = x @ x
    return time.monotonic() - begin  # expect: GPU004


def host_timing(items):
    begin = time.time()
    squares = [i * i for i in items]
    return time.time() - begin


def two_intervals():
    t0 = time.perf_counter()
    a = x @ x
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    b = x @ x
    start = time.perf_counter()
    c = b @ b
    return first, time.perf_counter() - start  # expect: GPU004
