"""What the analysis knows of torch, CuPy, JAX and Numba: names, by fully qualified path.

Plain data, so that adding an API is a one-line change reviewed in one place.
"""

from __future__ import annotations

import re

# torch functions that look at types, sizes or settings: their results are host values
TORCH_HOST_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in [
        "is_tensor",
        "is_storage",
        "is_floating_point",
        "is_complex",
        "is_grad_enabled",
        "is_inference_mode_enabled",
        "numel",
        "result_type",
        "can_cast",
        "promote_types",
        "get_default_dtype",
    ]
)

# torch factories that make a new tensor on the CPU unless given `device=` (bernoulli and
# multinomial are not among them: they sample from a tensor and take no `device=`)
TORCH_FACTORIES = frozenset(
    f"torch.{name}"
    for name in [
        "randn",
        "rand",
        "randint",
        "randperm",
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "tensor",
        "as_tensor",
        "normal",
        "tril_indices",
        "triu_indices",
    ]
)
# factories whose arguments are data, not shapes: they build on the host whatever the
# device, so passing `device=` saves nothing (no GPU003)
TORCH_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
# what builds a tensor on the host from the Python data it is handed (numbers, a list of
# them), element by element, unless told a device: the data factories and the typed
# constructors (`torch.FloatTensor([0.5])`)
TORCH_DATA_BUILDERS = TORCH_DATA_FACTORIES | {
    f"torch.{kind}Tensor" for kind in ("", "Float", "Double", "Half", "Long", "Int", "Bool")
}
# factories that draw random numbers: on another device, another generator
RANDOM_FACTORIES = frozenset(
    {"randn", "rand", "randint", "randperm", "normal", "randn_like", "rand_like", "randint_like"}
)
TORCH_LIKE_FACTORIES = frozenset(
    f"torch.{n}_like" for n in ["zeros", "ones", "empty", "full", "rand", "randn", "randint"]
)

# methods whose result lives on the host (or is not an array at all)
HOST_RESULT_METHODS = frozenset(
    [
        "item",
        "tolist",
        "cpu",
        "numpy",
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "element_size",
        "data_ptr",
        "stride",
        "is_contiguous",
        "get_device",
        "get",
        "asnumpy",
        "copy_to_host",
        "__len__",
        "storage_offset",
        "is_floating_point",
        "is_complex",
        # methods only strings have: the receiver was a key or a name, not an array
        "startswith",
        "endswith",
        "lower",
        "upper",
        "strip",
        "isdigit",
    ]
)
# attributes of an array that are host metadata: reading them never waits for the GPU
HOST_ATTRIBUTES = frozenset(
    [
        "shape",
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "layout",
        "nbytes",
        "itemsize",
        "size",
        "requires_grad",
        "is_leaf",
        "grad_fn",
        "names",
        "is_sparse",
        "is_quantized",
        "is_meta",
        "is_cpu",
        "is_mps",
        "is_xpu",
    ]
)
# builtins whose result is a host value whatever they are given (identity, type and size
# checks, conversions): `len(x)`, `isinstance(x, T)`, `hasattr(x, "a")`, `float(t)`
HOST_BUILTINS = frozenset(
    [
        "isinstance",
        "issubclass",
        "hasattr",
        "callable",
        "len",
        "type",
        "id",
        "hash",
        "repr",
        "str",
        "format",
        "int",
        "float",
        "bool",
        "complex",
        "print",
        "range",
        "dir",
        "vars",
        "ord",
        "chr",
        "open",
        "input",
        "setattr",
        "delattr",
    ]
)
# nn.Module methods that hand out its parts (names, parameters, submodules): iterating them
# walks a few whole tensors or modules, never the elements of an array
MODULE_PARTS_METHODS = frozenset(
    [
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "modules",
        "named_modules",
        "children",
        "named_children",
        "state_dict",
        "keys",
    ]
)
# attributes of an array that are arrays on the same device
ARRAY_ATTRIBUTES = frozenset(["T", "mT", "H", "mH", "data", "grad", "real", "imag"])
# methods that return nothing useful (or the receiver changed in place)
EFFECT_METHODS = frozenset(["backward", "record_stream", "synchronize", "block_until_ready"])

