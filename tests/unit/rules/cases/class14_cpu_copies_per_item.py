"""`.cpu()` is only asked of a tensor that may be on a device: in a loop over a batch's items,
or in a step a training loop calls, it is one copy and one wait per item or step, if the value
is on the GPU, which the file may not show (a hint)."""

import torch


def sequence_evaluation(predict, target, lengths):
    predict = [p[:n].cpu() for p, n in zip(predict, lengths)]  # hint: GPU001
    target = [t[:n].cpu() for t, n in zip(target, lengths)]  # hint: GPU001
    return predict, target


class Brain:
    def fit_batch(self, batch):
        outputs = self.compute_forward(batch)
        loss = self.compute_objectives(outputs, batch)
        loss.backward()
        return loss.detach().cpu()  # hint: GPU001

    def fit(self, train_set):
        for batch in train_set:
            self.avg_loss = self.fit_batch(batch)

    def offload(self, models):
        for model in models:
            model.cpu()  # must not: GPU001

    def host_only(self, rows):
        for row in rows:
            t = torch.tensor(row)
            print(t.cpu())  # must not: GPU001
