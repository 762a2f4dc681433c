#!/usr/bin/env bash
# The README's test command: lints, Rust tests, then (once present) the Python suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test
