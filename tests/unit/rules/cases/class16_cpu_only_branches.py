"""Code that branches on where the data is (`if x.device.type in ("cuda", "npu"): … else:`,
`x.device.type == "cpu" and x.any()`) reads values on the host only in the CPU branch: no
wait for a GPU there."""

import torch

device = torch.device("cuda")


def communities(embeddings, threshold, batch_size):
    embeddings = embeddings.to(device)
    found = []
    for start in range(0, len(embeddings), batch_size):
        scores = embeddings[start : start + batch_size] @ embeddings.T
        if embeddings.device.type in ["cuda", "npu"]:
            found.append((scores >= threshold).sum(1))
        else:
            top, _ = scores.topk(k=10, largest=True)
            for i in range(len(top)):
                if top[i][-1] >= threshold:  # must not: GPU001
                    found.append(i)
    return found


def score(queries, docs):
    queries, docs = queries.to(device), docs.to(device)
    results = []
    for q in queries.unbind(0):  # expect: GPU009
        empty = (docs == 0).all(-1)
        if empty.device.type == "cpu" and empty.any():  # must not: GPU001
            print("empty documents")
        if not q.is_cuda:
            print(q.sum().item())  # must not: GPU001
        results.append(q.max().item())  # expect: GPU001
    return results
