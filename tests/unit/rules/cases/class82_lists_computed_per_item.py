"""A list whose every item is what a function the code was handed computes from GPU
values (`[loss_func(est[:, p], targets) for p in perms]`, the losses of a permutation
wrapper), or what an array library makes (`[torch.count_nonzero(order == c) for c in classes]`),
holds GPU values, as one such call gives one: stacked, it is a GPU array, and a loop over
the argmin of it reads one index per batch item. The item is judged with the
comprehension's names unknown, so that a name outside it does not stand in for them; a
method or another module's function (`tokenizer.decode(ids[i])`) may make anything of GPU
values, and a function the code was handed that is given only host values says nothing."""

from itertools import permutations

import torch

DEVICE = torch.device("cuda")


def best_permutation(loss_func, est, targets):
    perms = torch.tensor(list(permutations(range(targets.shape[1]))))
    losses = torch.stack([loss_func(est[:, p], targets) for p in perms], dim=1)
    best, index = torch.min(losses, dim=1)
    return best, torch.stack([perms[i] for i in index])  # expect: GPU009


def captions(tokenizer, ids, scale):
    texts = [tokenizer.decode(ids[i]) for i in range(len(ids))]
    weights = [scale(w) for w in (0.5, 1.0)]
    # the comprehension's own `ids`, Python numbers, not the GPU ids the function was handed
    offsets = [scale(ids) for ids in (1, 2)]
    print(offsets[0])  # must not: GPU001
    for text, weight in zip(texts, weights):
        print(text, weight)  # must not: GPU001


def train(model, batches, optimizer, loss_func, tokenizer, scale, classes):
    model = model.to(DEVICE)
    for x, y in batches:
        est = model(x.to(DEVICE, non_blocking=True))
        loss, order = best_permutation(loss_func, est, y.to(DEVICE, non_blocking=True))
        loss.mean().backward()
        optimizer.step()
        counts = [torch.count_nonzero(order == c) for c in classes]
        for c, count in zip(classes, counts):
            print(c, count.item())  # expect: GPU001
        captions(tokenizer, est.argmax(-1), scale)
