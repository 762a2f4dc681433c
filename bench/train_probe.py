"""Where a training step's time goes (issue 14, part 5): for a few model variants of
bench/train.py, the same step through the Function with PyTorch's dgrad and with
cudnn_rs's default, looked at in these ways.

1. Profile: one step per mode under torch.profiler. Step wall time, the GPU's kernel
   time (sum), the wall time the GPU sat idle, the host calls that wait on the GPU or
   allocate (synchronise, malloc, free), and the kernels whose time differs most.
2. Layers: every convolution problem the step's backward pass meets (recorded in the
   loop), timed alone, in a loop of calls as the step makes them: PyTorch's dgrad, then
   cudnn_rs's default exactly as bench/train.py calls it (conv_input_grad), each by CUDA
   events (so a host-bound call shows its host time). Sums weighted by how often the
   step meets each problem, and the problems that differ most with our engine.

0. Steps: the median wall time of synchronised steps per dgrad backend (PyTorch's,
   cudnn_rs's explicit API as bench/train.py used it, conv_input_grad, conv_input_grad
   measured), the host time spent inside the dgrad calls, and garbage collections.
3. First sights (`--first`, instead of 0-2): every problem the step meets, seen once
   by the measured tier (conv_input_grad on a fresh `Handle(benchmark=True)`) and by
   PyTorch's benchmark mode (its dgrad with `cudnn.benchmark` on, in a thread of its
   own, whose plan cache is empty): the wall time of each first call, which side goes
   first alternating by problem; the sums are what a training loop's first step pays
   for its input gradients in each.

Usage (GPU machine):
  python bench/train_probe.py [--variants resnet50:f16:nchw,...] [--profile] [--layers]
  python bench/train_probe.py --first --variants efficientnet_b0:bf16:nchw
"""

from __future__ import annotations

import argparse
import collections
import gc
import statistics
import sys
import time

import torch
from broad import Timer, off_thread, rel_err, set_torch_flags
from torch.profiler import ProfilerActivity, profile
from train import (
    MODELS,
    MORE_MODELS,
    ArrayDgrad,
    Dispatch,
    OursDgrad,
    TorchDgrad,
    Variant,
    make_case,
    prepare_model,
    set_tf32,
    train_step,
)

import cudnn_rs as cd

DTYPES = {"f32": "float32", "tf32": "float32", "f16": "float16", "bf16": "bfloat16"}
DEFAULT_VARIANTS = (
    "resnet50:f16:nchw,mobilenet_v3_large:f32:nchw,resnet50:tf32:cl,"
    "mobilenet_v3_large:f32:cl,convnext_tiny:f16:nchw"
)
WAITS = ("Synchronize", "Malloc", "Free", "MemAlloc", "MemFree", "EventQuery")


def parse_variant(text: str) -> tuple[str, Variant]:
    model, dt, layout = text.split(":")
    return model, Variant(DTYPES[dt], layout == "cl", dt == "tf32")


class Recorder:
    """A dgrad backend that records each problem it sees, then defers to PyTorch."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: collections.Counter = collections.Counter()
        self.inner = TorchDgrad()

    def dgrad(self, gy, x, w, spec, mf):
        key = (tuple(gy.shape), tuple(x.shape), tuple(w.shape), gy.dtype, spec, mf)
        self.seen[key] += 1
        return self.inner.dgrad(gy, x, w, spec, mf)


class HostClock:
    """Wraps a backend: the host time its dgrad calls take, summed."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.seconds, self.calls = inner, inner.name, 0.0, 0

    def dgrad(self, gy, x, w, spec, mf):
        t0 = time.perf_counter()
        try:
            return self.inner.dgrad(gy, x, w, spec, mf)
        finally:
            self.seconds += time.perf_counter() - t0
            self.calls += 1


def wall_steps(case, backend, steps: int) -> dict:
    """Median wall time of synchronised steps, the host time inside dgrad per step,
    and the garbage collections during them."""
    clock = HostClock(backend)
    Dispatch.backend = clock
    try:
        for _ in range(3):
            train_step(case)
        torch.cuda.synchronize()
        clock.seconds, clock.calls = 0.0, 0
        gcs = sum(s["collections"] for s in gc.get_stats())
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            train_step(case)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        gcs = sum(s["collections"] for s in gc.get_stats()) - gcs
    finally:
        Dispatch.backend = None
    return {
        "wall_ms": statistics.median(times),
        "min_ms": min(times),
        "dgrad_host_ms": clock.seconds * 1e3 / steps,
        "dgrad_us_per_call": clock.seconds * 1e6 / max(clock.calls, 1),
        "gc": gcs,
    }


