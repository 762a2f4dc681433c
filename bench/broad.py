"""Broad layer suite for issue 14 (part 4): cudnn_rs's backward-data beside PyTorch and
cudnn-frontend on many layer families, same tensors, same run.

Families (each at a realistic batch and at batch 1): depthwise 3x3 and 7x7, grouped 3x3
(32 groups), dilated 3x3 (2 and 4), the 7x7 stride-2 stem with 3 input channels, 1x1
with >= 1024 channels at small spatial size, 1x1 stride-2 downsample, non-square
kernels (1x7, 7x1, 5x3) and a 3-d 3x3x3 layer. Configurations per layer: f32 without
TF32 (NCHW and NHWC), TF32 NHWC, f16 and bf16 NHWC, and f16 NCHW on some layers.

Per row, GPU time per call (ms; 20 calls back to back between two CUDA events, median
of --trials, after warm-up calls, as in bench/perf.py) of:
  torch         PyTorch's dgrad, torch.backends.cudnn.benchmark = False
  torch bench   the same with benchmark = True
  fe heur       cudnn-frontend's heuristic plan (modes A + FALLBACK)
  fe autotune   fastest correct plan of modes A + B + FALLBACK (each plan timed here)
  ours default  cudnn_rs explicit API with the library's untimed default choice
  ours measured cudnn_rs with Handle(benchmark=True) (or, on builds without it, the
                faster of find_convolution_backward_data_engine / _algorithm)
  one-call      cudnn_rs.convolution_backward_data (allocates dx each call)
No-TF32 f32 rows run every system at FMA math (PyTorch allow_tf32=False, frontend plans
with the TENSOR_CORE note deselected, cudnn_rs MathType.Fma).
Also per row: PyTorch's kernel(s) for its default call (torch.profiler), the first-sight
cost (wall time of the first call of a new problem) of ours measured vs PyTorch's
benchmark mode, and a check of every cudnn_rs result against PyTorch's dgrad.

Usage (GPU machine):
  python bench/broad.py --csv broad.csv --png broad.png --md broad.md
  python bench/broad.py --quick            # a subset, about a minute
  python bench/broad.py --device cpu       # logic test on cudnn_rs's CPU device, tiny
                                           # shapes; the times mean nothing
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence

import report
import torch

import cudnn_rs as cd

try:
    import cudnn  # nvidia-cudnn-frontend
except ImportError:  # optional: its columns stay empty
    cudnn = None

DEFAULT_MARKER = getattr(cd, "DefaultAlgo", None)
DEFAULT_LABEL = "DefaultAlgo" if DEFAULT_MARKER is not None else "BestEngine"
if DEFAULT_MARKER is None:
    DEFAULT_MARKER = cd.BestEngine


# ---------------------------------------------------------------- the suite


@dataclasses.dataclass(frozen=True)
class Layer:
    name: str
    c: int  # input channels (dx)
    k: int  # output channels (dy)
    spatial: tuple[int, ...]  # input spatial extent (dx)
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    batch: int  # the realistic batch; every layer also runs at batch 1
    half_nchw: bool = False  # add an f16 NCHW row

    @property
    def nd(self) -> int:
        return len(self.spatial)

    def out_spatial(self) -> tuple[int, ...]:
        return tuple(
            (i + 2 * p - d * (r - 1) - 1) // s + 1
            for i, r, s, p, d in zip(
                self.spatial,
                self.kernel,
                self.stride,
                self.padding,
                self.dilation,
                strict=True,
            )
        )


def _l2(name, c, k, hw, rs, st=1, pad=None, dil=1, groups=1, batch=32, half_nchw=False):
    rs = rs if isinstance(rs, tuple) else (rs, rs)
    pad = tuple(dil * (r // 2) for r in rs) if pad is None else pad
    pad = pad if isinstance(pad, tuple) else (pad, pad)
    return Layer(
        name, c, k, (hw, hw), rs, (st, st), pad, (dil, dil), groups, batch, half_nchw
    )


LAYERS = [
    _l2("dw3x3_c256_28", 256, 256, 28, 3, groups=256, half_nchw=True),
    _l2("dw7x7_c384_14", 384, 384, 14, 7, groups=384, half_nchw=True),
    _l2("grp32_3x3_c256_28", 256, 256, 28, 3, groups=32, half_nchw=True),
    _l2("dil2_3x3_c256_28", 256, 256, 28, 3, dil=2),
    _l2("dil4_3x3_c256_28", 256, 256, 28, 3, dil=4),
    _l2("stem7x7s2_c3_224", 3, 64, 224, 7, st=2, half_nchw=True),
    _l2("1x1_2048to512_7", 2048, 512, 7, 1, half_nchw=True),
    _l2("1x1_1024to256_14", 1024, 256, 14, 1),
    _l2("1x1s2_256to512_56", 256, 512, 56, 1, st=2),
    _l2("1x7_c192_17", 192, 192, 17, (1, 7)),
    _l2("7x1_c192_17", 192, 192, 17, (7, 1)),
    _l2("5x3_c128_28", 128, 128, 28, (5, 3)),
    Layer(
        "3d_3x3x3_c64_16x56",
        64,
        64,
        (16, 56, 56),
        (3, 3, 3),
        (1, 1, 1),
        (1, 1, 1),
        (1, 1, 1),
        1,
        8,
        half_nchw=True,
    ),
]
QUICK_LAYERS = (
    "dw3x3_c256_28",
    "dw7x7_c384_14",
    "dil2_3x3_c256_28",
    "stem7x7s2_c3_224",
    "1x1_2048to512_7",
    "3d_3x3x3_c64_16x56",
)


@dataclasses.dataclass(frozen=True)
class Config:
    dtype: str  # torch dtype name
    nhwc: bool
    tf32: bool  # only meaningful for float32

    @property
    def label(self) -> str:
        short = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[self.dtype]
        return (
            f"{short} {'NHWC' if self.nhwc else 'NCHW'}{' tf32' if self.tf32 else ''}"
        )

    @property
    def check_kind(self) -> str:
        if self.dtype == "float32":
            return "tf32" if self.tf32 else "f32"
        return {"float16": "f16", "bfloat16": "bf16"}[self.dtype]


CONFIGS = [
    Config("float32", False, False),
    Config("float32", True, False),
    Config("float32", True, True),
    Config("float16", True, True),
    Config("bfloat16", True, True),
]
HALF_NCHW = Config("float16", False, True)
QUICK_CONFIGS = (CONFIGS[0], CONFIGS[1], CONFIGS[3], CONFIGS[4])
# Relative error of the norm, ours vs PyTorch's dgrad in f32 without TF32.
TOLERANCE = {"f64": 1e-12, "f32": 1e-4, "tf32": 1e-2, "f16": 1e-2, "bf16": 3e-2}


def shrink(layer: Layer) -> Layer:
    """A tiny version of a layer for the CPU logic test (same kind of parameters)."""
    if layer.groups == layer.c:
        c = k = g = 8
    elif layer.groups > 1:
        g = min(layer.groups, 4)
        c = k = 2 * g
    else:
        c, k, g = min(layer.c, 12), min(layer.k, 8), 1
    spatial = tuple(
        min(s, 4 if layer.nd == 3 and i == 0 else 11)
        for i, s in enumerate(layer.spatial)
    )
    return dataclasses.replace(layer, c=c, k=k, groups=g, spatial=spatial, batch=2)


# ---------------------------------------------------------------- timing


class Timer:
    """GPU time per call: `reps` calls back to back between two CUDA events, median of
    `trials` (bench/perf.py's convention); on the CPU, wall time the same way."""

    def __init__(self, device: str, reps: int, trials: int, warmup: int = 5) -> None:
        self.cuda = device == "cuda"
        self.reps, self.trials, self.warmup = reps, trials, warmup

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def per_call_ms(
        self,
        f: Callable[[], object],
        reps: int | None = None,
        trials: int | None = None,
        warmup: int | None = None,
    ) -> float:
        reps = reps or self.reps
        trials = trials or self.trials
        for _ in range(self.warmup if warmup is None else warmup):
            f()
        self.sync()
        times = []
        for _ in range(trials):
            if self.cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(reps):
                    f()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / reps)
            else:
                t0 = time.perf_counter()
                for _ in range(reps):
                    f()
                times.append((time.perf_counter() - t0) * 1e3 / reps)
        return statistics.median(times)

    def first_call_ms(self, f: Callable[[], object]) -> float:
        """Wall time of one call, synchronised: the first sight of a problem."""
        self.sync()
        t0 = time.perf_counter()
        f()
        self.sync()
        return (time.perf_counter() - t0) * 1e3


