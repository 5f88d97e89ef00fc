"""Formatting a GPU value reads it on the host, however the formatting is spelled: an
f-string, `"%.4f" % loss` (`%f` and `%d` call `__float__` / `__int__`, `%s` formats the whole
tensor), `"{:.4f}".format(loss)`, and a logging call's arguments, which the logging module
formats when it emits the record (at a level that is usually off, `debug`, only if it is
enabled: a hint). The formatted string itself is a Python str: printing it reads nothing
more. Formatting host values (sizes, counters, `.item()` results) waits for nothing."""

import logging
import sys

import torch

logger = logging.getLogger(__name__)
device = torch.device("cuda")


def train(model, loader, optimizer, bar, epochs):
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses = {"mse": loss, "l1": (model(x) - y).abs().mean()}
        bar.set_description("loss=%.5f" % loss)  # expect: GPU001
        sys.stderr.write("step %d/%d (%e)\n" % (step, epochs, loss))  # expect: GPU001
        bar.set_description(
            ("%11s" + "%11.4g" * len(losses))
            % (
                f"{step}/{epochs}",
                *losses.values(),  # expect: GPU001
            )
        )
        print("{:.4f}".format(loss))  # expect: GPU001
        bar.write("{step}: {value}".format(step=step, value=loss))  # expect: GPU001
        logger.info("step %d loss %f", step, loss)  # expect: GPU001
        logging.warning("loss %s", loss)  # expect: GPU001
        logger.debug("loss %f", loss)  # hint: GPU001
        print("batch of %d, shape %s" % (x.shape[0], tuple(x.shape)))  # must not: GPU001
        print("{} items".format(len(y)))  # must not: GPU001
        logger.info("step %d of %d", step, len(loader))  # must not: GPU001
        value = loss.item()  # expect: GPU001
        logger.info("loss %.4f (%s)", value, "{:.2f}".format(value))  # must not: GPU001
        message = "loss %.4f" % value  # must not: GPU001
        print(message)  # must not: GPU001
