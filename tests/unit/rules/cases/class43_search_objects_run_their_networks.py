"""A search object holds the networks it runs (`self.joint = joint`, `self.decoder =
decoder`) and its methods feed them, frame by frame, what the caller hands in (the
encoder's output): that input, and what the networks make of it, are likely on the
networks' device. The file does not show where the networks live, so what the loop reads
on the host per hypothesis or per frame is a hint, never a warning; what the loop reads of
the hypotheses' host fields is nothing."""

import torch


class Hypothesis:
    def __init__(self, score, tokens):
        self.score = score
        self.tokens = tokens


class GreedySearch:
    def __init__(self, decoder, joint_network, blank):
        self.decoder = decoder
        self.joint_network = joint_network
        self.blank = blank

    def search(self, features):
        hyp = Hypothesis(0.0, [self.blank])
        out = self.decoder.initial()
        for frame in features:
            logp = torch.log_softmax(self.joint_network(frame, out), dim=-1)
            best_logp, best = torch.max(logp, dim=-1)
            if best != self.blank:  # hint: GPU001
                hyp.tokens.append(int(best))  # hint: GPU001
                hyp.score += float(best_logp)  # hint: GPU001
                out = self.decoder.step(hyp.tokens)
            if len(hyp.tokens) > 100:  # must not: GPU001
                break
        return hyp

    def beam(self, features, width):
        hyps = [Hypothesis(0.0, [self.blank])]
        for frame in features:
            candidates = []
            for hyp in hyps:
                logp = torch.log_softmax(self.joint_network(frame, hyp.tokens), dim=-1)
                values, ids = logp.topk(width)
                for value, token in zip(values, ids):  # hint: GPU009
                    score = hyp.score + float(value)  # hint: GPU001
                    candidates.append(Hypothesis(score, hyp.tokens + [token]))
                if hyp.score > 0:  # must not: GPU001
                    continue
            hyps = sorted(candidates, key=lambda h: h.score)[:width]
        return hyps


class Rescorer:
    """What a method is handed but never feeds a network is no guess."""

    def __init__(self, model):
        self.model = model

    def rescore(self, scores, steps):
        total = 0.0
        for _ in range(steps):
            total += float(scores.max())  # must not: GPU001
        return total
