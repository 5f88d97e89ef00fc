"""`torch.tensor(values)` of a list the code filled with tensors (`values = []` …
`values.append(kl.mean())`) reads every item on the host, a copy back and a wait each, to
build the new tensor there: the same cost as `torch.tensor([a, b])` of GPU values, only the
list is built by appends instead of written out. Where the items are GPU values the file
shows, it is a warning; where they are what a loop running a backward pass computes
(reductions of a policy's outputs, whose device the file does not show), a hint. A list
of Python numbers (`losses.append(loss.item())`, or a name bound to one) costs nothing
more, and neither does `torch.stack(values)`, which keeps the items on the device."""

import torch

DEVICE = torch.device("cuda")


def epochs_with_proven_items(model, batches, optimizer, epochs, history):
    model = model.to(DEVICE)
    for _ in range(epochs):
        gaps = []
        for x, y in batches:
            out = model(x.to(DEVICE))
            loss = (out - y.to(DEVICE)).pow(2).mean()
            loss.backward()
            optimizer.step()
            gaps.append((out.detach() - 1).abs().mean())
        mean_gap = torch.tensor(gaps, device=DEVICE).mean()  # expect: GPU001
        stacked = torch.stack(gaps).mean()  # must not: GPU001
        history.append((mean_gap, stacked))


def epochs_with_guessed_items(policy, memory, optimizer, epochs, scheduler):
    for _ in range(epochs):
        divergences = []
        host_losses = []
        read = []
        for observations, old_log_prob in memory.sample():
            log_prob = policy.act(observations)["log_prob"]
            ratio = log_prob - old_log_prob
            with torch.no_grad():
                divergence = ((torch.exp(ratio) - 1) - ratio).mean()
                divergences.append(divergence)
            loss = -(ratio.exp()).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            host_losses.append(float(loss.detach().cpu()))  # hint: GPU001
            value = loss.detach().cpu().numpy()  # hint: GPU001
            read.append(value)
        kl = torch.tensor(divergences).mean()  # hint: GPU001
        mean_loss = torch.tensor(host_losses).mean()  # must not: GPU001
        mean_read = torch.tensor(read).mean()  # must not: GPU001
        scheduler.step(mean_loss, mean_read, kl)


def filled_outside_any_backward(rows, width):
    for row in rows:
        sizes = []
        for cell in row:
            sizes.append(cell.mean())
        print(torch.tensor(sizes).sum() / width)  # must not: GPU001
