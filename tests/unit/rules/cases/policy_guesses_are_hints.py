"""A finding is a warning only where the value is known to be on a GPU: what a sampler is
handed and feeds to its model is likely there (a hint), a value made on the device is
surely there (a warning)."""

import torch

device = torch.device("cuda")


def sample_euler(model, x, sigmas, s_churn=0.0):
    s_in = x.new_ones([x.shape[0]])
    for i in range(len(sigmas) - 1):
        gamma = min(s_churn, 0.5)
        if gamma > 0:  # must not: GPU001
            x = x + gamma
        denoised = model(x, sigmas[i] * s_in)
        x = x + (x - denoised) * (sigmas[i + 1] - sigmas[i])
        if sigmas[i + 1] > 0:  # hint: GPU001
            x = x + torch.randn_like(x) * sigmas[i + 1]
        noise = torch.randn(4, device=device)
        print(noise.sum().item())  # expect: GPU001
    return x
