"""Host cost per call of the Python layer, on the CPU device (any machine, no GPU).

The binding's own work around a call: imports of NumPy arrays, descriptors, the
one-call API and ``conv_input_grad`` on a problem small enough (1x1x1x1 or 1x4x8x8)
that the reference's arithmetic is a small part. What a GPU call pays in the same
Python and Rust code is the same; cuDNN's and the driver's parts are not here (see
``bench/host_overhead.py`` on the GPU machine). Each line: the best of ``ROUNDS``
rounds of ``N`` calls, microseconds per call. To compare two builds, run this with
each on ``PYTHONPATH`` in turn, more than once: this machine's timings move by 10-50%
between runs.

Usage: python bench/cpu_host_overhead.py [N] [ROUNDS]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import cudnn_rs as cd


def per_call_us(f: Callable[[], object], n: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, time.perf_counter() - t)
    return best / n * 1e6


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    h = cd.Handle(device="cpu")
    rng = np.random.default_rng(0)
    one = np.ones((1, 1, 1, 1), np.float32)
    w_np = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    dy_np = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    w, dy = cd.Filter.from_numpy(h, w_np), cd.Tensor.from_numpy(h, dy_np)
    conv1 = cd.ConvolutionDescriptor(padding=(0, 0))
    conv3 = cd.ConvolutionDescriptor(padding=(1, 1))
    tiny_w, tiny_dy = cd.Filter.from_numpy(h, one), cd.Tensor.from_numpy(h, one)
    loops: list[tuple[str, Callable[[], object]]] = [
        ("Tensor.from_dlpack(NumPy), no handle", lambda: cd.Tensor.from_dlpack(one)),
        (
            "Tensor.from_dlpack(NumPy, handle=h)",
            lambda: cd.Tensor.from_dlpack(one, handle=h),
        ),
        (
            "ConvolutionDescriptor, three tuples",
            lambda: cd.ConvolutionDescriptor((1, 1), (1, 1), (1, 1)),
        ),
        (
            "one-call API, 1x1x1x1",
            lambda: cd.convolution_backward_data(
                h, tiny_w, tiny_dy, conv1, (1, 1, 1, 1)
            ),
        ),
        (
            "contract loop, 1x1x1x1 (imports, one-call, np.from_dlpack)",
            lambda: np.from_dlpack(
                cd.convolution_backward_data(
                    h,
                    cd.Filter.from_dlpack(one),
                    cd.Tensor.from_dlpack(one),
                    conv1,
                    (1, 1, 1, 1),
                )
            ),
        ),
        (
            "conv_input_grad(NumPy), 1x1x1x1",
            lambda: cd.conv_input_grad((1, 1, 1, 1), one, one),
        ),
        (
            "one-call API, 1x4x8x8 3x3",
            lambda: cd.convolution_backward_data(h, w, dy, conv3, (1, 4, 8, 8)),
        ),
        (
            "conv_input_grad(NumPy), 1x4x8x8 3x3",
            lambda: cd.conv_input_grad((1, 4, 8, 8), w_np, dy_np, 1, 1),
        ),
    ]
    print(
        f"# cudnn_rs {cd.__version__} from {cd.__file__}; {n} calls x {rounds} rounds"
    )
    for name, f in loops:
        print(f"{name:60s} {per_call_us(f, n, rounds):8.2f} us", flush=True)


if __name__ == "__main__":
    main()
