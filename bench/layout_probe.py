"""Channels-last layers whose filters fit both layouts (1x1, depthwise), through the
contract's spelling: `Filter.from_dlpack(w)` and `Tensor.from_dlpack(dy)` without a
format, the one-call API on `Handle()`, against PyTorch's dgrad on the same tensors.

Each line: a layer, the format the filter imported as, and ms per call (CUDA events
around 100 calls after 20 warm-up calls, the median of 5 such timings) for the one-call
API, the explicit call with DefaultAlgo into a kept dx, and PyTorch. Run it with two
builds on PYTHONPATH in turn to compare them (GPU machine).

Usage: python bench/layout_probe.py [LABEL]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NamedTuple

import torch
from broad import Layer, Timer, torch_dgrad

import cudnn_rs as cd

# name, x shape, filter shape, stride, padding, groups
LAYERS = [
    ("1x1 256->64 56x56", (32, 256, 56, 56), (64, 256, 1, 1), 1, 0, 1),
    ("1x1 64->256 56x56", (32, 64, 56, 56), (256, 64, 1, 1), 1, 0, 1),
    ("1x1/2 512->1024 28x28", (32, 512, 28, 28), (1024, 512, 1, 1), 2, 0, 1),
    ("1x1 960->160 7x7", (32, 960, 7, 7), (160, 960, 1, 1), 1, 0, 1),
    ("dw3x3 240 14x14", (32, 240, 14, 14), (240, 1, 3, 3), 1, 1, 240),
    ("dw5x5/2 672 14x14", (32, 672, 14, 14), (672, 1, 5, 5), 2, 2, 672),
    ("dw3x3/2 64 56x56", (32, 64, 56, 56), (64, 1, 3, 3), 2, 1, 64),
]


class Operands(NamedTuple):
    """A 2-d layer's random operands on the GPU, its dx in float64 and PyTorch's dgrad."""

    x: torch.Tensor
    w: torch.Tensor
    dy: torch.Tensor
    conv: cd.ConvolutionDescriptor
    ref: torch.Tensor
    pytorch: Callable[[], object]


def operands(
    xs: tuple[int, ...],
    ws: tuple[int, ...],
    stride: int,
    pad: int,
    groups: int,
    dtype: torch.dtype,
    fmt: torch.memory_format,
) -> Operands:
    """x, w and dy drawn at random in memory format ``fmt``, and what to check them by."""
    x = torch.randn(xs, device="cuda", dtype=dtype).to(memory_format=fmt)
    w = torch.randn(ws, device="cuda", dtype=dtype).to(memory_format=fmt)
    y = torch.nn.functional.conv2d(x, w, None, stride, pad, 1, groups)
    dy = torch.randn_like(y).to(memory_format=fmt)
    conv = cd.ConvolutionDescriptor(
        padding=(pad, pad), stride=(stride, stride), groups=groups
    )
    ref = torch.nn.grad.conv2d_input(
        xs, w.double(), dy.double(), stride, pad, 1, groups
    )
    two = (stride, stride), (pad, pad)
    layer = Layer("", xs[1], ws[0], xs[2:], ws[2:], *two, (1, 1), groups, xs[0])
    return Operands(x, w, dy, conv, ref, lambda: torch_dgrad(dy, x, w, layer))


def rel_err(got: object, ref: torch.Tensor) -> float:
    """max |got - ref| / max |ref|, got being any DLPack array."""
    diff = torch.from_dlpack(got).double() - ref
    return (diff.abs().max() / ref.abs().max()).item()


def probe(h: cd.Handle, label: str, dtype: torch.dtype, layer: tuple) -> None:
    """One layer's line."""
    name, xs, ws, stride, pad, groups = layer
    cl = torch.channels_last
    x, w, dy, conv, ref, pytorch = operands(xs, ws, stride, pad, groups, dtype, cl)
    wt, dyt = cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(dy)
    dx = torch.empty_like(x, memory_format=cl)
    dxt = cd.Tensor.from_dlpack(dx)
    algo = cd.DefaultAlgo()
    size = h.get_convolution_backward_data_workspace_size(wt, dyt, dxt, conv, algo)
    space = cd.Workspace(h, size) if size else None

    def one_call() -> object:
        return cd.convolution_backward_data(h, wt, dyt, conv, xs)

    def explicit() -> None:
        h.convolution_backward_data(1.0, wt, dyt, conv, algo, space, 0.0, dxt)

    err = rel_err(one_call(), ref)
    timer = Timer("cuda", reps=100, trials=5, warmup=20)
    times = [timer.per_call_ms(f) for f in (one_call, explicit, pytorch)]
    print(
        f"{label:6s} {str(dtype)[6:]:8s} {name:24s} filter {wt.format.__name__:4s} "
        f"one-call {times[0]:.4f} explicit {times[1]:.4f} torch {times[2]:.4f} "
        f"err {err:.1e}",
        flush=True,
    )


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "this build"
    torch.backends.cudnn.allow_tf32 = True
    h = cd.Handle()
    print(f"# {label}: cudnn_rs from {cd.__file__}; {torch.cuda.get_device_name()}")
    for dtype in (torch.float16, torch.float32):
        for layer in LAYERS:
            probe(h, label, dtype, layer)


if __name__ == "__main__":
    main()
