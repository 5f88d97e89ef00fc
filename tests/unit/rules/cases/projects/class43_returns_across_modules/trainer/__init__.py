"""A package whose training loop lives in one module and the objects it runs on are built
in another: what the helpers return is known where they are called."""
