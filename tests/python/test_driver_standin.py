"""An old CUDA driver is refused at ``Handle()`` with a ``CudaError``, never a panic.

A stand-in ``libcuda.so.1`` is compiled here from C (``cuInit`` plus a
``cuDriverGetVersion`` reporting a chosen version, nothing newer) and put first on the
loader's search path of a fresh interpreter (``LD_LIBRARY_PATH`` is read at start-up).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

STANDIN_SOURCE = """
int cuInit(unsigned int flags) { (void)flags; return 0; }
int cuDriverGetVersion(int *version) {
    if (!version) return 1;
    *version = STANDIN_CUDA_VERSION;
    return 0;
}
"""

CHILD = """
import cudnn_rs
print("available:", cudnn_rs.cuda_available())
try:
    cudnn_rs.Handle()
except Exception as e:
    print("raised:", type(e).__name__, isinstance(e, cudnn_rs.CudaError))
    print("message:", e)
else:
    print("raised: nothing")
"""


def _standin(tmp_path: Path, version: int) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in libcuda")
    src = tmp_path / "standin.c"
    src.write_text(STANDIN_SOURCE)
    lib = tmp_path / "libcuda.so.1"
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcuda.so.1",
            f"-DSTANDIN_CUDA_VERSION={version}",
            "-o",
            str(lib),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (tmp_path / "libcuda.so").symlink_to("libcuda.so.1")
    return tmp_path


def _run_child(libdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{libdir}:{old}" if old else str(libdir)
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PanicException" not in done.stdout + done.stderr
    # A driver the checks refuse is refused before cudarc looks for anything: no panic
    # (caught or not) prints its message or backtrace.
    assert "panicked" not in done.stderr, done.stderr
    fields = dict(
        line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line
    )
    return fields


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in is a Linux libcuda")
def test_a_cuda_12_2_driver_is_a_cuda_error_naming_both_versions(
    tmp_path: Path,
) -> None:
    fields = _run_child(_standin(tmp_path, 12020))
    assert fields["available"] == "False"
    assert fields["raised"] == "CudaError True"
    message = fields["message"]
    assert "supports CUDA 12.2" in message, message
    assert "cuDriverGetVersion = 12020" in message, message
    assert "CUDA 12.8 or newer (R570+)" in message, message


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in is a Linux libcuda")
def test_a_new_enough_driver_missing_entry_points_is_a_cuda_error(
    tmp_path: Path,
) -> None:
    # Passes the version check but lacks cuDeviceGetCount and the rest, which cudarc
    # would panic over: refused first, as CudaError naming the entry point, and nothing
    # printed (checked in _run_child).
    fields = _run_child(_standin(tmp_path, 13000))
    assert fields["available"] == "False"
    assert fields["raised"] == "CudaError True"
    assert "missing a required entry point" in fields["message"], fields["message"]
    assert "(cuDeviceGetCount)" in fields["message"], fields["message"]