def profile_step(case, backend) -> dict:
    Dispatch.backend = backend
    try:
        for _ in range(3):
            train_step(case)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            train_step(case)
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) * 1e3
    finally:
        Dispatch.backend = None
    kernels: collections.Counter = collections.Counter()
    waits: collections.Counter = collections.Counter()
    # CUDA runtime and driver calls on the host: (count, microseconds) per name.
    api: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    spans = []
    for ev in prof.events():
        dev_type = str(getattr(ev, "device_type", ""))
        if dev_type.endswith("CUDA") and ev.time_range.elapsed_us() > 0:
            kernels[ev.name[:90]] += ev.time_range.elapsed_us()
            spans.append((ev.time_range.start, ev.time_range.end))
            continue
        if any(w in ev.name for w in WAITS):
            waits[ev.name] += 1
        if ev.name.startswith("cu"):
            api[ev.name][0] += 1
            api[ev.name][1] += ev.time_range.elapsed_us()
    spans.sort()
    busy, end = 0.0, None
    for s, e in spans:  # union of kernel intervals
        if end is None or s > end:
            busy += e - s
            end = e
        elif e > end:
            busy += e - end
            end = e
    first = spans[0][0] if spans else 0
    last = max((e for _, e in spans), default=0)
    return {
        "wall_ms": wall,
        "kernel_ms": sum(kernels.values()) / 1e3,
        "gpu_busy_ms": busy / 1e3,
        "gpu_span_ms": (last - first) / 1e3,
        "kernels": kernels,
        "waits": dict(waits),
        "api": dict(api),
    }


def operands(gys, xs, ws, dt, mf, dev) -> tuple[torch.Tensor, ...]:
    """dy, x and w of a recorded problem, random, in its dtype and memory format (x
    gives dx its shape and layout; the dgrad never reads its values)."""
    return tuple(
        torch.randn(shape, device=dev, dtype=dt).contiguous(memory_format=mf)
        for shape in (gys, xs, ws)
    )


def layer_times(rec: Recorder, ours: OursDgrad, timer: Timer, dev) -> list[dict]:
    rows = []
    torch_be = TorchDgrad()
    array = ArrayDgrad(False)  # what bench/train.py's default mode runs
    measured = ArrayDgrad(True)  # and its measured mode
    for (gys, xs, ws, dt, spec, mf), count in rec.seen.items():
        gy, x, w = operands(gys, xs, ws, dt, mf, dev)
        call = (gy, x, w, spec, mf)
        t_torch = timer.per_call_ms(lambda c=call: torch_be.dgrad(*c))
        t_ours = timer.per_call_ms(lambda c=call: array.dgrad(*c))
        t_meas = timer.per_call_ms(lambda c=call: measured.dgrad(*c))
        ref = torch_be.dgrad(gy, x, w, spec, mf).float()
        got = array.dgrad(gy, x, w, spec, mf).float()
        err = rel_err(got, ref)
        engine = ""
        try:
            st = ours._state(x.device)
            fmt = cd.NCHW if mf == torch.contiguous_format else cd.NHWC
            h = st.handle
            fma = dt == torch.float32 and not torch.backends.cudnn.allow_tf32
            e = h.get_convolution_backward_data_default(
                cd.Filter.from_dlpack(w, fmt, handle=h),
                cd.Tensor.from_dlpack(gy, fmt, handle=h),
                cd.Tensor.from_dlpack(torch.empty_like(x), fmt, handle=h),
                ours._conv(spec, fma),
            )
            engine = f"eng{e.index} {e.knobs}"
        except Exception as exc:  # the probe reports, never stops
            engine = f"? {type(exc).__name__}"
        rows.append(
            {
                "x": xs,
                "w": ws,
                "spec": (spec.stride, spec.padding, spec.dilation, spec.groups),
                "count": count,
                "torch_ms": t_torch,
                "ours_ms": t_ours,
                "measured_ms": t_meas,
                "rel_err": err,
                "engine": engine,
            }
        )
    return rows


