"""Another folder's `utils.py`, with a helper of the same name whose collector stores its
batches on the host: each script reads its own neighbour's."""

from torchrl.collectors import Collector


def make_collector(env, policy, device=None):
    return Collector(env, policy, frames_per_batch=1000, device=device, storing_device="cpu")
