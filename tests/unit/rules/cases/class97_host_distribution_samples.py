"""A `torch.distributions` object built from host numbers (`Beta(0.4, 0.4)`,
`Uniform(torch.tensor(lo), torch.tensor(hi))` with no device) draws its samples in host
memory, as `torch.rand(n)` would: `dist.sample(shape).to(x.device)` allocates and fills
the tensor on the host, then copies it to the GPU, each time it runs (a mixing weight per
batch in an augmentation callback). Built from parameters on the device, the distribution
samples there. The distribution may be made once in the constructor and kept on the
object (`self.mix = Beta(...)` in `__init__`, or in the `__init__` of a base class of the
file) or in the expression itself. One built from values the file does not show on the
host (a model's outputs, a parameter of unknown type), or given a device, or an object
whose `sample` is no distribution's (a replay buffer), is silent."""

import torch
from torch.distributions import Beta, Normal, Uniform


class Mixer:
    def __init__(self, alpha: float = 0.4):
        self.mix = Beta(torch.tensor(alpha), torch.tensor(alpha))


class BatchMixer(Mixer):
    def blend(self, x, y):
        lam = self.mix.sample((x.size(0),)).squeeze().to(x.device)  # expect: GPU003
        order = torch.randperm(x.size(0), device=x.device)
        return lam[:, None] * x + (1 - lam[:, None]) * x[order], y


class Jitter:
    def __init__(self, low=0.9, high=1.1, spread=None, device=None):
        self.scale = Uniform(low, high)
        self.noise = Normal(torch.zeros(3, device=device), torch.ones(3, device=device))
        self.shift = Normal(0.0, spread)

    def __call__(self, image):
        factor = self.scale.sample().to(image.device)  # expect: GPU003
        offset = self.noise.sample().to(image.device)  # must not: GPU003
        moved = self.shift.sample().to(image.device)  # must not: GPU003
        return image * factor + offset[:, None, None] + moved


def penalty(real, fake, device):
    mixing = Uniform(0.0, 1.0).sample(real.shape).to(device)  # expect: GPU003
    return mixing * real + (1 - mixing) * fake


def gaussian_noise(mean, std, device):
    noise = Normal(mean, std).sample().to(device)  # must not: GPU003
    return noise


def replay(buffer, device):
    batch = buffer.sample(256).to(device)  # must not: GPU003
    return batch
