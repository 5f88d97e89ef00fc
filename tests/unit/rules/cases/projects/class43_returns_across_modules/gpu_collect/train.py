"""A training script beside its own `utils.py`."""

import torch
from utils import make_collector


def main(env, policy, loss_module, optimizer):
    device = torch.device("cuda")
    collector = make_collector(env, policy, device=device)
    for data in collector:
        if data["next", "done"].any():  # expect: GPU001
            print(data["next", "episode_reward"].mean().item())  # expect: GPU001
        loss = loss_module(data)
        loss.backward()
        optimizer.step()
