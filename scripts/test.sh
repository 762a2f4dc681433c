#!/usr/bin/env bash
# The README's test command: lints, Rust tests, the Python package built into a local
# virtualenv, stub checks and the pytest suite. Installs what it needs; GPU tests skip
# (with their reason printed) where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${CUDNN_RS_VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r requirements-dev.txt

echo "== cargo fmt / clippy"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo clippy --features python --lib -- -D warnings

echo "== kernel images match src/kernels/"
"$venv/bin/python" scripts/gen_ptx.py --check

echo "== module cycles"
python3 scripts/module_cycles.py src

echo "== cargo test"
cargo test
# The bindings' own unit tests (src/python/: import formats, PyTorch reads) need the
# python feature, which the plain run leaves out.
cargo test --features python --lib

echo "== build the Python package"
"$venv/bin/maturin" develop --release -q

echo "== ruff"
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .

if [ -f python/cudnn_rs/_native.pyi ]; then
    echo "== stubtest"
    allow=()
    # --ignore-unused-allowlist: entries such as cudnn_rs.torch apply only where PyTorch
# is not installed.
[ -f stubtest_allowlist.txt ] && allow=(--allowlist stubtest_allowlist.txt --ignore-unused-allowlist)
    "$venv/bin/python" -m mypy.stubtest cudnn_rs "${allow[@]}"
fi

echo "== pytest"
"$venv/bin/python" -m pytest tests/python -rs -q
