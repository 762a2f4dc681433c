"""Which engine configurations the measured tier reaches, beside cudnn-frontend's autotune.

For a few rows of bench/broad.py (the ones where the frontend's autotune beat our measured
tier), on the same tensors: every plan the frontend builds from heuristic modes A, B and
FALLBACK, each timed; every configuration ``find_convolution_backward_data_engine``
times; and the configuration a ``Handle(benchmark=True)`` settles on for ``DefaultAlgo``,
with its time. Plans are named as the frontend names them
(``eng<index>_k<knob type>=<value>...``, knobs sorted), so a frontend winner missing from
our list shows up as a name with no time of ours.

Also the untimed default choice (``DefaultAlgo``'s engine) and PyTorch's default
(``cudnn.benchmark`` off) with its kernels, for rows where the default is behind it; the
rows may name the layers of ``EXTRA_LAYERS`` (layers of real models the layer zoo found
the default slower on) besides the broad suite's.

With ``--random SEED:I,J``, the rows are instead the I-th, J-th, ... layers
``bench/random_layers.py --seed SEED`` draws (counting from 0), and PyTorch's benchmark
mode is shown instead of its default (PyTorch keeps one plan per problem).

Usage (GPU machine): python bench/candidates.py [--rows dil2_3x3_c256_28:tf32 ...]
                     [--random 9:10,31]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Sequence

import broad
import torch
from random_layers import draw

# layer name : configuration (f32, f32nhwc, tf32, f16, bf16, f16nchw)
DEFAULT_ROWS = (
    "dil2_3x3_c256_28:tf32",
    "3d_3x3x3_c64_16x56:f16",
    "3d_3x3x3_c64_16x56:tf32",
    "1x1s2_256to512_56:tf32",
)
# Layers of real models (bench/zoo.py) where the default choice was over 1.05x PyTorch's
# default: AlexNet's second layer and SqueezeNet 1.1's expand 3x3 (TF32 channels-last);
# and where the measured tier was over PyTorch's benchmark mode: Inception v3's 3x3 96->96
# (TF32 channels-last, 1.107x on the H100, 2026-12-05), and VGG-11's 3x3 128->256 (f16
# channels-last, 1.119x on the H100, 2026-12-05b).
EXTRA_LAYERS = [
    broad._l2("alexnet_5x5_c64to192_27", 64, 192, 27, 5, batch=64),
    broad._l2("squeezenet_3x3_c32to128_27", 32, 128, 27, 3, batch=64),
    broad._l2("inception_3x3_c96_35", 96, 96, 35, 3, batch=32),
    broad._l2("vgg11_3x3_c128to256_56", 128, 256, 56, 3, batch=16),
]
CONFIG_OF = {
    "f32": broad.CONFIGS[0],
    "f32nhwc": broad.CONFIGS[1],
    "tf32": broad.CONFIGS[2],
    "f16": broad.CONFIGS[3],
    "bf16": broad.CONFIGS[4],
    "f16nchw": broad.HALF_NCHW,
}


def tag(index: int, knobs: Sequence[tuple[int, int]]) -> str:
    return f"eng{index}" + "".join(f"_k{t}={v}" for t, v in sorted(knobs))


def canonical(name: str) -> str:
    """A frontend plan name with its knobs sorted (the frontend keeps cuDNN's order)."""
    m = re.match(r"eng(\d+)((?:_k\d+=-?\d+)*)$", name)
    if m is None:
        return name
    knobs = [
        tuple(int(v) for v in k.split("=")) for k in re.findall(r"k(\d+=-?\d+)", m[2])
    ]
    return tag(int(m[1]), knobs)  # type: ignore[arg-type]


def frontend_plans(fe: broad.Frontend, p: broad.Problem, timer: broad.Timer) -> dict:
    dx = p.new_dx()
    modes = [
        broad.cudnn.heur_mode.A,
        broad.cudnn.heur_mode.B,
        broad.cudnn.heur_mode.FALLBACK,
    ]
    g, pack = fe._graph(p, dx, modes)
    out: dict[str, float] = {}
    for i in range(g.get_execution_plan_count()):
        try:
            name = canonical(g.get_plan_name_at_index(i))
            g.build_plan_at_index(i)
            ws = fe._workspace(g.get_workspace_size_plan_at_index(i))

            def run(i=i, ws=ws):
                return g.execute_plan_at_index(pack, ws, i, handle=fe.handle)

            run()
            timer.sync()
            if not broad.rel_err(dx, p.ref) <= broad.TOLERANCE[p.cfg.check_kind]:
                out[name + " (wrong dx)"] = float("nan")
                continue
            out[name] = timer.per_call_ms(run)
        except Exception as exc:  # a plan that does not build or run
            out[f"plan{i} ({type(exc).__name__})"] = float("nan")
    return out


def ours_plans(
    ours: broad.Ours, p: broad.Problem, timer: broad.Timer
) -> tuple[dict, str]:
    dx = p.new_dx()
    w, dy, dxc = ours.operands(p, ours.h, dx)
    conv = ours.conv(p)
    found = ours.h.find_convolution_backward_data_engine(
        w, dy, dxc, conv, budget_ms=None, use_cache=False
    )
    times = {}
    for e in found:
        run = ours._explicit(ours.h, w, dy, dxc, conv, e)
        times[tag(e.index, e.knobs)] = timer.per_call_ms(run)
    assert ours.hm is not None
    wm, dym, dxm = ours.operands(p, ours.hm, dx)
    timer.sync()
    t0 = time.perf_counter()
    e = ours.hm.get_convolution_backward_data_default(wm, dym, dxm, conv)
    timer.sync()
    first = (time.perf_counter() - t0) * 1e3
    run = ours._explicit(ours.hm, wm, dym, dxm, conv, broad.DEFAULT_MARKER())
    ms = timer.per_call_ms(run)
    timed, left = ours.hm.last_find_report()
    pick = (
        f"{tag(e.index, e.knobs)} {ms:.4f} ms (its own timing {e.time:.4f}; timed "
        f"{timed}, cut {left}; first sight {first:.0f} ms)"
    )
    return times, pick


def random_rows(spec: str) -> list[tuple[broad.Layer, broad.Config]]:
    """The layers ``random_layers.py --seed SEED`` draws at the indices `spec` names
    (``SEED:I,J,...``), each at its drawn batch and with its drawn configuration."""
    seed, indices = spec.split(":")
    wanted = {int(i) for i in indices.split(",")}
    rng = random.Random(int(seed))
    dtypes = {"f32": "float32", "tf32": "float32", "f16": "float16", "bf16": "bfloat16"}
    out = []
    i = 0
    while len(out) < len(wanted):
        d = draw(rng)
        if d is None:
            continue
        if i in wanted:
            conv, n, cfg, cl, family = d
            name = f"random{seed}_{i}_{family}_" + conv.label().replace(" ", "_")
            layer = broad.Layer(
                name,
                conv.x[0],
                conv.w[0],
                conv.x[1:],
                conv.w[2:],
                conv.stride,
                conv.padding,
                conv.dilation,
                conv.groups,
                n,
            )
            out.append((layer, broad.Config(dtypes[cfg], cl, cfg != "f32")))
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="*", default=list(DEFAULT_ROWS))
    ap.add_argument(
        "--batch1", action="store_true", help="batch 1 instead of realistic"
    )
    ap.add_argument(
        "--random",
        help="SEED:I,J,...: the layers random_layers.py --seed SEED draws I-th, J-th, ...",
    )
    args = ap.parse_args(argv)
    layers = {layer.name: layer for layer in [*broad.LAYERS, *EXTRA_LAYERS]}
    if args.random:
        rows = random_rows(args.random)
    else:
        rows = []
        for row in args.rows:
            name, cfg_name = row.split(":")
            rows.append((layers[name], CONFIG_OF[cfg_name]))
    timer = broad.Timer("cuda", reps=20, trials=5)
    fe = broad.Frontend(max_plans=10**6)
    ours = broad.Ours("cuda")
    gen = torch.Generator().manual_seed(14)
    for layer, cfg in rows:
        name = layer.name
        n = 1 if args.batch1 and not args.random else layer.batch
        p = broad.make_problem(layer, n, cfg, "cuda", gen)

        def theirs(p=p):
            return broad.torch_dgrad(p.dy, p.x, p.w, p.layer)

        # PyTorch caches its plan per problem whatever the mode: the benchmark mode's
        # search only happens on the problem's first call, so it goes first.
        bench_line = ""
        if args.random:
            broad.set_torch_flags(tf32=cfg.tf32, benchmark=True)
            first = timer.first_call_ms(theirs)
            kernels = broad.torch_kernels(theirs, timer)
            ms = timer.per_call_ms(theirs)
            bench_line = f"  torch benchmark {ms:.4f} ms (first {first:.1f}): {kernels}"
        broad.set_torch_flags(tf32=cfg.tf32, benchmark=False)
        fe_t = frontend_plans(fe, p, timer)
        ours_t, pick = ours_plans(ours, p, timer)
        print(f"\n== {name} N={n} {cfg.label}: measured tier picks {pick}")
        dx = p.new_dx()
        w, dy, dxc = ours.operands(p, ours.h, dx)
        e = ours.h.get_convolution_backward_data_default(w, dy, dxc, ours.conv(p))
        run = ours._explicit(ours.h, w, dy, dxc, ours.conv(p), broad.DEFAULT_MARKER())
        print(f"  default {tag(e.index, e.knobs)} {timer.per_call_ms(run):.4f} ms")
        if bench_line:
            print(bench_line)
        else:
            kernels = broad.torch_kernels(theirs, timer)
            print(f"  torch default {timer.per_call_ms(theirs):.4f} ms: {kernels}")
        names = sorted(
            set(fe_t) | set(ours_t),
            key=lambda k: min(fe_t.get(k, 1e9), ours_t.get(k, 1e9)),
        )
        for k in names:
            f = fe_t.get(k)
            o = ours_t.get(k)
            fs = "      -" if f is None else f"{f:7.4f}"
            os_ = "      -" if o is None else f"{o:7.4f}"
            print(f"  fe {fs}  ours {os_}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
