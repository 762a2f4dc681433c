"""Compiles src/kernels/*.cu to the kernel images committed beside them (NVRTC, through
ctypes), which the library loads at run time through the driver: building the crate
needs no CUDA toolkit. Each entry point (the `extern "C"` kernels the `ENTRIES` macro
lists, once per data type) is compiled on its own, so that a process loads only the
entry points it runs: one image of all of them (2.6 MB for compute capability 9.0)
took 2-2.3 ms to load on the H200 and the first call of the kernel in a process 4-6 ms,
one entry point's (19 KB) 0.2-0.3 ms. Per kernel file and target, one pack
`<name>.<target>.pack` of every entry point's image: `sm_80` (cubins for GPUs of compute
capability 8.x), `sm_90` (9.x) and `compute_60` (PTX for every other GPU from Pascal on;
the driver compiles an entry point's on first use, and caches that). f64 has the NCHW
entry points but the eight-output ones (`ENTRIES_HALF_AND_F32` holds those and the
channels-last ones, expanded for the other types only).

A pack is a sequence of records, one per entry point in the source's order (the
expansions' order, then each macro's): the name's length and the image's length (each a
little-endian u32), the name (ASCII), the image (a cubin as NVRTC made it; PTX without
its terminating NUL), zero bytes up to a multiple of 8. `src/bwd_data/kernel.rs` reads it.

NVRTC 12.0 (PTX ISA 8.0: drivers from 525 on), from the `nvidia-cuda-nvrtc-cu12`
package requirements-dev.txt pins (no GPU needed):

    .venv/bin/python scripts/gen_ptx.py [path/to/libnvrtc.so.12]

Run it after changing a kernel and commit what it writes. `--check` compares instead of
writing (exit 1 when a committed pack is stale); the test command runs that.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import pathlib
import re
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "src" / "kernels"
TARGETS = ["compute_60", "sm_80", "sm_90"]
# One line of the `ENTRIES(SUFFIX, T)` macro's body: `KIND(name_##SUFFIX, T, args...)`.
ENTRY = re.compile(r"^\s*(\w+)\((\w+)_##SUFFIX, T((?:, [^)]*)?)\)\s*\\?$")
# An entry-point macro (`#define ENTRIES(SUFFIX, T)`, every type's entry points, and
# `#define ENTRIES_HALF_AND_F32(SUFFIX, T)`, those f64 lacks) ...
MACRO = re.compile(r"^#define (ENTRIES\w*)\(SUFFIX, T\)", re.M)
# ... and an expansion of one: `ENTRIES(f32, float)`.
EXPANSION = re.compile(r"^(ENTRIES\w*)\((\w+), (\w+)\)$", re.M)


def entry_points(source: str) -> tuple[str, list[tuple[str, str]]]:
    """The source before its entry-point macros (the kernels' code and the macros that
    define one entry point), and each entry point: its name and the one line that
    defines it, in the order of the expansions."""
    macros = list(MACRO.finditer(source))
    if not macros:
        raise SystemExit("no #define ENTRIES(SUFFIX, T) found")
    bodies: dict[str, list[tuple[str, str, str]]] = {}
    for m in macros:
        body = []
        for line in source[m.end() :].splitlines()[1:]:
            e = ENTRY.match(line)
            if e is None:
                break
            body.append(e.groups())
        if not body:
            raise SystemExit(f"no entry points found in the {m.group(1)} macro")
        bodies[m.group(1)] = body
    entries = []
    for macro, suffix, ty in EXPANSION.findall(source):
        if macro not in bodies:
            raise SystemExit(f"{macro}({suffix}, {ty}) expands no known macro")
        for kind, stem, args in bodies[macro]:
            name = f"{stem}_{suffix}"
            entries.append((name, f"{kind}({name}, {ty}{args})\n"))
    return source[: macros[0].start()], entries


def compile_to(lib: ctypes.CDLL, text: bytes, name: str, arch: str) -> bytes:
    """PTX (`arch` compute_XY) or a cubin (`arch` sm_XY) of the source `text`."""
    prog = ctypes.c_void_p()
    check(
        lib,
        lib.nvrtcCreateProgram(ctypes.byref(prog), text, name.encode(), 0, None, None),
    )
    # 177: a variable declared but not referenced (constants of other entry points).
    options = [
        f"--gpu-architecture={arch}".encode(),
        b"--std=c++14",
        b"--diag-suppress=177",
    ]
    opts = (ctypes.c_char_p * len(options))(*options)
    status = lib.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if status != 0:
        raise SystemExit(f"{name}: NVRTC error {status}\n{log.value.decode()}")
    if log.value.strip():
        print(log.value.decode(), file=sys.stderr)
    kind = "PTX" if arch.startswith("compute_") else "CUBIN"
    check(lib, getattr(lib, f"nvrtcGet{kind}Size")(prog, ctypes.byref(size)))
    out = ctypes.create_string_buffer(size.value)
    check(lib, getattr(lib, f"nvrtcGet{kind}")(prog, out))
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    # PTX without its terminating NUL (the loader appends one); a cubin as it is.
    return out.raw.rstrip(b"\0") if kind == "PTX" else out.raw


def pack(images: list[tuple[str, bytes]]) -> bytes:
    """The pack of `(name, image)` records (see the module's docstring)."""
    out = bytearray()
    for name, image in images:
        out += struct.pack("<II", len(name), len(image)) + name.encode("ascii") + image
        out += b"\0" * (-len(out) % 8)
    return bytes(out)


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
    # NVRTC compiles programs on several threads at once; ctypes lets go of the GIL.
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for source in sorted(KERNELS.glob("*.cu")):
            common, entries = entry_points(source.read_text())
            for arch in TARGETS:
                jobs = [
                    pool.submit(
                        compile_to, lib, (common + line).encode(), source.name, arch
                    )
                    for _, line in entries
                ]
                out = pack(
                    [(n, j.result()) for (n, _), j in zip(entries, jobs, strict=True)]
                )
                target = source.with_name(f"{source.stem}.{arch}.pack")
                if "--check" in argv:
                    if not target.exists() or target.read_bytes() != out:
                        print(f"stale: {target.relative_to(ROOT)}")
                        stale += 1
                else:
                    target.write_bytes(out)
                    print(
                        f"wrote {target.relative_to(ROOT)} ({len(entries)} entry points, {len(out)} bytes)"
                    )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
