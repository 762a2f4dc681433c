#!/usr/bin/env bash
# GPU test driver, part 1 (here, on a machine with cargo): builds the abi3 wheel, the
# Rust GPU test binary and the benchmark/sweep binaries into .carry/, which the device
# tool carries to the GPU machine, where bench/gpu_remote.sh runs them in one call:
#
#   bench/gpu_run.sh            # build + stage
#   (device) run: bash bench/gpu_remote.sh    carry: [".carry"]
#
# The GPU machine has no cargo and no network; everything it needs is staged here.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry && mkdir -p .carry/bin .carry/wheels
venv=${CUDNN_RS_VENV:-.venv}
[ -x "$venv/bin/maturin" ] || { python3 -m venv "$venv"; "$venv/bin/pip" install -q -r requirements-dev.txt; }
"$venv/bin/maturin" build --release -q -o .carry/wheels
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
