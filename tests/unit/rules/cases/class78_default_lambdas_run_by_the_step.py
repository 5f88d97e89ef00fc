"""A parameter whose default is a lambda (`output_transform=lambda x, y, pred, loss:
loss.item()`) runs that lambda wherever the function's body calls the parameter: in a step
factory's `update(engine, batch)` closure, once per training step, for every caller that
passes no function of its own. The loss the step runs its backward pass on is a tensor on
the model's device, which the file does not show, and a caller may pass another function:
every finding is a hint, reported at the lambda. A lambda the step's caller passes on runs
the same way. A lambda that reads nothing on the host (`lambda out: out`), one called outside
any loop, and a default that no body calls say nothing."""

import torch


def training_step_factory(
    model,
    optimizer,
    loss_fn,
    device=None,
    model_fn=lambda model, x: model(x),
    output_transform=lambda x, y, y_pred, loss: loss.item(),  # hint: GPU001
    on_done=lambda loss: loss.item(),  # must not: GPU001
):
    def update(engine, batch):
        optimizer.zero_grad()
        x, y = batch
        y_pred = model_fn(model, x.to(device))
        loss = loss_fn(y_pred, y.to(device))
        loss.backward()
        optimizer.step()
        return output_transform(x, y, y_pred, loss)

    return update


def make_trainer(
    model,
    optimizer,
    loss_fn,
    output_transform=lambda x, y, y_pred, loss: loss.item(),  # hint: GPU001
):
    return training_step_factory(model, optimizer, loss_fn, output_transform=output_transform)


def eval_step_factory(model, output_transform=lambda x, y, y_pred: (y_pred, y)):
    def evaluate(engine, batch):
        with torch.no_grad():
            x, y = batch
            return output_transform(x, y, model(x))  # must not: GPU001

    return evaluate


def fit_once(model, x, report=lambda out: out.sum().item()):  # must not: GPU001
    out = model(x.cuda())
    return report(out)
