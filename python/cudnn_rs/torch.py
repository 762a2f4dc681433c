"""PyTorch autograd drop-ins whose input gradient comes from cudnn_rs.

Imported on demand (``import cudnn_rs.torch``), never by ``import cudnn_rs``; importing
it imports PyTorch.

- ``conv2d`` / ``conv3d``: ``torch.nn.functional.conv2d`` / ``conv3d`` with the same
  arguments; the forward pass and the weight and bias gradients are PyTorch's
  (``torch.ops.aten.convolution_backward`` with only those outputs asked for), the
  input gradient is ``cudnn_rs.conv_input_grad``.
- ``Conv2d`` / ``Conv3d``: ``torch.nn.Conv2d`` / ``Conv3d`` subclasses using them.
- ``patch_module(model)``: switches every ``nn.Conv2d`` / ``nn.Conv3d`` of a model to
  them in place (parameters, buffers and ``state_dict`` unchanged).

Layers whose ``padding_mode`` is not ``'zeros'`` (reflect, replicate, circular) pad in
PyTorch first, which these functions do not do: ``patch_module`` leaves them as they
are (or, with ``strict=True``, raises ``ValueError`` naming them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch  # type: ignore[import-not-found, unused-ignore]
import torch.nn.functional as F  # type: ignore[import-not-found, unused-ignore]
from torch import nn  # type: ignore[import-not-found, unused-ignore]

from ._arrays import _dense_input, _is_channels_last, conv_input_grad

__all__ = ["Conv2d", "Conv3d", "conv2d", "conv3d", "patch_module"]

_IntOr = int | Sequence[int]


def _tuple(v: _IntOr, n: int) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    items = tuple(int(x) for x in v)
    return items * n if len(items) == 1 else items


def _padding(
    padding: _IntOr | str, weight: torch.Tensor, dilation: tuple[int, ...], n: int
) -> tuple[int, ...]:
    if not isinstance(padding, str):
        return _tuple(padding, n)
    if padding == "valid":
        return (0,) * n
    if padding == "same":
        pads = []
        for k, d in zip(weight.shape[2:], dilation, strict=True):
            total = d * (k - 1)
            if total % 2:
                raise ValueError(
                    "padding='same' with an even effective kernel size pads "
                    "asymmetrically, which cuDNN's convolution cannot express; pad the "
                    "input with torch.nn.functional.pad and use padding=0"
                )
            pads.append(total // 2)
        return tuple(pads)
    raise ValueError(
        f"padding must be an int, a tuple or 'same'/'valid', got {padding!r}"
    )


class _ConvNd(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        input: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> torch.Tensor:
        ctx.save_for_backward(input, weight)
        ctx.conv = (stride, padding, dilation, groups)
        ctx.bias_shape = None if bias is None else list(bias.shape)
        run = F.conv2d if input.dim() == 4 else F.conv3d
        return run(input, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        input, weight = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.conv
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        # Autograd hands gradients of any stride (e.g. expanded ones from ``.sum()``): a
        # non-dense one is copied in the input's layout, which the result then follows
        # (conv_input_grad copies the weight, if need be, in grad_output's).
        grad_output = _dense_input(
            grad_output, "torch", _is_channels_last(input, "torch")
        )
        grad_input = grad_weight = grad_bias = None
        if need_input:
            grad_input = conv_input_grad(
                input.shape,
                weight,
                grad_output,
                stride,
                padding,
                dilation,
                groups,
            )
        if need_weight or (need_bias and ctx.bias_shape is not None):
            _, grad_weight, grad_bias = torch.ops.aten.convolution_backward(
                grad_output,
                input,
                weight,
                ctx.bias_shape,
                list(stride),
                list(padding),
                list(dilation),
                False,
                [0] * len(stride),
                groups,
                [
                    False,
                    bool(need_weight),
                    bool(need_bias and ctx.bias_shape is not None),
                ],
            )
        return grad_input, grad_weight, grad_bias, None, None, None, None


def _conv(
    n: int,
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: _IntOr,
    padding: _IntOr | str,
    dilation: _IntOr,
    groups: int,
) -> torch.Tensor:
    if input.dim() != n + 2:
        raise ValueError(
            f"conv{n}d expects a batched input of rank {n + 2} (N, C, ...), got shape "
            f"{tuple(input.shape)}"
        )
    dil = _tuple(dilation, n)
    pad = _padding(padding, weight, dil, n)
    args = (_tuple(stride, n), pad, dil, int(groups))
    dev = input.device.type
    if torch.is_autocast_enabled(dev):
        # Run the forward in autocast's dtype and save operands of that dtype, so that
        # the backward's operands agree (as PyTorch's own convolution does).
        dt = torch.get_autocast_dtype(dev)
        input, weight = input.to(dt), weight.to(dt)
        bias = None if bias is None else bias.to(dt)
        with torch.autocast(dev, enabled=False):
            return _ConvNd.apply(input, weight, bias, *args)  # type: ignore[no-any-return]
    return _ConvNd.apply(input, weight, bias, *args)  # type: ignore[no-any-return]


def conv2d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: _IntOr = 1,
    padding: _IntOr | str = 0,
    dilation: _IntOr = 1,
    groups: int = 1,
) -> torch.Tensor:
    """``torch.nn.functional.conv2d`` whose input gradient comes from cudnn_rs (a
    batched (N, C, H, W) input; padding ints, tuples, 'valid', or 'same' when
    symmetric)."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: _IntOr = 1,
    padding: _IntOr | str = 0,
    dilation: _IntOr = 1,
    groups: int = 1,
) -> torch.Tensor:
    """``torch.nn.functional.conv3d`` whose input gradient comes from cudnn_rs."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


class Conv2d(nn.Conv2d):
    """``nn.Conv2d`` (``padding_mode='zeros'``) whose input gradient comes from
    cudnn_rs."""

    def _conv_forward(
        self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
    ) -> torch.Tensor:
        if self.padding_mode != "zeros":
            return super()._conv_forward(input, weight, bias)
        return conv2d(
            input,
            weight,
            bias,
            self.stride,
            self.padding,  # type: ignore[arg-type]
            self.dilation,
            self.groups,
        )


class Conv3d(nn.Conv3d):
    """``nn.Conv3d`` (``padding_mode='zeros'``) whose input gradient comes from
    cudnn_rs."""

    def _conv_forward(
        self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
    ) -> torch.Tensor:
        if self.padding_mode != "zeros":
            return super()._conv_forward(input, weight, bias)
        return conv3d(
            input,
            weight,
            bias,
            self.stride,
            self.padding,  # type: ignore[arg-type]
            self.dilation,
            self.groups,
        )


def patch_module(model: nn.Module, *, strict: bool = False) -> nn.Module:
    """Switches, in place, every ``nn.Conv2d`` / ``nn.Conv3d`` of ``model`` (exactly
    those classes, not subclasses of them) to ``Conv2d`` / ``Conv3d`` above; returns
    ``model``. Parameters, buffers, hooks and ``state_dict`` stay as they are.

    Layers with a ``padding_mode`` other than ``'zeros'`` are left to PyTorch, or, with
    ``strict=True``, make it raise ``ValueError`` (naming them) before any layer
    changes."""
    swaps: list[tuple[nn.Module, type[nn.Module]]] = []
    refused: list[str] = []
    for name, m in model.named_modules():
        new: type[nn.Module] | None = None
        if type(m) is nn.Conv2d:
            new = Conv2d
        elif type(m) is nn.Conv3d:
            new = Conv3d
        if new is None:
            continue
        if m.padding_mode != "zeros":
            refused.append(f"{name or '<model>'} (padding_mode={m.padding_mode!r})")
            continue
        swaps.append((m, new))
    if strict and refused:
        raise ValueError(
            "these convolutions pad with a mode other than 'zeros', which cudnn_rs's "
            f"drop-in does not do: {', '.join(refused)}; pass strict=False to leave "
            "them to PyTorch"
        )
    for m, new in swaps:
        m.__class__ = new
    return model
