"""GPU008: GPU arrays copied back to the host on every iteration."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context
from gpulens.analysis.model import Fix, Severity
from gpulens.analysis.rules.common import fix, replace, shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import simple_name

HOST_ROUND_TRIP = rule(
    "GPU008",
    "host-round-trip-in-loop",
    Severity.WARNING,
    "GPU array copied back to the host inside a loop",
    """
`cp.asnumpy(a)`, `a.get()` and NumPy functions applied to JAX arrays copy the array to host
memory and wait for the GPU to finish computing it. Inside a loop that is one device-to-host
copy and one synchronization per iteration. Keep the computation on the device (CuPy and
`jax.numpy` mirror NumPy's API) and convert once, after the loop.

**Bad:**
```python
for step in range(steps):
    u = stencil(u)
    energy.append(np.sum(cp.asnumpy(u) ** 2))
```

**Good:**
```python
for step in range(steps):
    u = stencil(u)
    energy.append(cp.sum(u ** 2))
energy = cp.asnumpy(cp.stack(energy))
```
""",
)


# -- GPU008 -------------------------------------------------------------------------------


@checks(ast.Call)
def check_host_round_trip(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None:
        return
    func = node.func
    name = ctx.qualname(func)
    if name in fw.DEVICE_TO_HOST_CALLS and node.args and ctx.on_gpu(node.args[0]):
        _report_round_trip(node, ctx, loop.describe())
        return
    if name in fw.DEVICE_TO_HOST_CALLS and node.args and ctx.value(node.args[0]) is None:
        # nothing says where the array is, but the call is made for device arrays: a hint
        ctx.report(
            HOST_ROUND_TRIP,
            node,
            f"`{shown(ctx, node)}` copies the array to the host and waits for the GPU, on "
            f"every iteration of {loop.describe()}, if the array is on the GPU, as the call "
            "suggests. Keep the work on the device and convert once after the loop.",
            severity=Severity.HINT,
        )
        return
    if _host_conversion_helper(node, ctx):
        ctx.report(
            HOST_ROUND_TRIP,
            node,
            f"`{shown(ctx, node)}` copies the array to the host and waits for the GPU, on "
            f"every iteration of {loop.describe()}, if the helper converts as its name says "
            "and the array is on the GPU. Keep the work on the device and convert once after "
            "the loop.",
            severity=Severity.HINT,
        )
        return
    if isinstance(func, ast.Attribute) and func.attr in ("get", "copy_to_host") and not node.args:
        receiver = ctx.value(func.value)
        if receiver is not None and receiver.on_gpu and receiver.lib in ("cupy", "numba"):
            _report_round_trip(node, ctx, loop.describe())
        return
    if name is not None and name.startswith("numpy."):
        for argument in node.args:
            value = ctx.value(argument)
            if value is not None and value.on_gpu and value.lib == "jax":
                jnp = ctx.spelled("jax.numpy", "jnp")
                fixes: tuple[Fix, ...] = ()
                if jnp is not None and isinstance(func, ast.Attribute):
                    fixes = (
                        fix(
                            f"Use {jnp}.{func.attr}",
                            (replace(ctx, func.value, jnp),),
                            "returns a JAX array on the device, not a NumPy array",
                        ),
                    )
                _report_round_trip(node, ctx, loop.describe(), fixes)
                return


def _host_conversion_helper(node: ast.Call, ctx: Context) -> bool:
    """`to_numpy(beta)`: a helper of the package (not an array library's function, nor a
    method of an object) named for the copy to the host, given a GPU value."""
    func = node.func
    if not node.args or simple_name(func) not in fw.HOST_CONVERSION_HELPERS:
        return False
    name = ctx.qualname(func)
    if isinstance(func, ast.Attribute) and name is None:
        return False  # `self.backend.to_numpy(x)`, `frame.to_numpy()`: an object's method
    if name is not None and name.startswith(_ARRAY_LIBRARIES):
        return False  # `cupy.asnumpy` is reported above
    reads_of = ctx.evaluator.helper_reads
    if reads_of is not None and reads_of(func) is not None:
        return False  # its body is read: GPU001 judges the call by what the body does
    return ctx.on_gpu(node.args[0])


_ARRAY_LIBRARIES = ("numpy.", "cupy.", "torch.", "jax.", "numba.")


def _report_round_trip(
    node: ast.Call, ctx: Context, where: str, fixes: tuple[Fix, ...] = ()
) -> None:
    ctx.report(
        HOST_ROUND_TRIP,
        node,
        f"`{shown(ctx, node)}` copies a GPU array to the host and waits for the GPU, on every "
        f"iteration of {where}. Keep the work on the device and convert once after the loop.",
        fixes,
    )
