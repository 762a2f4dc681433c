"""The depthwise kernel of our own (``src/kernels/depthwise_dgrad.cu``), which the default
choice runs for NCHW depthwise layers (2-d at stride 1 with square filters of 3 to 7 and
filters of any height and odd width up to 31, 2-d at other strides with filters up to 11
wide and no width dilation, 3-d 3x3x3; ``src/bwd_data/direct.rs``) and channels-last ones
(large 3x3, 5x5 and 7x7 at stride 1 as stored, four channels a load where the channels and
the operands' alignment allow; larger filters on NCHW copies): results against
PyTorch in float64 on fresh random inputs, with dx poisoned (beta 0) or accumulated into
(beta != 0), and which layers run it (the profiler's kernel names). The dilated strided
layer, the 13-wide strided one and the large float16 3x3 one check cuDNN's paths the
same way; with ``CUDNN_RS_DIRECT=all`` (a test below runs these tests again that way, in
a fresh process) the large one runs the kernel too.

GPU tests: they skip, saying why, where no GPU is usable.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

import cudnn_rs as cd


@dataclass(frozen=True)
class Layer:
    x: tuple[int, ...]  # dx: N, C, spatial
    k: tuple[int, ...]  # filter extent
    pad: int | tuple[int, ...]  # every spatial dimension's, or each one's
    dil: int = 1
    multiplier: int = 1
    convolution: bool = False  # mode Convolution (flipped filter)
    stride: tuple[int, ...] = (1, 1, 1)  # the last len(k) apply
    channels_last: bool = False  # every operand NHWC (3-d: NDHWC)

    @property
    def w(self) -> tuple[int, ...]:
        return (self.x[1] * self.multiplier, 1, *self.k)

    def takes_kernel(self, dtype: str) -> bool:
        """Whether the default choice runs this layer with the kernel (direct.rs's rule,
        under this process's ``CUDNN_RS_DIRECT``)."""
        mode = os.environ.get("CUDNN_RS_DIRECT", "")
        if self.channels_last and dtype == "float64":
            # No channels-last f64 entry points: every layer the NCHW rule takes (up to
            # 64 filters a channel, as there) runs on NCHW copies.
            nchw = replace(self, channels_last=False)
            return mode != "0" and nchw.takes_kernel(dtype)
        if self.channels_last and len(self.k) == 3:
            return False  # cuDNN's (f64: on NCHW copies, above)
        if self.channels_last:
            # Natively: 3x3, 5x5 and 7x7 at stride 1 from 2^22 elements of dx (7x7:
            # 2^20), float16 3x3 and 5x5 left to cuDNN (all of them run natively with
            # CUDNN_RS_DIRECT=all). On NCHW copies: filters cuDNN's NHWC engines run
            # slowly (square from 9x9, columns 3 or more high), at stride 1.
            kh, kw = self.k
            slow = (kh == kw and kh >= 9) or (kw == 1 and kh >= 3)
            stride1 = all(s == 1 for s in self.strides)
            least = 1 << 20 if self.k == (7, 7) else 1 << 22
            native = self.k in ((3, 3), (5, 5), (7, 7)) and (
                mode == "all"
                or ((dtype != "float16" or self.k == (7, 7)) and self.numel >= least)
            )
            return (
                mode != "0"
                and (slow or native)
                and stride1
                and kw % 2 == 1
                and kw <= 31
                and self.multiplier <= 2
            )
        square = self.k in ((3, 3), (5, 5), (7, 7))
        kw = self.k[-1]
        if self.k == (3, 3, 3):
            runs = True
        elif all(s == 1 for s in self.strides):
            # Other 2-d and 3-d filters: odd widths up to 31.
            runs = square or (kw % 2 == 1 and kw <= 31)
        else:
            # 3x3/5x5/7x7 at stride 2, and any filter up to 11 wide: no width dilation.
            runs = self.dil == 1 and kw <= 11
        # Up to 64 filters a channel (channels last: two, above).
        if mode == "0" or not runs or self.multiplier > 64:
            return False
        # Left to cuDNN by the untimed default: where PyTorch's default runs cuDNN too.
        cudnn_half = (
            dtype == "float16"
            and self.k in ((3, 3), (5, 5))
            and self.strides == (1, 1)
            and self.dil == 1
            and self.multiplier == 1
            and self.numel >= 1 << 20
        )
        return mode == "all" or not cudnn_half

    def wide(self, dtype: str) -> bool:
        """Whether the kernel runs this layer with an eight-output entry point (direct.rs's
        rule: 2-d 3x3/5x5/7x7 at stride 1 with 2^18 work items of four outputs or more,
        in float32 only 5x5 and 7x7 rows up to 32 wide; ``CUDNN_RS_DIRECT_TX`` 8 or 4:
        always or never)."""
        square = self.k in ((3, 3), (5, 5), (7, 7))
        if not square or self.strides != (1, 1):
            return False
        if self.channels_last or dtype == "float64":
            return False  # four outputs a thread (f64 has no eight-output entries)
        forced = os.environ.get("CUDNN_RS_DIRECT_TX", "")
        if forced in ("4", "8"):
            return forced == "8"
        n, c, h, w = self.x
        items = n * c * h * -(-w // (4 * self.dil)) * self.dil
        f32_loses = dtype == "float32" and (self.k == (3, 3) or w > 32)
        return items >= 1 << 18 and not f32_loses

    @property
    def numel(self) -> int:
        """dx's elements."""
        return math.prod(self.x)

    def memory_format(self, torch: Any) -> Any:
        """The layer's operands' torch memory format."""
        if not self.channels_last:
            return torch.contiguous_format
        return torch.channels_last_3d if len(self.k) == 3 else torch.channels_last

    def native_channels_last(self, dtype: str) -> bool:
        """A channels-last layer the kernel runs as it is stored (no NCHW copies; every
        f64 one runs on copies)."""
        return (
            self.channels_last
            and dtype != "float64"
            and self.k in ((3, 3), (5, 5), (7, 7))
            and self.strides == (1, 1)
        )

    @property
    def pads(self) -> tuple[int, ...]:
        return self.pad if isinstance(self.pad, tuple) else (self.pad,) * len(self.k)

    @property
    def strides(self) -> tuple[int, ...]:
        return self.stride[-len(self.k) :]

    @property
    def dy(self) -> tuple[int, ...]:
        sp = [
            (x + 2 * p - self.dil * (k - 1) - 1) // s + 1
            for x, k, s, p in zip(
                self.x[2:], self.k, self.strides, self.pads, strict=True
            )
        ]
        return (self.x[0], self.x[1] * self.multiplier, *sp)


LAYERS = {
    "3x3": Layer((2, 16, 9, 13), (3, 3), 1),
    "3x3_pad0": Layer((2, 8, 7, 6), (3, 3), 0),
    "3x3_pad2": Layer((1, 8, 6, 11), (3, 3), 2),
    "5x5_d2": Layer((2, 12, 17, 19), (5, 5), 4, dil=2),
    "3x3_d4_m2": Layer((2, 6, 15, 21), (3, 3), 4, dil=4, multiplier=2),
    "7x7_conv_mode": Layer((1, 8, 10, 23), (7, 7), 3, convolution=True),
    "3x3x3": Layer((2, 8, 5, 7, 9), (3, 3, 3), 1),
    "3x3x3_d2_m2": Layer((1, 4, 6, 9, 10), (3, 3, 3), 2, dil=2, multiplier=2),
    "3x3_s2": Layer((2, 16, 9, 13), (3, 3), 1, stride=(2, 2)),
    "5x5_s2_m2_conv_mode": Layer(
        (1, 8, 12, 15), (5, 5), 2, multiplier=2, convolution=True, stride=(2, 2)
    ),
    "7x7_s3x2_pad0": Layer((2, 4, 17, 16), (7, 7), 0, stride=(3, 2)),
    # The other strided 2-d layers: the general strided entries, the height an argument.
    "3x5_s2": Layer((2, 8, 13, 14), (3, 5), (1, 2), stride=(2, 2)),
    "4x4_s2_pad1": Layer((2, 8, 16, 15), (4, 4), 1, stride=(2, 2)),
    "3x3_s3_m2_conv_mode": Layer(
        (2, 6, 17, 19), (3, 3), 1, multiplier=2, convolution=True, stride=(3, 3)
    ),
    "1x7_s1x2": Layer((2, 8, 9, 20), (1, 7), (0, 3), stride=(1, 2)),
    "11x11_s3": Layer((1, 4, 25, 23), (11, 11), 5, stride=(3, 3)),
    "5x5_s3_large": Layer((16, 64, 32, 32), (5, 5), 2, stride=(3, 3)),
    # Not the kernel's: a width dilation at stride 2, a strided filter 13 wide.
    "3x3_s2_d2": Layer((2, 8, 15, 14), (3, 3), 2, dil=2, stride=(2, 2)),
    "13x13_s2": Layer((1, 4, 28, 27), (13, 13), 6, stride=(2, 2)),
    "3x3_s2_pad0": Layer((2, 8, 10, 15), (3, 3), 0, stride=(2, 2)),
    "5x5_s2_pad1": Layer((1, 8, 13, 18), (5, 5), 1, stride=(2, 2)),
    "7x7_s2": Layer((2, 4, 16, 17), (7, 7), 3, stride=(2, 2)),
    "3x3_s2_large": Layer((16, 64, 32, 32), (3, 3), 1, stride=(2, 2)),
    "3x3x3_s1x2x2": Layer((2, 8, 5, 9, 11), (3, 3, 3), 1, stride=(1, 2, 2)),
    "3x3x3_s2_pad2": Layer((1, 4, 7, 9, 8), (3, 3, 3), 2, stride=(2, 2, 2)),
    "3x3x3_s3": Layer((1, 4, 7, 10, 8), (3, 3, 3), 1, stride=(3, 3, 3)),
    "3x3x3_s2x1x2_m2": Layer(
        (2, 4, 6, 9, 11), (3, 3, 3), 1, multiplier=2, stride=(2, 1, 2)
    ),
    # Other 3-d filters: the entries taking the height and the depth at run time (one
    # plane deep, or more, padded and strided).
    "1x3x3": Layer((2, 8, 5, 9, 11), (1, 3, 3), (0, 1, 1)),
    "1x1x1": Layer((2, 8, 3, 5, 6), (1, 1, 1), 0),
    "1x7x3_d2": Layer((2, 6, 4, 15, 14), (1, 7, 3), (0, 6, 2), dil=2),
    "1x1x1_s1x2x2": Layer((2, 8, 4, 10, 9), (1, 1, 1), 0, stride=(1, 2, 2)),
    "1x5x5_s2_depth_pad_m2_conv_mode": Layer(
        (1, 4, 7, 13, 12),
        (1, 5, 5),
        (1, 2, 2),
        multiplier=2,
        convolution=True,
        stride=(2, 2, 2),
    ),
    "1x3x3_s1x3x2": Layer((2, 4, 5, 14, 13), (1, 3, 3), (0, 1, 1), stride=(1, 3, 2)),
    "5x5x5_s3": Layer((2, 6, 9, 11, 10), (5, 5, 5), 2, stride=(3, 3, 3)),
    "3x1x1_m2": Layer((2, 4, 7, 6, 9), (3, 1, 1), (1, 0, 0), multiplier=2),
    "2x3x3_d2_conv_mode": Layer(
        (1, 6, 6, 9, 10), (2, 3, 3), (1, 2, 2), dil=2, convolution=True
    ),
    "5x3x3_s1x2x2": Layer((2, 4, 8, 12, 11), (5, 3, 3), (2, 1, 1), stride=(1, 2, 2)),
    "3x5x5_s2x1x1": Layer((1, 8, 9, 10, 12), (3, 5, 5), (1, 2, 2), stride=(2, 1, 1)),
    # Many filters a channel (NCHW up to 64; channels last up to two, else cuDNN; f64
    # channels last up to 64, on NCHW copies).
    "3x3_m5": Layer((2, 6, 11, 13), (3, 3), 1, multiplier=5),
    "5x5_s2_m24": Layer((1, 4, 14, 14), (5, 5), 2, multiplier=24, stride=(2, 2)),
    "3x3x3_m3_conv_mode": Layer(
        (1, 4, 5, 7, 9), (3, 3, 3), 1, multiplier=3, convolution=True
    ),
    "3x3_m65": Layer((1, 2, 6, 7), (3, 3), 1, multiplier=65),
    "9x9_cl_m3": Layer((2, 4, 12, 11), (9, 9), 4, multiplier=3, channels_last=True),
    "5x5_s2_cl_m8": Layer(
        (2, 4, 16, 14), (5, 5), 2, multiplier=8, stride=(2, 2), channels_last=True
    ),
    # Other 2-d filters: the filter's height taken at run time.
    "1x7": Layer((2, 8, 9, 13), (1, 7), (0, 3)),
    "7x1_conv_mode": Layer((1, 8, 12, 10), (7, 1), (3, 0), convolution=True),
    "5x3_d2_m2": Layer((2, 6, 15, 14), (5, 3), (4, 2), dil=2, multiplier=2),
    "9x9": Layer((2, 8, 12, 11), (9, 9), 4),
    "11x11_pad0": Layer((2, 4, 14, 16), (11, 11), 0),
    "31x31": Layer((1, 4, 20, 33), (31, 31), 15),
    # 2^20 elements of dx: in float16 the default leaves the 3x3 one to cuDNN.
    "3x3_large": Layer((16, 64, 32, 32), (3, 3), 1),
    "7x7_large": Layer((16, 64, 32, 32), (7, 7), 3),
    # 2^18 work items of four outputs: the eight-output entry points (not 3x3 in float32).
    "5x5_large_conv_mode": Layer((16, 64, 32, 32), (5, 5), 2, convolution=True),
    "3x3_large_d2": Layer((16, 64, 32, 64), (3, 3), 2, dil=2),
    "5x5_wide_rows": Layer((8, 32, 48, 96), (5, 5), 2),
    "7x7_just_under": Layer((15, 64, 32, 32), (7, 7), 3),
    # Channels-last: the kernel on NCHW copies in the workspace, or cuDNN.
    "9x9_cl": Layer((2, 8, 12, 11), (9, 9), 4, channels_last=True),
    # 3-d channels-last: f64 runs the kernel on NCHW copies, converted as 2-d views
    # (depth and height merged); the other types run cuDNN.
    "3x3x3_cl_s1x2x2": Layer(
        (2, 16, 8, 28, 28), (3, 3, 3), 1, stride=(1, 2, 2), channels_last=True
    ),
    "1x3x3_cl_m2": Layer(
        (2, 4, 5, 14, 13), (1, 3, 3), (0, 1, 1), multiplier=2, channels_last=True
    ),
    "7x1_cl_conv_mode": Layer(
        (1, 8, 12, 10), (7, 1), (3, 0), convolution=True, channels_last=True
    ),
    "13x13_cl_m2": Layer((2, 4, 9, 14), (13, 13), 6, multiplier=2, channels_last=True),
    "3x3_cl": Layer((2, 16, 9, 13), (3, 3), 1, channels_last=True),
    # Channels last run as stored (the small ones only with CUDNN_RS_DIRECT=all):
    # channel counts four does not divide, two filters a channel, dilation, convolution
    # mode; strided (cuDNN's path).
    "5x5_cl_d2_m2_conv_mode": Layer(
        (2, 40, 15, 17),
        (5, 5),
        4,
        dil=2,
        multiplier=2,
        convolution=True,
        channels_last=True,
    ),
    "7x7_cl_c72": Layer((3, 72, 11, 13), (7, 7), 3, channels_last=True),
    "3x3_cl_pad0_c33": Layer((2, 33, 8, 9), (3, 3), 0, channels_last=True),
    "3x3_cl_large": Layer((16, 64, 64, 64), (3, 3), 1, channels_last=True),
    "7x7_cl_large_c96": Layer((16, 96, 28, 28), (7, 7), 3, channels_last=True),
    "7x7_cl_large_c72": Layer((16, 72, 30, 31), (7, 7), 3, channels_last=True),
    "5x5_cl_large_d2_conv_mode": Layer(
        (16, 72, 60, 61), (5, 5), 4, dil=2, convolution=True, channels_last=True
    ),
    "3x3_cl_large_m2_c68": Layer(
        (16, 68, 62, 63), (3, 3), 1, multiplier=2, channels_last=True
    ),
    "3x3_cl_s2": Layer((2, 16, 9, 13), (3, 3), 1, stride=(2, 2), channels_last=True),
}
TOL = {"float64": 1e-12, "float32": 1e-5, "float16": 5e-3, "bfloat16": 4e-2}


def _reference(torch: Any, layer: Layer, w: Any, dy: Any) -> Any:
    # PyTorch computes cross-correlation: a convolution-mode layer is its flipped filter.
    w64 = w.double()
    nd = len(layer.k)
    if layer.convolution:
        w64 = w64.flip(list(range(2, 2 + nd)))
    grad = torch.nn.grad.conv3d_input if nd == 3 else torch.nn.grad.conv2d_input
    return grad(
        layer.x,
        w64,
        dy.double(),
        stride=layer.strides,
        padding=layer.pads,
        dilation=layer.dil,
        groups=layer.x[1],
    )


def _imports(h: cd.Handle, w: Any, dy: Any, dx: Any) -> tuple[Any, Any, Any]:
    """PyTorch's w, dy and dx as cudnn_rs operands on `h` (read and written in place)."""
    return (
        cd.Filter.from_dlpack(w, handle=h),
        cd.Tensor.from_dlpack(dy, handle=h),
        cd.Tensor.from_dlpack(dx, handle=h),
    )


def _conv(layer: Layer, dtype: str = "float32") -> cd.ConvolutionDescriptor:
    nd = len(layer.k)
    mode = (
        cd.ConvolutionMode.Convolution
        if layer.convolution
        else cd.ConvolutionMode.CrossCorrelation
    )
    return cd.ConvolutionDescriptor(
        padding=layer.pads,
        stride=layer.strides,
        dilation=(layer.dil,) * nd,
        groups=layer.x[1],
        mode=mode,
        math_type=cd.MathType.Fma,
        comp_type=cd.f64 if dtype == "float64" else cd.f32,
    )


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(LAYERS))
# 0.1 and 0.3 have no exact binary form: in f64 a scalar rounded to f32 would show
# (relative error ~1e-8 against the f64 tolerance of 1e-12).
@pytest.mark.parametrize("scalars", [(1.0, 0.0), (0.1, 0.3)])
def test_default_choice_on_stride_one_and_strided_nchw_depthwise_layers(
    gpu: cd.Handle, dtype: str, name: str, scalars: tuple[float, float]
) -> None:
    torch = pytest.importorskip("torch")
    layer = LAYERS[name]
    alpha, beta = scalars
    seed = zlib.crc32(f"{dtype} {name} {scalars}".encode())
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dt = getattr(torch, dtype)
    h = cd.Handle(stream=torch.cuda.current_stream())
    fmt = layer.memory_format(torch)
    w = torch.randn(layer.w, device="cuda", dtype=dt, generator=gen)
    dy = torch.randn(layer.dy, device="cuda", dtype=dt, generator=gen)
    if beta == 0.0:
        dx = torch.full(layer.x, float("nan"), device="cuda", dtype=dt)
    else:
        dx = torch.randn(layer.x, device="cuda", dtype=dt, generator=gen)
    w, dy, dx = (t.contiguous(memory_format=fmt) for t in (w, dy, dx))
    before = dx.double().clone()
    conv = _conv(layer, dtype)
    ops = _imports(h, w, dy, dx)
    algo = cd.DefaultAlgo()
    size = h.get_convolution_backward_data_workspace_size(*ops, conv, algo)
    kernel = layer.takes_kernel(dtype)
    if kernel and layer.channels_last and not layer.native_channels_last(dtype):
        copies = (dy.numel() + dx.numel()) * dx.element_size()
        assert size >= copies, f"workspace {size} bytes cannot hold the NCHW copies"
    elif kernel:
        assert not size, f"the kernel needs no workspace, the query said {size}"
    ws = cd.Workspace(h, size) if size else None
    h.convolution_backward_data(alpha, ops[0], ops[1], conv, algo, ws, beta, ops[2])
    expected = alpha * _reference(torch, layer, w, dy)
    if beta != 0.0:
        expected = expected + beta * before
    err = ((dx.double() - expected).abs().max() / expected.abs().max()).item()
    assert err < TOL[dtype], f"{name} {dtype}: relative error {err}"
    # The one-call API (alpha 1, beta 0): the same choice, the same values.
    out = torch.full(layer.x, float("nan"), device="cuda", dtype=dt)
    out = out.contiguous(memory_format=fmt)
    cd.conv_input_grad(
        layer.x,
        w,
        dy,
        layer.strides,
        layer.pads,
        layer.dil,
        layer.x[1],
        mode=conv.mode,
        math=cd.MathType.Fma,
        out=out,
    )
    plain = _reference(torch, layer, w, dy)
    err = ((out.double() - plain).abs().max() / plain.abs().max()).item()
    assert err < TOL[dtype], f"{name} {dtype} one-call: relative error {err}"
    # The module's one-call API on the imported operands (its own dx and workspace).
    got = cd.convolution_backward_data(h, ops[0], ops[1], conv, layer.x)
    assert got.format == ops[1].format
    got_t = torch.from_dlpack(got)
    err = ((got_t.double() - plain).abs().max() / plain.abs().max()).item()
    assert err < TOL[dtype], f"{name} {dtype} convolution_backward_data: error {err}"
    ran = _kernels_run(
        torch,
        lambda: h.convolution_backward_data(
            alpha, ops[0], ops[1], conv, algo, ws, beta, ops[2]
        ),
    )
    assert any(n.startswith("dw_dgrad") for n in ran) == kernel, (kernel, ran)
    if kernel:
        wide = any(n.startswith("dw_dgrad") and "_s1x8" in n for n in ran)
        assert wide == layer.wide(dtype), (layer.wide(dtype), ran)


@pytest.mark.gpu
def test_the_layers_again_with_direct_all(gpu: cd.Handle) -> None:
    # The tests above again in a fresh process with CUDNN_RS_DIRECT=all: the large
    # half-precision layer runs the kernel too, checked the same way.
    if os.environ.get("CUDNN_RS_DIRECT") == "all":
        pytest.skip("already running with CUDNN_RS_DIRECT=all")
    pytest.importorskip("torch")
    env = {**os.environ, "CUDNN_RS_DIRECT": "all"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            __file__,
            "-k",
            "default_choice_on_stride",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout, done.stdout[-500:]


def _kernels_run(torch: Any, f: Any) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        f()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type.name == "CUDA"]


@pytest.mark.gpu
def test_the_default_choice_runs_the_kernel_and_can_be_turned_off(
    gpu: cd.Handle, tmp_path: Path
) -> None:
    # In this process the default runs the kernel; with CUDNN_RS_DIRECT=0 (read once per
    # process, so in a fresh one) the same problem runs cuDNN, to the same values.
    torch = pytest.importorskip("torch")
    layer = LAYERS["5x5_d2"]
    w = torch.randn(layer.w, device="cuda")
    dy = torch.randn(layer.dy, device="cuda")
    args = (1, layer.pad, layer.dil, layer.x[1])

    def call() -> Any:
        return cd.conv_input_grad(layer.x, w, dy, *args, math=cd.MathType.Fma)

    names = _kernels_run(torch, call)
    assert any(n.startswith("dw_dgrad_k155_s1") for n in names), names
    torch.save(w.cpu(), tmp_path / "w.pt")
    torch.save(dy.cpu(), tmp_path / "dy.pt")
    script = textwrap.dedent(
        f"""
        import torch, cudnn_rs as cd
        from torch.profiler import ProfilerActivity, profile
        w = torch.load({str(tmp_path / "w.pt")!r}).cuda()
        dy = torch.load({str(tmp_path / "dy.pt")!r}).cuda()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            dx = cd.conv_input_grad({layer.x!r}, w, dy, *{args!r},
                                    math=cd.MathType.Fma)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
        assert names and not any(n.startswith("dw_dgrad") for n in names), names
        torch.save(dx.cpu(), {str(tmp_path / "dx.pt")!r})
        """
    )
    env = {**os.environ, "CUDNN_RS_DIRECT": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ref = call().cpu().double()
    off = torch.load(tmp_path / "dx.pt").double()
    err = ((off - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-5, f"kernel and cuDNN differ: {err}"


def _square_depthwise(
    torch: Any, layer: Layer, dtype: str, seed: str
) -> tuple[Any, ...]:
    """Random w and dy of `layer` in `dtype` on the GPU, seeded by `seed`'s text, and an
    uninitialised dx."""
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(seed.encode()))
    w = torch.randn(layer.w, device="cuda", dtype=dt, generator=gen)
    dy = torch.randn(layer.dy, device="cuda", dtype=dt, generator=gen)
    return w, dy, torch.empty(layer.x, device="cuda", dtype=dt)


def _measured(
    torch: Any, w: Any, dy: Any, dx: Any
) -> tuple[cd.Handle, tuple[Any, ...]]:
    """A new measured handle on PyTorch's stream, and w, dy, dx imported onto it."""
    h = cd.Handle(stream=torch.cuda.current_stream(), benchmark=True)
    return h, _imports(h, w, dy, dx)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("x", "k", "dtype", "kernel"),
    [
        # 7x7 on a 14x14 plane (over 2^20 elements of dx): the kernel, in both tiers.
        ((32, 384, 14, 14), 7, "float16", True),
        ((32, 384, 14, 14), 7, "bfloat16", True),
    ],
)
def test_the_measured_tier_on_large_half_precision_depthwise_layers(
    gpu: cd.Handle, x: tuple[int, ...], k: int, dtype: str, kernel: bool
) -> None:
    # With benchmark on, large half-precision NCHW 7x7 depthwise layers of planes up to
    # 400 elements stay with the kernel (the others: the next test).
    torch = pytest.importorskip("torch")
    layer = Layer(x, (k, k), k // 2)
    w, dy, dx = _square_depthwise(torch, layer, dtype, f"{x} {k} {dtype}")
    dx.fill_(float("nan"))
    h, ops = _measured(torch, w, dy, dx)
    conv, algo = _conv(layer), cd.DefaultAlgo()
    size = h.get_convolution_backward_data_workspace_size(*ops, conv, algo)
    ws = cd.Workspace(h, size) if size else None

    def call() -> None:
        h.convolution_backward_data(1.0, ops[0], ops[1], conv, algo, ws, 0.0, ops[2])

    ran = _kernels_run(torch, call)
    assert any(n.startswith("dw_dgrad") for n in ran) == kernel, (kernel, ran)
    expected = _reference(torch, layer, w, dy)
    err = ((dx.double() - expected).abs().max() / expected.abs().max()).item()
    assert err < TOL[dtype], f"{x} {k}x{k} {dtype}: relative error {err}"


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("x", "k", "dtype"),
    [((32, 384, 14, 14), 3, "bfloat16"), ((16, 96, 28, 28), 5, "float16")],
)
def test_the_measured_tier_runs_the_kernel_until_cudnns_engines_are_built(
    gpu: cd.Handle, x: tuple[int, ...], k: int, dtype: str
) -> None:
    # Large half-precision NCHW depthwise layers at stride 1 go to cuDNN's engines with
    # benchmark on, whose fastest compiles at run time: the first calls run the kernel
    # while a background thread builds them, and once built a call takes them in,
    # measures and runs cuDNN. Every call's dx (poisoned first) is checked.
    torch = pytest.importorskip("torch")
    layer = Layer(x, (k, k), k // 2)
    w, dy, dx = _square_depthwise(torch, layer, dtype, f"{x} {k} {dtype} background")
    expected = _reference(torch, layer, w, dy)
    h, ops = _measured(torch, w, dy, dx)
    conv, algo = _conv(layer), cd.DefaultAlgo()

    def call() -> list[str]:
        dx.fill_(float("nan"))
        size = h.get_convolution_backward_data_workspace_size(*ops, conv, algo)
        ws = cd.Workspace(h, size) if size else None
        ran = _kernels_run(
            torch,
            lambda: h.convolution_backward_data(
                1.0, ops[0], ops[1], conv, algo, ws, 0.0, ops[2]
            ),
        )
        err = ((dx.double() - expected).abs().max() / expected.abs().max()).item()
        assert err < TOL[dtype], f"{x} {k}x{k} {dtype}: relative error {err}"
        return ran

    assert h.background_builds() == (0, 0)
    first = call()
    assert any(n.startswith("dw_dgrad") for n in first), first
    assert h.background_builds() == (1, 0)
    assert h.wait_background_builds(120_000.0)
    assert cd.wait_background_builds(120_000.0)
    later = call()
    assert not any(n.startswith("dw_dgrad") for n in later), later
    assert h.background_builds() == (0, 1)
    # The one-call API on the same handle: the same result.
    one = cd.conv_input_grad(layer.x, w, dy, 1, layer.pad, 1, layer.x[1], handle=h)
    err = ((one.double() - expected).abs().max() / expected.abs().max()).item()
    assert err < TOL[dtype], f"one-call API: relative error {err}"
    with pytest.raises(ValueError, match="timeout_ms"):
        h.wait_background_builds(-1.0)


def test_background_builds_on_the_cpu_device(cpu: cd.Handle) -> None:
    # The CPU device builds nothing in the background: nothing waits, nothing was taken
    # in, and a timeout is still checked.
    assert cpu.background_builds() == (0, 0)
    assert cpu.wait_background_builds(0.0) is True
    # (1e300 ms is finite but beyond what a duration holds: refused, not a panic.)
    for bad in (-1.0, float("nan"), float("inf"), 1e300):
        with pytest.raises(ValueError, match="timeout_ms"):
            cpu.wait_background_builds(bad)
        with pytest.raises(ValueError, match="timeout_ms"):
            cd.wait_background_builds(bad)
    # Nothing was handed to the builder in this test process without a GPU.
    if not cd.cuda_available():
        assert cd.wait_background_builds(0.0) is True


@pytest.mark.gpu
def test_without_the_background_build_the_first_call_measures_cudnn(
    gpu: cd.Handle,
) -> None:
    # CUDNN_RS_BACKGROUND=0 (read once per process, so in a fresh one): the measured
    # tier's first call of such a layer builds and measures cuDNN's engines itself.
    pytest.importorskip("torch")
    script = textwrap.dedent(
        """
        import torch, cudnn_rs as cd
        from torch.profiler import ProfilerActivity, profile
        x, k = (32, 384, 14, 14), 3
        w = torch.randn(384, 1, k, k, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn(x, device="cuda", dtype=torch.bfloat16)
        h = cd.Handle(stream=torch.cuda.current_stream(), benchmark=True)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            dx = cd.conv_input_grad(x, w, dy, 1, 1, 1, 384, handle=h)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
        assert not any(n.startswith("dw_dgrad") for n in names), names
        assert h.background_builds() == (0, 0), h.background_builds()
        ref = torch.nn.grad.conv2d_input(x, w.double(), dy.double(), padding=1,
                                         groups=384)
        err = ((dx.double() - ref).abs().max() / ref.abs().max()).item()
        assert err < 4e-2, err
        """
    )
    env = {**os.environ, "CUDNN_RS_BACKGROUND": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["3x3x3_s1x2x2", "9x9_cl"])
def test_the_kernel_is_captured_into_a_torch_cuda_graph(
    gpu: cd.Handle, name: str
) -> None:
    # Warmed up outside (the module loads then), a call captured by PyTorch runs only
    # when the graph is replayed, and reads dy anew each replay; channels-last: with
    # the NCHW copies in the workspace the size query asks for.
    torch = pytest.importorskip("torch")
    layer = LAYERS[name]
    fmt = layer.memory_format(torch)
    w = torch.randn(layer.w, device="cuda").contiguous(memory_format=fmt)
    dy = torch.randn(layer.dy, device="cuda").contiguous(memory_format=fmt)
    dx = torch.full(layer.x, float("nan"), device="cuda")
    dx = dx.contiguous(memory_format=fmt)
    s = torch.cuda.Stream()
    h = cd.Handle(stream=s)
    conv = _conv(layer)
    ops = _imports(h, w, dy, dx)
    algo = cd.DefaultAlgo()
    size = h.get_convolution_backward_data_workspace_size(*ops, conv, algo)
    ws = cd.Workspace(h, size) if size else None
    for _ in range(2):
        h.convolution_backward_data(1.0, ops[0], ops[1], conv, algo, ws, 0.0, ops[2])
    s.synchronize()

    def call() -> None:
        h.convolution_backward_data(1.0, ops[0], ops[1], conv, algo, ws, 0.0, ops[2])
        s.synchronize()

    names = _kernels_run(torch, call)
    kernel = any(n.startswith("dw_dgrad") for n in names)
    assert kernel == layer.takes_kernel("float32"), names
    dx.fill_(float("nan"))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        h.convolution_backward_data(1.0, ops[0], ops[1], conv, algo, ws, 0.0, ops[2])
    torch.cuda.synchronize()
    assert torch.isnan(dx).all().item(), "the captured call ran during capture"
    for scale in (1.0, -2.0):
        if scale != 1.0:
            dy.mul_(scale)
            dx.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        expected = _reference(torch, layer, w, dy)
        err = ((dx.double() - expected).abs().max() / expected.abs().max()).item()
        assert err < TOL["float32"], f"replay with dy x {scale}: relative error {err}"


def _offset_channels_last(
    torch: Any, shape: tuple[int, ...], dt: Any, fill: Any
) -> Any:
    """A channels-last tensor of `shape` whose data starts one element into its storage
    (so not aligned to more than one element), filled by `fill(n)`."""
    n, c, h, w = shape
    storage = torch.empty(n * c * h * w + 1, device="cuda", dtype=dt)
    view = storage[1:].view(n, h, w, c).permute(0, 3, 1, 2)
    view.copy_(fill(shape))
    return view


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_channels_last_operands_off_alignment_run_one_channel_a_load(
    gpu: cd.Handle, dtype: str
) -> None:
    # The channels-last entry points load four channels at a time where the channels
    # allow; dy and dx starting one element off that alignment run the entry loading
    # one (the same problem, so the same cached choice), to the same values.
    torch = pytest.importorskip("torch")
    layer = LAYERS["7x7_cl_large_c72"]
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(dtype.encode()))
    w = torch.randn(layer.w, device="cuda", dtype=dt, generator=gen)
    h = cd.Handle(stream=torch.cuda.current_stream())
    conv = _conv(layer)
    algo = cd.DefaultAlgo()
    for offset in (False, True, False):
        if offset:
            dy = _offset_channels_last(
                torch,
                layer.dy,
                dt,
                lambda s: torch.randn(s, device="cuda", dtype=dt, generator=gen),
            )
            dx = _offset_channels_last(
                torch, layer.x, dt, lambda s: torch.full(s, float("nan"), device="cuda")
            )
            assert dy.data_ptr() % 8 and dx.data_ptr() % 8
        else:
            dy = torch.randn(layer.dy, device="cuda", dtype=dt, generator=gen)
            dy = dy.contiguous(memory_format=torch.channels_last)
            dx = torch.full(layer.x, float("nan"), device="cuda", dtype=dt)
            dx = dx.contiguous(memory_format=torch.channels_last)
        ops = _imports(h, w, dy, dx)

        def call(ops: tuple[Any, Any, Any] = ops) -> None:
            h.convolution_backward_data(
                1.0, ops[0], ops[1], conv, algo, None, 0.0, ops[2]
            )

        ran = _kernels_run(torch, call)
        entries = [n for n in ran if n.startswith("dw_dgrad_nhwc")]
        assert len(entries) == 1, ran
        assert ("_s1_" in entries[0]) == offset, (offset, entries)
        expected = _reference(torch, layer, w, dy)
        err = ((dx.double() - expected).abs().max() / expected.abs().max()).item()
        assert err < TOL[dtype], f"offset {offset} {dtype}: relative error {err}"