# ---------------------------------------------------------------- one row's tensors


@dataclasses.dataclass
class Problem:
    layer: Layer
    n: int
    cfg: Config
    w: torch.Tensor
    dy: torch.Tensor
    x: torch.Tensor  # shape and memory format of dx (its values are never read)
    ref: torch.Tensor  # PyTorch's dgrad in f32 without TF32, from the same values

    @property
    def memory_format(self) -> torch.memory_format:
        if not self.cfg.nhwc:
            return torch.contiguous_format
        return torch.channels_last_3d if self.layer.nd == 3 else torch.channels_last

    def new_dx(self) -> torch.Tensor:
        return torch.empty_like(self.x, memory_format=self.memory_format)


def torch_dgrad(dy, x, w, layer: Layer) -> torch.Tensor:
    return torch.ops.aten.convolution_backward(
        dy,
        x,
        w,
        None,
        list(layer.stride),
        list(layer.padding),
        list(layer.dilation),
        False,
        [0] * layer.nd,
        layer.groups,
        [True, False, False],
    )[0]


def set_torch_flags(tf32: bool, benchmark: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = benchmark


def make_problem(
    layer: Layer, n: int, cfg: Config, device: str, gen: torch.Generator
) -> Problem:
    dt = getattr(torch, cfg.dtype)
    nd = layer.nd
    mf = (
        (torch.channels_last_3d if nd == 3 else torch.channels_last)
        if cfg.nhwc
        else torch.contiguous_format
    )
    fan = layer.k * math.prod(layer.kernel) // layer.groups
    w32 = torch.randn(
        (layer.k, layer.c // layer.groups, *layer.kernel), generator=gen
    ) / math.sqrt(fan)
    dy32 = torch.randn((n, layer.k, *layer.out_spatial()), generator=gen)
    w = w32.to(device, dt).contiguous(memory_format=mf)
    dy = dy32.to(device, dt).contiguous(memory_format=mf)
    x = torch.empty((n, layer.c, *layer.spatial), device=device, dtype=dt).contiguous(
        memory_format=mf
    )
    set_torch_flags(tf32=False, benchmark=False)
    # In a thread of its own: for the f32 rows without TF32 the reference is the row's
    # own problem, and PyTorch keeps plans per thread, so computing it here would make
    # PyTorch's first call timed later a cached one.
    ref = off_thread(
        lambda: torch_dgrad(dy.float(), x.float(), w.float(), layer).float()
    )
    return Problem(layer, n, cfg, w, dy, x, ref)


def off_thread(fn: Callable[[], torch.Tensor]) -> torch.Tensor:
    """`fn()` run in a new thread (PyTorch's plans it makes stay in that thread's
    cache); its exception, if any, raised here."""
    out: dict = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    diff = (got.float() - ref).norm().item()
    base = ref.norm().item()
    return diff / base if base > 0 else diff


# ---------------------------------------------------------------- PyTorch peers


def short_kernel(name: str) -> str:
    """A readable kernel name: no return type, template arguments or parameters; PyTorch's
    own (non-cuDNN) kernels marked `aten:`."""
    native = "at::native" in name
    s = name[5:] if name.startswith("void ") else name
    for stop in ("<", "("):
        i = s.find(stop)
        if i > 0:
            s = s[:i]
    s = s.rsplit("::", 1)[-1].strip()
    s = s[:48]
    return f"aten:{s}" if native else s


def torch_kernels(f: Callable[[], object], timer: Timer) -> str:
    """The GPU kernels of one call of `f`, by the profiler (short names, '+'-joined)."""
    if not timer.cuda:
        return "n/a (cpu)"
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    f()
    timer.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        f()
        timer.sync()
    names: list[str] = []
    for ev in prof.events():
        if getattr(ev, "device_type", None) != DeviceType.CUDA:
            continue
        if ev.name.startswith(("Memset", "Memcpy", "[")):
            continue
        k = short_kernel(ev.name)
        if k not in names:
            names.append(k)
    return "+".join(names) if names else "?"


def peer_torch(p: Problem, timer: Timer, profile_kernels: bool) -> dict:
    out: dict = {}
    layer, tf32 = p.layer, p.cfg.tf32

    def call():
        return torch_dgrad(p.dy, p.x, p.w, layer)

    set_torch_flags(tf32, benchmark=False)
    out["torch_first_ms"] = timer.first_call_ms(call)
    out["torch_ms"] = timer.per_call_ms(call)
    if profile_kernels:
        try:
            out["torch_kernel"] = torch_kernels(call, timer)
        except Exception as err:  # the profiler is optional
            out["torch_kernel"] = f"? ({type(err).__name__})"
    out.update(in_fresh_thread(lambda: torch_benchmark_mode(call, p, timer)))
    return out


def torch_benchmark_mode(call: Callable[[], object], p: Problem, timer: Timer) -> dict:
    """PyTorch with cudnn.benchmark = True. Its plan cache (cuDNN v8 API) is per thread
    and keyed without the benchmark flag, so in the thread that already ran this problem
    heuristically benchmark mode would only replay the cached heuristic plan: this runs
    in a fresh thread, where the first call of the problem runs PyTorch's cudnnFind."""
    out: dict = {}
    set_torch_flags(p.cfg.tf32, benchmark=True)
    try:
        warm_thread_handle(p.layer.nd, p.dy)
        out["torch_bench_first_ms"] = timer.first_call_ms(call)
        out["torch_bench_ms"] = timer.per_call_ms(call)
    finally:
        set_torch_flags(p.cfg.tf32, benchmark=False)
    return out


def warm_thread_handle(nd: int, like: torch.Tensor) -> None:
    """Makes this thread's cuDNN handle (PyTorch keeps one per thread) by a call of a tiny
    other problem on `like`'s device and dtype, so that a first-sight time after it is
    the search alone."""
    tiny = torch.zeros((1, 1, *[3] * nd), device=like.device, dtype=like.dtype)
    tiny_w = torch.zeros((1, 1, *[1] * nd), device=like.device, dtype=like.dtype)
    torch.ops.aten.convolution_backward(
        tiny,
        tiny,
        tiny_w,
        None,
        [1] * nd,
        [0] * nd,
        [1] * nd,
        False,
        [0] * nd,
        1,
        [True, False, False],
    )


def in_fresh_thread(fn: Callable[[], dict]) -> dict:
    """Runs `fn` in a new thread (a fresh thread-local PyTorch plan cache)."""
    result: dict = {}

    def target():
        try:
            result.update(fn())
        except Exception as exc:
            result["torch_bench_err"] = f"{type(exc).__name__}: {exc}"[:100]

    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    return result


# ---------------------------------------------------------------- cudnn-frontend peers


class Frontend:
    """cudnn-frontend's conv_dgrad graph on PyTorch's stream: its heuristic plan, and every
    plan of heuristic modes A, B and FALLBACK timed (the autotune a user would run)."""

    def __init__(self, max_plans: int) -> None:
        self.handle = cudnn.create_handle()
        cudnn.set_stream(
            handle=self.handle, stream=torch.cuda.current_stream().cuda_stream
        )
        self.max_plans = max_plans
        self.types = {
            torch.float32: cudnn.data_type.FLOAT,
            torch.float16: cudnn.data_type.HALF,
            torch.bfloat16: cudnn.data_type.BFLOAT16,
        }

    def _graph(self, p: Problem, dx: torch.Tensor, modes: Sequence):
        io = self.types[p.dy.dtype]
        g = cudnn.pygraph(
            io_data_type=io,
            intermediate_data_type=cudnn.data_type.FLOAT,
            compute_data_type=cudnn.data_type.FLOAT,
            handle=self.handle,
        )
        tw = g.tensor(
            name="w", dim=list(p.w.size()), stride=list(p.w.stride()), data_type=io
        )
        tdy = g.tensor(
            name="dy", dim=list(p.dy.size()), stride=list(p.dy.stride()), data_type=io
        )
        tdx = g.conv_dgrad(
            name="dgrad",
            loss=tdy,
            filter=tw,
            padding=list(p.layer.padding),
            stride=list(p.layer.stride),
            dilation=list(p.layer.dilation),
        )
        tdx.set_output(True).set_dim(list(dx.size())).set_stride(
            list(dx.stride())
        ).set_data_type(io)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans(list(modes))
        if p.cfg.dtype == "float32" and not p.cfg.tf32:
            g.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE])
        return g, {tw: p.w, tdy: p.dy, tdx: dx}

    def _workspace(self, nbytes: int) -> torch.Tensor:
        return torch.empty(max(nbytes, 1), device="cuda", dtype=torch.uint8)

    def heuristic(self, p: Problem) -> tuple[Callable[[], object], torch.Tensor]:
        dx = p.new_dx()
        g, pack = self._graph(p, dx, [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        ws = self._workspace(g.get_workspace_size())
        return (lambda: g.execute(pack, ws, handle=self.handle)), dx

    def autotune(self, p: Problem, timer: Timer) -> dict:
        """Builds every plan, drops those that fail or give a wrong dx, times the rest
        briefly, then times the fastest with the full protocol."""
        dx = p.new_dx()
        modes = [cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK]
        g, pack = self._graph(p, dx, modes)
        count = g.get_execution_plan_count()
        tol = TOLERANCE[p.cfg.check_kind]
        candidates = []
        built = wrong = 0
        for i in range(min(count, self.max_plans)):
            try:
                g.build_plan_at_index(i)
                ws = self._workspace(g.get_workspace_size_plan_at_index(i))

                def run(i=i, ws=ws):
                    return g.execute_plan_at_index(pack, ws, i, handle=self.handle)

                dx.fill_(float("nan"))
                run()
                timer.sync()
            except Exception:
                continue  # a plan that does not build or run is no candidate
            built += 1
            if not rel_err(dx, p.ref) <= tol:
                wrong += 1
                continue
            # A short timing to rank the plans (the check call above warmed it up).
            ms = timer.per_call_ms(run, reps=3, trials=2, warmup=1)
            candidates.append((ms, i, run))
        out = {"fe_plans": count, "fe_plans_built": built, "fe_plans_wrong": wrong}
        if not candidates:
            out["fe_autotune_err"] = f"no correct plan of {count}"
            return out
        _, i, run = min(candidates, key=lambda c: c[0])
        out["fe_autotune_ms"] = timer.per_call_ms(run)
        try:
            out["fe_autotune_plan"] = g.get_plan_name_at_index(i)
        except Exception:
            out["fe_autotune_plan"] = f"plan{i}"
        return out


def peer_frontend(fe: Frontend | None, p: Problem, timer: Timer) -> dict:
    if fe is None:
        return {}
    out: dict = {}
    try:
        run, dx = fe.heuristic(p)
        run()
        timer.sync()
        err = rel_err(dx, p.ref)
        out["fe_heur_ms"] = timer.per_call_ms(run)
        if not err <= TOLERANCE[p.cfg.check_kind]:
            out["fe_heur_err"] = f"wrong dx (rel {err:.1e})"
    except Exception as exc:
        out["fe_heur_err"] = f"{type(exc).__name__}: {exc}"[:100]
    try:
        out.update(fe.autotune(p, timer))
    except Exception as exc:
        out["fe_autotune_err"] = f"{type(exc).__name__}: {exc}"[:100]
    return out


# ---------------------------------------------------------------- cudnn_rs


class Ours:
    """cudnn_rs on PyTorch's memory (imported by DLPack, no copy), PyTorch's stream."""

    def __init__(self, device: str) -> None:
        self.cpu = device == "cpu"
        self.h = self._handle(benchmark=False)
        self.measured_how = f"Handle(benchmark=True) + {DEFAULT_LABEL}"
        try:
            self.hm: cd.Handle | None = self._handle(benchmark=True)
        except TypeError:  # a build without the option: the finds, as perf.py uses them
            self.hm = None
            self.measured_how = "best of find_engine[0], find_algorithm[0]"

    def _handle(self, benchmark: bool) -> cd.Handle:
        kwargs: dict = {"benchmark": True} if benchmark else {}
        if self.cpu:
            return cd.Handle(device="cpu", **kwargs)
        return cd.Handle(
            device=torch.cuda.current_device(),
            stream=torch.cuda.current_stream(),
            **kwargs,
        )

    @staticmethod
    def conv(p: Problem):
        fma = p.cfg.dtype == "float32" and not p.cfg.tf32
        return cd.ConvolutionDescriptor(
            padding=p.layer.padding,
            stride=p.layer.stride,
            dilation=p.layer.dilation,
            groups=p.layer.groups,
            math_type=cd.MathType.Fma if fma else cd.MathType.Default,
            comp_type=cd.f32,
        )

    def operands(self, p: Problem, h: cd.Handle, dx: torch.Tensor):
        fmt = cd.NHWC if p.cfg.nhwc else cd.NCHW
        return (
            cd.Filter.from_dlpack(p.w, format=fmt, handle=h),
            cd.Tensor.from_dlpack(p.dy, format=fmt, handle=h),
            cd.Tensor.from_dlpack(dx, format=fmt, handle=h),
        )

    @staticmethod
    def _explicit(h, w, dy, dxc, conv, algo):
        size = h.get_convolution_backward_data_workspace_size(w, dy, dxc, conv, algo)
        ws = cd.Workspace(h, size) if size else None
        return lambda: h.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dxc)

    def default(self, p: Problem, timer: Timer) -> dict:
        dx = p.new_dx()
        w, dy, dxc = self.operands(p, self.h, dx)
        conv = self.conv(p)
        holder: list = []

        def first():
            holder.append(self._explicit(self.h, w, dy, dxc, conv, DEFAULT_MARKER()))
            holder[0]()

        out = {"ours_default_first_ms": timer.first_call_ms(first)}
        return out | self._check_and_time("ours_default", holder[0], dx, p, timer)

    def measured(self, p: Problem, timer: Timer) -> dict:
        dx = p.new_dx()
        conv = self.conv(p)
        holder: list = []
        if self.hm is not None:
            w, dy, dxc = self.operands(p, self.hm, dx)

            def first():
                holder.append(
                    self._explicit(self.hm, w, dy, dxc, conv, DEFAULT_MARKER())
                )
                holder[0]()

        else:
            w, dy, dxc = self.operands(p, self.h, dx)

            def first():
                choices = []
                for find in (
                    self.h.find_convolution_backward_data_engine,
                    self.h.find_convolution_backward_data_algorithm,
                ):
                    try:
                        best = find(w, dy, dxc, conv)[0]
                    except cd.CudnnRsError:  # e.g. no legacy algorithm for the row
                        continue
                    choices.append((best.time, best))
                if not choices:
                    raise RuntimeError("neither find returned a choice")
                best = min(choices, key=lambda c: c[0])[1]
                holder.append(self._explicit(self.h, w, dy, dxc, conv, best))
                holder[0]()

        reports = hasattr(self.hm, "last_find_timing")
        before = self.hm.last_find_timing() if reports else None
        out = {"ours_measured_first_ms": timer.first_call_ms(first)}
        # A problem measured before (e.g. the NHWC twin of an NCHW row) runs no find:
        # the handle's report is then the earlier one's, and is not this row's.
        if reports and self.hm.last_find_timing() != before:
            # How many configurations the first sight timed, and how many it cut.
            out["ours_measured_timed"], out["ours_measured_cut"] = (
                self.hm.last_find_report()
            )
            # Where the first sight's measurement spent its time (ms).
            for part, ms in self.hm.last_find_timing().items():
                out[f"ours_find_{part}_ms"] = ms
        # Layers the measured tier runs with our kernel until cuDNN's engines for them,
        # compiled on a background thread, are built: wait, then time what it settles
        # on (the next call takes the built plans in and measures them).
        hm = self.hm
        if (
            hm is not None
            and hasattr(hm, "background_builds")
            and hm.background_builds()[0]
        ):
            t0 = time.perf_counter()
            hm.wait_background_builds(120_000.0)
            holder[0] = self._explicit(hm, w, dy, dxc, conv, DEFAULT_MARKER())
            holder[0]()
            out["ours_measured_settle_ms"] = (time.perf_counter() - t0) * 1e3
        return out | self._check_and_time("ours_measured", holder[0], dx, p, timer)

    def one_call(self, p: Problem, timer: Timer) -> dict:
        w, dy, _ = self.operands(p, self.h, p.new_dx())
        conv = self.conv(p)
        fmt = cd.NHWC if p.cfg.nhwc else cd.NCHW
        shape = tuple(p.x.shape)

        def call():
            return cd.convolution_backward_data(self.h, w, dy, conv, shape, format=fmt)

        result = call()
        timer.sync()
        dx = torch.from_dlpack(result)
        out = self._check(dx, p, "one_call")
        out["one_call_ms"] = timer.per_call_ms(call)
        return out

    def _check_and_time(self, key, run, dx, p, timer) -> dict:
        timer.sync()
        out = self._check(dx, p, key)
        out[f"{key}_ms"] = timer.per_call_ms(run)
        return out

    @staticmethod
    def _check(dx: torch.Tensor, p: Problem, key: str) -> dict:
        err = rel_err(dx, p.ref)
        out = {f"{key}_relerr": err}
        if not err <= TOLERANCE[p.cfg.check_kind]:
            out[f"{key}_mismatch"] = True
        return out


def ours_all(ours: Ours, p: Problem, timer: Timer) -> dict:
    out: dict = {}
    for key, run in (
        ("ours_default", ours.default),
        ("ours_measured", ours.measured),
        ("one_call", ours.one_call),
    ):
        try:
            out.update(run(p, timer))
        except Exception as exc:
            out[f"{key}_err"] = f"{type(exc).__name__}: {exc}"[:100]
    return out


# ---------------------------------------------------------------- one row


PEERS = ("torch_ms", "torch_bench_ms", "fe_heur_ms", "fe_autotune_ms")
PEER_NAMES = {
    "torch_ms": "torch",
    "torch_bench_ms": "torch bench",
    "fe_heur_ms": "fe heur",
    "fe_autotune_ms": "fe autotune",
}


def derive(rec: dict) -> None:
    """Ratios, the best peer and the row's warnings."""
    nan = math.nan
    peers = {
        k: rec[k]
        for k in PEERS
        if isinstance(rec.get(k), float) and not math.isnan(rec[k])
    }
    best_key = min(peers, key=peers.get) if peers else None
    rec["best_peer"] = PEER_NAMES[best_key] if best_key else ""
    rec["best_peer_ms"] = peers[best_key] if best_key else nan
    torch_ms = rec.get("torch_ms", nan)
    rec["ratio_default"] = (
        rec.get("ours_default_ms", nan) / torch_ms if torch_ms else nan
    )
    rec["ratio_measured"] = (
        rec.get("ours_measured_ms", nan) / rec["best_peer_ms"] if best_key else nan
    )
    t_first = rec.get("torch_bench_first_ms", nan)
    rec["ratio_first_sight"] = (
        rec.get("ours_measured_first_ms", nan) / t_first if t_first else nan
    )
    warns = [
        k.removesuffix("_mismatch") + " wrong" for k in rec if k.endswith("_mismatch")
    ]
    warns += [k.removesuffix("_err") + " error" for k in rec if k.endswith("_err")]
    rec["check"] = "; ".join(warns) if warns else "ok"


def row_record(layer: Layer, n: int, cfg: Config) -> dict:
    """A row's identifying columns."""
    return {
        "layer": layer.name,
        "batch": n,
        "dtype": cfg.dtype,
        "layout": "NHWC" if cfg.nhwc else "NCHW",
        "tf32": cfg.tf32 if cfg.dtype == "float32" else "",
    }


def run_row(layer: Layer, n: int, cfg: Config, ctx: dict) -> dict:
    rec = row_record(layer, n, cfg)
    timer: Timer = ctx["timer"]
    try:
        p = make_problem(layer, n, cfg, ctx["device"], ctx["gen"])
    except Exception as exc:
        rec["row_err"] = f"{type(exc).__name__}: {exc}"[:120]
        derive(rec)
        return rec
    try:
        rec.update(peer_torch(p, timer, ctx["profile"]))
    except Exception as exc:
        rec["torch_err"] = f"{type(exc).__name__}: {exc}"[:100]
    rec.update(peer_frontend(ctx["fe"], p, timer))
    rec.update(ours_all(ctx["ours"], p, timer))
    set_torch_flags(True, False)
    derive(rec)
    return rec


# ---------------------------------------------------------------- report


def fmt_ms(v) -> str:
    if not isinstance(v, float) or math.isnan(v):
        return "-"
    return f"{v:.4f}" if v < 10 else f"{v:.1f}"


def fmt_ratio(v) -> str:
    return "-" if not isinstance(v, float) or math.isnan(v) else f"{v:.3f}"


def cell(rec: dict, key: str) -> str:
    if f"{key}_err" in rec and not isinstance(rec.get(f"{key}_ms"), float):
        return "err: " + rec[f"{key}_err"].replace("|", "/")[:40]
    v = fmt_ms(rec.get(f"{key}_ms"))
    return v + " (!)" if rec.get(f"{key}_mismatch") else v


COLUMNS = [
    "layer",
    "batch",
    "dtype",
    "layout",
    "tf32",
    "torch",
    "torch bench",
    "fe heur",
    "fe autotune",
    "ours default",
    "ours measured",
    "one-call",
    "ratio default/torch",
    "ratio measured/best peer",
    "best peer",
    "torch kernel",
    "check",
]


def table_row(rec: dict) -> list[str]:
    short = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
    if "row_err" in rec:
        return (
            [
                rec["layer"],
                str(rec["batch"]),
                short[rec["dtype"]],
                rec["layout"],
                str(rec["tf32"]),
            ]
            + ["-"] * 11
            + ["err: " + rec["row_err"][:60]]
        )
    return [
        rec["layer"],
        str(rec["batch"]),
        short[rec["dtype"]],
        rec["layout"],
        str(rec["tf32"]),
        cell(rec, "torch"),
        cell(rec, "torch_bench"),
        cell(rec, "fe_heur"),
        cell(rec, "fe_autotune"),
        cell(rec, "ours_default"),
        cell(rec, "ours_measured"),
        cell(rec, "one_call"),
        fmt_ratio(rec["ratio_default"]),
        fmt_ratio(rec["ratio_measured"]),
        rec["best_peer"],
        rec.get("torch_kernel", ""),
        rec["check"].replace("|", "/"),
    ]


def row_label(rec: dict) -> str:
    tf = " tf32" if rec["tf32"] is True else ""
    return f"{rec['layer']} N={rec['batch']} {rec['dtype']} {rec['layout']}{tf}"


def summary(rows: list[dict]) -> list[str]:
    lines = []
    for key, what, target_row, target_geo in (
        ("ratio_default", "ours default / torch (heuristic)", 1.05, 0.95),
        ("ratio_measured", "ours measured / best peer", 1.00, 0.85),
        (
            "ratio_first_sight",
            "first sight: ours measured / torch benchmark mode",
            1.00,
            None,
        ),
    ):
        vals = [
            (r[key], r) for r in rows if isinstance(r.get(key), float) and r[key] > 0
        ]
        if not vals:
            lines.append(f"- {what}: no rows")
            continue
        geo = report.geo_mean(v for v, _ in vals)
        over = sum(1 for v, _ in vals if v > target_row)
        goal = f"; target geo-mean <= {target_geo}" if target_geo else ""
        lines.append(
            f"- {what}: geo-mean {geo:.3f} over {len(vals)} rows, {over} rows > {target_row}"
            f" (target: every row <= {target_row}{goal})"
        )
        worst = sorted(vals, key=lambda t: -t[0])[:5]
        lines.append(
            "  worst: " + "; ".join(f"{row_label(r)} {v:.3f}" for v, r in worst)
        )
    wrong = [r for r in rows if r.get("check") != "ok"]
    lines.append(f"- rows with a warning (wrong result or error): {len(wrong)}")
    return lines


def markdown(rows: list[dict], header: list[str]) -> str:
    note = (
        "Times in ms per call. (!): result differs from PyTorch's beyond the "
        "tolerance; `aten:` marks PyTorch's own (non-cuDNN) kernels."
    )
    return report.markdown(header, COLUMNS, map(table_row, rows), note, summary(rows))


def chart(rows: list[dict], path: str) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no chart", file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "row_err" not in r]
    labels = [row_label(r) for r in rows]
    series = (
        ("ratio_default", "ours default / torch (heuristic)", 1.05),
        ("ratio_measured", "ours measured / best peer", 1.00),
    )
    fig, axes = plt.subplots(
        1, 2, figsize=(16, max(4, 0.22 * len(rows) + 1.5)), sharey=True
    )
    for ax, (key, title, target) in zip(axes, series, strict=True):
        vals = [
            r[key] if isinstance(r.get(key), float) and not math.isnan(r[key]) else 0.0
            for r in rows
        ]
        ax.barh(
            labels,
            vals,
            color=["tab:green" if 0 < v <= target else "tab:red" for v in vals],
        )
        ax.axvline(1.0, color="k", lw=1)
        ax.axvline(target, color="k", lw=1, ls="--")
        ax.set_title(title)
        ax.set_xscale("log")
    axes[0].set_ylim(len(rows) - 0.5, -0.5)
    axes[0].tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"chart: {path}")


