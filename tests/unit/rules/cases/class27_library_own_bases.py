"""A library's own file defines the base class whose hooks its loops call once per step:
stable-baselines3's `BaseBuffer` (`add` once per environment step), skrl's `Agent`
(`record_transition` once per environment step), sigpy's `Alg` (`_update` once per solver
iteration, run by `while not alg.done(): alg.update()`). The file imports the library's
modules by their absolute name, and its classes of those names are the bases subclasses
elsewhere are known by: their hooks, and those of the subclasses beside them, run per step
on data the file does not show on a device (hints). A class of the name of a library the
file does not import (`Metric` here) is the file's own."""

from abc import ABC

import numpy as np
import torch

import sigpy as sp
from skrl import logger
from stable_baselines3.common.utils import get_device


class BaseBuffer(ABC):
    def __init__(self, buffer_size, device="auto"):
        self.buffer_size = buffer_size
        self.device = get_device(device)

    def add(self, *args, **kwargs):
        raise NotImplementedError()


class Rollouts(BaseBuffer):
    def add(self, obs, action, value, log_prob):
        self.observations[self.pos] = np.array(obs)
        self.values[self.pos] = value.clone().cpu().numpy().flatten()  # hint: GPU001
        self.log_probs[self.pos] = log_prob.clone().cpu().numpy()  # hint: GPU001
        self.pos += 1

    def summary(self, value):
        return value.cpu().numpy()  # must not: GPU001


class Agent(ABC):
    def record_transition(self, observations, actions, rewards, terminated, truncated):
        self._cumulative_rewards.add_(rewards)
        self.tracking_data["reward (max)"].append(torch.max(rewards).item())  # hint: GPU001
        logger.debug("recorded")

    def describe(self, rewards):
        return torch.max(rewards).item()  # must not: GPU001


class Alg:
    def __init__(self, max_iter):
        self.max_iter = max_iter
        self.iter = 0

    def update(self):
        self._update()
        self.iter += 1

    def _update(self):
        raise NotImplementedError


class PowerIteration(Alg):
    def __init__(self, A, x, max_iter=30):
        self.A = A
        self.x = x
        super().__init__(max_iter)

    def _update(self):
        y = self.A(self.x)
        xp = sp.get_device(y).xp
        self.max_eig = xp.linalg.norm(y).item()  # hint: GPU001
        sp.copyto(self.x, y / self.max_eig)


class Metric:
    def update(self, preds, target):
        self.correct += (preds == target).sum().item()  # must not: GPU001
