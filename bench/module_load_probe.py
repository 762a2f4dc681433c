"""Probe (GPU machine): what the first call of our own depthwise kernel costs in a new
process, and how much of it is loading the kernel's image.

Part A times the driver's `cuModuleLoadData` and `cuModuleGetFunction` on cubin images
of different sizes (`--cubins DIR`: `NAME.sm_90.cubin` files, such as the whole module
of before 2026-12-04 and images of one or several entry points; each is loaded in a
fresh process after PyTorch has set up CUDA, which sets `CUDA_MODULE_LOADING=LAZY`,
and again with `EAGER`). Part B times the first and second `conv_input_grad` calls of a
depthwise problem our kernel runs (5x5 stride 3 f16 NCHW, 3x3 stride 1 f32 NCHW) in a
fresh process whose handle already ran a dense layer (so the handle's own set-up is
not counted), against PyTorch's first and second calls. Part C runs four such problems
in turn in one fresh process (two entry points of f32, the first again on another
shape, one of f16), lazy and eager, and prints [ours first, ours second, PyTorch first]
ms for each. Results of 2026-12-04: `bench/module_load_2026-12-04.txt`.

Usage: python bench/module_load_probe.py [--parts ABC] [--cubins DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

LOAD = r"""
import ctypes, json, sys, time, torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
cu = ctypes.CDLL("libcuda.so.1")
image = open(sys.argv[1], "rb").read()
name = sys.argv[2].encode()
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
t0 = time.perf_counter()
rc1 = cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image))
t1 = time.perf_counter()
rc2 = cu.cuModuleGetFunction(ctypes.byref(fn), mod, name)
t2 = time.perf_counter()
regs = ctypes.c_int()
rc3 = cu.cuFuncGetAttribute(ctypes.byref(regs), 4, fn)
t3 = time.perf_counter()
print(json.dumps({"rc": [rc1, rc2, rc3], "load_ms": (t1 - t0) * 1e3,
                  "get_ms": (t2 - t1) * 1e3, "attr_ms": (t3 - t2) * 1e3}))
"""

FIRST = r"""
import json, sys, time, torch
import cudnn_rs as cd
sys.path.insert(0, "bench")
from zoo import Conv
from direct_probe import calls
torch.backends.cudnn.benchmark = False
dense = Conv((64, 28, 28), (64, 64, 3, 3), (64, 28, 28), (1, 1), (1, 1), (1, 1), 1)
cases = {
    "dw5x5s3_f16": (Conv((32, 17, 8), (32, 1, 5, 5), (32, 5, 2), (3, 3), (0, 0), (1, 1), 32), torch.float16),
    "dw3x3s1_f32": (Conv((48, 17, 17), (48, 1, 3, 3), (48, 17, 17), (1, 1), (1, 1), (1, 1), 48), torch.float32),
}
which = sys.argv[1]
c, dt = cases[which]
t, o, _ = calls(dense, 8, torch.float32)
o(); t(); torch.cuda.synchronize()
theirs, ours, err = calls(c, 64, dt)
def first(f):
    torch.cuda.synchronize(); t0 = time.perf_counter(); f(); torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3
r = {"case": which, "ours_first_ms": first(ours), "ours_second_ms": first(ours),
     "torch_first_ms": first(theirs), "torch_second_ms": first(theirs), "err": err(ours)}
print(json.dumps(r))
"""


SEQUENCE = r"""
import json, sys, time, torch
import cudnn_rs as cd
sys.path.insert(0, "bench")
from zoo import Conv
from direct_probe import calls
torch.backends.cudnn.benchmark = False
dense = Conv((64, 28, 28), (64, 64, 3, 3), (64, 28, 28), (1, 1), (1, 1), (1, 1), 1)
t, o, _ = calls(dense, 8, torch.float32)
o(); t(); torch.cuda.synchronize()
seq = [
    ("dw3x3s1_f32", Conv((48, 17, 17), (48, 1, 3, 3), (48, 17, 17), (1, 1), (1, 1), (1, 1), 48), torch.float32),
    ("dw5x5s1_f32", Conv((48, 17, 17), (48, 1, 5, 5), (48, 17, 17), (1, 1), (2, 2), (1, 1), 48), torch.float32),
    ("dw3x3s1_f32_b", Conv((64, 19, 19), (64, 1, 3, 3), (64, 19, 19), (1, 1), (1, 1), (1, 1), 64), torch.float32),
    ("dw5x5s3_f16", Conv((32, 17, 8), (32, 1, 5, 5), (32, 5, 2), (3, 3), (0, 0), (1, 1), 32), torch.float16),
]
def first(f):
    torch.cuda.synchronize(); t0 = time.perf_counter(); f(); torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3
r = {}
for name, c, dt in seq:
    theirs, ours, err = calls(c, 16, dt)
    r[name] = [round(first(ours), 3), round(first(ours), 3), round(first(theirs), 3)]
print(json.dumps(r))
"""


def run(code: str, *args: str, env: dict | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    if out.returncode != 0:
        return {"error": out.stderr[-400:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cubins", help="directory of NAME.sm_90.cubin images")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parts", default="ABC", help="which parts (A needs --cubins)")
    args = ap.parse_args(argv)
    if "A" in args.parts and args.cubins:
        names = {
            "one": "dw_dgrad_kw5_strided_f16",
            "one_rows": "dw_dgrad_k133_s1_f32",
            "f16": "dw_dgrad_kw5_strided_f16",
            "full": "dw_dgrad_kw5_strided_f16",
        }
        for path in sorted(pathlib.Path(args.cubins).glob("*.sm_90.cubin")):
            key = path.name.split(".")[0]
            for mode in ("LAZY", "EAGER"):
                for _ in range(args.repeat):
                    r = run(
                        LOAD,
                        str(path),
                        names.get(key, "dw_dgrad_kw5_strided_f16"),
                        env={"CUDA_MODULE_LOADING": mode},
                    )
                    size = path.stat().st_size
                    print(f"A {key:9} {size:8d} B {mode:5} {json.dumps(r)}", flush=True)
    for which in ("dw5x5s3_f16", "dw3x3s1_f32") if "B" in args.parts else ():
        for _ in range(args.repeat):
            print(f"B {json.dumps(run(FIRST, which))}", flush=True)
    for mode in ("LAZY", "EAGER") if "C" in args.parts else ():
        for _ in range(args.repeat):
            r = run(SEQUENCE, env={"CUDA_MODULE_LOADING": mode})
            print(f"C {mode} {json.dumps(r)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
