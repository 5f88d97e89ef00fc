"""Each field of a mapping, each chunk of a strided loop, each of a list written out as
`xs if many else [xs]`: distinct tensors moved once each, not one copy per sample."""

import torch

device = torch.device("cuda")


def move_fields(tokenized, modules):
    for name in tokenized:
        tokenized[name] = tokenized[name].to(device)  # must not: GPU002
    for module in modules:
        modules[module] = modules[module].to(device)  # must not: GPU002
    return tokenized


def similarity_in_chunks(queries, corpus, chunk):
    scores = []
    for i in range(0, len(queries), chunk):
        scores.append((queries[i : i + chunk] @ corpus.T).to(device))  # must not: GPU002
    return scores


def profile(inputs, ops):
    for x in inputs if isinstance(inputs, list) else [inputs]:
        x = x.to(device)  # must not: GPU002
        for m in ops if isinstance(ops, list) else [ops]:
            m = m.to(device)  # must not: GPU002
            m(x)


def per_sample(samples):
    return [torch.as_tensor(s).to(device) for s in samples]  # expect: GPU002
