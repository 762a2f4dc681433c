"""cudnn_rs beside PyTorch and NVIDIA's cudnn-frontend, on the GPU machine, same tensors.

1. Host overhead per backward-data call on a tiny problem (1x4x8x8, 3x3): a Python loop
   of 5000 calls, synchronised once at the end.
2. GPU time per call on the anchor suite (ResNet-50 layers at batch 32, five dtype/layout
   variants each) and on any layers given with --layers: 20 calls back to back between
   two CUDA events, median of 15. f32 rows are measured with TF32 on and off for every
   system (cudnn_rs: MathType.Default / MathType.Fma; PyTorch: allow_tf32).

Prints ratios (cudnn_rs / best of the others), writes a CSV (--csv) and a PNG chart of
the ratios per layer (--png). Needs torch; the frontend (`import cudnn`) is optional.

Usage: python bench/perf.py [--csv out.csv] [--png out.png] [--layers "N,C,H,W,K,R,S,P;..."]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time

import numpy as np
import report
import torch

import cudnn_rs as cd

try:
    import cudnn  # nvidia-cudnn-frontend
except ImportError:  # pragma: no cover - optional
    cudnn = None

ANCHOR = [
    ("r50_c2_3x3", 32, 64, 56, 56, 64, 3, 1, 1),
    ("r50_c3_3x3", 32, 128, 28, 28, 128, 3, 1, 1),
    ("r50_c4_3x3", 32, 256, 14, 14, 256, 3, 1, 1),
    ("r50_1x1_up", 32, 256, 56, 56, 64, 1, 1, 0),
    ("r50_s2_3x3", 32, 128, 56, 56, 128, 3, 2, 1),
]
VARIANTS = [
    ("float32", False),
    ("float32", True),
    ("float16", True),
    ("bfloat16", True),
    ("float16", False),
]
OURS = {"float32": cd.f32, "float16": cd.f16, "bfloat16": cd.bf16}


def per_call_ms(f, reps: int = 20, trials: int = 15) -> float:
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(trials):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            f()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    return statistics.median(ts)


def to_numpy_dtype(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        import ml_dtypes

        return a.astype(ml_dtypes.bfloat16)
    return a.astype(dtype)


class Fe:
    """cudnn-frontend graph for one conv_dgrad."""

    def __init__(self) -> None:
        self.handle = cudnn.create_handle()
        cudnn.set_stream(
            handle=self.handle, stream=torch.cuda.current_stream().cuda_stream
        )
        self.dt = {
            torch.float32: cudnn.data_type.FLOAT,
            torch.float16: cudnn.data_type.HALF,
            torch.bfloat16: cudnn.data_type.BFLOAT16,
        }

    def build(self, dy, w, dx, pad, st):
        g = cudnn.pygraph(
            io_data_type=self.dt[dy.dtype],
            intermediate_data_type=cudnn.data_type.FLOAT,
            compute_data_type=cudnn.data_type.FLOAT,
            handle=self.handle,
        )
        tw = g.tensor(
            name="W", dim=w.size(), stride=w.stride(), data_type=self.dt[w.dtype]
        )
        tdy = g.tensor(
            name="DY", dim=dy.size(), stride=dy.stride(), data_type=self.dt[dy.dtype]
        )
        tdx = g.conv_dgrad(
            name="dgrad",
            loss=tdy,
            filter=tw,
            padding=[pad, pad],
            stride=[st, st],
            dilation=[1, 1],
        )
        tdx.set_output(True).set_dim(dx.size()).set_stride(dx.stride())
        tdx.set_data_type(self.dt[dx.dtype])
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        ws = torch.empty(g.get_workspace_size(), device="cuda", dtype=torch.uint8)
        return lambda: g.execute({tw: w, tdy: dy, tdx: dx}, ws, handle=self.handle)


class Ours:
    """cudnn_rs on the same values (copied in through NumPy): the fastest of
    find_convolution_backward_data_algorithm (legacy API) or, with engine=True, of
    find_convolution_backward_data_engine (graph API, autotuned)."""

    def __init__(
        self, h, w_np, dy_np, x_shape, pad, st, dtype, nhwc, math_type, engine=False
    ):
        fmt = cd.NHWC if nhwc else cd.NCHW
        self.h = h
        self.w = cd.Filter.from_numpy(h, to_numpy_dtype(w_np, dtype), format=fmt)
        self.dy = cd.Tensor.from_numpy(h, to_numpy_dtype(dy_np, dtype), format=fmt)
        self.dx = cd.Tensor.empty(h, x_shape, dtype=OURS[dtype], format=fmt)
        self.conv = cd.ConvolutionDescriptor(
            padding=(pad, pad), stride=(st, st), math_type=math_type, comp_type=cd.f32
        )
        find = (
            h.find_convolution_backward_data_engine
            if engine
            else h.find_convolution_backward_data_algorithm
        )
        self.algo = find(self.w, self.dy, self.dx, self.conv)[0]
        self.name = (
            f"Engine {self.algo.index}" if engine else self.algo.algo.name  # type: ignore[union-attr]
        )
        size = h.get_convolution_backward_data_workspace_size(
            self.w, self.dy, self.dx, self.conv, self.algo
        )
        self.ws = cd.Workspace(h, size)

    def __call__(self) -> None:
        self.h.convolution_backward_data(
            1.0, self.w, self.dy, self.conv, self.algo, self.ws, 0.0, self.dx
        )


def overhead(h) -> dict[str, float]:
    out: dict[str, float] = {}
    rng = np.random.default_rng(0)
    w_np = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    dy_np = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    ours = Ours(
        h, w_np, dy_np, (1, 4, 8, 8), 1, 1, "float32", False, cd.MathType.Default
    )
    dy = torch.from_numpy(dy_np).cuda()
    w = torch.from_numpy(w_np).cuda()
    x = torch.empty(1, 4, 8, 8, device="cuda")
    ours_engine = Ours(
        h,
        w_np,
        dy_np,
        (1, 4, 8, 8),
        1,
        1,
        "float32",
        False,
        cd.MathType.Default,
        engine=True,
    )
    fns = {
        "cudnn_rs": ours,
        "cudnn_rs_engine": ours_engine,
        "torch_aten": lambda: torch.ops.aten.convolution_backward(
            dy,
            x,
            w,
            None,
            [1, 1],
            [1, 1],
            [1, 1],
            False,
            [0, 0],
            1,
            [True, False, False],
        ),
    }
    if cudnn is not None:
        fns["cudnn_frontend"] = Fe().build(dy, w, torch.empty_like(x), 1, 1)

    # Binding cost alone: a call that crosses into Rust and returns a cached answer.
    def ws_query() -> None:
        h.get_convolution_backward_data_workspace_size(
            ours.w, ours.dy, ours.dx, ours.conv, ours.algo
        )

    fns["cudnn_rs_ws_query_only"] = ws_query
    n = 5000
    for _ in range(3):  # interleave systems, keep the best of three loops each
        for name, f in fns.items():
            for _ in range(200):
                f()
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(n):
                f()
            torch.cuda.synchronize()
            us = (time.perf_counter() - t) / n * 1e6
            out[name] = min(out.get(name, math.inf), us)
            # The host's share alone: 256 calls issued into an idle stream, timed before
            # any wait (the 5000-call loop above is bound by whichever of host and GPU is
            # slower per call).
            t = time.perf_counter()
            for _ in range(256):
                f()
            us = (time.perf_counter() - t) / 256 * 1e6
            torch.cuda.synchronize()
            out[f"{name}_issue"] = min(out.get(f"{name}_issue", math.inf), us)
    # The find cache: the second find for a problem measures nothing.
    w_np = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    dy_np = rng.standard_normal((32, 64, 28, 28)).astype(np.float32)
    big = Ours(
        h, w_np, dy_np, (32, 64, 28, 28), 1, 1, "float32", True, cd.MathType.Default
    )
    for label, find in (
        ("find_algorithm", h.find_convolution_backward_data_algorithm),
        ("find_engine", h.find_convolution_backward_data_engine),
    ):
        for attempt in ("first", "cached"):
            t = time.perf_counter()
            find(big.w, big.dy, big.dx, big.conv, use_cache=attempt == "cached")
            out[f"{label}_{attempt}_us"] = (time.perf_counter() - t) * 1e6
    return out


def kernels(h, layers, rows: list[dict]) -> None:
    fe = Fe() if cudnn is not None else None
    rng = np.random.default_rng(1)
    for name, n, c, hh, ww, k, r, st, pad in layers:
        ho = (hh + 2 * pad - r) // st + 1
        wo = (ww + 2 * pad - r) // st + 1
        w_np = (rng.standard_normal((k, c, r, r)) * 0.1).astype(np.float32)
        dy_np = rng.standard_normal((n, k, ho, wo)).astype(np.float32)
        for dtype, nhwc in VARIANTS:
            tdt = getattr(torch, dtype)
            mf = torch.channels_last if nhwc else torch.contiguous_format
            w = torch.from_numpy(w_np).to("cuda", tdt).to(memory_format=mf)
            dy = torch.from_numpy(dy_np).to("cuda", tdt).to(memory_format=mf)
            x = torch.empty(n, c, hh, ww, device="cuda", dtype=tdt).to(memory_format=mf)
            for tf32 in (True, False) if dtype == "float32" else (True,):
                torch.backends.cudnn.allow_tf32 = tf32
                rec = {
                    "layer": name,
                    "dtype": dtype,
                    "layout": "NHWC" if nhwc else "NCHW",
                    "tf32": tf32 if dtype == "float32" else "",
                }
                for bench_mode in (False, True):
                    torch.backends.cudnn.benchmark = bench_mode

                    def g(dy=dy, x=x, w=w, st=st, pad=pad):
                        return torch.ops.aten.convolution_backward(
                            dy,
                            x,
                            w,
                            None,
                            [st, st],
                            [pad, pad],
                            [1, 1],
                            False,
                            [0, 0],
                            1,
                            [True, False, False],
                        )

                    key = "torch_benchmark_ms" if bench_mode else "torch_ms"
                    rec[key] = per_call_ms(g)
                if fe is not None and (tf32 or dtype != "float32"):
                    try:
                        rec["fe_ms"] = per_call_ms(
                            fe.build(dy, w, torch.empty_like(x), pad, st)
                        )
                    except Exception as err:
                        rec["fe_ms"] = math.nan
                        rec["fe_error"] = repr(err)[:120]
                math_type = cd.MathType.Default if tf32 else cd.MathType.Fma
                # Both of cudnn_rs's paths, each with its measured choice; a user
                # who autotunes both runs the faster.
                for col, engine in (("ours_legacy", False), ("ours_engine", True)):
                    try:
                        ours = Ours(
                            h,
                            w_np,
                            dy_np,
                            (n, c, hh, ww),
                            pad,
                            st,
                            dtype,
                            nhwc,
                            math_type,
                            engine,
                        )
                        rec[f"{col}_ms"] = per_call_ms(ours)
                        rec[f"{col}_algo"] = ours.name
                    except cd.CudnnRsError as err:
                        rec[f"{col}_ms"] = math.nan
                        rec[f"{col}_algo"] = f"error: {err}"[:120]
                legacy_ms, engine_ms = rec["ours_legacy_ms"], rec["ours_engine_ms"]
                use_engine = math.isnan(legacy_ms) or engine_ms < legacy_ms
                rec["ours_ms"] = engine_ms if use_engine else legacy_ms
                rec["ours_algo"] = rec[
                    "ours_engine_algo" if use_engine else "ours_legacy_algo"
                ]
                others = [
                    rec.get(k2, math.nan)
                    for k2 in ("torch_ms", "torch_benchmark_ms", "fe_ms")
                ]
                best = min((v for v in others if not math.isnan(v)), default=math.nan)
                rec["best_other_ms"] = best
                rec["ratio"] = rec["ours_ms"] / best if best else math.nan
                rows.append(rec)
                print(
                    f"{name:12} {dtype:9} {rec['layout']} tf32={rec['tf32']!s:5} "
                    f"torch {rec['torch_ms']:.4f} bench {rec['torch_benchmark_ms']:.4f} "
                    f"fe {rec.get('fe_ms', math.nan):.4f} ours {rec['ours_ms']:.4f} "
                    f"({rec['ours_algo']}; legacy {legacy_ms:.4f}, "
                    f"engine {engine_ms:.4f}) ratio {rec['ratio']:.3f}",
                    flush=True,
                )
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = False


def parse_layers(spec: str) -> list[tuple]:
    out = []
    for i, part in enumerate(p for p in spec.split(";") if p.strip()):
        n, c, hh, ww, k, r, st, pad = (int(v) for v in part.split(","))
        out.append((f"layer{i}", n, c, hh, ww, k, r, st, pad))
    return out


def chart(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['layer']} {r['dtype']} {r['layout']} {r['tf32']}" for r in rows]
    ratios = [r["ratio"] for r in rows]
    fig, ax = plt.subplots(figsize=(10, max(4, len(rows) * 0.28)))
    ax.barh(
        labels, ratios, color=["tab:green" if v <= 1.0 else "tab:red" for v in ratios]
    )
    ax.axvline(1.0, color="k", lw=1)
    ax.axvline(1.05, color="k", lw=1, ls="--")
    ax.set_xlabel(
        "cudnn_rs GPU time / best of PyTorch (heuristic, benchmark), cudnn-frontend"
    )
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="perf.csv")
    ap.add_argument("--png", default=None)
    ap.add_argument("--layers", default="")
    ap.add_argument("--skip-anchor", action="store_true")
    ap.add_argument(
        "--overhead-only", action="store_true", help="host overhead only, no kernels"
    )
    args = ap.parse_args()
    h = cd.Handle()
    print(f"cudnn_rs on {h.device}, cuDNN {h.version()}, torch {torch.__version__}")
    ov = overhead(h)
    print(
        "host overhead per call (us): "
        + ", ".join(f"{k} {v:.2f}" for k, v in ov.items())
    )
    if args.overhead_only:
        return 0
    rows: list[dict] = []
    layers = ([] if args.skip_anchor else ANCHOR) + parse_layers(args.layers)
    kernels(h, layers, rows)
    fields = sorted({k for r in rows for k in r})
    with open(args.csv, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields)
        wr.writeheader()
        wr.writerows(rows)
        for name, us in ov.items():
            f.write(f"# overhead_us,{name},{us:.3f}\n")
    ratios = [r["ratio"] for r in rows if not math.isnan(r["ratio"])]
    if ratios:
        geo = report.geo_mean(ratios)
        print(
            f"rows {len(rows)}, worst ratio {max(ratios):.3f}, geometric mean {geo:.3f}"
        )
    if args.png:
        chart(rows, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
