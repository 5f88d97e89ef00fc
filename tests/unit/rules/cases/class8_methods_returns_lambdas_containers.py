"""Tensors that reach a method as arguments, come back from one, pass through a lambda, or
sit in a dict or tuple are still on the GPU."""

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_noise(n):
    return torch.randn(n, 16, device=device)


def count_tokens(tokens):
    return len(tokens)


class GreedyDecoder:
    def __init__(self, model, eot):
        self.model = model.to(device)
        self.eot = eot
        self.history = []

    def decode(self, tokens, steps):
        for _ in range(steps):
            logits = self.model(tokens)
            tokens = self.update(tokens, logits)
            sigmas = self.schedule()
            self.history.append(sigmas[0].item())  # expect: GPU001
            n = count_tokens(tokens)
            print(n)  # must not: GPU001
        return tokens

    def schedule(self):
        return torch.linspace(1.0, 0.0, 10, device=device)

    def update(self, tokens, logits):
        best = logits.argmax(-1)
        self.history.append(best.max().item())  # expect: GPU001
        return torch.cat([tokens, best[:, None]], dim=-1)


class Sampler:
    def sample(self, model, x):
        for step in range(50):
            noise = make_noise(4)
            x = model(x + noise)
            stats = {"mean": x.mean(), "std": x.std(), "step": step}
            print(stats["mean"].item())  # expect: GPU001
            pair = (x.max(), x.min())
            high, low = pair
            print(float(high))  # expect: GPU001
            values = list(map(lambda t: t.item(), x.unbind(0)))  # expect: GPU001
            ordered = sorted(x.unbind(0), key=lambda t: t.sum().item())  # expect: GPU001
            total = noise.sum().tolist()  # expect: GPU001
            labels = list(map(lambda name: name.upper(), ["a", "b"]))  # must not: GPU001
        return x, values, ordered, total, labels


def run(model, tokens):
    decoder = GreedyDecoder(model, eot=0)
    return decoder.decode(tokens.to(device), 10)


class BeamDecoder:
    def update(self, tokens, logits):
        print(logits.max().item())  # hint: GPU001
        return tokens


class Task:
    def __init__(self, decoder):
        self.decoder = decoder

    def main_loop(self, tokens, model):
        for _ in range(10):
            logits = model(tokens.to(device))
            # which class `self.decoder` is, the file does not say: a guess, at most a hint
            tokens = self.decoder.update(tokens, logits)
        return tokens
