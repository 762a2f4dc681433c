"""Importing cudnn_rs never fails for lack of a GPU, a driver or cuDNN."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import cudnn_rs as cd

    assert cd.cuda_available() is False, "no device is visible, yet cuda_available()"
    assert cd.device_count() == 0, cd.device_count()
    try:
        cd.Handle()
    except (cd.CudaError, cd.LibraryNotFoundError) as exc:
        print("Handle() refused:", type(exc).__name__)
    else:
        raise SystemExit("Handle() succeeded with no visible CUDA device")

    # The CPU device still works: a 1x1 filter of 2.0 doubles dy.
    h = cd.Handle(device="cpu")
    w = cd.Filter.from_numpy(h, np.full((1, 1, 1, 1), 2.0, dtype=np.float32))
    dy = cd.Tensor.from_numpy(h, np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3))
    conv = cd.ConvolutionDescriptor(padding=(0, 0))
    dx = cd.convolution_backward_data(h, w, dy, conv, x_shape=(1, 1, 2, 3))
    got = dx.to_numpy().reshape(-1).tolist()
    assert got == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0], got
    print("cpu ok")
    """
)


@pytest.mark.parametrize("cudnn_path", ["/nonexistent", "empty-dir", "not-a-library"])
def test_import_without_gpu_or_cudnn(cudnn_path: str, tmp_path: Path) -> None:
    if cudnn_path == "empty-dir":
        cudnn_path = str(tmp_path)
    elif cudnn_path == "not-a-library":
        bogus = tmp_path / "libcudnn.so.9"
        bogus.write_text("not an ELF file")
        cudnn_path = str(bogus)
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["CUDNN_RS_CUDNN_PATH"] = cudnn_path
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, output
    assert "Handle() refused:" in result.stdout, output
    assert "cpu ok" in result.stdout, output
    assert "panicked" not in result.stderr, output
