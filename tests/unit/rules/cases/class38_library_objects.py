"""A method call on an object a library's constructor made (`mat = faiss.PCAMatrix(…)`,
`kmeans = faiss.Kmeans(d, k)`) runs the library's method, not a same-named method of one of
the file's classes: `mat.train(x)` per step does not make the file's `KNN.train` run per
step."""

import faiss
import torch

device = torch.device("cuda")


class KNN:
    def __init__(self, make_index):
        self.make_index = make_index
        self.index = None

    def train(self, embeddings):
        self.index = self.make_index(embeddings.shape[1])
        self.add(embeddings.cpu())  # must not: GPU001

    def add(self, embeddings):
        self.index.add(embeddings.cpu())  # must not: GPU001


def build(embeddings):
    knn = KNN(faiss.IndexFlatL2)
    knn.train(embeddings)
    return knn


def project(x, dims):
    mat = faiss.PCAMatrix(x.shape[1], dims)
    mat.train(x)
    return mat


def fit(model, loader):
    model = model.to(device)
    for batch in loader:
        out = model(batch.to(device, non_blocking=True))
        project(out, 8)
        print(out.sum().item())  # expect: GPU001