# torch functions that test tensors on the device and return a Python bool: the call itself
# copies the answer back and waits (what it returns is on the host)
TORCH_READ_BOOLS = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero"})
# calls that hand a value to the host and wait for the GPU (GPU001)
SYNC_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
# the logging methods that emit a record at a level (`log` takes its level as an argument)
LOGGING_LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception"})
SYNC_BUILTINS = frozenset({"float", "int", "bool", "complex", "str", "repr", "format", "print"})
# operations whose result's size depends on the values of a GPU array: the host must learn
# the size before it can allocate the result, so it waits for the GPU to count (PyTorch's
# and CuPy's documentation say so of nonzero, argwhere, flatnonzero, one-argument where,
# and of repeat_interleave given a tensor of repeats without `output_size`; masked_select
# and unique size their results from the values in the same way)
SIZE_FROM_VALUES_METHODS = frozenset({"nonzero", "argwhere", "masked_select", "unique"})
SIZE_FROM_VALUES_FUNCTIONS = frozenset(
    {"nonzero", "argwhere", "flatnonzero", "masked_select", "unique"}
)
# functions that select (`where(mask)`) or repeat (`repeat_interleave(x, counts)`) by values
# only in some of their forms
WHERE_FUNCTIONS = frozenset({"where"})
REPEAT_FUNCTIONS = frozenset({"repeat_interleave"})
# functions of a GPU array that give a boolean mask of it
MASK_FUNCTIONS = frozenset(
    {
        "isnan",
        "isinf",
        "isfinite",
        "isneginf",
        "isposinf",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "isin",
        "eq",
        "ne",
        "gt",
        "ge",
        "lt",
        "le",
    }
)
# calls that wait for the whole device, whatever their arguments
DEVICE_SYNC_CALLS = frozenset(
    {
        "torch.cuda.synchronize",
        "torch.cuda.current_stream.synchronize",
        "cupy.cuda.runtime.deviceSynchronize",
        "cupy.cuda.Stream.null.synchronize",
        "cupy.cuda.Device.synchronize",
        "cupy.cuda.get_current_stream.synchronize",
        "numba.cuda.synchronize",
        "jax.block_until_ready",
        "jax.effects_barrier",
    }
)

# host clocks (GPU004)
HOST_CLOCKS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "timeit.default_timer",
    }
)

