"""A function of the file that reads on the host the GPU value it is handed, called once per
item with the item (`[self.index_for(t) for t in timesteps]`): each call waits. The helper's
own finding names the read; the call is reported too, since that is where the fix goes (one
call for all the items). A call that passes the same value on every item, a helper that
reads only on some calls, or one that reads nothing on the host is no such wait."""

import torch


class Schedule:
    def __init__(self, steps, device):
        self.timesteps = torch.linspace(999, 0, steps, device=device)
        self.debug = False

    def index_for(self, timestep, table=None):
        if table is None:
            table = self.timesteps
        indices = (table == timestep).nonzero()  # expect: GPU001
        position = 1 if len(indices) > 1 else 0
        return indices[position].item()  # expect: GPU001

    def scaled(self, timestep):
        return timestep * 2

    def checked(self, timestep):
        if self.debug:
            print(timestep.item())
        return timestep

    def add_noise(self, samples, noise, timesteps):
        table = self.timesteps.to(samples.device)
        timesteps = timesteps.to(samples.device)
        steps = [self.index_for(t, table) for t in timesteps]  # expect: GPU001
        same = [self.index_for(timesteps[0], table) for _ in range(3)]  # must not: GPU001
        doubled = [self.scaled(t) for t in timesteps]  # must not: GPU001
        kept = [self.checked(t) for t in timesteps]  # must not: GPU001
        return samples + noise * self.timesteps[steps], same, doubled, kept
