"""A per-step clock read in a loop whose step already waits for the device measures the
step: a mixed-precision `GradScaler.step` reads its found-inf flags on the host, a
`loss.item()` copies the loss back; what is queued after that wait (the optimizer's
kernels, a clamp) lands in the next step's time, so the average is right. Only a step
that never waits times its launches. A scaler made with `enabled=flag` may not wait."""

import time

import torch

device = torch.device("cuda")


def train_amp(model, loader, optimizer, steps):
    model = model.to(device)
    scaler = torch.amp.GradScaler()
    end = time.time()
    running = torch.zeros((), device=device)
    times = []
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        running = running + loss.detach()
        times.append(time.time() - end)  # must not: GPU004
        end = time.time()
    return times, running


def train_logged(model, loader, optimizer):
    model = model.to(device)
    end = time.time()
    running = torch.zeros((), device=device)
    losses, times = [], []
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        losses.append(loss.item())  # expect: GPU001
        optimizer.step()
        running = running + loss.detach()
        times.append(time.time() - end)  # must not: GPU004
        end = time.time()
    return losses, times, running


def train_flagged(model, loader, optimizer, fp16):
    model = model.to(device)
    scaler = torch.amp.GradScaler(enabled=fp16)
    end = time.time()
    running = torch.zeros((), device=device)
    times = []
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        running = running + loss.detach()
        times.append(time.time() - end)  # expect: GPU004
        end = time.time()
    return times, running


def train_unsynced(model, loader, optimizer):
    model = model.to(device)
    end = time.time()
    running = torch.zeros((), device=device)
    times = []
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        running = running + loss.detach()
        times.append(time.time() - end)  # expect: GPU004
        end = time.time()
    return times, running