# objects whose `prepare`/`setup` put models and loaders on the device
FRAMEWORK_CLASSES = frozenset(
    {
        "accelerate.Accelerator",
        "accelerate.accelerator.Accelerator",
        "lightning.Fabric",
        "lightning.fabric.Fabric",
        "lightning.fabric.fabric.Fabric",
        "lightning_fabric.Fabric",
        "lightning_fabric.fabric.Fabric",
    }
)
# names that by convention hold one (used when it comes from elsewhere: `self.accelerator`)
FRAMEWORK_NAME = re.compile(r"^(accelerator|fabric)$")
# what each of their methods returns for each argument: a module or loader on the device
PLACING_METHODS = {
    "prepare": "each",  # Accelerate: models, optimizers, loaders, schedulers, in order
    "prepare_model": "module",
    "prepare_data_loader": "loader",
    "setup": "module first",  # Fabric: the model, then its optimizers
    "setup_module": "module",
    "setup_dataloaders": "loader",
    "unwrap_model": "module",
}
# names that by convention hold a model (an argument of `prepare` whose value is unknown)
MODEL_NAME = re.compile(
    r"(^|_)(model|net|network|module|submodule|unet|transformer|encoder|decoder|generator|"
    r"discriminator|critic|policy|backbone|classifier|vae|teacher|student)$",
    re.IGNORECASE,
)
# a function named for what it does to a model (`eval_model(actor, env)`, `train_model`,
# `build_network`): a call of it runs code of its own, not the model's forward
ACTS_ON_MODEL = re.compile(
    r"^_?(eval|evaluate|train|test|validate|run|fit|build|make|get|load|save|create|init|"
    r"export|prepare|wrap|compile|benchmark|profile|add|register|set)_",
    re.IGNORECASE,
)
# methods a framework calls once per step with the batch already on the device, and the
# parameters that receive device data: a LightningModule's steps and batch hooks, a
# transformers Trainer's compute_loss
STEP_METHODS: dict[str, dict[str, tuple[str, ...]]] = {
    "lightning": {
        "training_step": ("batch",),
        "validation_step": ("batch",),
        "test_step": ("batch",),
        "predict_step": ("batch",),
        "on_train_batch_start": ("batch",),
        "on_train_batch_end": ("outputs", "batch"),
        "on_validation_batch_start": ("batch",),
        "on_validation_batch_end": ("outputs", "batch"),
        "on_test_batch_start": ("batch",),
        "on_test_batch_end": ("outputs", "batch"),
        "on_predict_batch_start": ("batch",),
        "on_predict_batch_end": ("outputs", "batch"),
        "on_after_batch_transfer": ("batch",),
    },
    "transformers": {
        "compute_loss": ("inputs",),
        "training_step": ("inputs",),
        "prediction_step": ("inputs",),
    },
}
# Lightning's own steps and the parameters they are called with: a method of that name and
# signature is written for Lightning's loop, in whatever class (a mixin, a delegate)
LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
LIGHTNING_STEP_SIGNATURE = ("batch", "batch_idx")
# a Lightning Callback's batch hooks: the trainer calls them once per batch, with what the
# step returned and the batch, both on the device (Lightning's signature after self)
LIGHTNING_CALLBACK = "lightning callback"
STEP_METHODS[LIGHTNING_CALLBACK] = {
    f"on_{stage}_batch_{when}": ("outputs", "batch") if when == "end" else ("batch",)
    for stage in ("train", "validation", "test", "predict")
    for when in ("start", "end")
}
# a loss class (by its name or its base's: `FocalLoss`, `v8DetectionLoss(nn.Module)`): the
# training step calls it once, on what the model produced
LOSS = "loss"
LOSS_CLASS = re.compile(r"(Loss|Criterion)\d*$")
# (`compute_loss` / `_compute_loss`: the hook a base loss's `forward` calls once per step, in
# a subclass that inherits that forward from a library or another file)
LOSS_HOOKS = frozenset({"compute_loss", "_compute_loss"})
STEP_METHODS[LOSS] = {name: () for name in ("__call__", "forward", "loss", *sorted(LOSS_HOOKS))}
# libraries whose base classes name the methods their own loops call once per step, and
# the parameters that receive data on the model's device; where a tuple is empty, every
# required parameter does (a metric's `update(preds, target)`, a buffer's `add(...)`)
DIFFUSERS_SCHEDULER = "diffusers scheduler"
STEP_METHODS[DIFFUSERS_SCHEDULER] = {
    "step": ("model_output", "timestep", "sample"),
    "add_noise": ("original_samples", "noise", "timesteps"),
    "get_velocity": ("sample", "noise", "timesteps"),
    "scale_model_input": ("sample", "timestep"),
}
METRIC = "torchmetrics"
STEP_METHODS[METRIC] = {"update": ()}
SB3_ALGORITHM = "stable-baselines3 algorithm"
STEP_METHODS[SB3_ALGORITHM] = {"train": ()}
SB3_BUFFER = "stable-baselines3 buffer"
STEP_METHODS[SB3_BUFFER] = {"add": ()}
SKRL_AGENT = "skrl agent"
STEP_METHODS[SKRL_AGENT] = {
    "act": ("observations", "states"),
    "record_transition": (
        "observations",
        "states",
        "actions",
        "rewards",
        "next_observations",
        "next_states",
        "terminated",
        "truncated",
    ),
    "update": (),
}
# a sigpy `Alg`: its documented use is `while not alg.done(): alg.update()`, and `update()`
# runs the subclass's `_update()`, once per iteration of the solver
SIGPY_ALG = "sigpy algorithm"
STEP_METHODS[SIGPY_ALG] = {"_update": ()}
# a torchrl Trainer's hooks (`TrainerHookBase`): the trainer calls them once per collected
# batch (or per optimization sub-batch), handing them the batch
TORCHRL_HOOK = "torchrl trainer hook"
STEP_METHODS[TORCHRL_HOOK] = {
    "__call__": ("batch", "sub_batch", "tensordict"),
    "step": ("sub_batch",),
    "extend": ("batch",),
}
# an ignite `Metric`: its `update(output)` runs once per iteration of the engine it is
# attached to (`Metric.iteration_completed`), on the step's output; it accumulates on
# `self._device`, the CPU unless the metric was built with another device
IGNITE_METRIC = "ignite metric"
STEP_METHODS[IGNITE_METRIC] = {"update": ()}
# the package whose every class is such a metric (or a base of one): a subclass of any
IGNITE_METRICS_PACKAGE = "ignite.metrics."
# an ignite engine's events that fire once per iteration: a handler registered for one
# (`engine.add_event_handler(Events.ITERATION_COMPLETED, f)`, `@engine.on(...)`) runs per
# step, unless filtered (`Events.ITERATION_COMPLETED(every=100)`)
IGNITE_EVENTS = "Events"
IGNITE_ITERATION_EVENTS = frozenset(
    {"ITERATION_STARTED", "ITERATION_COMPLETED", "GET_BATCH_STARTED", "GET_BATCH_COMPLETED"}
)
IGNITE_REGISTRATION = "add_event_handler"
IGNITE_DECORATOR = "on"
# the engine class: a parameter annotated so holds the engine, whose `state.output` is what
# the step returned (on the model's device, which the file does not show)
IGNITE_ENGINE = frozenset({"ignite.engine.Engine", "ignite.engine.engine.Engine"})
IGNITE_OUTPUT = "state.output"
# the attribute each library's hook objects keep their own device in, where that device is
# the CPU unless the object was built with another: a copy there is a copy to the host
HOST_DEVICE_ATTRIBUTES = {IGNITE_METRIC: "_device"}
# fastai: a `Learner` runs each `Callback`'s batch events once per batch (`self('after_batch')`);
# the events take no arguments and read the step's tensors through the learner, which a
# callback looks up as its own attributes (`self.loss`, `self.learn.pred`). A `Metric`'s
# `accumulate(learn)` runs once per batch too (the Recorder's `after_batch` calls it), reading
# them from the learner it is handed. Those tensors are on the learner's device, which the
# file does not show; epoch and fit events (`after_epoch`, `before_fit`) run rarely.
FASTAI_CALLBACK = "fastai callback"
FASTAI_METRIC = "fastai metric"
FASTAI_STEPS = frozenset({FASTAI_CALLBACK, FASTAI_METRIC})
FASTAI_BATCH_EVENTS = (
    "before_batch",
    "after_pred",
    "after_loss",
    "before_backward",
    "after_backward",
    "before_step",
    "after_step",
    "after_batch",
)
STEP_METHODS[FASTAI_CALLBACK] = {name: () for name in FASTAI_BATCH_EVENTS}
STEP_METHODS[FASTAI_METRIC] = {"accumulate": ()}
# the learner's attributes that hold the step's tensors (`x`, `y`: the first of `xb`, `yb`),
# and those it keeps on the CPU (the Recorder's `smooth_loss` averages `to_detach(loss)`)
FASTAI_STEP_ATTRIBUTES = ("pred", "loss", "loss_grad", "xb", "yb", "x", "y")
FASTAI_HOST_ATTRIBUTES = ("smooth_loss",)
# the events of a fit, an epoch or a stage (`after_epoch`, `before_validate`): they run
# rarely, and what they read of the last batch is no step's value
FASTAI_EVENT = re.compile(r"^(before|after)_\w+$")
# the bases of fastai's metrics, whose subclasses' `accumulate` the Recorder runs
FASTAI_METRICS = frozenset({"Metric", "AvgMetric", "AccumMetric", "AvgLoss", "AvgSmoothLoss"})
# `to_detach(b)`, `learn.to_detach(b)`: detaches b and copies it to the CPU (`cpu=True` by
# default), so it waits for the GPU and what it returns is on the host
FASTAI_TO_HOST = "to_detach"
# a learner's `get_preds(...)`: the predictions (and targets, inputs, losses) of a whole
# loader, each batch's gathered with `to_detach`: on the host
FASTAI_PREDICTIONS = "get_preds"
FASTAI_PACKAGE = "fastai"
# what `from fastai.<...> import *` binds of the libraries fastai is built on
FASTAI_EXPORTS = {
    "torch": "torch",
    "np": "numpy",
    "nn": "torch.nn",
    "F": "torch.nn.functional",
}

