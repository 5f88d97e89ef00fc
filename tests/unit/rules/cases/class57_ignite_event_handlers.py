"""An ignite engine runs a handler registered for `Events.ITERATION_STARTED` or
`Events.ITERATION_COMPLETED` once per iteration: registered with
`engine.add_event_handler(Events.ITERATION_COMPLETED, f)` (directly, or through a name bound
to the event) or with `@engine.on(Events.ITERATION_COMPLETED)`. Its first argument is the
engine, and `engine.state.output` is what the step returned: the loss or the model's outputs,
on the model's device, which the file does not show (so every finding is a hint). What an
`output_transform` makes of it is as much a guess. A handler filtered to every N iterations
(`Events.ITERATION_COMPLETED(every=100)`) or registered for an epoch's events runs rarely,
and so does a method of the same shape that nothing registers; a parameter annotated as
ignite's `Engine` holds the engine wherever the function is called from, but the function is
hot only where something registers it."""

from ignite.engine import Engine, Events


class LossLogger:
    def __init__(self, output_transform=lambda x: x, per_iteration=True):
        self.output_transform = output_transform
        self.per_iteration = per_iteration
        self.history = []

    def attach(self, engine: Engine) -> None:
        event = Events.ITERATION_COMPLETED
        if callable(self.per_iteration):
            event = event(event_filter=self.per_iteration)
        engine.add_event_handler(event, self.iteration_completed)
        engine.add_event_handler(Events.EPOCH_COMPLETED, self.epoch_completed)

    def iteration_completed(self, engine: Engine) -> None:
        self._log(engine)

    def _log(self, engine: Engine) -> None:
        loss = self.output_transform(engine.state.output)
        if isinstance(loss, dict):
            for name, value in loss.items():
                self.history.append(value.item())  # hint: GPU001
        else:
            self.history.append(loss.item())  # hint: GPU001

    def epoch_completed(self, engine: Engine) -> None:
        self.history.append(engine.state.output.item())  # must not: GPU001

    def report(self, engine: Engine) -> float:
        return engine.state.output.item()  # must not: GPU001


def check_finite(engine):
    if not bool(engine.state.output.isfinite().all()):  # hint: GPU001
        engine.terminate()


def train(trainer, evaluator):
    trainer.add_event_handler(Events.ITERATION_COMPLETED, check_finite)

    @trainer.on(Events.ITERATION_COMPLETED)
    def log_loss(engine):
        print(f"loss {engine.state.output.item():.4f}")  # hint: GPU001

    @trainer.on(Events.ITERATION_COMPLETED(every=100))
    def log_rarely(engine):
        print(f"loss {engine.state.output.item():.4f}")  # must not: GPU001

    @evaluator.on(Events.COMPLETED)
    def log_results(engine):
        print(engine.state.output.item())  # must not: GPU001
