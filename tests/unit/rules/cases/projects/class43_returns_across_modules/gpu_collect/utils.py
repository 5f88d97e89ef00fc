"""A script's helpers, imported by its neighbour as `from utils import make_collector`
(the script's folder is on `sys.path`): this collector stores its batches on the GPU."""

from torchrl.collectors import Collector


def make_collector(env, policy, device=None):
    collector = Collector(env, policy, frames_per_batch=1000, device=device)
    collector.set_seed(0)
    return collector
