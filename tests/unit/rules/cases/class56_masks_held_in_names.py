"""A boolean mask built in one statement and used to index in another: `keep = (y >= 0) &
(y < n)` then `y[keep]`, `done = (tokens == eos) | (tokens == pad)` then `logits[~done]`.
The gather's size depends on how many elements the mask keeps, so the host waits for the GPU
to count them, as it does for `y[y >= 0]`. A name is a mask only where every assignment of
it in the function is a comparison, its negation or a combination of them: an index tensor
held in a name (`order = scores.argsort()`, a parameter such as a 0/1 `attention_mask`)
gathers without a wait. Where the function tested the mask before (`if not valid.any():
continue`) or gathered with it already (`y = y[keep]` then `pred = pred[keep]`), that earlier
read is the wait; the gather after it only counts what is already there."""

import torch

device = torch.device("cuda")


def confusion(model, loader, num_classes):
    counts = torch.zeros(num_classes * num_classes, device=device, dtype=torch.long)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        pred = model(x).argmax(dim=1)
        keep = (y >= 0) & (y < num_classes)
        y = y[keep]  # expect: GPU001
        pred = pred[keep]  # must not: GPU001
        order = pred.argsort()
        pred = pred[order]  # must not: GPU001
        counts += torch.bincount(num_classes * y + pred, minlength=num_classes**2)
    return counts


def decode(model, tokens, eos, pad, steps):
    tokens = tokens.to(device)
    for _ in range(steps):
        logits = model(tokens)[:, -1]
        done = (tokens[:, -1] == eos) | (tokens[:, -1] == pad)
        active = logits[~done, :]  # expect: GPU001
        tokens = torch.cat([tokens, active.argmax(-1, keepdim=True)], dim=1)
    return tokens


def pooled(model, batches, attention_mask):
    sums = []
    for batch in batches:
        hidden = model(batch.to(device, non_blocking=True))
        sums.append(hidden[attention_mask].sum(0))  # must not: GPU001
    return sums


def reused(model, batches):
    for batch in batches:
        scores = model(batch.to(device, non_blocking=True))
        picked = scores > 0
        picked = picked.nonzero()[:, 0]  # expect: GPU001
        scores = scores[picked]  # must not: GPU001
        scores.sum().backward()


def masked_means(model, batches):
    means = []
    for batch in batches:
        scores = model(batch.to(device, non_blocking=True))
        valid = scores > 0
        if not valid.any():  # expect: GPU001
            continue
        means.append(scores[valid].mean())  # must not: GPU001
    return means
