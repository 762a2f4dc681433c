"""Reliability measurements on the GPU machine (issue 9): leaks, faults, threads.

- 100k backward-data calls and 10k create/destroy cycles of handles, tensors and
  descriptors: host RSS and device memory before and after (they must return to
  baseline; numbers go to bench/RESULTS.md).
- Faults, each in a subprocess so the parent keeps working: no cuDNN
  (CUDNN_RS_CUDNN_PATH=/nonexistent), cuDNN path pointing at a wrong file, device
  out-of-memory (a workspace larger than the card) followed by a successful call.
- Threads: 8 threads sharing one handle and 8 with their own, results checked.
Prints one line per check and "N passed, M failed" last.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading

import numpy as np

import cudnn_rs as cd

RESULTS: list[tuple[str, bool, str]] = []


def record(name: str, ok: bool, detail: str) -> None:
    RESULTS.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def device_used_mib() -> float:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return float(out.stdout.split()[0])
    except (IndexError, ValueError):
        return float("nan")


def problem(h: cd.Handle, rng: np.random.Generator):
    w_np = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    dy_np = rng.standard_normal((2, 8, 16, 16)).astype(np.float32)
    w = cd.Filter.from_numpy(h, w_np)
    dy = cd.Tensor.from_numpy(h, dy_np)
    conv = cd.ConvolutionDescriptor((1, 1), math_type=cd.MathType.Fma)
    return w_np, dy_np, w, dy, conv


def reference(w_np, dy_np, conv) -> np.ndarray:
    cpu = cd.Handle(device="cpu")
    return cd.convolution_backward_data(
        cpu,
        cd.Filter.from_numpy(cpu, w_np),
        cd.Tensor.from_numpy(cpu, dy_np),
        conv,
        x_shape=(2, 4, 16, 16),
    ).to_numpy()


def leaks(h: cd.Handle) -> None:
    rng = np.random.default_rng(0)
    _, _, w, dy, conv = problem(h, rng)
    dx = cd.Tensor.empty(h, (2, 4, 16, 16))
    # The legacy path (replayed CUDA graphs) and the graph API (cached plans), each
    # 100k calls after a warm-up.
    for label, algo in (
        ("100k calls", h.get_convolution_backward_data_algorithm(w, dy, dx, conv)),
        ("100k calls, BestEngine", cd.BestEngine()),
    ):
        ws = cd.Workspace(
            h, h.get_convolution_backward_data_workspace_size(w, dy, dx, conv, algo)
        )
        for _ in range(2000):
            h.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dx)
        h.synchronize()
        gc.collect()
        rss0, dev0 = rss_mib(), device_used_mib()
        for _ in range(100_000):
            h.convolution_backward_data(1.0, w, dy, conv, algo, ws, 0.0, dx)
        h.synchronize()
        gc.collect()
        rss1, dev1 = rss_mib(), device_used_mib()
        record(
            label,
            rss1 - rss0 < 8 and dev1 - dev0 < 64,
            f"RSS {rss0:.1f} -> {rss1:.1f} MiB, device {dev0:.0f} -> {dev1:.0f} MiB",
        )

    # Create/destroy cycles in rounds: allocator pools and cuDNN's per-process caches
    # grow once and then stay; a leak keeps growing from round to round.
    def rounds_of(label: str, n: int, body) -> None:
        rounds = []
        for _ in range(4):
            for i in range(n):
                body(i)
            h.synchronize()
            gc.collect()
            rounds.append((rss_mib(), device_used_mib()))
        text = ", ".join(f"{r:.1f}/{d:.0f}" for r, d in rounds)
        steady = rounds[-1][0] - rounds[1][0] < 2 and rounds[-1][1] - rounds[1][1] < 8
        record(label, steady, f"RSS/device MiB after each of 4 rounds of {n}: {text}")

    def handle_cycle(_: int) -> None:
        h2 = cd.Handle()
        t = cd.Tensor.zeros(h2, (2, 4, 16, 16))
        del t, h2

    def tensor_cycle(_: int) -> None:
        t = cd.Tensor.zeros(h, (2, 4, 16, 16))
        f = cd.Filter.zeros(h, (8, 4, 3, 3))
        c = cd.ConvolutionDescriptor((1, 1))
        w2 = cd.Workspace(h, 4096)
        del t, f, c, w2

    rounds_of("handle create/destroy cycles", 250, handle_cycle)
    rounds_of("tensor/descriptor/workspace create/destroy cycles", 2_500, tensor_cycle)


def faults(h: cd.Handle) -> None:
    code = (
        "import cudnn_rs as cd\n"
        "try:\n"
        "    cd.Handle()\n"
        "    print('NO ERROR')\n"
        "except cd.LibraryNotFoundError as e:\n"
        "    print('LibraryNotFoundError', str(e)[:160])\n"
    )
    for label, path in (("no cuDNN", "/nonexistent"), ("wrong file", "/etc/hostname")):
        env = dict(os.environ, CUDNN_RS_CUDNN_PATH=path)
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        ok = out.returncode == 0 and out.stdout.startswith("LibraryNotFoundError")
        record(f"fault: {label}", ok, (out.stdout + out.stderr).strip()[:200])
    try:
        cd.Workspace(h, 1 << 40)  # 1 TiB: more than the card holds
        record("fault: device OOM", False, "no error")
    except cd.DeviceMemoryError as e:
        rng = np.random.default_rng(1)
        w_np, dy_np, w, dy, conv = problem(h, rng)
        dx = cd.convolution_backward_data(h, w, dy, conv, x_shape=(2, 4, 16, 16))
        err = np.max(np.abs(dx.to_numpy() - reference(w_np, dy_np, conv)))
        record(
            "fault: device OOM",
            isinstance(e, MemoryError) and err < 1e-3,
            f"DeviceMemoryError then a correct call (max abs err {err:.1e}): {str(e)[:100]}",
        )


def threads() -> None:
    shared = cd.Handle()
    errors: list[str] = []

    def work(seed: int, own: bool) -> None:
        try:
            h = cd.Handle() if own else shared
            rng = np.random.default_rng(seed)
            w_np, dy_np, w, dy, conv = problem(h, rng)
            want = reference(w_np, dy_np, conv)
            for _ in range(50):
                dx = cd.convolution_backward_data(
                    h, w, dy, conv, x_shape=(2, 4, 16, 16)
                )
                got = dx.to_numpy()
                if np.max(np.abs(got - want)) > 1e-3:
                    errors.append(f"seed {seed}: mismatch")
                    return
        except Exception as e:  # record, never lose a thread's failure
            errors.append(f"seed {seed}: {e!r}")

    for own in (False, True):
        ts = [threading.Thread(target=work, args=(i, own)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        label = "own handles" if own else "one shared handle"
        record(
            f"8 threads, {label}",
            not errors,
            "; ".join(errors) or "all results correct",
        )
        errors.clear()


def main() -> int:
    h = cd.Handle()
    print(f"cudnn_rs on {h.device}, cuDNN {h.version()}")
    leaks(h)
    faults(h)
    threads()
    passed = sum(ok for _, ok, _ in RESULTS)
    print(f"{passed} passed, {len(RESULTS) - passed} failed")
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
