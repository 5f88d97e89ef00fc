"""Syncs that stop a loop, stream its output or sit inside what the program times are
needed (or meant): at most a hint, worded for what they do. What runs once per epoch is
no per-step cost."""

import time

import torch

device = torch.device("cuda")
model = torch.nn.Linear(64, 64).to(device)


def greedy_decode(tokens, eos, max_len):
    for _ in range(max_len):
        logits = model(tokens)
        next_token = logits.argmax(-1)
        tokens = torch.cat([tokens, next_token[:, None]], dim=-1)
        if (next_token == eos).all():  # hint: GPU001
            break
    return tokens


def solve(x, tol):
    while True:
        step = model(x) - x
        x = x + 0.1 * step
        if step.abs().max().item() < tol:  # hint: GPU001
            return x


def until_done(x):
    done = model(x).sum(-1) > 0
    while not done.all():  # hint: GPU001
        x = model(x)
        done = x.sum(-1) > 0
    return x


def stream(x, steps):
    for _ in range(steps):
        x = model(x)
        yield x.argmax().item()  # hint: GPU001
        print(x.max().item(), end=" ", flush=True)  # hint: GPU001


def benchmark(x, iters):
    start = time.perf_counter()
    for _ in range(iters):
        y = model(x)
        torch.cuda.synchronize()  # must not: GPU001
        checksum = y.sum().item()  # hint: GPU001
    elapsed = time.perf_counter() - start
    return elapsed / iters, checksum


class Timer:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def timed_blocks(x):
    for _ in range(10):
        with Timer():
            y = model(x)
            torch.cuda.synchronize()  # must not: GPU001
            print(y.mean().item())  # hint: GPU001


def train(loader, optimizer, epochs):
    for epoch in range(epochs):
        epoch_loss = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
            print(loss.item())  # expect: GPU001
        print(f"epoch {epoch}: {epoch_loss.item():.3f}")  # must not: GPU001
        if epoch_loss < 1e-4:  # must not: GPU001
            break
