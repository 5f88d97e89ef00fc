"""A loop that runs a backward pass computes autograd tensors on the model's device, even
where the file never shows that device (a policy, a replay buffer and a model held by an
object of another file): reading one of them per iteration is a wait per step, if the
device is a GPU (a hint). Reads of host values there, and reads taken now and then, are
no such wait."""

import numpy as np
import torch
import torch.nn.functional as F


class Algorithm:
    def train(self, gradient_steps):
        losses, fractions = [], []
        for _ in range(gradient_steps):
            data = self.buffer.sample(self.batch_size)
            values, log_prob = self.policy.evaluate(data.observations)
            ratio = torch.exp(log_prob - data.old_log_prob)
            policy_loss = -torch.min(data.advantages * ratio, ratio).mean()
            losses.append(policy_loss.item())  # hint: GPU001
            fraction = torch.mean((torch.abs(ratio - 1) > 0.2).float()).item()  # hint: GPU001
            fractions.append(fraction)
            value_loss = F.mse_loss(data.returns, values)
            loss = policy_loss + value_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            width = np.mean(self.widths).item()  # must not: GPU001
            count = len(losses)  # must not: GPU001
            if count % 100 == 0:
                print(loss.item())  # must not: GPU001
        return width

    def evaluate(self, episodes):
        rewards = []
        for episode in episodes:
            rewards.append(self.run(episode).item())  # must not: GPU001
        return rewards
