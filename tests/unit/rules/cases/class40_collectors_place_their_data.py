"""A torchrl data collector built with `device=` (or `storing_device=`) yields its batches of
environment steps on that device: the framework placed them, as `accelerator.prepare` places
a loader's batches. A read of a reward or a count from each batch waits for the GPU once per
collected batch; a collector whose storage is the CPU yields host data."""

import torch
from torchrl.collectors import Collector, SyncDataCollector

device = torch.device("cuda")


def train(env, policy, loss_module, optimizer, frames):
    collector = Collector(env, policy, frames_per_batch=frames, device=device)
    for data in collector:
        rewards = data["next", "episode_reward"][data["next", "done"]]
        if len(rewards) > 0:
            print(rewards.mean().item())  # expect: GPU001
        loss = loss_module(data)
        loss.backward()
        optimizer.step()


def train_by_next(env, policy, iterations):
    collector = SyncDataCollector(env, policy, frames_per_batch=64, device=device)
    batches = iter(collector)
    for _ in range(iterations):
        data = next(batches)
        print(data["next", "step_count"].float().mean().item())  # expect: GPU001


def train_on_host_storage(env, policy, iterations):
    collector = Collector(env, policy, device=device, storing_device="cpu")
    for data in collector:
        print(data["next", "reward"].sum().item())  # must not: GPU001


def log_losses(loss_module, batches):
    losses = []
    for batch in batches:
        losses.append(loss_module(batch.to(device, non_blocking=True)).detach())
    mean = torch.stack(losses).float().mean()
    logged = {}
    for key, value in mean.items():  # must not: GPU009
        logged[f"train/{key}"] = value
    return logged
