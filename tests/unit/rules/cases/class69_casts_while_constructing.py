"""A module's construction code (its `__init__`, or a method that only `__init__` calls, such
as `self._init_bank()` or `self.reset_parameters()`) runs before anyone moves the module: its
buffers and parameters are still in host memory, so `torch.randn(n).type_as(self.bank)` there
casts on the host and copies nothing to a GPU (and `device=self.bank.device` would only say
"cpu"). A buffer the constructor itself made on a GPU is another matter, and so is the same
cast in a method that also runs later (`forward`, or a reset called from one), where the
buffers may have been moved since."""

import torch
from torch import nn

device = torch.device("cuda")


class Bank(nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.register_buffer("bank", tensor=torch.empty(size, dim), persistent=False)
        self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))
        self.scale = torch.ones(dim).type_as(self.bank)  # must not: GPU003
        self.table = torch.zeros(size, device=device)
        self.offsets = torch.zeros(size).type_as(self.table)  # expect: GPU003
        self._init_bank(size, dim)
        self.reset_parameters()

    def _init_bank(self, size, dim):
        self.bank = torch.randn(size, dim).type_as(self.bank)  # must not: GPU003
        self.ptr = torch.zeros(1).type_as(self.ptr)  # must not: GPU003

    def reset_parameters(self):
        self.scale = torch.ones(self.scale.shape[0]).type_as(self.scale)  # must not: GPU003

    def clear(self):
        self.ptr = torch.zeros(1).type_as(self.ptr)  # expect: GPU003

    def forward(self, x):
        if x.shape[0] > self.bank.shape[0]:
            self.clear()
        return x @ self.bank.T + torch.zeros(1).type_as(x)  # expect: GPU003


class Queue(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.register_buffer("items", torch.empty(size))
        self._fill()

    def _fill(self):
        self.items = torch.rand(self.items.shape[0]).type_as(self.items)  # expect: GPU003

    def forward(self, x):
        self._fill()
        return x + self.items
