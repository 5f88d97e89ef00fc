"""A chained comparison tests its links as Python bools: `a < b < c` is `a < b and b < c`,
so Python reads `a < b` on the host to decide whether to go on, wherever the chain stands
(bound to a name, returned, handed to a call). With GPU operands that is a wait per
evaluation, even where the result itself stays unread. Where the whole chain is itself a
test (`if a < b < c:`) that test is the one finding: the host reads it all there."""

import torch

device = torch.device("cuda")


def step_through(t0, grid, n):
    t0 = t0.to(device)
    grid = grid.to(device)
    dt = torch.full((), 0.1, device=device)
    hits = []
    for i in range(n):
        nxt = grid[i]
        on_grid = t0 < nxt < t0 + dt  # expect: GPU001
        hits.append(on_grid)
        inside = (t0 < nxt) & (nxt < t0 + dt)  # must not: GPU001
        hits.append(inside)
        if t0 < nxt <= t0 + dt:  # expect: GPU001
            t0 = nxt
        keep = [0 < i < n - 1]  # must not: GPU001
        hits.append(keep)
        t0 = t0 + dt
    return hits


def once(t0, grid):
    t0 = t0.to(device)
    grid = grid.to(device)
    return t0 < grid[0] < t0 + 1  # must not: GPU001
