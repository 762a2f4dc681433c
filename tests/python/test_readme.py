"""The README's Python example runs as written (on the CPU device)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cudnn_rs as cd

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    dx = namespace["dx"]
    assert dx.shape == (2, 4, 16, 16)  # type: ignore[attr-defined]


def _interop_blocks() -> list[str]:
    text = README.read_text()
    start = text.index("## Using it from PyTorch, CuPy and JAX")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


_INTEROP = _interop_blocks()


@pytest.mark.parametrize("index", range(len(_INTEROP)))
def test_readme_interop_examples_run(index: int) -> None:
    block = _INTEROP[index]
    for module in ("torch", "cupy", "jax"):
        if re.search(rf"^import {module}\b", block, flags=re.M):
            pytest.importorskip(module, reason=f"{module} is not installed here")
    if "import cupy" in block and not cd.cuda_available():
        pytest.skip("CuPy example: GPU only (no CUDA GPU here)")
    namespace: dict[str, object] = {}
    exec(compile(block, f"{README}:interop[{index}]", "exec"), namespace)