# how messages name the loop that runs each library's hooks
STEP_LOOPS = {
    IGNITE_METRIC: "the engine loop that runs {}() once per iteration",
    DIFFUSERS_SCHEDULER: "the denoising loop that runs {}() once per step",
    METRIC: "the loop that runs {}() once per batch",
    SB3_ALGORITHM: "the loop that runs {}() once per rollout",
    SB3_BUFFER: "the loop that runs {}() once per environment step",
    SKRL_AGENT: "the loop that runs {}() once per environment step",
    SIGPY_ALG: "the solver loop that runs {}() once per iteration",
    TORCHRL_HOOK: "the trainer loop that runs {}() once per batch",
    FASTAI_CALLBACK: "the Learner's loop that runs {}() once per batch",
    FASTAI_METRIC: "the Learner's loop that runs {}() once per batch",
}
# the libraries above: the file does not show the device their hooks' data is on (a guess)
GUESSED_STEPS = frozenset(STEP_LOOPS)
# the package each of them comes from: a base of that name from elsewhere is another class
STEP_CLASS_HOMES = {
    IGNITE_METRIC: IGNITE_METRICS_PACKAGE,
    DIFFUSERS_SCHEDULER: "diffusers.",
    METRIC: "torchmetrics.",
    SB3_ALGORITHM: "stable_baselines3.",
    SB3_BUFFER: "stable_baselines3.",
    SKRL_AGENT: "skrl.",
    SIGPY_ALG: "sigpy.",
    TORCHRL_HOOK: "torchrl.",
}

