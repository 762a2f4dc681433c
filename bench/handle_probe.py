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

Also `one`: the wall time of one `fresh` call after the kept handle's first (a build
that measures or plans again per handle takes long there: then only `kept` and `torch`
are timed). With --measured, every handle is a `cd.Handle(benchmark=True)`: the kept one
measures the layer at its first call, and a new one should not measure it again.

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


def probe(label: str, dtype: torch.dtype, layer: tuple, measured: bool) -> None:
    """One layer's line; `measured`: with `Handle(benchmark=True)` (--measured)."""
    name, xs, ws, stride, pad, groups, cl = layer
    fmt = torch.channels_last if cl else torch.contiguous_format
    _, w, dy, conv, ref, pytorch = operands(xs, ws, stride, pad, groups, dtype, fmt)
    h = cd.Handle(benchmark=measured)
    wt, dyt = cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(dy)

    def kept() -> object:
        return cd.convolution_backward_data(h, wt, dyt, conv, xs)

    def fresh() -> object:
        hh = cd.Handle(benchmark=measured)
        return cd.convolution_backward_data(hh, wt, dyt, conv, xs)

    def naive() -> torch.Tensor:
        hh = cd.Handle(benchmark=measured)
        out = cd.convolution_backward_data(
            hh, cd.Filter.from_dlpack(w), cd.Tensor.from_dlpack(dy), conv, xs
        )
        return torch.from_dlpack(out)

    timer = Timer("cuda", reps=50, trials=5, warmup=5)
    errs = [rel_err(kept(), ref)]  # measured: the kept handle measures here
    one = timer.first_call_ms(fresh)
    errs += [rel_err(f(), ref) for f in (fresh, naive)]
    # A build that measures again per handle takes seconds a call: no loops of those.
    loops = {"kept": kept, "torch": pytorch}
    if one < 50.0:
        loops |= {"fresh": fresh, "naive": naive}
    times = {k: timer.per_call_ms(f) for k, f in loops.items()}
    shown = " ".join(
        f"{k} {times[k]:.4f}" if k in times else f"{k} (left out)"
        for k in ("kept", "fresh", "naive", "torch")
    )
    ratio = f"{times['fresh'] / times['torch']:.2f}" if "fresh" in times else "-"
    print(
        f"{label:6s} {str(dtype)[6:]:8s} {name:22s} {'measured ' if measured else ''}"
        f"one {one:.3f} {shown} fresh/torch {ratio} max err {max(errs):.1e}",
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
            probe(label, dtype, layer, measured)


if __name__ == "__main__":
    main()
