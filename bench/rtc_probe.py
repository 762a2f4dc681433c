"""Where cuDNN's run-time compilation goes: is a compiled engine shared between handles,
threads and shapes, and does a plan built on one handle run on another?

The measured tier's first sight of a half-precision NCHW depthwise layer (efficientnet_b0
in bf16) takes 0.4-0.57 s, nearly all of it cuDNN compiling its depthwise engine while
the plan is built. Building that plan off the caller's thread only helps if what the
build leaves behind can serve the caller: either cuDNN keeps compiled kernels for the
process (a second build, on another handle or thread, is then cheap) or the built plan
runs on the caller's handle. This probe measures both, with cudnn_rs (`Handle(benchmark=
True)`) and with cudnn-frontend (per plan index), on layers of efficientnet_b0.

    python3 bench/rtc_probe.py            # on the GPU machine (torch, cudnn_rs, cudnn)
"""

from __future__ import annotations

import threading
import time

import torch

import cudnn_rs as cd

DT = torch.bfloat16
# (x shape, kernel, padding): efficientnet_b0's stride-1 depthwise layers at N=32.
LAYERS = {
    "3x3 1152@7": ((32, 1152, 7, 7), 3, 1),
    "3x3 480@14": ((32, 480, 14, 14), 3, 1),
    "3x3 144@56": ((32, 144, 56, 56), 3, 1),
    "5x5 672@14": ((32, 672, 14, 14), 5, 2),
    "5x5 240@28": ((32, 240, 28, 28), 5, 2),
    "5x5 1152@7": ((32, 1152, 7, 7), 5, 2),
}


def operands(name: str):
    xs, k, pad = LAYERS[name]
    c = xs[1]
    w = torch.randn(c, 1, k, k, device="cuda", dtype=DT)
    gy = torch.randn(xs, device="cuda", dtype=DT)
    return xs, w, gy, pad


def reference(xs, w, gy, pad):
    return torch.nn.grad.conv2d_input(
        xs, w.double(), gy.double(), padding=pad, groups=xs[1]
    )


def rel_err(got, ref) -> float:
    return float((got.double() - ref).norm() / ref.norm())


def in_thread(fn):
    out = {}

    def run():
        out["v"] = fn()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out["v"]


def ours_first(name: str, handle=None) -> tuple[float, float, float]:
    """First and second call of one layer on `handle` (a new measured handle if None),
    in the calling thread: (first ms, second ms, relative error)."""
    xs, w, gy, pad = operands(name)
    h = handle
    if h is None:
        h = cd.Handle(stream=torch.cuda.current_stream(), benchmark=True)
        # Measured choices are shared by the device's handles (builds of 2026-12-08
        # on): forgotten, so that the new handle measures as the probe means it to.
        h.clear_algorithm_cache()
    torch.cuda.synchronize()
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        dx = cd.conv_input_grad(xs, w, gy, 1, pad, 1, xs[1], handle=h)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return times[0], times[1], rel_err(dx, reference(xs, w, gy, pad))


def fe_graph(fe, handle, xs, w, gy, pad):
    dx = torch.empty(xs, device="cuda", dtype=DT)
    g = fe.pygraph(
        io_data_type=fe.data_type.BFLOAT16,
        intermediate_data_type=fe.data_type.FLOAT,
        compute_data_type=fe.data_type.FLOAT,
        handle=handle,
    )
    W = g.tensor(
        name="W", dim=w.size(), stride=w.stride(), data_type=fe.data_type.BFLOAT16
    )
    DY = g.tensor(
        name="DY", dim=gy.size(), stride=gy.stride(), data_type=fe.data_type.BFLOAT16
    )
    DX = g.conv_dgrad(
        name="dgrad",
        loss=DY,
        filter=W,
        padding=[pad, pad],
        stride=[1, 1],
        dilation=[1, 1],
    )
    DX.set_output(True).set_dim(dx.size()).set_stride(dx.stride()).set_data_type(
        fe.data_type.BFLOAT16
    )
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([fe.heur_mode.A, fe.heur_mode.FALLBACK])
    return g, {W: w, DY: gy, DX: dx}, dx


