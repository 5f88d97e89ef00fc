"""An in-place update never moves a tensor: `total += counts.to(total.device)` adds into a
tensor made on the host, and `total` stays there, so reading it (`rate.min().item()`,
`if rate.min() < low:`) costs no wait for the GPU: the one copy is the `.to(...)` of the
device counts. Only a name that held a Python number is rebound by `+=` to what it adds
(`seen = 0; seen += mask.sum()` makes `seen` a device tensor, and reading it waits; a hint
here, as the proposals come from a function the code was handed).

The same holds of a move whose result is dropped: `self.members[i].to(device)` as a statement
only does something if it moves its receiver in place, which is what a module (or an object
holding modules) does and a tensor does not. Reached through an attribute of the object, it
moves a part the object holds (an ensemble's members) once per device change, not one item of
data per pass to batch. A tensor's copy is kept (`out.append(rows[i].to(device))`), and so is
a move of each item of the object itself (`for token in self: token.to(device)`), which may
be the data it holds. Last, a factory handed its options in a mapping
(`torch.empty(n, **tkwargs)`, `tkwargs` holding `device=values.device`) may be made on the
device: where it lives is unknown, so writing device rows into it is no host write."""

import torch

device = torch.device("cuda")


def accept_reject(propose, threshold, n_conditions, wanted):
    accepted_total = torch.zeros(n_conditions)
    tried = 0
    seen = 0
    while tried < wanted:
        candidates = propose(1000).to(device)
        mask = candidates > threshold
        counts = mask.sum(dim=0)
        accepted_total += counts.to(accepted_total.device)
        tried += 1000
        seen += mask.sum()
        rate = accepted_total / tried
        lowest = rate.min().item()  # must not: GPU001
        if lowest < 1e-3:  # must not: GPU001
            worst = rate.argmin().item()  # must not: GPU001
            print(worst)
        if seen.item() > wanted:  # hint: GPU001
            break
    return accepted_total


class Ensemble:
    def __init__(self, members, weights):
        self.members = members
        self.weights = weights

    def to(self, target):
        for i in range(len(self.members)):
            self.members[i].to(target)  # must not: GPU002
        self.weights = self.weights.to(target)
        return self


def rows_to_device(rows):
    out = []
    for i in range(len(rows)):
        out.append(rows[i].to(device))  # expect: GPU002
    return out


class Tokens:
    def __init__(self, tokens):
        self.tokens = tokens

    def __iter__(self):
        return iter(self.tokens)

    def to_device(self):
        for token in self:
            token.to(device)  # expect: GPU002


def padded_rows(values, keep, n_rows):
    values = values.to(device)
    tkwargs = {"dtype": values.dtype, "device": values.device}
    longest = 8
    padded = torch.empty(n_rows, longest, values.shape[-1], **tkwargs)
    for i in range(n_rows):
        rows = values[i, :4]
        padded[i, :4] = rows  # must not: GPU001
        padded[i, 4:] = rows[-1]  # must not: GPU001
    return padded
