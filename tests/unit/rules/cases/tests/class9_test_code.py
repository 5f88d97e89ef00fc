"""A unit test's loops run a few steps to check values, not to train: performance advice
there is noise unless the project asks for it (`[tool.gpulens] tests = true`)."""

import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda")


def test_loss_decreases():
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=1)  # must not: GPU005, GPU011
    losses = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)  # must not: GPU006
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())  # must not: GPU001
    noise = torch.randn(4, 4).to(device)  # must not: GPU003
    assert losses[-1] < losses[0]
    assert noise.shape == (4, 4)
