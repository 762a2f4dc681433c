"""Arrays in, arrays out: ``conv_input_grad`` (see ``_arrays.py`` for the full text)."""

from collections.abc import Sequence
from typing import Any, TypeVar

from ._native import Algorithm as _Algorithm
from ._native import ConvolutionMode, Handle, MathType

__all__ = ["conv_input_grad"]

_A = TypeVar("_A")

def conv_input_grad(
    input_shape: Sequence[int],
    weight: Any,
    grad_output: _A,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    *,
    mode: ConvolutionMode = ...,
    algo: _Algorithm | None = None,
    math: MathType | None = None,
    handle: Handle | None = None,
    out: _A | None = None,
    benchmark: bool = False,
) -> _A:
    """The gradient of ``conv2d``/``conv3d(input, weight, ...)`` with respect to
    ``input`` (of shape ``input_shape``), given ``grad_output``: PyTorch's
    ``torch.nn.grad.conv2d_input`` / ``conv3d_input``, for any array library.

    ``weight`` and ``grad_output``: NumPy arrays (the CPU device), or PyTorch, CuPy,
    JAX or cudnn_rs arrays, or anything with ``__dlpack__`` /
    ``__cuda_array_interface__``, on one device. Returns an array of ``grad_output``'s
    library on its device (or ``out``, filled in), in grad_output's dtype and layout.
    ``algo=None``: the library's default choice; ``benchmark=True``: the measured tier.
    """

# Internal, shared with ``cudnn_rs.torch``: the dense copies conv_input_grad makes.
def _dense_input(obj: _A, lib: str, channels_last: bool = False) -> _A: ...
def _is_channels_last(obj: Any, lib: str) -> bool: ...
