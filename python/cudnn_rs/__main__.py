"""``python -m cudnn_rs demo``: one realistic backward-data layer, checked.

Runs on the GPU through cuDNN when one is usable, otherwise on the CPU reference
device (and says so). The result is compared with an independent reference: the CPU
device for a GPU run, a NumPy loop over kernel offsets for a CPU run.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import cudnn_rs as cd


def numpy_backward_data(
    w: np.ndarray, dy: np.ndarray, x_shape: tuple[int, ...], pad: int, stride: int
) -> np.ndarray:
    """dx of a 2-d cross-correlation, groups 1, dilation 1, in float64."""
    n, c, h, wd = x_shape
    _, _, r, s = w.shape
    padded = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    _, _, p, q = dy.shape
    for i in range(r):
        for j in range(s):
            # dy (n,k,p,q) x w[:, :, i, j] (k,c) -> contribution (n,c,p,q)
            contrib = np.einsum("nkpq,kc->ncpq", dy, w[:, :, i, j])
            rows = slice(i, i + stride * (p - 1) + 1, stride)
            cols = slice(j, j + stride * (q - 1) + 1, stride)
            padded[:, :, rows, cols] += contrib
    return padded[:, :, pad : pad + h, pad : pad + wd]


def demo() -> int:
    gpu = cd.cuda_available()
    handle = None
    if gpu:
        try:
            handle = cd.Handle()
        except (cd.LibraryNotFoundError, cd.CudaError) as err:
            print(f"GPU present but unusable ({err}); falling back to the CPU device")
    if handle is None:
        if not gpu:
            print("No CUDA GPU found: running on the CPU reference device.")
        handle = cd.Handle(device="cpu")
    on_gpu = handle.device != "cpu"
    # ResNet-50 conv2_x 3x3 layer: 64 -> 64 channels, 56x56, stride 1, padding 1.
    n = 32 if on_gpu else 2
    c = k = 64
    h = wd = 56
    rng = np.random.default_rng()
    x_shape = (n, c, h, wd)
    w_np = (rng.standard_normal((k, c, 3, 3)) * 0.1).astype(np.float32)
    dy_np = rng.standard_normal((n, k, h, wd)).astype(np.float32)
    fmt = cd.NHWC if on_gpu else cd.NCHW
    w = cd.Filter.from_numpy(handle, w_np, format=fmt)
    dy = cd.Tensor.from_numpy(handle, dy_np, format=fmt)
    conv = cd.ConvolutionDescriptor(
        padding=(1, 1), stride=(1, 1), dilation=(1, 1), groups=1, comp_type=cd.f32
    )
    dx = cd.Tensor.zeros(handle, x_shape, dtype=cd.f32, format=fmt)
    best = handle.get_convolution_backward_data_algorithm(w, dy, dx, conv)
    size = handle.get_convolution_backward_data_workspace_size(w, dy, dx, conv, best)
    ws = cd.Workspace(handle, size)
    handle.convolution_backward_data(1.0, w, dy, conv, best, ws, 0.0, dx)  # warm-up
    handle.synchronize()
    runs = 20 if on_gpu else 3
    start = time.perf_counter()
    for _ in range(runs):
        handle.convolution_backward_data(1.0, w, dy, conv, best, ws, 0.0, dx)
    handle.synchronize()
    ms = (time.perf_counter() - start) / runs * 1e3
    got = dx.to_numpy().astype(np.float64)

    if on_gpu:
        cpu = cd.Handle(device="cpu")
        ref_dx = cd.convolution_backward_data(
            cpu,
            cd.Filter.from_numpy(cpu, w_np),
            cd.Tensor.from_numpy(cpu, dy_np),
            conv,
            x_shape=x_shape,
        )
        ref = ref_dx.to_numpy().astype(np.float64)
        ref_name = "CPU reference device"
        # cuDNN may compute f32 convolutions in TF32 on tensor cores.
        tol = 1e-2
    else:
        w64, dy64 = w_np.astype(np.float64), dy_np.astype(np.float64)
        ref = numpy_backward_data(w64, dy64, x_shape, 1, 1)
        ref_name = "NumPy reference"
        tol = 1e-5
    rel_err = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))
    if on_gpu:
        version = ".".join(map(str, handle.version()))
        print(f"device:     {handle.device} (cuDNN {version})")
    else:
        print(f"device:     {handle.device} (the CPU reference device; cuDNN not used)")
    print(f"layer:      3x3 conv, x {x_shape}, w {w.shape}, dy {dy.shape}")
    print(f"format:     {fmt.name}, f32")
    algo = best.algo.name
    print(f"algorithm:  {algo} ({best.determinism.name}, math {best.math_type.name})")
    print(f"workspace:  {size or 0} bytes")
    print(f"time:       {ms:.3f} ms per call (mean of {runs})")
    print(f"max error:  {rel_err:.2e} relative to max |ref|, vs the {ref_name}")
    print(f"tolerance:  {tol:.0e}")
    ok = bool(np.all(np.isfinite(got))) and rel_err <= tol
    print("check:      " + ("PASSED" if ok else "FAILED"))
    return 0 if ok else 1


def info() -> int:
    """Prints the driver, where cuDNN was loaded from (or every place searched) and
    the GPUs. Always exits 0: reporting what is missing is its job."""
    print(
        f"cudnn_rs {cd.__version__} (bindings written against cuDNN "
        f"{'.'.join(map(str, cd.BOUND_CUDNN_VERSION))})"
    )
    driver = cd._native._driver_info()
    if driver["loaded"] is not None:
        v = driver["version"]
        shown = f"{v // 1000}.{(v % 1000) // 10}" if isinstance(v, int) else "unknown"
        print(f"CUDA driver: {driver['loaded']} (supports CUDA {shown})")
    else:
        print(f"CUDA driver: none ({driver['error']})")
        for name, why in driver["tried"]:
            print(f"  tried {name}: {why}")
    lib = cd._native._cudnn_info()
    if lib["origin"] is not None:
        print(f"cuDNN {'.'.join(map(str, lib['version']))} from {lib['origin']}")
    else:
        print(f"cuDNN: not loaded: {lib['error']}")
    gpus = cd._native._gpus()
    if not gpus:
        print("GPUs: none")
    for ordinal, name, total in gpus:
        print(f"GPU cuda:{ordinal}: {name}, {total / 2**30:.1f} GiB")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cudnn_rs")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run and check one backward-data layer")
    sub.add_parser("info", help="show devices and where cuDNN is loaded from")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    return info()


if __name__ == "__main__":
    sys.exit(main())
