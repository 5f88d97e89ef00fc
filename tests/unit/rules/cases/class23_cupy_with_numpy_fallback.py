"""Code that imports CuPy where it can and NumPy where it cannot, under one name (`try: import
cupy as np / except ImportError: import numpy as np`): where CuPy imports the code runs on the
GPU, and that is the run whose GPU costs matter, so the name is CuPy's. A fallback that names
another module, or a handler that does not catch a failed import, changes nothing."""

try:
    import cupy as np
except ImportError:
    import numpy as np

try:
    import cupyx.scipy.ndimage as ndi
except (ImportError, ModuleNotFoundError):
    import scipy.ndimage as ndi

import numpy


def reconstruct(volume, support, iterations):
    for _ in range(iterations):
        volume = np.fft.ifftn(np.fft.fftn(volume) * support)
        error = float(np.sum(np.abs(volume)))  # expect: GPU001
        volume = ndi.gaussian_filter(volume, 1.0)
    return volume


def on_the_host(values, iterations):
    for _ in range(iterations):
        values = numpy.sqrt(values)
        total = float(numpy.sum(values))  # must not: GPU001
    return total