def fe_builds(
    fe, handle, name, only=None
) -> tuple[dict[int, float], object, dict, object]:
    """Each plan's build time (ms) for one layer on `handle` (or plan `only`)."""
    xs, w, gy, pad = operands(name)
    g, pack, dx = fe_graph(fe, handle, xs, w, gy, pad)
    times = {}
    for i in [only] if only is not None else range(g.get_execution_plan_count()):
        t0 = time.perf_counter()
        try:
            g.build_plan_at_index(i)
        except Exception:
            continue
        times[i] = (time.perf_counter() - t0) * 1e3
    return times, g, pack, (xs, w, gy, pad, dx)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ours-only", action="store_true", help="leave the frontend out")
    args = ap.parse_args(argv)
    print(
        f"torch {torch.__version__}, cudnn_rs {cd.__version__}, {torch.cuda.get_device_name()}"
    )
    print(
        "\n== cudnn_rs, measured tier (Handle(benchmark=True)), bf16 NCHW depthwise =="
    )
    h1 = cd.Handle(stream=torch.cuda.current_stream(), benchmark=True)
    f, s, e = in_thread(lambda: ours_first("3x3 1152@7", h1))
    print(
        f"3x3 1152@7, handle 1, thread A: first {f:8.2f} ms, second {s:.3f} ms, err {e:.1e}"
    )
    f, s, e = in_thread(lambda: ours_first("3x3 1152@7"))
    print(
        f"3x3 1152@7, handle 2, thread B: first {f:8.2f} ms, second {s:.3f} ms, err {e:.1e}"
    )
    f, s, e = ours_first("3x3 1152@7")
    print(
        f"3x3 1152@7, handle 3, main    : first {f:8.2f} ms, second {s:.3f} ms, err {e:.1e}"
    )
    f, s, e = ours_first("3x3 480@14", h1)
    print(
        f"3x3 480@14, handle 1, main    : first {f:8.2f} ms, second {s:.3f} ms, err {e:.1e}"
    )
    f, s, e = ours_first("3x3 144@56", h1)
    print(
        f"3x3 144@56, handle 1, main    : first {f:8.2f} ms, second {s:.3f} ms, err {e:.1e}"
    )

    if args.ours_only:
        return 0
    try:
        import cudnn as fe
    except ImportError:
        print("no cudnn-frontend: its part is left out")
        return 0
    print(
        f"\n== cudnn-frontend {fe.__version__}, per plan index (cuDNN {fe.backend_version()}) =="
    )
    ha = fe.create_handle()
    fe.set_stream(handle=ha, stream=torch.cuda.current_stream().cuda_stream)
    times, _ga, _packa, _opa = fe_builds(fe, ha, "5x5 672@14")
    print(
        "5x5 672@14, handle a: build ms by plan:",
        {i: round(t, 1) for i, t in times.items()},
    )
    slow = max(times, key=times.get)
    hb = fe.create_handle()
    times_b, gb, packb, opb = fe_builds(fe, hb, "5x5 672@14", only=slow)
    print(
        f"5x5 672@14, handle b, plan {slow}: build {times_b.get(slow, float('nan')):.1f} ms"
    )
    t_c = in_thread(
        lambda: fe_builds(fe, fe.create_handle(), "5x5 672@14", only=slow)[0]
    )
    print(
        f"5x5 672@14, handle c, thread: plan {slow}: build {t_c.get(slow, float('nan')):.1f} ms"
    )
    times_d, _gd, _packd, _opd = fe_builds(fe, ha, "5x5 240@28", only=slow)
    print(
        f"5x5 240@28, handle a, plan {slow}: build {times_d.get(slow, float('nan')):.1f} ms"
    )
    # The plan built on handle b (default stream), run on handle a set to a stream of its
    # own (non-blocking) behind a long sleep and the copy that fills dy: if the plan ran
    # on b's stream it would read dy before the copy (zeros), and dx would be wrong.
    xs, w, gy, pad, dx = opb
    real = gy.clone()
    ws = torch.empty(
        max(gb.get_workspace_size_plan_at_index(slow), 1),
        device="cuda",
        dtype=torch.uint8,
    )
    side = torch.cuda.Stream()
    fe.set_stream(handle=ha, stream=side.cuda_stream)
    try:
        for label, sleep in (("no wait", 0), ("behind a 200 ms sleep", 200_000_000)):
            torch.cuda.synchronize()
            gy.zero_()
            dx.fill_(float("nan"))
            torch.cuda.synchronize()
            with torch.cuda.stream(side):
                if sleep:
                    torch.cuda._sleep(sleep)
                gy.copy_(real)
                gb.execute_plan_at_index(packb, ws, slow, handle=ha)
            torch.cuda.synchronize()
            err = rel_err(dx, reference(xs, w, real, pad))
            print(
                f"plan built on handle b, run on handle a's own stream, {label}: err {err:.1e}"
            )
    except Exception as exc:
        print(f"plan built on handle b, run on handle a: {type(exc).__name__}: {exc}")
    fe.set_stream(handle=ha, stream=torch.cuda.current_stream().cuda_stream)

    # Built in another thread (its own handle), run here on handle a.
    def build_there():
        h = fe.create_handle()
        return fe_builds(fe, h, "5x5 1152@7", only=slow), h

    (times_e, ge, packe, ope), _he = in_thread(build_there)
    xs, w, gy, pad, dx = ope
    dx.fill_(float("nan"))
    ws = torch.empty(
        max(ge.get_workspace_size_plan_at_index(slow), 1),
        device="cuda",
        dtype=torch.uint8,
    )
    try:
        ge.execute_plan_at_index(packe, ws, slow, handle=ha)
        torch.cuda.synchronize()
        print(
            f"5x5 1152@7 built in a thread ({times_e.get(slow, float('nan')):.1f} ms), run here on"
            f" handle a: err {rel_err(dx, reference(xs, w, gy, pad)):.1e}"
        )
    except Exception as exc:
        print(f"built in a thread, run on handle a: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