# ---------------------------------------------------------------- main


def plan_rows(args) -> list[tuple[Layer, int, Config]]:
    layers = [ly for ly in LAYERS if not args.quick or ly.name in QUICK_LAYERS]
    if args.layers:
        wanted = [s.strip() for s in args.layers.split(",") if s.strip()]
        layers = [ly for ly in layers if any(w in ly.name for w in wanted)]
    if args.device == "cpu":
        layers = [shrink(ly) for ly in layers]
    batches = ["real"] if args.quick else ["real", 1]
    if args.batch != "both":
        batches = [args.batch if args.batch == "real" else 1]
    rows = []
    for b in batches:  # every realistic-batch row first: the ones a time cut spares
        for layer in layers:
            configs = list(QUICK_CONFIGS if args.quick else CONFIGS)
            if layer.half_nchw and not args.quick:
                configs.append(HALF_NCHW)
            for cfg in configs:
                rows.append((layer, layer.batch if b == "real" else 1, cfg))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="6 layers, 3 configs, realistic batch"
    )
    ap.add_argument("--csv", default="broad.csv")
    ap.add_argument("--png", default=None)
    ap.add_argument("--md", default=None, help="also write the markdown table here")
    ap.add_argument(
        "--layers", default="", help="comma-separated substrings of layer names"
    )
    ap.add_argument("--batch", choices=("both", "real", "1"), default="both")
    ap.add_argument("--reps", type=int, default=20, help="calls between two events")
    ap.add_argument(
        "--trials", type=int, default=7, help="timed trials per system (median)"
    )
    ap.add_argument("--fe-max-plans", type=int, default=64)
    ap.add_argument(
        "--no-profile", action="store_true", help="skip the torch kernel names"
    )
    ap.add_argument(
        "--max-minutes",
        type=float,
        default=8.0,
        help="stop starting rows after this long (results so far are kept)",
    )
    ap.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="cpu: logic test on cudnn_rs's CPU device with tiny shapes",
    )
    args = ap.parse_args(argv)

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device (use --device cpu for a logic test)", file=sys.stderr)
        return 2
    if args.device == "cpu":
        args.reps, args.trials = min(args.reps, 2), min(args.trials, 2)
    timer = Timer(
        args.device, args.reps, args.trials, warmup=5 if args.device == "cuda" else 1
    )
    ours = Ours(args.device)
    fe = None
    fe_note = "cudnn-frontend: not installed"
    if cudnn is not None and args.device == "cuda":
        try:
            fe = Frontend(args.fe_max_plans)
            fe_note = f"cudnn-frontend {getattr(cudnn, '__version__', '?')}"
        except Exception as exc:
            fe_note = f"cudnn-frontend unusable: {exc}"
    ctx = {
        "timer": timer,
        "ours": ours,
        "fe": fe,
        "device": args.device,
        "gen": torch.Generator().manual_seed(14),
        "profile": not args.no_profile,
    }
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    header = [
        f"# broad suite: {gpu}, torch {torch.__version__}, cuDNN "
        f"{torch.backends.cudnn.version()} (torch) / {'.'.join(map(str, ours.h.version()))} "
        f"(cudnn_rs), {fe_note}",
        f"ours default = explicit API + {DEFAULT_LABEL}; ours measured = {ours.measured_how}; "
        f"{args.reps} calls between events, median of {args.trials} trials",
    ]
    print("\n".join(header), flush=True)

    plan = plan_rows(args)
    rows: list[dict] = []
    start = time.perf_counter()
    fields: list[str] = []
    for i, (layer, n, cfg) in enumerate(plan):
        if time.perf_counter() - start > args.max_minutes * 60:
            print(
                f"time budget of {args.max_minutes} min spent: {len(plan) - i} rows not run"
            )
            break
        rec = run_row(layer, n, cfg, ctx)
        rows.append(rec)
        fields = report.write_csv(args.csv, rows, fields)
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
    if args.png:
        chart(rows, args.png)
    print(
        f"total {time.perf_counter() - start:.0f} s, {len(rows)} rows; csv: {args.csv}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
