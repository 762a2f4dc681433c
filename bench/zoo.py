"""Layer zoo (issue 14): every distinct convolution of many torchvision models, its input
gradient by PyTorch's default (`aten.convolution_backward`, cudnn.benchmark off) and by
cudnn_rs's default (`conv_input_grad`, as a user calls it from PyTorch), each timed alone
by CUDA events over calls back to back (so a host-bound call shows its host time).

The broad suite (bench/broad.py) holds one layer per family; this holds what real models
contain (strided and 5x5 depthwise, squeeze-excite sizes, grouped with few channels per
group, (2+1)-d video factorisations, ...), deduplicated across models, and weighs each
problem by how often its model meets it. Shapes come from a forward pass on the meta
device, so no weights are made.

With --contract, ours is the input gradient as the Python contract spells it (one
`Handle()`, `Filter/Tensor.from_dlpack` without `handle=` or `format=`, the one-call
API, `torch.from_dlpack` of its dx) instead of `conv_input_grad`.

With --measured, the measured tiers instead: `conv_input_grad(..., benchmark=True)`
against PyTorch with cudnn.benchmark = True (run in a fresh thread, so that its first
call searches), their first calls being the searches.

Usage (GPU machine):
  python bench/zoo.py [--models a,b|first|more|all] [--configs f32:nchw,tf32:cl,f16:nchw,bf16:cl]
                      [--batch N] [--csv zoo.csv] [--max-minutes 4] [--measured | --contract]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torchvision
from broad import (
    TOLERANCE,
    Timer,
    in_fresh_thread,
    rel_err,
    set_torch_flags,
    torch_dgrad,
    warm_thread_handle,
)
from torch import nn

import cudnn_rs as cd

# name: (builder, input shape without the batch, training batch)
MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...], int]] = {
    "resnext50_32x4d": (torchvision.models.resnext50_32x4d, (3, 224, 224), 32),
    "regnet_y_800mf": (torchvision.models.regnet_y_800mf, (3, 224, 224), 32),
    "efficientnet_b0": (torchvision.models.efficientnet_b0, (3, 224, 224), 32),
    "mobilenet_v2": (torchvision.models.mobilenet_v2, (3, 224, 224), 64),
    "shufflenet_v2_x1_0": (torchvision.models.shufflenet_v2_x1_0, (3, 224, 224), 64),
    "densenet121": (torchvision.models.densenet121, (3, 224, 224), 32),
    "inception_v3": (
        lambda: torchvision.models.inception_v3(init_weights=False, aux_logits=False),
        (3, 299, 299),
        32,
    ),
    "mnasnet1_0": (torchvision.models.mnasnet1_0, (3, 224, 224), 64),
    "squeezenet1_1": (torchvision.models.squeezenet1_1, (3, 224, 224), 64),
    "vgg11_bn": (torchvision.models.vgg11_bn, (3, 224, 224), 16),
    "convnext_small": (torchvision.models.convnext_small, (3, 224, 224), 16),
    "r2plus1d_18": (torchvision.models.video.r2plus1d_18, (3, 16, 112, 112), 4),
    "mc3_18": (torchvision.models.video.mc3_18, (3, 16, 112, 112), 4),
}
FIRST_SET = ",".join(MODELS)
# A second set (`--models more`), of families the first lacks: an 11x11/4 stem, patchify
# stems (16x16/16, 4x4/4, 2x4x4/2x4x4), fused inverted residuals, grouped layers of 16
# channels a group, dilated backbones and atrous pyramids (rates 12-36), depthwise layers
# with dilation, separable and depthwise 3-d layers, pooling attention's 3-d convolutions.
MORE: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...], int]] = {
    "alexnet": (torchvision.models.alexnet, (3, 224, 224), 64),
    "googlenet": (
        lambda: torchvision.models.googlenet(init_weights=False, aux_logits=False),
        (3, 224, 224),
        32,
    ),
    "vit_b_16": (torchvision.models.vit_b_16, (3, 224, 224), 32),
    "swin_t": (torchvision.models.swin_t, (3, 224, 224), 32),
    "efficientnet_v2_s": (torchvision.models.efficientnet_v2_s, (3, 224, 224), 32),
    "regnet_x_400mf": (torchvision.models.regnet_x_400mf, (3, 224, 224), 64),
    "mobilenet_v3_small": (torchvision.models.mobilenet_v3_small, (3, 224, 224), 64),
    "wide_resnet50_2": (torchvision.models.wide_resnet50_2, (3, 224, 224), 32),
    "deeplabv3_resnet50": (
        lambda: torchvision.models.segmentation.deeplabv3_resnet50(
            weights=None, weights_backbone=None
        ),
        (3, 512, 512),
        8,
    ),
    "lraspp_mobilenet_v3_large": (
        lambda: torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None
        ),
        (3, 512, 512),
        16,
    ),
    "s3d": (torchvision.models.video.s3d, (3, 16, 224, 224), 4),
    "swin3d_t": (torchvision.models.video.swin3d_t, (3, 16, 224, 224), 4),
    "mvit_v2_s": (torchvision.models.video.mvit_v2_s, (3, 16, 224, 224), 4),
}
MODELS |= MORE
MODEL_SETS = {"first": FIRST_SET, "more": ",".join(MORE), "all": ",".join(MODELS)}

DTYPES = {"f32": "float32", "tf32": "float32", "f16": "float16", "bf16": "bfloat16"}
DEFAULT_CONFIGS = "f32:nchw,tf32:cl,f16:nchw,bf16:cl"


@dataclasses.dataclass(frozen=True)
class Conv:
    """One convolution problem (batch excluded; `out` is grad_output's shape)."""

    x: tuple[int, ...]
    w: tuple[int, ...]
    out: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int

    @property
    def nd(self) -> int:
        return len(self.stride)

    def label(self) -> str:
        k = "x".join(map(str, self.w[2:]))
        kind = "dw" if self.groups == self.x[0] and self.groups > 1 else ""
        kind = kind or (f"g{self.groups}" if self.groups > 1 else "")
        s = "x".join(map(str, self.stride))
        d = (
            ""
            if set(self.dilation) == {1}
            else " d" + "x".join(map(str, self.dilation))
        )
        sp = "x".join(map(str, self.x[1:]))
        return f"{k}{kind} {self.x[0]}->{self.w[0]} @{sp} s{s}{d}"


@dataclasses.dataclass(frozen=True)
class Config:
    name: str  # f32, tf32, f16, bf16
    channels_last: bool

    @property
    def dtype(self) -> torch.dtype:
        return getattr(torch, DTYPES[self.name])

    @property
    def label(self) -> str:
        return f"{self.name}:{'cl' if self.channels_last else 'nchw'}"


def parse_configs(text: str) -> list[Config]:
    out = []
    for item in text.split(","):
        name, layout = item.strip().split(":")
        if name not in DTYPES or layout not in ("nchw", "cl"):
            raise SystemExit(
                f"bad config {item!r}: dtype f32|tf32|f16|bf16, layout nchw|cl"
            )
        out.append(Config(name, layout == "cl"))
    return out


def model_convs(name: str) -> collections.Counter:
    """The model's convolutions (batch excluded) and how often a forward pass meets each."""
    build, shape, _ = MODELS[name]
    seen: collections.Counter = collections.Counter()

    def hook(mod, inputs, output):
        if isinstance(mod.padding, str):  # 'same'/'valid': none in these models
            return
        seen[
            Conv(
                tuple(inputs[0].shape[1:]),
                tuple(mod.weight.shape),
                tuple(output.shape[1:]),
                tuple(mod.stride),
                tuple(mod.padding),
                tuple(mod.dilation),
                mod.groups,
            )
        ] += 1

    with torch.device("meta"):
        model = build().eval()
        for mod in model.modules():
            if isinstance(mod, (nn.Conv2d, nn.Conv3d)) and mod.padding_mode == "zeros":
                mod.register_forward_hook(hook)
        with torch.no_grad():
            model(torch.empty((1, *shape)))
    return seen


def reps_for(timer: Timer, f: Callable[[], object]) -> int:
    """Calls between events: enough for about 2 ms of `f`'s calls, 3 to 50."""
    est = max(timer.per_call_ms(f, reps=2, trials=1, warmup=1), 1e-3)
    return int(min(50, max(3, 2.0 / est)))


_CONTRACT: dict = {}


def contract_call(c: Conv, cfg: Config) -> Callable:
    """The contract's spelling of the input gradient: one `cd.Handle()`, the imports
    without `handle=` or `format=`, the one-call API (descriptors kept per problem)."""
    h = _CONTRACT.get("handle")
    if h is None:
        h = _CONTRACT["handle"] = cd.Handle()
    key = (c, cfg.name)
    conv = _CONTRACT.get(key)
    if conv is None:
        fma = cfg.name == "f32"
        conv = _CONTRACT[key] = cd.ConvolutionDescriptor(
            padding=c.padding,
            stride=c.stride,
            dilation=c.dilation,
            groups=c.groups,
            math_type=cd.MathType.Fma if fma else cd.MathType.Default,
        )

    def call(x_shape, w, dy):
        wt, dyt = cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(dy)
        return torch.from_dlpack(
            cd.convolution_backward_data(h, wt, dyt, conv, x_shape)
        )

    return call


def run_row(
    c: Conv,
    n: int,
    cfg: Config,
    timer: Timer,
    gen,
    measured: bool = False,
    contract: bool = False,
) -> dict:
    dev = torch.device("cuda")
    mf = torch.contiguous_format
    if cfg.channels_last:
        mf = torch.channels_last_3d if c.nd == 3 else torch.channels_last
    fan = math.prod(c.w[1:])
    w = (torch.randn(c.w, generator=gen) / math.sqrt(fan)).to(dev, cfg.dtype)
    w = w.contiguous(memory_format=mf)
    dy = torch.randn((n, *c.out), generator=gen).to(dev, cfg.dtype)
    dy = dy.contiguous(memory_format=mf)
    x_shape = (n, *c.x)
    x = torch.empty(x_shape, device=dev, dtype=cfg.dtype, memory_format=mf)
    set_torch_flags(tf32=cfg.name == "tf32", benchmark=False)
    args = (c.stride, c.padding, c.dilation, c.groups)

    def theirs():
        return torch_dgrad(dy, x, w, c)

    spelled = contract_call(c, cfg) if contract else None

    def ours():
        if spelled is not None:
            return spelled(x_shape, w, dy)
        return cd.conv_input_grad(x_shape, w, dy, *args, benchmark=measured)

    rec: dict = {}
    tf32 = cfg.name == "tf32"
    if measured:
        # PyTorch's benchmark mode in a fresh thread (its plan cache is per thread, so
        # its first call searches), first: as in broad.py.
        def torch_bench() -> dict:
            set_torch_flags(tf32=tf32, benchmark=True)
            try:
                warm_thread_handle(c.nd, dy)
                out = {"torch_first_ms": timer.first_call_ms(theirs)}
                out["reps"] = reps_for(timer, theirs)
                out["torch_ms"] = timer.per_call_ms(theirs, reps=out["reps"])
                return out
            finally:
                set_torch_flags(tf32=tf32, benchmark=False)

        rec |= in_fresh_thread(torch_bench)
        if "torch_bench_err" in rec:
            raise RuntimeError(rec["torch_bench_err"])
        rec["ours_first_ms"] = timer.first_call_ms(ours)
        reps = rec.pop("reps")
    else:
        # First calls before anything else of the problem ran: the f32 reference (below)
        # would be PyTorch's own problem for f32 without TF32, its plan then cached.
        rec["torch_first_ms"] = timer.first_call_ms(theirs)
        rec["ours_first_ms"] = timer.first_call_ms(ours)
        reps = reps_for(timer, theirs)
        rec["torch_ms"] = timer.per_call_ms(theirs, reps=reps)
    rec["ours_ms"] = timer.per_call_ms(ours, reps=reps)
    rec["ratio"] = rec["ours_ms"] / rec["torch_ms"]
    rec["first_ratio"] = rec["ours_first_ms"] / rec["torch_first_ms"]
    kind = {"f32": "f32", "tf32": "tf32", "f16": "f16", "bf16": "bf16"}[cfg.name]
    got = ours()
    set_torch_flags(tf32=False, benchmark=False)
    ref = torch_dgrad(dy.float(), x.float(), w.float(), c).float()
    rec["relerr"] = rel_err(got, ref)
    rec["layout_ok"] = got.is_contiguous(memory_format=mf)
    rec["ok"] = rec["relerr"] <= TOLERANCE[kind] and rec["layout_ok"]
    return rec


def geo(values: list[float]) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(statistics.fmean(map(math.log, values))) if values else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--models",
        default="first",
        help="comma-separated names, or a set: first (13 models), more (13 others), all",
    )
    ap.add_argument("--configs", default=DEFAULT_CONFIGS)
    ap.add_argument(
        "--batch", type=int, default=0, help="0: each model's training batch"
    )
    ap.add_argument("--csv", default="zoo.csv")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--max-minutes", type=float, default=4.0)
    ap.add_argument(
        "--measured",
        action="store_true",
        help="the measured tiers instead: conv_input_grad(benchmark=True) against "
        "PyTorch with cudnn.benchmark = True (first calls: the searches)",
    )
    ap.add_argument(
        "--top", type=int, default=20, help="rows listed, slowest ratio first"
    )
    ap.add_argument(
        "--contract",
        action="store_true",
        help="ours as the Python contract spells it (Handle(), from_dlpack without "
        "handle= or format=, the one-call API, torch.from_dlpack) instead of "
        "conv_input_grad; not with --measured",
    )
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: the zoo times GPU calls", file=sys.stderr)
        return 2
    if args.contract and args.measured:
        ap.error("--contract times the default choice; leave out --measured")
    configs = parse_configs(args.configs)
    models = MODEL_SETS.get(args.models, args.models)
    names = [m.strip() for m in models.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        print(f"unknown models {unknown}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2

    # Problems in turns across models (a time cut then spares every model's first ones).
    per_model: dict[str, list[tuple[Conv, int, int]]] = {}
    for m in names:
        try:
            convs = model_convs(m)
        except Exception as exc:  # a model this torchvision cannot trace: say so, go on
            print(f"{m}: no shapes ({type(exc).__name__}: {exc})", flush=True)
            continue
        n = args.batch or MODELS[m][2]
        per_model[m] = [(c, n, k) for c, k in convs.items()]
        print(f"{m}: {len(convs)} distinct convolutions, batch {n}", flush=True)
    order: list[tuple[Conv, int]] = []
    where: dict[tuple[Conv, int], list[tuple[str, int]]] = collections.defaultdict(list)
    for i in range(max((len(v) for v in per_model.values()), default=0)):
        for m, probs in per_model.items():
            if i < len(probs):
                c, n, k = probs[i]
                if (c, n) not in where:
                    order.append((c, n))
                where[(c, n)].append((m, k))

    timer = Timer("cuda", 20, args.trials, warmup=3)
    gen = torch.Generator().manual_seed(14)
    print(
        f"# zoo: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN "
        f"{torch.backends.cudnn.version()}; {len(order)} problems x {len(configs)} configs",
        flush=True,
    )
    rows: list[dict] = []
    row_keys: list[tuple[Conv, int]] = []
    start = time.perf_counter()
    cut = 0
    for i, (c, n) in enumerate(order):
        if time.perf_counter() - start > args.max_minutes * 60:
            cut = len(order) - i
            break
        for cfg in configs:
            rec = {
                "problem": c.label(),
                "batch": n,
                "config": cfg.label,
                "models": " ".join(f"{m}x{k}" for m, k in where[(c, n)]),
            }
            try:
                rec |= run_row(c, n, cfg, timer, gen, args.measured, args.contract)
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"[:120]
                rec["ok"] = False
            rows.append(rec)
            row_keys.append((c, n))
            if "ratio" in rec:
                print(
                    f"[{len(rows)} {time.perf_counter() - start:4.0f}s] {rec['problem']:34} "
                    f"N={n:<3} {cfg.label:9} torch {rec['torch_ms']:.4f} ours "
                    f"{rec['ours_ms']:.4f} ({rec['ratio']:.3f}) first {rec['ours_first_ms']:.1f}"
                    f"/{rec['torch_first_ms']:.1f} ms{'' if rec['ok'] else ' WRONG'}",
                    flush=True,
                )
            else:
                print(
                    f"[{len(rows)}] {rec['problem']} {cfg.label}: {rec['error']}",
                    flush=True,
                )
            torch.cuda.empty_cache()
    keys = sorted({k for r in rows for k in r}, key=lambda k: (k not in rows[0], k))
    with open(args.csv, "w") as f:
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join(str(r.get(k, "")).replace(",", ";") for k in keys) + "\n")

    timed = [(r, key) for r, key in zip(rows, row_keys, strict=True) if "ratio" in r]
    print(
        f"\n{len(timed)} rows timed, {len(rows) - len(timed)} failed, {cut} problems cut"
    )
    print(f"wrong results: {sum(1 for r in rows if not r.get('ok'))}")
    print("| config | rows | geo-mean ours/torch | worst | rows > 1.05 |")
    print("| --- | --- | --- | --- | --- |")
    for cfg in configs:
        rs = [r["ratio"] for r, _ in timed if r["config"] == cfg.label]
        if rs:
            over = sum(1 for x in rs if x > 1.05)
            print(
                f"| {cfg.label} | {len(rs)} | {geo(rs):.3f} | {max(rs):.3f} | {over} |"
            )
    print("\nfirst calls, ours / torch (with --measured: the searches):")
    for cfg in configs:
        fs = [r["first_ratio"] for r, _ in timed if r["config"] == cfg.label]
        if fs:
            print(
                f"  {cfg.label:9} geo-mean {geo(fs):.3f}, {sum(x > 1 for x in fs)} of "
                f"{len(fs)} over 1, sums {sum(r['ours_first_ms'] for r, _ in timed if r['config'] == cfg.label):.0f}"
                f" / {sum(r['torch_first_ms'] for r, _ in timed if r['config'] == cfg.label):.0f} ms"
            )
    print("\nper model, layer time summed as a step meets it (ours / torch):")
    for m in per_model:
        for cfg in configs:
            t = o = 0.0
            for r, key in timed:
                if r["config"] != cfg.label:
                    continue
                for mm, k in where[key]:
                    if mm == m:
                        t += k * r["torch_ms"]
                        o += k * r["ours_ms"]
            if t:
                print(f"  {m:20} {cfg.label:9} {o:8.3f} / {t:8.3f} ms = {o / t:.3f}")
    print(f"\nslowest {args.top} rows:")
    for r, _ in sorted(timed, key=lambda rk: -rk[0]["ratio"])[: args.top]:
        print(
            f"  {r['ratio']:.3f} {r['problem']:34} N={r['batch']:<3} {r['config']:9} "
            f"torch {r['torch_ms']:.4f} ours {r['ours_ms']:.4f} ({r['models']})"
        )
    print(f"total {time.perf_counter() - start:.0f} s; csv: {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
