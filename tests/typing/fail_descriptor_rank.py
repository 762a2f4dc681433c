"""A convolution descriptor with no tuple to take the spatial rank from."""

from __future__ import annotations

import cudnn_rs as cd


def descriptor_without_rank() -> None:
    cd.ConvolutionDescriptor()  # expect-error