# the parameters a framework's hooks start with (after self), where its hooks share them:
# a method of that name with other parameters is the class's own
STEP_SIGNATURES = {
    "transformers": ("model", "inputs"),
    LIGHTNING_CALLBACK: ("trainer", "pl_module"),
    # fastai's events take no arguments, a metric's `accumulate` only the learner
    FASTAI_CALLBACK: (),
    FASTAI_METRIC: ("learn",),
}
# hook parameters that receive the model being trained, on the device
STEP_MODEL_PARAMETERS = frozenset({"model"})
# base classes whose subclasses' STEP_METHODS a framework runs, by the end of their name
STEP_CLASSES = {
    "LightningModule": "lightning",
    "Trainer": "transformers",
    "Callback": LIGHTNING_CALLBACK,
    "SchedulerMixin": DIFFUSERS_SCHEDULER,
    "Metric": METRIC,
    "OnPolicyAlgorithm": SB3_ALGORITHM,
    "OffPolicyAlgorithm": SB3_ALGORITHM,
    "BaseBuffer": SB3_BUFFER,
    "RolloutBuffer": SB3_BUFFER,
    "ReplayBuffer": SB3_BUFFER,
    "Agent": SKRL_AGENT,
    "Alg": SIGPY_ALG,
    "TrainerHookBase": TORCHRL_HOOK,
}
STEP_CLASS_MODULES = (
    "ignite",
    "lightning",
    "pytorch_lightning",
    "transformers",
    "trl",
    "diffusers",
    "torchmetrics",
    "stable_baselines3",
    "skrl",
    "sigpy",
    "torchrl",
)

# library functions that move a whole batch (tensors in dicts, lists, tuples) to a device
DEVICE_PLACING_FUNCTIONS = frozenset({"send_to_device", "move_data_to_device"})

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# functions that return the total norm of a model's gradients, a tensor on their device
GRADIENT_NORMS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.get_total_norm",
    }
)
# torchrl's data collectors (`Collector`, `SyncDataCollector`, `MultiSyncDataCollector`):
# iterated, each yields a batch of environment steps on its storing device
COLLECTOR = re.compile(r"^torchrl\.collectors\.(\w+\.)*\w*(Collector)$")

