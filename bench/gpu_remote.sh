#!/usr/bin/env bash
# GPU test driver, part 2 (on the GPU machine, from the repository root, with .carry/
# staged by bench/gpu_run.sh). Runs, against both cuDNN builds where present:
#   1. the Rust GPU tests (every table row vs the CPU reference, determinism, errors),
#   2. the Python suite with the GPU tests (vs the CPU device, NumPy and PyTorch),
#   3. the support sweep (CSV into $OUT), and optional benchmarks (GPU_RUN_BENCH=1).
# Logs go to $OUT (or ./gpu-out). Exit status: non-zero if any test step failed.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 RUST_BACKTRACE=1
pip_cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
sys_cudnn=/usr/lib/x86_64-linux-gnu/libcudnn.so.9
python3 -m pip install -q --upgrade --no-deps --no-index --target /tmp/site .carry/wheels/*.whl || exit 3
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/all.log"
fail=0
step() { # name, command...: full output appended to $out/all.log, its tail printed
  local name=$1; shift
  echo "=== $name"
  local log=/tmp/step_$name.log
  if "$@" >"$log" 2>&1; then echo "    ok"; else echo "    FAILED (rc $?)"; fail=1; fi
  { echo "=== $name"; cat "$log"; } >>"$out/all.log"
  tail -n "${TAIL:-6}" "$log" | sed 's/^/    /'
}
for which in pip system; do
  if [ "$which" = pip ]; then lib="$pip_cudnn/libcudnn.so.9"; else lib=$sys_cudnn; fi
  [ -f "$lib" ] || { echo "no $which cuDNN at $lib"; continue; }
  export CUDNN_RS_CUDNN_PATH=$lib
  step "rust_gpu_$which" .carry/bin/test_gpu_rows --ignored --nocapture --test-threads 1
  # GPU_RUN_SWEEP: 1 (default) sweeps the legacy algorithms, the graph API's heuristic
  # engine and the default choice; legacy, engine or default one of them (a
  # comma-separated list for several), 0 none. CSVs: sweep_<build>.csv,
  # sweep_engine_<build>.csv, sweep_default_<build>.csv.
  sweep=${GPU_RUN_SWEEP:-1}
  wants() { [ "$sweep" = 1 ] || [[ ",$sweep," == *",$1,"* ]]; }
  if wants legacy; then
    CUDNN_RS_SWEEP=legacy step "sweep_$which" .carry/bin/gpu_sweep "$out/sweep_$which.csv"
  fi
  if wants engine; then
    CUDNN_RS_SWEEP=engine step "sweep_engine_$which" .carry/bin/gpu_sweep "$out/sweep_engine_$which.csv"
  fi
  if wants default; then
    CUDNN_RS_SWEEP=default step "sweep_default_$which" .carry/bin/gpu_sweep "$out/sweep_default_$which.csv"
  fi
done
unset CUDNN_RS_CUDNN_PATH
if [ "${GPU_RUN_SANITIZER:-0}" = 1 ]; then
  # Every row under memcheck takes too long for one call: the tests that replay, the
  # graph-API engines, determinism and the refused call.
  TAIL=4 step memcheck timeout 400 compute-sanitizer --tool memcheck --error-exitcode 9 .carry/bin/test_gpu_rows --ignored --test-threads 1 graph_api repeated data_algo1 not_supported heuristic depthwise typed_finds
  TAIL=4 step racecheck timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 .carry/bin/test_gpu_rows --ignored --test-threads 1 graph_api
fi
TAIL=25 step pytest_gpu python3 -m pytest tests/python -rs -q --timeout 300 -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py
CUDNN_RS_FUZZ_EXAMPLES=${FUZZ:-500} TAIL=4 step fuzz_gpu python3 -m pytest tests/python/test_properties.py -k gpu -q -p no:cacheprovider --hypothesis-show-statistics
TAIL=40 step pytest_gpu_interop python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -rs -v --timeout 120 -p no:cacheprovider
[ "${GPU_RUN_RELIABILITY:-0}" = 1 ] && TAIL=10 step reliability python3 bench/reliability.py
if [ "${GPU_RUN_BENCH:-0}" = 1 ]; then
  TAIL=8 step overhead .carry/bin/overhead 5000
  CUDNN_RS_GRAPHS=0 TAIL=8 step overhead_no_graphs .carry/bin/overhead 5000
  CUDNN_RS_GRAPHS=0 TAIL=3 step perf_overhead_no_graphs python3 bench/perf.py --overhead-only --csv "$out/perf_overhead_no_graphs.csv"
  TAIL=40 step perf python3 bench/perf.py --csv "$out/perf.csv" --png "$out/perf.png"
  RAYON_NUM_THREADS=16 TAIL=12 step cpu_vs_torch python3 bench/cpu_vs_torch.py .carry/bin/cpu_bench --threads 16 --csv "$out/cpu_vs_torch.csv"
fi
exit $fail
