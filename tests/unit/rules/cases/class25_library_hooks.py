"""Libraries whose base classes name the methods their loops call once per step: a diffusers
scheduler's `step`/`add_noise` (once per denoising or training step, on the model's output
and the device schedule), a torchmetrics `Metric`'s `update` (once per batch), a
stable-baselines3 algorithm's `train` (once per rollout) and its buffers' `add` (once per
environment step), an skrl agent's `act`/`record_transition` (once per environment step).
The file does not show the device: what these read on the host is a hint. A method of
another name, or of a class that subclasses none of them, is the class's own."""

import torch
from diffusers import SchedulerMixin
from stable_baselines3.common.buffers import BaseBuffer
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from torchmetrics import Metric
from skrl.agents.torch import Agent


class MyScheduler(SchedulerMixin):
    def _get_variance(self, timestep, prev_timestep):
        alpha_prev = self.alphas[prev_timestep] if prev_timestep >= 0 else self.one  # hint: GPU001
        return 1 - alpha_prev

    def step(self, model_output, timestep, sample, eta=0.0):
        prev_timestep = timestep - self.num_train_timesteps // self.num_inference_steps
        if timestep > 0:  # hint: GPU001
            sample = sample + model_output
        if eta > 0:
            sample = sample * self._get_variance(timestep, prev_timestep)
        return sample

    def set_timesteps(self, num_inference_steps, device=None):
        self.timesteps = torch.arange(num_inference_steps, device=device)
        if self.timesteps[0] > 0:  # must not: GPU001
            self.timesteps = self.timesteps - 1


class RunningMean(Metric):
    def update(self, value, weight=1.0):
        if value.device.type == "mps" and torch.is_floating_point(value):  # must not: GPU001
            value = value.float()
        nans = torch.isnan(value)
        if nans.any():  # hint: GPU001
            value = value[~nans]
        self.total += value.sum()

    def compute(self):
        return self.total / self.count


class A2CLike(OnPolicyAlgorithm):
    def train(self):
        for rollout in self.rollout_buffer.get(batch_size=None):
            loss = self.policy.evaluate_actions(rollout.observations, rollout.actions)
            self.policy.optimizer.zero_grad()
            loss.backward()
            self.policy.optimizer.step()
        self.logger.record("train/loss", loss.item())  # hint: GPU001


class Rollouts(BaseBuffer):
    def add(self, obs, action, reward, value, log_prob):
        self.values[self.pos] = value.clone().cpu().numpy().flatten()  # hint: GPU001
        self.log_probs[self.pos] = log_prob.clone().cpu().numpy()  # hint: GPU001
        self.pos += 1

    def summary(self, value):
        return value.cpu().numpy()  # must not: GPU001


class MyAgent(Agent):
    def act(self, observations, states, *, timestep, timesteps):
        actions = self.policy.act(observations)
        noises = self.noise.sample(actions.shape)
        self.track_data("noise (max)", torch.max(noises).item())  # hint: GPU001
        return actions + noises

    def record_transition(self, *, observations, actions, rewards, terminated, truncated, timestep):
        if self.bootstrap and truncated.any():  # hint: GPU001
            rewards = rewards + self.discount * self.value(observations)
        self.memory.add(observations, actions, rewards, terminated, truncated)

    def describe(self, rewards):
        return torch.max(rewards).item()  # must not: GPU001


class NotAScheduler:
    def step(self, model_output, timestep, sample):
        if timestep > 0:  # must not: GPU001
            return sample
        return model_output