# host-to-device constructors of the other frameworks
CUPY_TO_DEVICE = frozenset({"cupy.asarray", "cupy.array", "cupy.ascontiguousarray"})
JAX_TO_DEVICE = frozenset({"jax.device_put", "jax.numpy.asarray", "jax.numpy.array"})
NUMBA_TO_DEVICE = frozenset({"numba.cuda.to_device"})
# CuPy functions that do not return device arrays
CUPY_HOST_FUNCTIONS = frozenset(
    {"cupy.asnumpy", "cupy.get_array_module", "cupy.isscalar", "cupy.ndim", "cupy.shape"}
)
DEVICE_TO_HOST_CALLS = frozenset({"cupy.asnumpy", "jax.device_get"})
# a package's own helpers named for bringing an array back to the host (`to_numpy(x)`):
# `cupy.asnumpy` or `.cpu().numpy()` inside, as far as the name tells
HOST_CONVERSION_HELPERS = frozenset({"to_numpy", "as_numpy", "asnumpy", "to_cpu", "to_host"})
# functions that pick the array library (NumPy or CuPy) of the arrays they are given, and
# the attribute of a device object that names it: code written for arrays on either
ARRAY_MODULE_FUNCTIONS = frozenset({"get_array_module", "array_namespace"})
ARRAY_MODULE_ATTRIBUTE = "xp"
# functions that ask which device the arrays they are given live on
ARRAY_DEVICE_FUNCTIONS = frozenset({"get_array_module", "array_namespace", "get_device"})
# functions of NumPy-like array libraries that look at types, shapes or sizes, or plan work:
# their results are host values
ARRAY_API_HOST_FUNCTIONS = frozenset(
    {
        "isrealobj",
        "iscomplexobj",
        "isfortran",
        "isscalar",
        "iterable",
        "ndim",
        "shape",
        "size",
        "result_type",
        "can_cast",
        "min_scalar_type",
        "promote_types",
        "common_type",
        "get_array_module",
        "next_fast_len",
        "prev_fast_len",
        # types: `cp.dtype("f4")` is NumPy's dtype, `cp.finfo(x.dtype).eps` a Python float
        "dtype",
        "finfo",
        "iinfo",
    }
)
# fields of a model's outputs that hold tensors (transformers' ModelOutput, diffusers'):
# other fields of an output object may be Python numbers
OUTPUT_TENSOR_FIELD = re.compile(
    r"^(loss|logits|\w+_logits|hidden_states|last_hidden_state|pooler_output|attentions|"
    r"past_key_values|sample|prev_sample|pred_original_sample|\w+_embeds|pred_boxes|pred_masks|"
    r"\w+_loss|entropy|log_probs|logprobs|\w+_logps|\w+_mask)$"
)
# functions named as predicates return a Python bool, whatever they are given
PREDICATE_NAME = re.compile(r"^(is|has)_\w+$")
# functions named for a batch's size or an array's shape return Python ints (`find_bs(yb)`)
SIZE_FUNCTION = re.compile(r"(^|_)(bs|batch_size|shape|ndim)$")
# names of iterators that hand out a loader's batches (`CycleIterator(loader)`)
LOADER_WRAPPER = re.compile(r"iter|cycle|loader|prefetch|repeat|infinite", re.IGNORECASE)

# names that by convention hold shapes, ranks and dtypes: host metadata (a guess that such a
# name holds a GPU value gives way to this)
HOST_NAME = re.compile(r"(^|_)(shape|shapes|ndim|ndims|dims|dtype)$")

GPU_DEVICE_STRING = re.compile(r"^(cuda|mps|xpu|hip|xla)(:\d+)?$")
# CUDA tensor types, by their dotted names: `x.type(torch.cuda.HalfTensor)` copies x to the GPU
CUDA_TENSOR_TYPE = re.compile(
    r"^torch\.cuda\.(Float|Double|Half|BFloat16|Byte|Char|Short|Int|Long|Bool)Tensor$"
)
# names that by convention hold the device the program runs on
DEVICE_NAME = re.compile(r"^(_?device|dev|_?\w+_device|device_\w+|local_rank|rank)$")
# functions that move the tensors of a batch they are handed to a device, in place
IN_PLACE_MOVER = re.compile(r"^(batch|move|inputs?)_to_(device|gpu|cuda)$")
# names that by convention hold a DataLoader (used when the loader comes from elsewhere)
LOADER_NAME = re.compile(r"(^|_)(loader|dataloader|dl)$|loader", re.IGNORECASE)

# torch.nn classes that take (in, out) sizes first, and their keyword names (GPU010)
SIZED_LAYERS = {
    "torch.nn.Linear": ("in_features", "out_features"),
    "torch.nn.Conv1d": ("in_channels", "out_channels"),
    "torch.nn.Conv2d": ("in_channels", "out_channels"),
    "torch.nn.Conv3d": ("in_channels", "out_channels"),
    "torch.nn.ConvTranspose2d": ("in_channels", "out_channels"),
}
REDUCED_PRECISION = frozenset(
    {
        "torch.float16",
        "torch.half",
        "torch.bfloat16",
        "torch.autocast",
        "torch.cuda.amp.autocast",
        "torch.amp.autocast",
        "torch.cpu.amp.autocast",
    }
)
REDUCED_PRECISION_METHODS = frozenset({"half", "bfloat16"})

# modules whose classes build nn.Modules
MODULE_FACTORIES = ("torch.nn.", "torchvision.models.", "timm.", "transformers.")


def is_module_class(qualname: str) -> bool:
    """`torch.nn.Linear`, `torchvision.models.resnet18`: calls that build a module."""
    if not qualname.startswith(MODULE_FACTORIES):
        return False
    last = qualname.rsplit(".", 1)[-1]
    if qualname.startswith("torch.nn."):
        # torch.nn.functional.relu is a function, torch.nn.Linear a class
        return last[:1].isupper() and ".functional." not in qualname and ".init." not in qualname
    return True
