"""The NumPy names CuPy provides with the same meaning: what "Port NumPy to CuPy" rewrites.

Curated from CuPy's NumPy-compatible API (``cupy``, ``cupy.linalg``, ``cupy.fft``,
``cupy.random``). A name missing here stays ``np.``: porting it would either fail at
runtime or change what the code means (``np.ndarray`` in ``isinstance``, file I/O, ``np.save``).
"""

from __future__ import annotations

_TOP = """
array asarray ascontiguousarray asfortranarray copy empty empty_like zeros zeros_like ones
ones_like full full_like eye identity arange linspace logspace meshgrid diag diagflat tri tril
triu vander fromfunction
reshape ravel transpose swapaxes moveaxis rollaxis expand_dims squeeze concatenate stack vstack
hstack dstack column_stack split array_split hsplit vsplit tile repeat flip fliplr flipud roll
rot90 broadcast_to broadcast_arrays atleast_1d atleast_2d atleast_3d pad where take
take_along_axis put choose clip unique sort argsort argmax argmin nonzero flatnonzero
searchsorted count_nonzero lexsort partition argpartition
abs absolute add subtract multiply divide true_divide floor_divide power float_power mod
remainder fmod negative positive sqrt square cbrt exp exp2 expm1 log log2 log10 log1p sin cos
tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh floor ceil trunc rint
round around fix sign maximum minimum fmax fmin hypot deg2rad rad2deg degrees radians isnan
isinf isfinite nan_to_num logical_and logical_or logical_not logical_xor bitwise_and bitwise_or
bitwise_xor invert left_shift right_shift equal not_equal less less_equal greater greater_equal
allclose isclose array_equal dot vdot inner outer matmul tensordot einsum kron cross cumsum
cumprod diff gradient convolve correlate interp real imag conj conjugate angle reciprocal
heaviside sinc i0 signbit copysign
sum prod mean std var min max amin amax nanmin nanmax nansum nanprod nanmean nanstd nanvar
nanargmax nanargmin nancumsum median nanmedian average percentile quantile all any histogram
bincount digitize cov corrcoef ptp trace
float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool_ complex64
complex128 intp uintp
pi e inf nan newaxis
"""
_LINALG = """
norm inv pinv solve det eigh eigvalsh svd qr cholesky lstsq matrix_power matrix_rank slogdet
tensorsolve tensorinv
"""
_FFT = """
fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft fftfreq
rfftfreq fftshift ifftshift
"""
_RANDOM = """
rand randn randint random random_sample ranf sample uniform normal standard_normal choice
permutation shuffle seed default_rng binomial poisson exponential beta gamma lognormal
multinomial multivariate_normal laplace logistic geometric
"""

CUPY_NAMES: frozenset[str] = frozenset(
    [*_TOP.split()]
    + [f"linalg.{name}" for name in _LINALG.split()]
    + [f"fft.{name}" for name in _FFT.split()]
    + [f"random.{name}" for name in _RANDOM.split()]
)
