"""A training script whose neighbouring `utils.make_collector` keeps batches on the host."""

import torch
from utils import make_collector


def main(env, policy):
    collector = make_collector(env, policy, device=torch.device("cuda"))
    for data in collector:
        if data["next", "done"].any():  # must not: GPU001
            print(data["next", "episode_reward"].mean().item())  # must not: GPU001
