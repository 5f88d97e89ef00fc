"""A branch under `step % N == 0` runs once per period, and what it reads is no per-step
cost, unless N is a small whole number: `% 2`, or `% self.policy_delay` whose default is 2
(TD3's delayed policy update) runs every other step, as good as every step. A modulus by a
number the file does not show small (`% self.log_every`, `% 100`) is a period."""

import torch

device = torch.device("cuda")


class TD3:
    def __init__(self, actor, critic, policy_delay=2, log_every=100):
        self.actor = actor.to(device)
        self.critic = critic.to(device)
        self.policy_delay = policy_delay
        self.log_every = log_every
        self.updates = 0

    def train(self, batches):
        for batch in batches:
            obs = batch.to(device)
            critic_loss = self.critic(obs).mean()
            critic_loss.backward()
            self.updates += 1
            if self.updates % self.policy_delay == 0:
                actor_loss = -self.critic(self.actor(obs)).mean()
                actor_loss.backward()
                print(actor_loss.item())  # expect: GPU001
            if not self.updates % 2:
                print(critic_loss.item())  # expect: GPU001
            if self.updates % self.log_every == 0:
                print(critic_loss.item())  # must not: GPU001
            if self.updates % 100 == 0:
                print(critic_loss.item())  # must not: GPU001
