"""Real-client benchmark for issue 14 (part 5): training steps of torchvision models whose
every Conv2d/Conv3d input gradient is computed by cudnn_rs.

Models (weights=None): resnet50 (residual, 32x3x224x224), mobilenet_v3_large (inverted
residual with depthwise convolutions, 64x3x224x224), convnext_tiny (7x7 depthwise,
16x3x224x224), r3d_18 (3-d, 4x3x16x112x112); with `--models more` five of other
families instead (efficientnet_b0, regnet_y_800mf, densenet121, shufflenet_v2_x1_0,
r2plus1d_18; see MORE_MODELS). Variants: f32 with TF32 off and on, f16, bf16 (model and
inputs converted to the dtype), each NCHW and channels-last (`--variants` picks some).

A step is forward, cross-entropy, backward and an SGD step. Modes, same model, same
batch, interleaved step by step:
  plain           PyTorch as it is (cudnn.benchmark = False, its default)
  fn+torch        every convolution through a torch.autograd.Function whose backward
                  computes the input gradient with PyTorch's dgrad
                  (aten.convolution_backward, output mask [True, False, False])
  fn+ours         the same Function with cudnn_rs's default choice through
                  cudnn_rs.conv_input_grad, as cudnn_rs.torch runs it (--device cpu, or
                  builds without it: the explicit API with DefaultAlgo / BestEngine)
  fn+ours meas.   the same with the measured tier (conv_input_grad(benchmark=True);
                  explicit API: a Handle(benchmark=True))
  fn+ours 1call   with --one-call: the same Function with the one-call API
                  (convolution_backward_data, no algorithm, on imports of w and dy; its
                  fresh dx handed to PyTorch by torch.from_dlpack), gradient-checked too
Weight and bias gradients always come from aten.convolution_backward (mask [False, w,
b]). Step time: median over --steps rounds of one step per mode (after --warmup steps
per mode), each step synchronised; ratios are paired per round (our step over fn+torch
dgrad's in the same round), median over rounds. Gradient check: one step with the input gradient on, the cudnn_rs Function
in the run's dtype vs plain PyTorch in float64 (same weights and input, dropout off):
the largest relative error of the norm over the input and parameter gradients; plain
PyTorch in the run's dtype gives the error the dtype alone costs.

Usage (GPU machine):
  python bench/train.py --csv train.csv --md train.md
  python bench/train.py --quick
  python bench/train.py --models more --variants f32:nchw,tf32:cl,f16:cl,bf16:nchw
  python bench/train.py --device cpu     # logic test on cudnn_rs's CPU device, tiny
                                         # inputs; the times mean nothing
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import statistics
import sys
import time
import types
import warnings
from collections.abc import Callable, Sequence

import report
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import cudnn_rs as cd

DEFAULT_MARKER = getattr(cd, "DefaultAlgo", None)
DEFAULT_LABEL = "DefaultAlgo" if DEFAULT_MARKER is not None else "BestEngine"
if DEFAULT_MARKER is None:
    DEFAULT_MARKER = cd.BestEngine


# ---------------------------------------------------------------- models and variants


@dataclasses.dataclass(frozen=True)
class ModelCase:
    name: str
    build: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    tiny_shape: tuple[int, ...]  # for the CPU logic test
    classes: int


MODELS = [
    ModelCase(
        "resnet50",
        lambda: torchvision.models.resnet50(weights=None),
        (32, 3, 224, 224),
        (2, 3, 64, 64),
        1000,
    ),
    ModelCase(
        "mobilenet_v3_large",
        lambda: torchvision.models.mobilenet_v3_large(weights=None),
        (64, 3, 224, 224),
        (2, 3, 64, 64),
        1000,
    ),
    ModelCase(
        "convnext_tiny",
        lambda: torchvision.models.convnext_tiny(weights=None),
        (16, 3, 224, 224),
        (2, 3, 64, 64),
        1000,
    ),
    ModelCase(
        "r3d_18",
        lambda: torchvision.models.video.r3d_18(weights=None),
        (4, 3, 16, 112, 112),
        (1, 3, 4, 32, 32),
        400,
    ),
]
# Models of other families, for runs on models the suites were not tuned on (`--models
# more`, or by name): compound-scaled inverted residuals with squeeze-excitation, grouped
# bottlenecks with squeeze-excitation, dense concatenation, channel shuffle with
# depthwise layers, and (2+1)-d video convolutions (1x3x3 spatial, 3x1x1 temporal).
MORE_MODELS = [
    ModelCase(
        "efficientnet_b0",
        lambda: torchvision.models.efficientnet_b0(weights=None),
        (32, 3, 224, 224),
        (2, 3, 64, 64),
        1000,
    ),
    ModelCase(
        "regnet_y_800mf",
        lambda: torchvision.models.regnet_y_800mf(weights=None),
        (32, 3, 224, 224),
        (2, 3, 64, 64),
        1000,
    ),
    ModelCase(
        "densenet121",
        lambda: torchvision.models.densenet121(weights=None),
        (32, 3, 224, 224),
        (2, 3, 64, 64),
        1000,
    ),
    ModelCase(
        "shufflenet_v2_x1_0",
        lambda: torchvision.models.shufflenet_v2_x1_0(weights=None),
        (64, 3, 224, 224),
        (2, 3, 64, 64),
        1000,
    ),
    ModelCase(
        "r2plus1d_18",
        lambda: torchvision.models.video.r2plus1d_18(weights=None),
        (4, 3, 16, 112, 112),
        (1, 3, 4, 32, 32),
        400,
    ),
]


def pick_models(names: str) -> list[ModelCase]:
    """The models `names` (comma-separated) names: the default four where empty,
    `more` for MORE_MODELS, `all` for both lists."""
    if not names:
        return list(MODELS)
    every = {m.name: m for m in MODELS + MORE_MODELS}
    sets = {"more": MORE_MODELS, "all": MODELS + MORE_MODELS}
    picked: list[ModelCase] = []
    for name in names.split(","):
        if name in sets:
            picked += sets[name]
        elif name in every:
            picked.append(every[name])
        else:
            raise ValueError(
                f"unknown model {name!r}; known: {sorted(every)}, more, all"
            )
    return picked


@dataclasses.dataclass(frozen=True)
class Variant:
    dtype: str
    channels_last: bool
    tf32: bool  # f32 only

    @property
    def short(self) -> str:
        return {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[self.dtype]

    @property
    def layout(self) -> str:
        return "channels-last" if self.channels_last else "NCHW"


VARIANTS = [
    Variant(dt, cl, tf)
    for dt, tf in (
        ("float32", False),
        ("float32", True),
        ("float16", True),
        ("bfloat16", True),
    )
    for cl in (False, True)
]


def pick_variants(spec: str) -> list[Variant]:
    """Variants from `spec`, comma-separated `type:layout` (type f32, tf32, f16, bf16;
    layout nchw or cl), e.g. `f32:nchw,bf16:cl`."""
    dtypes = {
        "f32": ("float32", False),
        "tf32": ("float32", True),
        "f16": ("float16", True),
        "bf16": ("bfloat16", True),
    }
    picked = []
    for item in spec.split(","):
        cfg, _, layout = item.partition(":")
        if cfg not in dtypes or layout not in ("nchw", "cl"):
            raise ValueError(
                f"bad variant {item!r}: want type:layout, type one of "
                f"{sorted(dtypes)}, layout nchw or cl"
            )
        dt, tf32 = dtypes[cfg]
        picked.append(Variant(dt, layout == "cl", tf32))
    return picked


QUICK_VARIANTS = [Variant("float32", False, False), Variant("bfloat16", True, True)]
# Largest relative error of a gradient's norm vs float64 that passes outright; a run
# also passes when within 2x of plain PyTorch's own error in the same dtype.
GRAD_TOLERANCE = {"f32": 1e-3, "tf32": 5e-2, "f16": 5e-2, "bf16": 2e-1}


def memory_format(ndim: int, channels_last: bool) -> torch.memory_format:
    if not channels_last:
        return torch.contiguous_format
    return torch.channels_last_3d if ndim == 5 else torch.channels_last


def set_tf32(on: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cudnn.allow_tf32 = on
        torch.backends.cudnn.benchmark = False


# ---------------------------------------------------------------- dgrad backends


@dataclasses.dataclass(frozen=True)
class ConvSpec:
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int

    @property
    def nd(self) -> int:
        return len(self.stride)


def suggest_format(x: torch.Tensor, w: torch.Tensor) -> torch.memory_format:
    """The layout PyTorch's cuDNN convolution picks for dx: channels-last when the input
    or the weight is channels-last, else contiguous."""
    cl = torch.channels_last_3d if x.dim() == 5 else torch.channels_last

    def is_cl(t: torch.Tensor) -> bool:
        return t.is_contiguous(memory_format=cl) and not t.is_contiguous()

    return cl if is_cl(x) or is_cl(w) else torch.contiguous_format


class TorchDgrad:
    name = "fn+torch"

    def dgrad(self, gy, x, w, spec: ConvSpec, mf) -> torch.Tensor:
        return torch.ops.aten.convolution_backward(
            gy,
            x,
            w,
            None,
            list(spec.stride),
            list(spec.padding),
            list(spec.dilation),
            False,
            [0] * spec.nd,
            spec.groups,
            [True, False, False],
        )[0]


@dataclasses.dataclass
class _HandleState:
    handle: cd.Handle
    stream: int
    workspace: cd.Workspace | None = None
    workspace_bytes: int = 0


def settle_builds(measured: bool) -> bool:
    """For the measured tier: waits until the builder thread has built every layer handed
    to it (every handle's, the ones conv_input_grad keeps in Rust included); whether it
    waited (builds without the builder: never)."""
    wait = getattr(cd, "wait_background_builds", None)
    return bool(measured and wait is not None and wait(120_000.0))


class OursDgrad:
    """cudnn_rs's backward-data on PyTorch's memory and stream: one handle per device
    (kept on PyTorch's current stream), one descriptor per convolution and math mode,
    one workspace per handle grown as needed; dx allocated by PyTorch."""

    def settle(self) -> bool:
        return settle_builds(self.measured)

    def __init__(self, measured: bool, cpu: bool) -> None:
        self.measured = measured
        self.cpu = cpu
        self.name = "fn+ours measured" if measured else "fn+ours"
        self.handles: dict[int, _HandleState] = {}
        self.convs: dict[tuple[ConvSpec, bool], cd.ConvolutionDescriptor] = {}
        self.algo = DEFAULT_MARKER()
        # Without Handle(benchmark=True): the measured choice per problem, made here.
        self.use_finds = False
        self.found: dict[tuple, object] = {}
        if measured:
            try:
                self._new_handle(None)
            except TypeError:
                self.use_finds = True
        self.how = (
            f"Handle(benchmark=True) + {DEFAULT_LABEL}"
            if measured and not self.use_finds
            else "best of find_engine[0], find_algorithm[0]"
            if measured
            else f"Handle() + {DEFAULT_LABEL}"
        )

    def _new_handle(self, device: torch.device | None) -> cd.Handle:
        kwargs: dict = (
            {"benchmark": True} if self.measured and not self.use_finds else {}
        )
        if self.cpu:
            return cd.Handle(device="cpu", **kwargs)
        dev = device if device is not None else torch.device("cuda", 0)
        return cd.Handle(
            device=dev.index or 0, stream=torch.cuda.current_stream(dev), **kwargs
        )

    def _state(self, device: torch.device) -> _HandleState:
        index = -1 if self.cpu else (device.index or 0)
        stream = 0 if self.cpu else torch.cuda.current_stream(device).cuda_stream
        st = self.handles.get(index)
        if st is None:
            st = _HandleState(self._new_handle(device), stream)
            self.handles[index] = st
        elif st.stream != stream:
            st.handle.set_stream(torch.cuda.current_stream(device))
            st.stream = stream
        return st

    def _conv(self, spec: ConvSpec, fma: bool) -> cd.ConvolutionDescriptor:
        conv = self.convs.get((spec, fma))
        if conv is None:
            conv = cd.ConvolutionDescriptor(
                padding=spec.padding,
                stride=spec.stride,
                dilation=spec.dilation,
                groups=spec.groups,
                math_type=cd.MathType.Fma if fma else cd.MathType.Default,
                comp_type=cd.f32,
            )
            self.convs[(spec, fma)] = conv
        return conv

    def _workspace(self, st: _HandleState, nbytes: int) -> cd.Workspace | None:
        if nbytes > st.workspace_bytes:
            st.workspace = cd.Workspace(st.handle, nbytes)
            st.workspace_bytes = nbytes
        return st.workspace

    def _found(self, h, w, dy, dx, conv, key) -> object:
        algo = self.found.get(key)
        if algo is None:
            best = []
            for find in (
                h.find_convolution_backward_data_engine,
                h.find_convolution_backward_data_algorithm,
            ):
                try:
                    best.append(find(w, dy, dx, conv)[0])
                except cd.CudnnRsError:  # e.g. no legacy algorithm for this problem
                    continue
            if not best:
                raise RuntimeError("neither find returned a choice")
            algo = min(best, key=lambda a: a.time)
            self.found[key] = algo
        return algo

    def dgrad(self, gy, x, w, spec: ConvSpec, mf) -> torch.Tensor:
        st = self._state(x.device)
        h = st.handle
        fmt = cd.NCHW if mf == torch.contiguous_format else cd.NHWC
        fma = x.dtype == torch.float32 and not torch.backends.cudnn.allow_tf32
        conv = self._conv(spec, fma)
        dx = torch.empty_like(x, memory_format=mf)
        wc = cd.Filter.from_dlpack(
            w.detach().contiguous(memory_format=mf), fmt, handle=h
        )
        dyc = cd.Tensor.from_dlpack(gy, fmt, handle=h)
        dxc = cd.Tensor.from_dlpack(dx, fmt, handle=h)
        algo = self.algo
        if self.use_finds:
            key = (tuple(x.shape), tuple(w.shape), x.dtype, fmt, spec, fma)
            algo = self._found(h, wc, dyc, dxc, conv, key)
        size = h.get_convolution_backward_data_workspace_size(wc, dyc, dxc, conv, algo)
        ws = self._workspace(st, size or 0)
        h.convolution_backward_data(1.0, wc, dyc, conv, algo, ws, 0.0, dxc)
        return dx


class ArrayDgrad:
    """cudnn_rs.conv_input_grad, as cudnn_rs.torch calls it: PyTorch's tensors, stream
    and allocator; the default choice, or (measured) the measured tier
    (benchmark=True)."""

    def __init__(self, measured: bool) -> None:
        self.measured = measured
        self.name = "fn+ours measured" if measured else "fn+ours"
        self.how = (
            "conv_input_grad(benchmark=True)"
            if measured
            else "conv_input_grad (default choice)"
        )

    def settle(self) -> bool:
        return settle_builds(self.measured)

    def dgrad(self, gy, x, w, spec: ConvSpec, mf) -> torch.Tensor:
        args = (spec.stride, spec.padding, spec.dilation, spec.groups)
        if not self.measured:
            return cd.conv_input_grad(x.shape, w, gy, *args)
        return cd.conv_input_grad(x.shape, w, gy, *args, benchmark=True)


class OneCallDgrad:
    """The one-call API as a user writes it inside a Function:
    `cudnn_rs.convolution_backward_data` on PyTorch's tensors imported by DLPack, no
    algorithm given (the default choice), a fresh dx from cudnn_rs's memory, handed to
    PyTorch by DLPack; one descriptor per convolution and math mode (`OursDgrad`'s).
    Bound (the default): one handle per device on PyTorch's current stream, imports with
    `handle=`. The contract's spelling (`contract=True`), word for word: one
    `cudnn_rs.Handle(device=n)` per device (the legacy default stream, PyTorch's default
    current stream), imports without a handle."""

    name = "fn+ours one-call"

    def __init__(self, contract: bool = False) -> None:
        self.ours = OursDgrad(measured=False, cpu=False)
        self.contract = contract
        self.plain: dict[int, cd.Handle] = {}
        self.how = (
            "Handle(device=n) + from_dlpack(t) + convolution_backward_data(h, w, dy, "
            "conv, x_shape) + torch.from_dlpack"
            if contract
            else "convolution_backward_data(h, w, dy, conv, x_shape) + torch.from_dlpack"
        )

    def one_call(self, gy, x, w, spec: ConvSpec, mf) -> cd.Tensor:
        """The imports and the one-call API: cudnn_rs's dx."""
        fma = x.dtype == torch.float32 and not torch.backends.cudnn.allow_tf32
        conv = self.ours._conv(spec, fma)
        w = w.detach().contiguous(memory_format=mf)
        if self.contract:
            index = x.device.index or 0
            h = self.plain.get(index)
            if h is None:
                h = self.plain[index] = cd.Handle(device=index)
            wc, dyc = cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(gy)
            return cd.convolution_backward_data(h, wc, dyc, conv, tuple(x.shape))
        h = self.ours._state(x.device).handle
        fmt = cd.NCHW if mf == torch.contiguous_format else cd.NHWC
        wc = cd.Filter.from_dlpack(w, fmt, handle=h)
        dyc = cd.Tensor.from_dlpack(gy, fmt, handle=h)
        return cd.convolution_backward_data(
            h, wc, dyc, conv, tuple(x.shape), format=fmt
        )

    def dgrad(self, gy, x, w, spec: ConvSpec, mf) -> torch.Tensor:
        return torch.from_dlpack(self.one_call(gy, x, w, spec, mf))


class ConvFn(torch.autograd.Function):
    """A convolution whose input gradient comes from `backend`; weight and bias
    gradients from PyTorch."""

    @staticmethod
    def forward(ctx, x, weight, bias, spec: ConvSpec, backend):
        ctx.save_for_backward(x, weight)
        ctx.spec, ctx.backend, ctx.has_bias = spec, backend, bias is not None
        return torch.ops.aten.convolution(
            x,
            weight,
            bias,
            list(spec.stride),
            list(spec.padding),
            list(spec.dilation),
            False,
            [0] * spec.nd,
            spec.groups,
        )

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        spec = ctx.spec
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        mf = suggest_format(x, w)
        gy = gy.contiguous(memory_format=mf)
        gx = gw = gb = None
        if need_w or need_b:
            _, gw, gb = torch.ops.aten.convolution_backward(
                gy,
                x,
                w,
                [w.shape[0]] if ctx.has_bias else None,
                list(spec.stride),
                list(spec.padding),
                list(spec.dilation),
                False,
                [0] * spec.nd,
                spec.groups,
                [False, need_w, need_b and ctx.has_bias],
            )
        if need_x:
            gx = ctx.backend.dgrad(gy, x, w, spec, mf)
        return gx, gw, gb, None, None


class Dispatch:
    """Which backend the patched convolutions use now (None: PyTorch as it is)."""

    backend: object | None = None


def _patched_forward(self, x):
    backend = Dispatch.backend
    if backend is None:
        return type(self).forward(self, x)
    return ConvFn.apply(x, self.weight, self.bias, self._dgrad_spec, backend)


def patch_convs(model: nn.Module) -> int:
    """Routes every Conv2d/Conv3d (zero padding) through `Dispatch`; returns how many."""
    count = 0
    for m in model.modules():
        if not isinstance(m, (nn.Conv2d, nn.Conv3d)):
            continue
        if m.padding_mode != "zeros" or isinstance(m.padding, str):
            continue
        m._dgrad_spec = ConvSpec(
            tuple(m.stride), tuple(m.padding), tuple(m.dilation), m.groups
        )
        m.forward = types.MethodType(_patched_forward, m)
        count += 1
    return count


def disable_dropout(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0


# ---------------------------------------------------------------- one run


@dataclasses.dataclass
class Case:
    """One model in one variant: the converted model, its batch and optimizer."""

    model: nn.Module
    x: torch.Tensor
    labels: torch.Tensor
    opt: torch.optim.Optimizer


def make_case(base: nn.Module, x32: torch.Tensor, labels, v: Variant) -> Case:
    dt = getattr(torch, v.dtype)
    mf = memory_format(x32.dim(), v.channels_last)
    model = copy.deepcopy(base).to(dtype=dt)
    if v.channels_last:
        model = model.to(memory_format=mf)
    patch_convs(model)
    x = x32.to(dt).contiguous(memory_format=mf)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    return Case(model, x, labels, opt)


def train_step(case: Case) -> None:
    case.opt.zero_grad(set_to_none=True)
    out = case.model(case.x)
    loss = F.cross_entropy(out.float(), case.labels)
    loss.backward()
    case.opt.step()


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def step_ms(case: Case, backend, device: str) -> float:
    Dispatch.backend = backend
    try:
        sync(device)
        t0 = time.perf_counter()
        train_step(case)
        sync(device)
        return (time.perf_counter() - t0) * 1e3
    finally:
        Dispatch.backend = None


PAIRS = (
    ("ratio_default", "fn_ours"),
    ("ratio_measured", "fn_ours_measured"),
    ("ratio_one_call", "fn_one_call"),
)


def time_modes(case: Case, modes: dict, args) -> dict:
    """Warm-up steps per mode, then rounds of one step per mode (so that clock drift
    hits every mode alike; each after `--settle-steps` untimed ones); the median per
    mode. The ratios are paired: per round, our step over the step of the Function
    with PyTorch's dgrad in the same round, and the median of those (with the
    quartiles), so that a slow round (the host-bound steps vary by up to 30% between
    rounds) does not tilt one mode's median."""
    out: dict = {}
    for name, backend in modes.items():
        first = [step_ms(case, backend, args.device) for _ in range(args.warmup)]
        out[f"{name}_first_step_ms"] = first[0] if first else math.nan
        # The measured tier runs some layers with our kernel until cuDNN's engines for
        # them, compiled on a background thread, are built: wait for those, and let one
        # more step take them in and measure them, so that the rounds time what it
        # settles on.
        if hasattr(backend, "settle"):
            t0 = time.perf_counter()
            if backend.settle():
                step_ms(case, backend, args.device)
                out[f"{name}_settle_ms"] = (time.perf_counter() - t0) * 1e3
    times: dict[str, list[float]] = {name: [] for name in modes}
    for r in range(args.steps):
        names = list(modes)
        names = names[r % len(names) :] + names[: r % len(names)]
        for name in names:
            # Untimed steps first (`--settle-steps`): a loop runs one mode, while the
            # rounds hand each mode PyTorch's memory as another mode left it, which can
            # put the step's tensors at new addresses (CUDA graphs captured again).
            for _ in range(args.settle_steps):
                step_ms(case, modes[name], args.device)
            times[name].append(step_ms(case, modes[name], args.device))
    for name, ts in times.items():
        out[f"{name}_ms"] = statistics.median(ts)
    base = times.get("fn_torch")
    for key, name in PAIRS:
        if base is None or name not in times:
            continue
        ratios = [a / b for a, b in zip(times[name], base, strict=True) if b > 0]
        if not ratios:
            continue
        out[key] = statistics.median(ratios)
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        out[f"{key}_q1"], out[f"{key}_q3"] = q[0], q[2]
    return out


def gradients(model: nn.Module, x: torch.Tensor, cot: torch.Tensor, backend) -> dict:
    """Input and parameter gradients of sum(model(x) * cot), as float64."""
    model.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_(True)
    Dispatch.backend = backend
    try:
        out = model(x)
        (out.double() * cot).sum().backward()
    finally:
        Dispatch.backend = None
    grads = {"input": x.grad.double()}
    for name, p in model.named_parameters():
        if p.grad is not None:
            grads[name] = p.grad.double()
    return grads


def max_rel_err(got: dict, ref: dict) -> tuple[float, str]:
    """The largest relative error of the norm over the gradients. Gradients that are zero
    in exact arithmetic (a BatchNorm bias whose output only feeds a convolution and
    another BatchNorm, say) are skipped: in float64 their norm is rounding noise, below
    1e-6 of the largest gradient's."""
    norms = {name: r.norm().item() for name, r in ref.items()}
    floor = 1e-6 * max(norms.values(), default=0.0)
    worst, where = 0.0, ""
    for name, r in ref.items():
        g = got.get(name)
        if g is None:
            return math.inf, f"{name} missing"
        base = norms[name]
        if base <= floor:
            continue
        err = (g.float().double() - r).norm().item() / base
        if not err <= worst:  # NaN counts as worst
            worst, where = err, name
    return worst, where


def reference_grads(base, x32, cot) -> dict:
    ref_model = copy.deepcopy(base).double()
    disable_dropout(ref_model)
    patch_convs(ref_model)  # Dispatch.backend None: plain PyTorch
    return gradients(ref_model, x32.double(), cot, None)


def grad_check(case_model_base, x32, cot, ref, v: Variant, ours) -> dict:
    dt = getattr(torch, v.dtype)
    mf = memory_format(x32.dim(), v.channels_last)
    model = copy.deepcopy(case_model_base).to(dtype=dt)
    if v.channels_last:
        model = model.to(memory_format=mf)
    disable_dropout(model)
    patch_convs(model)
    x = x32.to(dt).contiguous(memory_format=mf)
    out: dict = {}
    err, where = max_rel_err(gradients(model, x, cot, ours), ref)
    out["grad_err"], out["grad_worst"] = err, where
    err_t, _ = max_rel_err(gradients(model, x, cot, None), ref)
    out["torch_grad_err"] = err_t
    kind = ("tf32" if v.tf32 else "f32") if v.dtype == "float32" else v.short
    out["grad_ok"] = err <= max(GRAD_TOLERANCE[kind], 2 * err_t)
    return out


def run_model_variant(mc: ModelCase, v: Variant, ctx: dict, args) -> dict:
    rec: dict = {
        "model": mc.name,
        "dtype": v.short,
        "layout": v.layout,
        "tf32": v.tf32 if v.dtype == "float32" else "",
    }
    base, x32, labels, cot, ref = ctx["bases"][mc.name]
    set_tf32(v.tf32)
    try:
        if not args.no_check:
            rec.update(grad_check(base, x32, cot, ref, v, ctx["modes"]["fn_ours"]))
            one_call = ctx["modes"].get("fn_one_call")
            if one_call is not None:
                checked = grad_check(base, x32, cot, ref, v, one_call)
                rec["one_call_grad_err"] = checked["grad_err"]
                rec["one_call_grad_ok"] = checked["grad_ok"]
        case = make_case(base, x32, labels, v)
        rec.update(time_modes(case, ctx["modes"], args))
    except Exception as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"[:160]
    finally:
        Dispatch.backend = None
        set_tf32(True)
    for key, _ in PAIRS:
        rec.setdefault(key, math.nan)
    return rec


def prepare_model(mc: ModelCase, device: str, tiny: bool, check: bool, gen) -> tuple:
    """The model's f32 weights, batch, labels, check cotangent and float64 gradients."""
    torch.manual_seed(0)
    base = mc.build().to(device)
    shape = mc.tiny_shape if tiny else mc.input_shape
    x32 = torch.randn(shape, generator=gen).to(device)
    labels = torch.randint(0, mc.classes, (shape[0],), generator=gen).to(device)
    cot = torch.randn((shape[0], mc.classes), generator=gen, dtype=torch.float64)
    cot = cot.to(device)
    ref = reference_grads(base, x32, cot) if check else {}
    return base, x32, labels, cot, ref


# ---------------------------------------------------------------- report


COLUMNS = [
    "model",
    "dtype",
    "layout",
    "tf32",
    "plain torch ms",
    "fn+torch dgrad ms",
    "fn+cudnn_rs default ms",
    "fn+cudnn_rs measured ms",
    "fn+cudnn_rs one-call ms",
    "ratio default",
    "ratio measured",
    "ratio one-call",
    "grad max rel err",
    "torch grad err",
    "check",
]


def _ms(v) -> str:
    return "-" if not isinstance(v, float) or math.isnan(v) else f"{v:.2f}"


def _ratio(rec: dict, key: str) -> str:
    v = rec.get(key)
    if not isinstance(v, float) or math.isnan(v):
        return "-"
    q1, q3 = rec.get(f"{key}_q1"), rec.get(f"{key}_q3")
    if isinstance(q1, float) and isinstance(q3, float):
        return f"{v:.3f} ({q1:.2f}-{q3:.2f})"
    return f"{v:.3f}"


def _err(v) -> str:
    return "-" if not isinstance(v, float) else f"{v:.1e}"


def table_row(rec: dict) -> list[str]:
    if "error" in rec:
        check = "error: " + rec["error"].replace("|", "/")
    elif "grad_ok" not in rec:
        check = "not checked"
    else:
        check = "ok" if rec["grad_ok"] else f"GRAD MISMATCH ({rec['grad_worst']})"
        if rec.get("one_call_grad_ok") is False:
            check += "; one-call GRAD MISMATCH"
    return [
        rec["model"],
        rec["dtype"],
        rec["layout"],
        str(rec["tf32"]),
        _ms(rec.get("plain_ms")),
        _ms(rec.get("fn_torch_ms")),
        _ms(rec.get("fn_ours_ms")),
        _ms(rec.get("fn_ours_measured_ms")),
        _ms(rec.get("fn_one_call_ms")),
        _ratio(rec, "ratio_default"),
        _ratio(rec, "ratio_measured"),
        _ratio(rec, "ratio_one_call"),
        _err(rec.get("grad_err")),
        _err(rec.get("torch_grad_err")),
        check,
    ]


def summary(rows: list[dict]) -> list[str]:
    lines = []
    for key, what, geo_target, worst_target in (
        ("ratio_default", "fn+cudnn_rs default / fn+torch dgrad", 1.02, 1.10),
        ("ratio_measured", "fn+cudnn_rs measured / fn+torch dgrad", 1.00, None),
        ("ratio_one_call", "fn+cudnn_rs one-call API / fn+torch dgrad", 1.02, 1.10),
    ):
        vals = [
            (r[key], r) for r in rows if isinstance(r.get(key), float) and r[key] > 0
        ]
        if not vals and key == "ratio_one_call":  # only with --one-call
            continue
        if not vals:
            lines.append(f"- {what}: no rows")
            continue
        geo = report.geo_mean(v for v, _ in vals)
        worst = sorted(vals, key=lambda t: -t[0])[:4]
        target = f"target geo-mean <= {geo_target}" + (
            f", worst <= {worst_target}" if worst_target else ""
        )
        lines.append(
            f"- {what}: geo-mean {geo:.3f} over {len(vals)} runs ({target}); worst: "
            + "; ".join(
                f"{r['model']} {r['dtype']} {r['layout']}"
                f"{' tf32' if r['tf32'] is True else ''} {v:.3f}"
                for v, r in worst
            )
        )
    bad = [
        r
        for r in rows
        if "error" in r
        or r.get("grad_ok") is False
        or r.get("one_call_grad_ok") is False
    ]
    lines.append(f"- runs with an error or a gradient mismatch: {len(bad)}")
    return lines


def markdown(rows: list[dict], header: list[str]) -> str:
    note = (
        "Step times in ms (median). Ratios: per round, the step time over fn+torch "
        "dgrad's in the same round; the median over rounds (quartiles in brackets). "
        "Gradient errors: largest relative error of the norm vs float64, for the cudnn_rs "
        "Function and for plain PyTorch in the same dtype."
    )
    return report.markdown(header, COLUMNS, map(table_row, rows), note, summary(rows))


# ---------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="2 variants (f32 NCHW, bf16 CL), 5 steps"
    )
    ap.add_argument("--csv", default="train.csv")
    ap.add_argument("--md", default=None, help="also write the markdown table here")
    ap.add_argument(
        "--models",
        default="",
        help="comma-separated model names, or `more` (other families) or `all`; "
        "default: resnet50, mobilenet_v3_large, convnext_tiny, r3d_18",
    )
    ap.add_argument(
        "--variants",
        default="",
        help="comma-separated type:layout (f32, tf32, f16, bf16; nchw, cl); default all",
    )
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-check", action="store_true", help="skip the gradient check")
    ap.add_argument(
        "--settle-steps",
        type=int,
        default=0,
        help="untimed steps of a mode before its timed step in each round (as a loop "
        "that runs one mode finds its memory; default 0)",
    )
    ap.add_argument(
        "--one-call",
        action="store_true",
        help="also the Function with the one-call API (convolution_backward_data with "
        "no algorithm, a fresh dx from cudnn_rs handed to PyTorch by DLPack)",
    )
    ap.add_argument(
        "--one-call-spelling",
        choices=("bound", "contract"),
        default="bound",
        help="the one-call Function's spelling: bound (a handle on PyTorch's current "
        "stream, imports with handle=) or contract (Handle(device=n) and imports "
        "without a handle, as the Python contract writes them)",
    )
    ap.add_argument(
        "--max-minutes",
        type=float,
        default=8.0,
        help="start no new run after this long (the results so far are written)",
    )
    ap.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="cpu: logic test on cudnn_rs's CPU device with tiny inputs",
    )
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device (use --device cpu for a logic test)", file=sys.stderr)
        return 2
    if args.quick:
        args.steps = min(args.steps, 5)
        args.warmup = min(args.warmup, 2)
    cpu = args.device == "cpu"
    if cpu:
        args.steps, args.warmup = min(args.steps, 2), min(args.warmup, 1)
    try:
        models = pick_models(args.models)
        variants = pick_variants(args.variants) if args.variants else VARIANTS
    except ValueError as exc:
        ap.error(str(exc))
    if args.quick:
        variants = QUICK_VARIANTS

    if cpu or not hasattr(cd, "conv_input_grad"):
        ours = OursDgrad(measured=False, cpu=cpu)
        ours_measured = OursDgrad(measured=True, cpu=cpu)
    else:
        ours, ours_measured = ArrayDgrad(False), ArrayDgrad(True)
    modes = {
        "plain": None,
        "fn_torch": TorchDgrad(),
        "fn_ours": ours,
        "fn_ours_measured": ours_measured,
    }
    if args.one_call and not cpu:
        modes["fn_one_call"] = OneCallDgrad(args.one_call_spelling == "contract")
    gpu = torch.cuda.get_device_name() if not cpu else "cpu"
    header = [
        f"# training steps: {gpu}, torch {torch.__version__}, torchvision "
        f"{torchvision.__version__}, cuDNN {torch.backends.cudnn.version()}",
        f"fn+cudnn_rs default = {ours.how}; measured = {ours_measured.how}; "
        f"{args.steps} rounds of one step per mode after {args.warmup} warm-up steps "
        "per mode; ratios paired per round",
    ]
    if "fn_one_call" in modes:
        header.append(f"fn+cudnn_rs one-call = {modes['fn_one_call'].how}")
    print("\n".join(header), flush=True)

    start = time.perf_counter()
    gen = torch.Generator().manual_seed(5)
    bases: dict = {}
    for mc in models:
        try:
            bases[mc.name] = prepare_model(mc, args.device, cpu, not args.no_check, gen)
        except Exception as exc:
            print(f"{mc.name}: could not prepare: {type(exc).__name__}: {exc}")
    ctx = {"bases": bases, "modes": modes}
    rows: list[dict] = []
    plan = [(v, mc) for v in variants for mc in models if mc.name in bases]
    for i, (v, mc) in enumerate(plan):
        if time.perf_counter() - start > args.max_minutes * 60:
            print(
                f"time budget of {args.max_minutes} min spent: {len(plan) - i} runs left"
            )
            break
        rec = run_model_variant(mc, v, ctx, args)
        rows.append(rec)
        report.write_csv(args.csv, rows)
        print(
            f"[{i + 1}/{len(plan)} {time.perf_counter() - start:5.0f}s] "
            + " | ".join(table_row(rec)),
            flush=True,
        )
    text = markdown(rows, header)
    print("\n" + text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    print(f"total {time.perf_counter() - start:.0f} s; csv: {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