def record(case) -> Recorder:
    """The dgrad problems one training step of `case` meets (run with PyTorch's)."""
    rec = Recorder()
    Dispatch.backend = rec
    try:
        train_step(case)
        torch.cuda.synchronize()
    finally:
        Dispatch.backend = None
    return rec


def report_first_sights(rows: list[dict], top: int) -> None:
    """Sums of both sides' first sights, and the `top` problems ours lags most on."""
    st = sum(r["torch_first_ms"] for r in rows)
    so = sum(r["ours_first_ms"] for r in rows)
    longer = sum(r["ours_first_ms"] > r["torch_first_ms"] for r in rows)
    print(
        f"first sights, {len(rows)} problems: PyTorch benchmark mode {st:.1f} ms, "
        f"ours measured {so:.1f} ms; ours longer on {longer}; worst rel err "
        f"{max(r['rel_err'] for r in rows):.1e}"
    )
    print("longest behind PyTorch's:")
    rows = sorted(rows, key=lambda r: -(r["ours_first_ms"] - r["torch_first_ms"]))
    for r in rows[:top]:
        print(
            f"  x{r['x']} w{r['w']} {r['spec']}: torch {r['torch_first_ms']:.2f}"
            f" ours {r['ours_first_ms']:.2f} ms"
        )


def first_sights(rec: Recorder, timer: Timer, dev) -> list[dict]:
    """Each recorded problem's first call: the measured tier on a handle of its own
    (nothing cached) and PyTorch's benchmark mode in a new thread (PyTorch keeps its
    plans per thread), the order alternating by problem."""
    torch_be = TorchDgrad()
    handle = cd.Handle(
        device=torch.device(dev).index or 0,
        stream=torch.cuda.current_stream(),
        benchmark=True,
    )
    # Measured choices are shared by the device's handles: forget those of the training
    # steps run before, so that each first sight measures.
    if hasattr(handle, "clear_algorithm_cache"):
        handle.clear_algorithm_cache()
    tf32 = torch.backends.cudnn.allow_tf32
    rows = []
    for i, ((gys, xs, ws, dt, spec, mf), count) in enumerate(rec.seen.items()):
        gy, x, w = operands(gys, xs, ws, dt, mf, dev)
        args = (spec.stride, spec.padding, spec.dilation, spec.groups)

        def ours(gy=gy, x=x, w=w, args=args):
            return cd.conv_input_grad(x.shape, w, gy, *args, handle=handle)

        def theirs(gy=gy, x=x, w=w, spec=spec, mf=mf):
            set_torch_flags(tf32=tf32, benchmark=True)
            try:
                return timer.first_call_ms(lambda: torch_be.dgrad(gy, x, w, spec, mf))
            finally:
                set_torch_flags(tf32=tf32, benchmark=False)

        if i % 2 == 0:
            t_ours = timer.first_call_ms(ours)
            t_torch = off_thread(theirs)
        else:
            t_torch = off_thread(theirs)
            t_ours = timer.first_call_ms(ours)
        ref = torch_be.dgrad(gy, x, w, spec, mf).float()
        err = rel_err(ours(), ref)
        rows.append(
            {
                "x": xs,
                "w": ws,
                "spec": (spec.stride, spec.padding, spec.dilation, spec.groups),
                "count": count,
                "torch_first_ms": t_torch,
                "ours_first_ms": t_ours,
                "rel_err": err,
            }
        )
    return rows


