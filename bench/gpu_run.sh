#!/usr/bin/env bash
# GPU test driver, part 1 (here, on a machine with cargo): builds the abi3 wheel, the
# Rust GPU test binary and the benchmark/sweep binaries into .carry/, which the device
# tool carries to the GPU machine, where bench/gpu_remote.sh runs them in one call:
#
#   bench/gpu_run.sh            # build + stage
#   CUDNN_RS_WHEEL_ONLY=1 bench/gpu_run.sh   # the wheel alone (pytest, benchmarks)
#   (device) run: bash bench/gpu_remote.sh    carry: [".carry"]
#
# The GPU machine has no cargo and no network; everything it needs is staged here.
set -euo pipefail
cd "$(dirname "$0")/.."
# CUDNN_RS_WHEEL_ONLY=1 rebuilds the wheel alone and keeps the test binaries staged.
# Other folders of .carry/ (fe/: the frontend wheel, fetched below if missing; tools/:
# py-spy, spy/) are kept.
if [ "${CUDNN_RS_WHEEL_ONLY:-0}" = 1 ]; then rm -rf .carry/wheels; else rm -rf .carry/wheels .carry/bin; fi
mkdir -p .carry/bin .carry/wheels
venv=${CUDNN_RS_VENV:-.venv}
[ -x "$venv/bin/maturin" ] || { python3 -m venv "$venv"; "$venv/bin/pip" install -q -r requirements-dev.txt; }
# The wheel the GPU runs test is the publishable one: abi3, manylinux_2_28 x86_64, linked
# through zig as scripts/build_wheels.sh builds it (CUDNN_RS_PLAIN_WHEEL=1: a plain local
# build instead, when zig cannot be installed).
if [ "${CUDNN_RS_PLAIN_WHEEL:-0}" = 1 ]; then
  "$venv/bin/maturin" build --release -q -o .carry/wheels
else
  tools=${CUDNN_RS_WHEEL_TOOLS:-target/wheel-tools}
  [ -x "$tools/bin/python" ] || python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check maturin==1.16.0 ziglang==0.15.2
  PATH="$PWD/$tools/bin:$PATH" maturin build --release -q --zig --compatibility manylinux_2_28 \
    --target x86_64-unknown-linux-gnu -o .carry/wheels
  ls .carry/wheels/*manylinux_2_28_x86_64.whl >/dev/null
fi
# The frontend's wheel (the broad suite's and the anchor suite's cudnn-frontend peers) for
# the GPU machine's Python 3.12; without it those peers' columns stay empty, and the
# measured tier's ratios are then against PyTorch alone. Fetched once (PyPI), then kept.
fe_version=${CUDNN_RS_FE_VERSION:-1.32.0}
if ! ls .carry/fe/nvidia_cudnn_frontend-"$fe_version"-*.whl >/dev/null 2>&1; then
  mkdir -p .carry/fe
  "$venv/bin/python" -m pip download -q --no-deps "nvidia-cudnn-frontend==$fe_version" \
    --python-version 3.12 --platform manylinux_2_28_x86_64 --only-binary=:all: -d .carry/fe \
    || echo "warning: no cudnn-frontend wheel staged; the frontend peers will be missing" >&2
fi
if [ "${CUDNN_RS_WHEEL_ONLY:-0}" = 1 ]; then  # benchmarks and pytest need no more
  du -sh .carry; ls -la .carry/wheels; exit 0
fi
# Rust test binaries (release), found through cargo's JSON messages.
cargo test --release --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        name = m["target"]["name"]
        if name in ("gpu_rows", "cudnn_rs"):
            shutil.copy(m["executable"], f".carry/bin/test_{name}")
'
cargo build --release --examples -q
for ex in gpu_sweep cpu_bench overhead; do
  [ -f "target/release/examples/$ex" ] && cp "target/release/examples/$ex" .carry/bin/
done
[ -d .whl ] && cp .whl/*.whl .carry/wheels/ 2>/dev/null || true
du -sh .carry; ls -la .carry/bin .carry/wheels
