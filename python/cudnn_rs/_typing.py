"""Markers that exist for static typing only: the rank parameters of the stubs' generic
``Tensor``, ``Filter`` and ``ConvolutionDescriptor``.

``Tensor[F16, NHWC, Rank4]`` is a 4-d tensor of f16 stored NHWC;
``ConvolutionDescriptor[F32, Spatial2]`` is a 2-d convolution computing in f32. The
classes are defined here, at run time, so that annotations naming them resolve
(``typing.get_type_hints``, documentation tools); nothing is ever an instance of them.
"""

from __future__ import annotations

from typing import final

__all__ = ["Rank", "Rank4", "Rank5", "Spatial", "Spatial2", "Spatial3"]


class Rank:
    """Base of the tensor-rank markers (the third type parameter of Tensor/Filter)."""


@final
class Rank4(Rank):
    """Rank 4: (N, C, H, W) tensors, (K, C/groups, R, S) filters (2-d convolution)."""


@final
class Rank5(Rank):
    """Rank 5: (N, C, D, H, W) tensors, (K, C/groups, T, R, S) filters (3-d)."""


class Spatial:
    """Base of the spatial-rank markers (second parameter of ConvolutionDescriptor)."""


@final
class Spatial2(Spatial):
    """A 2-d convolution: padding, stride, dilation are pairs; tensors are Rank4."""


@final
class Spatial3(Spatial):
    """A 3-d convolution: padding, stride, dilation are triples; tensors are Rank5."""
