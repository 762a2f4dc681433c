"""Quick probe: cudnn_rs's default choice (``DefaultAlgo``), ``BestEngine`` and the
measured tier beside PyTorch's default dgrad, on a few layer families, same tensors.
GPU time per call: 20 calls between two events, median of 7. Prints one line per row.

Usage (GPU machine): python bench/default_probe.py
"""

from __future__ import annotations

import statistics

import torch

import cudnn_rs as cd

# name, N, C, H, W, K, R, S, stride, pad, dil, groups, dims
ROWS = [
    ("dw3x3", 32, 256, 28, 28, 256, 3, 3, 1, 1, 1, 256, 2),
    ("dw7x7", 32, 384, 14, 14, 384, 7, 7, 1, 3, 1, 384, 2),
    ("stem7x7s2", 32, 3, 224, 224, 64, 7, 7, 2, 3, 1, 1, 2),
    ("c512_3x3", 32, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 2),
    ("1x1_2048", 32, 2048, 7, 7, 512, 1, 1, 1, 0, 1, 1, 2),
    ("dil2", 32, 256, 28, 28, 256, 3, 3, 1, 2, 2, 1, 2),
    ("g32", 32, 256, 28, 28, 256, 3, 3, 1, 1, 1, 32, 2),
    ("3d3x3x3", 8, 64, 16, 28, 64, 3, 3, 1, 1, 1, 1, 3),
]
CONFIGS = [  # torch dtype, channels_last, tf32
    (torch.float32, False, False),
    (torch.float32, True, False),
    (torch.float32, True, True),
    (torch.float16, True, True),
    (torch.bfloat16, True, True),
]
OURS = {torch.float32: cd.f32, torch.float16: cd.f16, torch.bfloat16: cd.bf16}


def per_call_ms(f, reps: int = 20, trials: int = 7) -> float:
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(trials):
        s, e = (
            torch.cuda.Event(enable_timing=True),
            torch.cuda.Event(enable_timing=True),
        )
        s.record()
        for _ in range(reps):
            f()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    return statistics.median(ts)


def kernels(f) -> str:
    """The GPU kernels one call launches (short names), from torch's profiler."""
    f()
    torch.cuda.synchronize()
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CUDA]
    ) as prof:
        f()
        torch.cuda.synchronize()
    names = {
        e.name[:60]
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA
    }
    return " + ".join(sorted(names))


def probe_row(h, hb, row, dt, cl, tf32) -> None:
    name, n, c, hh, ww, k, r, s, st, pad, dil, g, dims = row
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = False
    if dims == 3:
        d = hh
        xs, ws = (n, c, d, ww, ww), (k, c // g, r, r, r)
        mf = torch.channels_last_3d if cl else torch.contiguous_format
    else:
        xs, ws = (n, c, hh, ww), (k, c // g, r, s)
        mf = torch.channels_last if cl else torch.contiguous_format
    nd = dims
    x = torch.randn(xs, device="cuda", dtype=dt).to(memory_format=mf)
    w = torch.randn(ws, device="cuda", dtype=dt).to(memory_format=mf)
    conv_fn = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv3d
    out = conv_fn(x, w, None, st, pad, dil, g)
    dy = torch.randn_like(out).to(memory_format=mf)
    dx = torch.empty_like(x, memory_format=mf)

    def torch_dgrad():
        torch.ops.aten.convolution_backward(
            dy,
            x,
            w,
            None,
            [st] * nd,
            [pad] * nd,
            [dil] * nd,
            False,
            [0] * nd,
            g,
            [True, False, False],
        )

    fmt = cd.NHWC if cl else cd.NCHW
    wt = cd.Filter.from_dlpack(w, format=fmt)
    dyt = cd.Tensor.from_dlpack(dy, format=fmt)
    dxt = cd.Tensor.from_dlpack(dx, format=fmt)
    math = cd.MathType.Default if (tf32 or dt != torch.float32) else cd.MathType.Fma
    conv = cd.ConvolutionDescriptor(
        padding=(pad,) * nd,
        stride=(st,) * nd,
        dilation=(dil,) * nd,
        groups=g,
        math_type=math,
        comp_type=cd.f32,
    )
    res = {"torch": per_call_ms(torch_dgrad)}
    engines = {}
    for label, handle, algo in (
        ("default", h, cd.DefaultAlgo()),
        ("best_engine", h, cd.BestEngine()),
        ("measured", hb, cd.DefaultAlgo()),
    ):
        try:
            size = handle.get_convolution_backward_data_workspace_size(
                wt, dyt, dxt, conv, algo
            )
            wsp = cd.Workspace(handle, size) if size else None

            def ours(handle=handle, algo=algo, wsp=wsp):
                handle.convolution_backward_data(
                    1.0, wt, dyt, conv, algo, wsp, 0.0, dxt
                )

            res[label] = per_call_ms(ours)
            if label != "best_engine":
                e = handle.get_convolution_backward_data_default(wt, dyt, dxt, conv)
                engines[label] = e.index
        except Exception as exc:
            res[label] = float("nan")
            engines[label] = type(exc).__name__
    ref = torch.ops.aten.convolution_backward(
        dy,
        x,
        w,
        None,
        [st] * nd,
        [pad] * nd,
        [dil] * nd,
        False,
        [0] * nd,
        g,
        [True, False, False],
    )[0]
    size = h.get_convolution_backward_data_workspace_size(
        wt, dyt, dxt, conv, cd.DefaultAlgo()
    )
    wsp = cd.Workspace(h, size) if size else None
    dx.fill_(float("nan"))
    h.convolution_backward_data(1.0, wt, dyt, conv, cd.DefaultAlgo(), wsp, 0.0, dxt)
    torch.cuda.synchronize()
    err = ((dx.float() - ref.float()).norm() / ref.float().norm()).item()
    print(
        f"{name:10s} {str(dt)[6:]:9s} {'NHWC' if cl else 'NCHW'} tf32={int(tf32)} "
        f"torch {res['torch']:.4f} default {res['default']:.4f} "
        f"({res['default'] / res['torch']:.2f}x, e{engines.get('default')}) "
        f"best_engine {res['best_engine']:.4f} measured {res['measured']:.4f} "
        f"({res['measured'] / res['torch']:.2f}x, e{engines.get('measured')}) "
        f"relerr {err:.1e}",
        flush=True,
    )
    if res["default"] > 1.05 * res["torch"]:
        print(f"    torch kernels: {kernels(torch_dgrad)}", flush=True)
        ours = kernels(lambda: _default_call(h, wt, dyt, conv, dxt))
        print(f"    ours kernels:  {ours}", flush=True)


def _default_call(h, wt, dyt, conv, dxt) -> None:
    size = h.get_convolution_backward_data_workspace_size(
        wt, dyt, dxt, conv, cd.DefaultAlgo()
    )
    wsp = cd.Workspace(h, size) if size else None
    h.convolution_backward_data(1.0, wt, dyt, conv, cd.DefaultAlgo(), wsp, 0.0, dxt)


def main() -> None:
    h = cd.Handle()
    h.set_stream(torch.cuda.current_stream())
    hb = cd.Handle(benchmark=True)
    hb.set_stream(torch.cuda.current_stream())
    for row in ROWS:
        for dt, cl, tf32 in CONFIGS:
            probe_row(h, hb, row, dt, cl, tf32)


if __name__ == "__main__":
    main()
