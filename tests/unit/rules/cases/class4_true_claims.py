"""GPU003 promises no host allocation and no transfer: true for factories that take a
shape, false for `torch.tensor(data)`, which builds on the host and copies even with
`device=`."""

import torch

device = torch.device("cuda")

ids = torch.tensor([1, 2, 3]).to(device)  # must not: GPU003
table = torch.tensor([[0.5, 1.0], [1.5, 2.0]]).cuda()  # must not: GPU003  # expect: GPU007
mask = torch.as_tensor([True, False]).to(device)  # must not: GPU003
zeros = torch.zeros(2, 3).to(device)  # expect: GPU003
eye = torch.eye(4).to(device)  # expect: GPU003
