"""The one-call API with a new `cd.Handle()` on every call, as a backward written
straight from the contract's example would make it, against the same call on one kept
handle and against PyTorch's dgrad on the same tensors.

Each line: a layer and ms per call (CUDA events around 50 calls after 5 warm-up calls,
the median of 5 such timings; a host-bound loop shows its host time):
- `kept`: `cd.convolution_backward_data(h, w, dy, conv, x_shape)` on one handle;
- `fresh`: the same with `cd.Handle()` made in the call;
- `naive`: a whole backward as the contract spells it, every call: `cd.Handle()`,
  `Filter.from_dlpack(w)`, `Tensor.from_dlpack(dy)`, the one-call API, `torch.from_dlpack`;
- `torch`: `aten.convolution_backward` for the input gradient alone.
First, the host time of `cd.Handle()` made and dropped alone (us, best of 5 x 2000,
`host_overhead.per_iter_us`).

With --measured, the same with `cd.Handle(benchmark=True)`: `kept` on one measuring
handle (which measures the layer at its first call), `fresh` with a new one in the call;
first `one`, the wall time of one such call after the kept handle measured the layer (a
build that measures again per handle takes seconds there: its loop is then left out).

Usage (GPU machine): python bench/handle_probe.py [--measured] [LABEL]
"""

from __future__ import annotations

import sys

import host_overhead
import torch
from broad import Timer
from layout_probe import operands, rel_err

import cudnn_rs as cd

# name, x shape, filter shape, stride, padding, groups, channels last
LAYERS = [
    ("3x3 64->64 56x56", (32, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, False),
    ("1x1 256->64 56x56 cl", (32, 256, 56, 56), (64, 256, 1, 1), 1, 0, 1, True),
    ("1x1 2048->512 7x7 cl", (32, 2048, 7, 7), (512, 2048, 1, 1), 1, 0, 1, True),
    ("dw3x3 240 14x14 cl", (32, 240, 14, 14), (240, 1, 3, 3), 1, 1, 240, True),
    ("3x3/2 128->128 28x28", (32, 128, 28, 28), (128, 128, 3, 3), 2, 1, 1, False),
    ("tiny 1x4x8x8", (1, 4, 8, 8), (4, 4, 3, 3), 1, 1, 1, False),
]


def probe(label: str, dtype: torch.dtype, layer: tuple) -> None:
    """One layer's line."""
    name, xs, ws, stride, pad, groups, cl = layer
    fmt = torch.channels_last if cl else torch.contiguous_format
    _, w, dy, conv, ref, pytorch = operands(xs, ws, stride, pad, groups, dtype, fmt)
    h = cd.Handle()
    wt, dyt = cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(dy)

    def kept() -> object:
        return cd.convolution_backward_data(h, wt, dyt, conv, xs)

    def fresh() -> object:
        return cd.convolution_backward_data(cd.Handle(), wt, dyt, conv, xs)

    def naive() -> torch.Tensor:
        hh = cd.Handle()
        out = cd.convolution_backward_data(
            hh, cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(dy), conv, xs
        )
        return torch.from_dlpack(out)

    errs = [rel_err(f(), ref) for f in (kept, fresh, naive)]
    timer = Timer("cuda", reps=50, trials=5, warmup=5)
    times = [timer.per_call_ms(f) for f in (kept, fresh, naive, pytorch)]
    print(
        f"{label:6s} {str(dtype)[6:]:8s} {name:22s} "
        f"kept {times[0]:.4f} fresh {times[1]:.4f} naive {times[2]:.4f} "
        f"torch {times[3]:.4f} fresh/torch {times[1] / times[3]:.2f} "
        f"max err {max(errs):.1e}",
        flush=True,
    )


def probe_measured(label: str, dtype: torch.dtype, layer: tuple) -> None:
    """One layer's line with measuring handles (--measured)."""
    name, xs, ws, stride, pad, groups, cl = layer
    fmt = torch.channels_last if cl else torch.contiguous_format
    _, w, dy, conv, ref, pytorch = operands(xs, ws, stride, pad, groups, dtype, fmt)
    h = cd.Handle(benchmark=True)
    wt, dyt = cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(dy)

    def kept() -> object:
        return cd.convolution_backward_data(h, wt, dyt, conv, xs)

    def fresh() -> object:
        return cd.convolution_backward_data(
            cd.Handle(benchmark=True), wt, dyt, conv, xs
        )

    timer = Timer("cuda", reps=50, trials=5, warmup=5)
    errs = [rel_err(kept(), ref)]
    one = timer.first_call_ms(fresh)
    errs.append(rel_err(fresh(), ref))
    times = [timer.per_call_ms(kept), timer.per_call_ms(pytorch)]
    loop = f"fresh {timer.per_call_ms(fresh):.4f}" if one < 50.0 else "fresh (left out)"
    print(
        f"{label:6s} {str(dtype)[6:]:8s} {name:22s} measured: one {one:.3f} "
        f"kept {times[0]:.4f} {loop} torch {times[1]:.4f} max err {max(errs):.1e}",
        flush=True,
    )


def main() -> None:
    args = sys.argv[1:]
    measured = "--measured" in args
    args = [a for a in args if a != "--measured"]
    label = args[0] if args else "this build"
    torch.backends.cudnn.allow_tf32 = True
    print(f"# {label}: cudnn_rs from {cd.__file__}; {torch.cuda.get_device_name()}")
    if not measured:
        made = min(host_overhead.per_iter_us(cd.Handle, 2000) for _ in range(5))
        print(f"{label:6s} Handle() made and dropped: {made:.2f} us", flush=True)
    for dtype in (torch.float16, torch.float32):
        for layer in LAYERS:
            (probe_measured if measured else probe)(label, dtype, layer)


if __name__ == "__main__":
    main()
