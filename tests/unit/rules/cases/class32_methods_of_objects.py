"""A method called on an object of a class of the file (`self.inference.logits(tokens)`,
`scorer.score(x)`) returns what its body returns; where the body does not tell (it hands
the arguments to a model the file does not show), it is judged as an unknown function of
its arguments: a GPU array where one is passed. What its body returns on the host is no
GPU value."""

import torch

device = torch.device("cuda")


class Inference:
    def __init__(self, model):
        self.model = model

    def logits(self, tokens, features):
        return self.model.decoder(tokens, features)

    def length(self, tokens):
        return len(tokens)


def decode(model, features, steps):
    inference = Inference(model)
    tokens = torch.zeros(1, 1, dtype=torch.long, device=device)
    scores = []
    for _ in range(steps):
        logits = inference.logits(tokens, features)
        best = logits[:, -1].argmax(-1)
        scores.append(float(logits[0, -1].max()))  # expect: GPU001
        if best.item() == 0:  # hint: GPU001
            break
        if inference.length(tokens) > 100:  # must not: GPU001
            break
        tokens = torch.cat([tokens, best[:, None]], dim=-1)
    return tokens, scores
