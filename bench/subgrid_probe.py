"""Probe (issue 14): can cuDNN run a dilated depthwise layer's undilated sub-grid problems
on strided views of dy and dx, with no copies? LR-ASPP's 5x5 dilation-2 layer (16 x 672 x
32 x 32): four graph-API dgrad calls, one per 2 x 2 sub-grid, each on views
dy[:, :, a::2, b::2] and dx[:, :, a::2, b::2] (padding 2, no dilation), through
cudnn-frontend, every plan of heuristic modes A, B and FALLBACK. Against PyTorch's dgrad
and the dilated problem's heuristic plan.

Usage (GPU machine): python bench/subgrid_probe.py
"""

from __future__ import annotations

import sys

import cudnn as fe
import torch
from broad import Timer

N, C, H, W, K, D = 16, 672, 32, 32, 5, 2


# The suite's timer: calls back to back between CUDA events, median of trials.
timed = Timer("cuda", 20, 5, warmup=1).per_call_ms


def graph(handle, dt, w, dy, dx, padding, dilation):
    g = fe.pygraph(
        io_data_type=dt,
        intermediate_data_type=fe.data_type.FLOAT,
        compute_data_type=fe.data_type.FLOAT,
        handle=handle,
    )
    tw = g.tensor(name="W", dim=w.size(), stride=w.stride(), data_type=dt)
    tdy = g.tensor(name="DY", dim=dy.size(), stride=dy.stride(), data_type=dt)
    tdx = g.conv_dgrad(
        name="dgrad",
        loss=tdy,
        filter=tw,
        padding=padding,
        stride=[1, 1],
        dilation=dilation,
    )
    tdx.set_output(True).set_dim(dx.size()).set_stride(dx.stride()).set_data_type(dt)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([fe.heur_mode.A, fe.heur_mode.B, fe.heur_mode.FALLBACK])
    return g, tw, tdy, tdx


def run(tdt, cl: bool) -> None:
    dt = {torch.float16: fe.data_type.HALF, torch.float32: fe.data_type.FLOAT}[tdt]
    handle = fe.create_handle()
    fe.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
    mf = torch.channels_last if cl else torch.contiguous_format
    w = (torch.randn(C, 1, K, K, device="cuda", dtype=tdt) / 5).contiguous(
        memory_format=mf
    )
    dy = torch.randn(N, C, H, W, device="cuda", dtype=tdt).contiguous(memory_format=mf)
    dx = torch.empty_like(dy)
    ref = torch.nn.grad.conv2d_input(
        dy.shape, w.float(), dy.float(), padding=4, dilation=2, groups=C
    )

    def theirs():
        return torch.nn.grad.conv2d_input(
            dy.shape, w, dy, padding=4, dilation=2, groups=C
        )

    line = [f"{str(tdt)[6:]} {'nhwc' if cl else 'nchw'}: torch {timed(theirs):.4f}"]
    # The dilated problem, its heuristic plan.
    g, tw, tdy, tdx = graph(handle, dt, w, dy, dx, [4, 4], [2, 2])
    g.build_plans()
    ws = torch.empty(max(g.get_workspace_size(), 1), device="cuda", dtype=torch.uint8)
    line.append(
        f"dilated heur {timed(lambda: g.execute({tw: w, tdy: dy, tdx: dx}, ws, handle=handle)):.4f}"
    )
    # Sub-grid views.
    views = [
        (dy[:, :, a::D, b::D], dx[:, :, a::D, b::D]) for a in range(D) for b in range(D)
    ]
    g, tw, tdy, tdx = graph(handle, dt, w, views[0][0], views[0][1], [2, 2], [1, 1])
    results = []
    for i in range(g.get_execution_plan_count()):
        try:
            g.build_plan_at_index(i)
            wsi = torch.empty(
                max(g.get_workspace_size_plan_at_index(i), 1),
                device="cuda",
                dtype=torch.uint8,
            )
        except Exception:
            continue

        def four(i=i, wsi=wsi):
            for v_dy, v_dx in views:
                g.execute_plan_at_index(
                    {tw: w, tdy: v_dy, tdx: v_dx}, wsi, i, handle=handle
                )

        try:
            dx.fill_(float("nan"))
            four()
            torch.cuda.synchronize()
            err = ((dx.float() - ref).norm() / ref.norm()).item()
            ok = err == err and err < 1e-2
            results.append((timed(four), i, g.get_plan_name_at_index(i), ok))
        except Exception as exc:
            results.append((float("inf"), i, f"failed {exc}"[:60], False))
    results.sort()
    line.append(
        f"{len(results)} sub-grid plans; fastest: "
        + ", ".join(
            f"{name} {t:.4f}{'' if ok else ' WRONG'}" for t, _, name, ok in results[:4]
        )
    )
    print("; ".join(line), flush=True)


def main() -> int:
    for tdt in (torch.float16, torch.float32):
        for cl in (True, False):
            try:
                run(tdt, cl)
            except Exception as exc:
                print(f"{tdt} cl={cl}: failed {type(exc).__name__}: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
