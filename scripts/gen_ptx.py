"""Compiles src/kernels/*.cu to the PTX and cubins committed beside them (NVRTC, through
ctypes), which the library loads at run time through the driver: building the crate
needs no CUDA toolkit. Per kernel file: `<name>.sm_80.cubin` (GPUs of compute capability
8.x), `<name>.sm_90.cubin` (9.x), and `<name>.ptx` for compute_60 (every other GPU from
Pascal on; the driver compiles it on first use, and caches that). Run this after changing
a kernel and commit what it writes. NVRTC 12.0 (PTX ISA 8.0: drivers from 525 on), from
the `nvidia-cuda-nvrtc-cu12` package requirements-dev.txt pins (no GPU needed):

    .venv/bin/python scripts/gen_ptx.py [path/to/libnvrtc.so.12]

`--check` compares instead of writing (exit 1 when a committed file is stale); the test
command runs that.
"""

from __future__ import annotations

import ctypes
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "src" / "kernels"
TARGETS = [("ptx", "compute_60"), ("sm_80.cubin", "sm_80"), ("sm_90.cubin", "sm_90")]


def compile_to(lib: ctypes.CDLL, source: pathlib.Path, arch: str) -> bytes:
    """PTX (`arch` compute_XY) or a cubin (`arch` sm_XY) of `source`."""
    prog = ctypes.c_void_p()
    text = source.read_bytes()
    name = source.name.encode()
    check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), text, name, 0, None, None))
    options = [f"--gpu-architecture={arch}".encode(), b"--std=c++14"]
    opts = (ctypes.c_char_p * len(options))(*options)
    status = lib.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if status != 0:
        raise SystemExit(f"{source.name}: NVRTC error {status}\n{log.value.decode()}")
    if log.value.strip():
        print(log.value.decode(), file=sys.stderr)
    kind = "PTX" if arch.startswith("compute_") else "CUBIN"
    check(lib, getattr(lib, f"nvrtcGet{kind}Size")(prog, ctypes.byref(size)))
    out = ctypes.create_string_buffer(size.value)
    check(lib, getattr(lib, f"nvrtcGet{kind}")(prog, out))
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    # PTX without its terminating NUL (the loader appends one); a cubin as it is.
    return out.raw.rstrip(b"\0") if kind == "PTX" else out.raw


def check(lib: ctypes.CDLL, status: int) -> None:
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise SystemExit(f"NVRTC: {lib.nvrtcGetErrorString(status).decode()}")


def nvrtc_path() -> str:
    """libnvrtc of the pinned `nvidia-cuda-nvrtc-cu12` package."""
    import nvidia.cuda_nvrtc  # type: ignore[import-not-found]

    return str(pathlib.Path(nvidia.cuda_nvrtc.__path__[0]) / "lib" / "libnvrtc.so.12")


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--check"]
    if len(args) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    lib = ctypes.CDLL(args[0] if args else nvrtc_path())
    stale = 0
    for source in sorted(KERNELS.glob("*.cu")):
        for suffix, arch in TARGETS:
            out = compile_to(lib, source, arch)
            target = source.with_name(f"{source.stem}.{suffix}")
            if "--check" in argv:
                if not target.exists() or target.read_bytes() != out:
                    print(f"stale: {target.relative_to(ROOT)}")
                    stale += 1
            else:
                target.write_bytes(out)
                print(f"wrote {target.relative_to(ROOT)} ({len(out)} bytes)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