def spin(case, backend, seconds: float) -> int:
    """Steps of one backend for `seconds` (after warm-up), for py-spy to sample."""
    Dispatch.backend = backend
    try:
        for _ in range(5):
            train_step(case)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        steps = 0
        while time.perf_counter() - t0 < seconds:
            train_step(case)
            steps += 1
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3 / max(steps, 1)
    finally:
        Dispatch.backend = None
    print(f"spin {backend.name}: {steps} steps, {ms:.2f} ms per step", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default=DEFAULT_VARIANTS)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--layers", action="store_true", help="time each dgrad alone")
    ap.add_argument("--profile", action="store_true", help="profile one step per mode")
    ap.add_argument(
        "--first",
        action="store_true",
        help="only the first sights of each problem: measured tier vs PyTorch's "
        "benchmark mode",
    )
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument(
        "--spin",
        default="",
        help="only run steps of this backend (torch, explicit, array, array_measured)"
        " on the first variant for --seconds, for a sampling profiler",
    )
    ap.add_argument("--seconds", type=float, default=15.0)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    gen = torch.Generator().manual_seed(5)
    timer = Timer("cuda", reps=10, trials=5, warmup=3)
    models = {m.name: m for m in MODELS + MORE_MODELS}
    bases: dict = {}
    for text in args.variants.split(","):
        name, v = parse_variant(text)
        if name not in bases:
            bases[name] = prepare_model(models[name], "cuda", False, False, gen)
        base, x32, labels, _, _ = bases[name]
        set_tf32(v.tf32)
        case = make_case(base, x32, labels, v)
        print(f"\n##### {text}", flush=True)
        if args.first:
            report_first_sights(first_sights(record(case), timer, "cuda"), args.top)
            continue
        ours = OursDgrad(measured=False, cpu=False)
        backends = {
            "torch": TorchDgrad(),
            "explicit": ours,
            "array": ArrayDgrad(False),
            "array_measured": ArrayDgrad(True),
        }
        if args.spin:
            return spin(case, backends[args.spin], args.seconds)
        for rnd in range(2):
            for label, be in backends.items():
                w = wall_steps(case, be, args.steps)
                print(
                    f"{label:15} step {w['wall_ms']:7.2f} ms (min {w['min_ms']:7.2f})"
                    f"  dgrad host {w['dgrad_host_ms']:6.2f} ms/step"
                    f" ({w['dgrad_us_per_call']:5.1f} us/call)  gc {w['gc']}  round {rnd}",
                    flush=True,
                )
        if args.profile:
            res = {}
            for label, be in (("torch", TorchDgrad()), ("ours", ArrayDgrad(False))):
                res[label] = p = profile_step(case, be)
                print(
                    f"{label:6} wall {p['wall_ms']:7.2f} ms  kernels {p['kernel_ms']:7.2f}"
                    f"  gpu busy {p['gpu_busy_ms']:7.2f}  span {p['gpu_span_ms']:7.2f}"
                    f"  waits {p['waits']}"
                )
            kt, ko = res["torch"]["kernels"], res["ours"]["kernels"]
            diff = sorted(
                set(kt) | set(ko), key=lambda k: -abs(ko.get(k, 0) - kt.get(k, 0))
            )
            print("kernels differing most (us torch -> ours):")
            for k in diff[: args.top]:
                print(f"  {kt.get(k, 0):9.0f} -> {ko.get(k, 0):9.0f}  {k}")
            at, ao = res["torch"]["api"], res["ours"]["api"]
            none = [0, 0.0]
            print("CUDA API calls on the host (count, us; torch -> ours):")
            for k in sorted(set(at) | set(ao), key=lambda k: -ao.get(k, none)[1]):
                (ct, ut), (co, uo) = at.get(k, none), ao.get(k, none)
                print(f"  {ct:6d} {ut:9.0f} -> {co:6d} {uo:9.0f}  {k}")
        if not args.layers:
            continue
        rows = layer_times(record(case), ours, timer, "cuda")
        st = sum(r["torch_ms"] * r["count"] for r in rows)
        so = sum(r["ours_ms"] * r["count"] for r in rows)
        sm = sum(r["measured_ms"] * r["count"] for r in rows)
        print(
            f"dgrad alone, {len(rows)} problems: torch {st:.2f} ms, ours {so:.2f} ms,"
            f" ours measured {sm:.2f} ms per step;"
            f" worst rel err {max(r['rel_err'] for r in rows):.1e}"
        )
        for key in ("ours_ms", "measured_ms"):
            print(f"most behind PyTorch's dgrad by {key}:")
            rows.sort(key=lambda r, k=key: -(r[k] - r["torch_ms"]) * r["count"])
            for r in rows[: args.top]:
                print(
                    f"  x{r['x']} w{r['w']} {r['spec']} x{r['count']}: torch"
                    f" {r['torch_ms']:.4f} ours {r['ours_ms']:.4f}"
                    f" measured {r['measured_ms']:.4f}  {r['engine']}"
                )
        set_tf32(True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
