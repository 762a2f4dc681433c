#!/usr/bin/env bash
# GPU verification in two calls of at most 10 minutes each (on the GPU machine, after
# bench/gpu_run.sh staged .carry/ here):
#   bash scripts/gpu_final.sh tests   # Rust GPU tests, pytest on the GPU, interop
#   bash scripts/gpu_final.sh bench   # broad layer suite and the training-step benchmark
#   bash scripts/gpu_final.sh all     # pytest on the GPU, then both benchmarks, shorter
#   bash scripts/gpu_final.sh probe   # where training steps spend their time
#   bash scripts/gpu_final.sh spy     # py-spy --native on training steps (.carry/tools/
#                                     # holds the py-spy wheel), CUDA API calls per step
#   bash scripts/gpu_final.sh bench2  # anchor suite, training steps, broad suite (shorter)
#   bash scripts/gpu_final.sh final   # the GPU tests (pip cuDNN), then the training steps
#   bash scripts/gpu_final.sh suites  # the anchor suite and the broad suite
#   bash scripts/gpu_final.sh broad   # the broad suite, then bench/candidates.py on two rows
#   bash scripts/gpu_final.sh survey  # the GPU tests, the broad suite at batch 1, bench/zoo.py
#   bash scripts/gpu_final.sh look    # the broad suite, then train_probe.py --layers
#   bash scripts/gpu_final.sh check   # the GPU tests (pip cuDNN), then the broad suite
#                                     # (BROAD_BATCH=1 for its batch-1 rows; BROAD_MINUTES,
#                                     # BROAD_LIMIT: its budget and time limit)
#   bash scripts/gpu_final.sh first   # the default-choice tests, then the measured tier's
#                                     # first sights with their breakdown and per-configuration
#                                     # trace (bench/first_sight.py; FIRST_ARGS, FIRST_MINUTES);
#                                     # with ZOO_ARGS the zoo, with BROAD_MINUTES the broad suite
#   bash scripts/gpu_final.sh measure # the broad suite (both batches), the training steps
#   bash scripts/gpu_final.sh closing # the grouped layers' first sights (trace; FIRST_LAYERS,
#                                     # FIRST_BATCH, FIRST_MINUTES, FIRST_LIMIT), the broad
#                                     # suite (both batches), with ZOO_ARGS the zoo
#   bash scripts/gpu_final.sh train   # the training steps alone (TRAIN_MINUTES, TRAIN_LIMIT,
#                                     # TRAIN_ARGS)
#   bash scripts/gpu_final.sh rust    # the Rust GPU tests (both cuDNN builds), memcheck
#   bash scripts/gpu_final.sh pytest  # pytest on the GPU, the interop tests
#   bash scripts/gpu_final.sh hostspy # host cost per call (bench/host_overhead.py), then
#                                     # py-spy --native on its conv_input_grad loops
#   bash scripts/gpu_final.sh kernel  # the depthwise kernel: Rust GPU tests + memcheck,
#                                     # pytest on the GPU, interop, bench/dw_sweep.py, the
#                                     # zoo's depthwise models in NCHW (ZOO_CONFIGS,
#                                     # ZOO_MINUTES), bench/direct_probe.py (PROBE=0: not)
#   bash scripts/gpu_final.sh random  # the GPU tests, bench/random_layers.py (layers drawn at
#                                     # random), the training steps
#   bash scripts/gpu_final.sh sight   # test_gpu_arrays.py, the measured tier's first sights
#                                     # (first_sight.py, random_layers.py --measured)
#   bash scripts/gpu_final.sh wide    # the GPU tests (memcheck also on the eight-output
#                                     # entry points), dw_sweep's stride-1 rows, random
#                                     # layers in the measured tier
#   bash scripts/gpu_final.sh models  # the zoo's depthwise models in NCHW, the training steps
#   bash scripts/gpu_final.sh tx      # the depthwise kernel's four- and eight-output entry
#                                     # points and cuDNN on stride-1 squares, the kernel's
#                                     # tests on the eight-output ones
#   bash scripts/gpu_final.sh nhwc    # the channels-last entry points: their tests, then
#                                     # against cuDNN (dw_sweep.py --layout cl)
#   bash scripts/gpu_final.sh clmodels # the zoo's depthwise models in channels last, first
#                                     # sights (with trace) of the grouped layers
#   bash scripts/gpu_final.sh compare # this build against a branch's in .carry/alt/ (dw_sweep
#                                     # with each, the branch's GPU tests)
#   bash scripts/gpu_final.sh unseen  # layers drawn at random with new seeds: the default
#                                     # (RANDOM_SEED, RANDOM_ROWS, RANDOM_ARGS), the measured
#                                     # tier with its trace (MEASURED_SEED, MEASURED_ROWS,
#                                     # MEASURED_ARGS; e.g. "--configs f64"), then PYTEST_K's
#                                     # pytest subset and BROAD_LAYERS' broad rows (both batches),
#                                     # with TRAIN_MINUTES the training steps
#   bash scripts/gpu_final.sh f64     # the depthwise kernel's tests (DIRECT_K; with
#                                     # DIRECT_ALL f64 also with CUDNN_RS_DIRECT=all),
#                                     # random f64 layers (RANDOM_SEED, RANDOM_ROWS)
#   bash scripts/gpu_final.sh background # the measured tier's background builds: the probe,
#                                     # their tests, first sights and training steps
#                                     # (PROBE_VARIANTS)
#   bash scripts/gpu_final.sh onecall # every GPU test in one call of under 10 minutes: the
#                                     # Rust GPU tests (both cuDNN builds) and memcheck beside
#                                     # pytest on the GPU, then interop and the background
#                                     # builds' tests (for sessions whose machine starts fail)
#   bash scripts/gpu_final.sh sights  # first calls with their traces: efficientnet_b0's first
#                                     # sights (PROBE_VARIANTS), random layers (RANDOM_SEED) in
#                                     # the default tier, then the same in the measured tier
#   bash scripts/gpu_final.sh held    # the measured tier's timings held and not
#                                     # (CUDNN_RS_HOLD=0): random layers (RANDOM_SEED), then
#                                     # efficientnet_b0's first sights, then its tests
#   bash scripts/gpu_final.sh ab      # the measured tier against the wheel in .carry/alt/, in
#                                     # alternating rounds: random layers (RANDOM_SEED), then
#                                     # efficientnet_b0's first sights, each traced
#   bash scripts/gpu_final.sh suite   # the broad suite alone (BROAD_BATCH, BROAD_MINUTES)
#   bash scripts/gpu_final.sh pool    # bench/pool_probe.py: the one-call API against the
#                                     # explicit path, the memory pool as started and keeping
#                                     # freed memory; this build, then .carry/alt/'s
#   bash scripts/gpu_final.sh onecallstep # bench/onecall_step_probe.py: where the one-call
#                                     # API's extra time in host-bound training steps goes
#                                     # (ResNet-50, MobileNet-V3; f16 channels-last; its parts
#                                     # timed, each backend also alone), with the
#                                     # CUDA-graph replay and without (CUDNN_RS_GRAPHS=0);
#                                     # first the host cost per call on addresses that
#                                     # never repeat (host_overhead.py's "grad_outputs"; the
#                                     # Rust API's, examples/overhead.rs, if staged)
#   bash scripts/gpu_final.sh hostab  # host cost on new addresses against .carry/old/'s
#                                     # wheel, then the replay's tests (see the mode)
#   bash scripts/gpu_final.sh verify  # Rust GPU tests (both cuDNN builds), pytest, interop,
#                                     # host overhead and the training-step benchmark
#   bash scripts/gpu_final.sh onecalltrain # the one-call Function in training steps, one
#                                     # settling step before each timed one: bound (a handle
#                                     # on PyTorch's stream), then in the contract's spelling
#                                     # (Handle(device=n), imports without a handle);
#                                     # ONECALL_MODELS, ONECALL_VARIANTS
#   bash scripts/gpu_final.sh handles # a new Handle() every call: bench/handle_probe.py with
#                                     # this build and .carry/old/'s wheel in turn
#                                     # (HANDLE_ORDER), plain and --measured (HANDLE_MODES),
#                                     # then the tests of handles made and dropped
# Logs, CSVs and tables under $OUT; each step has its own time limit.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 RUST_BACKTRACE=1
python3 -m pip install -q --upgrade --no-deps --no-index --target /tmp/site .carry/wheels/*.whl .carry/fe/*.whl 2>/dev/null \
  || python3 -m pip install -q --upgrade --no-deps --no-index --target /tmp/site .carry/wheels/*.whl || exit 3
export PYTHONPATH=/tmp/site
# Without the frontend (bench/gpu_run.sh stages its wheel) the suites lack two peers.
python3 -c "import cudnn" 2>/dev/null \
  || echo "warning: cudnn-frontend is not installed: the broad and anchor suites will lack its peers"
pip_cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
fail=0
wheel_check() { # the installed wheel (from a fresh --target), the Python, the demo
  ls .carry/wheels/
  python3 --version
  python3 -c 'import cudnn_rs, sys; print(cudnn_rs.__version__, cudnn_rs.__file__)'
  python3 -m cudnn_rs info && python3 -m cudnn_rs demo
}
export -f wheel_check
# compute-sanitizer memcheck on the replay, engine, refusal, twin, kernel and measured-default tests (pip cuDNN;
# $2: the log's name).
memcheck_subset() {
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -n 1)
  if [ -z "$cs" ]; then
    echo "=== memcheck: no compute-sanitizer on this machine"
    return
  fi
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run "${2:-memcheck}" "$1" "$cs" --tool memcheck --error-exitcode 9 \
    .carry/bin/test_gpu_rows --ignored --test-threads 1 graph_api repeated not_supported depthwise typed_finds kernel_module measured_default
}
run() {
  local name=$1 limit=$2; shift 2
  echo "=== $name"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "    rc $rc"
  [ $rc -eq 0 ] || fail=1
  tail -n "${TAIL:-6}" "$out/$name.log" | sed 's/^/    /'
}
# examples/overhead.rs, if staged (.carry/new/, ov/ or bin/), with replay and without on
# the pip cuDNN: the Rust API's host cost replayed, run directly on one dx (cuDNN's
# execute) and on 400 in turn (+ variant packs).
overhead_both() {
  local ov
  ov=$(ls .carry/new/overhead .carry/ov/overhead .carry/bin/overhead 2>/dev/null | head -n 1)
  [ -n "$ov" ] || return 0
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=9 run overhead 60 "$ov" 5000
  CUDNN_RS_GRAPHS=0 CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=9 run overhead_no_graphs 60 "$ov" 5000
}
# The Rust GPU tests on the pip cuDNN and on the system's where it has one ($1: the limit
# of each run).
rust_gpu_both() {
  local which lib
  for which in pip system; do
    if [ "$which" = pip ]; then lib="$pip_cudnn/libcudnn.so.9"; else lib=/usr/lib/x86_64-linux-gnu/libcudnn.so.9; fi
    [ -f "$lib" ] || continue
    CUDNN_RS_CUDNN_PATH=$lib TAIL=3 run "rust_gpu_$which" "$1" .carry/bin/test_gpu_rows --ignored --test-threads 1
  done
}
# The demo, the Rust GPU tests (pip cuDNN) and their memcheck subset, pytest on the GPU,
# interop: the GPU tests of the `kernel` and `random` modes.
gpu_tests() {
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run rust_gpu_pip 150 .carry/bin/test_gpu_rows --ignored --test-threads 1
  memcheck_subset 150
  TAIL=6 run pytest_gpu 300 python3 -m pytest tests/python -q -rs -x -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=3 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
}
case "${1:-tests}" in
tests)
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run rust_gpu_pip 150 .carry/bin/test_gpu_rows --ignored --test-threads 1
  TAIL=6 run pytest_gpu 330 python3 -m pytest tests/python -q -rs -x -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=6 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
  memcheck_subset 150
  lib=/usr/lib/x86_64-linux-gnu/libcudnn.so.9
  [ -f "$lib" ] && CUDNN_RS_CUDNN_PATH=$lib TAIL=4 run rust_gpu_system 120 .carry/bin/test_gpu_rows --ignored --test-threads 1
  ;;
bench)
  TAIL=14 run broad 330 python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch real --max-minutes 4.5
  TAIL=14 run train 240 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes 3.2
  ;;
bench2)  # the anchor suite, the training steps and the broad suite in one call
  TAIL=12 run perf 150 python3 bench/perf.py --csv "$out/perf.csv"
  TAIL=14 run train 250 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes 3.6 --steps 6 --warmup 2
  TAIL=14 run broad 190 python3 bench/broad.py --csv "$out/broad.csv" --md "$out/broad.md" --batch real --max-minutes 2.6
  ;;
f64)  # the depthwise kernel's f64 entry points: its tests (every dtype, then f64 with
     # CUDNN_RS_DIRECT=all), layers drawn at random in f64 (RANDOM_SEED, RANDOM_ROWS)
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  TAIL=8 run pytest_direct 200 python3 -m pytest tests/python/test_direct_kernel.py -q -rs -p no:cacheprovider -k "${DIRECT_K:-not again_with_direct_all}"
  [ -n "${DIRECT_ALL:-}" ] && CUDNN_RS_DIRECT=all TAIL=4 run pytest_direct_all_f64 100 python3 -m pytest tests/python/test_direct_kernel.py -q -rs -p no:cacheprovider -k "float64 and default_choice"
  abs_out=$(cd "$out" && pwd)
  TAIL=24 run random_f64 120 bash -c "cd bench && python3 random_layers.py --configs f64 --csv $abs_out/random_f64.csv --seed ${RANDOM_SEED:-21} --rows ${RANDOM_ROWS:-50} --max-minutes ${RANDOM_MINUTES:-1.5}"
  ;;
background)  # the measured tier's background builds: bench/rtc_probe.py (with and without
            # them), their tests and the measured-tier tests of test_direct_kernel.py,
            # the first sights and the training steps of PROBE_VARIANTS (efficientnet_b0
            # in half precision NCHW by default)
  variants=${PROBE_VARIANTS:-efficientnet_b0:bf16:nchw,efficientnet_b0:f16:nchw}
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  if [ "${BACKGROUND_PROBE:-1}" = 1 ]; then  # BACKGROUND_PROBE=0: without the probe
    TAIL=30 run rtc_probe 150 python3 bench/rtc_probe.py
    CUDNN_RS_BACKGROUND=0 TAIL=8 run rtc_probe_off 100 python3 bench/rtc_probe.py --ours-only
  fi
  TAIL=8 run pytest_background 150 python3 -m pytest tests/python/test_direct_kernel.py -q -rs -p no:cacheprovider -k "measured or background"
  for lib in "$pip_cudnn/libcudnn.so.9" /usr/lib/x86_64-linux-gnu/libcudnn.so.9; do
    [ -f "$lib" ] && [ -x .carry/bin/test_gpu_rows ] && CUDNN_RS_CUDNN_PATH=$lib TAIL=3 \
      run "rust_background_$(basename "$(dirname "$(dirname "$lib")")")" 100 .carry/bin/test_gpu_rows --ignored background_build
  done
  TAIL=30 run first_sights 150 python3 bench/train_probe.py --first --variants "$variants" --top 10
  models=$(echo "$variants" | tr ',' '\n' | cut -d: -f1 | sort -u | paste -sd, -)
  pairs=$(echo "$variants" | tr ',' '\n' | cut -d: -f2- | sort -u | paste -sd, -)
  if [ "${BACKGROUND_LEAN:-0}" != 1 ]; then  # BACKGROUND_LEAN=1: up to the first sights
    TAIL=30 run train 150 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes "${TRAIN_MINUTES:-1.8}" --steps 12 --warmup 2 --models "$models" --variants "$pairs"
    TAIL=6 run pytest_kernel_default "${PYTEST_LIMIT:-120}" python3 -m pytest tests/python/test_direct_kernel.py tests/python/test_default_choice.py -q -rs -x -p no:cacheprovider -k "not again_with_direct_all"
  fi
  ;;
verify)
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  rust_gpu_both 120
  memcheck_subset 240
  TAIL=5 run pytest_gpu 150 python3 -m pytest tests/python -q -rs -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=3 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
  TAIL=16 run host_overhead 60 python3 bench/host_overhead.py 3000
  TAIL=14 run train 200 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes 2.4
  ;;
pool)  # why the one-call API's GPU time is over the explicit path's: this build, then
       # (where .carry/alt/ holds one) another's
  TAIL=40 run pool_probe "${POOL_LIMIT:-200}" bash -c 'cd bench && python3 pool_probe.py'
  if ls .carry/alt/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-deps --no-index --target /tmp/site_alt .carry/alt/*.whl || exit 3
    TAIL=40 PYTHONPATH=/tmp/site_alt run pool_probe_alt "${POOL_LIMIT:-200}" bash -c 'cd bench && python3 pool_probe.py'
  fi
  ;;
onecallstep)  # the one-call API in training steps, split (see the usage above)
  overhead_both
  TAIL=8 run host_far 60 python3 bench/host_overhead.py 2000 "grad_outputs"
  for model in ${STEP_MODELS:-resnet50 mobilenet_v3_large}; do
    TAIL=28 run "step_probe_$model" 200 bash -c "cd bench && python3 onecall_step_probe.py --model $model --variant ${STEP_VARIANT:-f16:cl} --steps 10 --parts --alone 10"
    CUDNN_RS_GRAPHS=0 TAIL=10 run "step_probe_${model}_no_graphs" 150 bash -c "cd bench && python3 onecall_step_probe.py --model $model --variant ${STEP_VARIANT:-f16:cl} --steps 10"
  done
  ;;
hostab)  # host cost per call on new addresses, this build against .carry/old/'s wheel in
         # alternating processes (HOST_LOOPS: host_overhead.py's filter), then the
         # replay's tests: the Rust GPU tests (pip cuDNN; .carry/new/, rows/ or bin/;
         # RUST_FILTER) and the capture and one-call tests of pytest on the GPU
  overhead_both
  python3 -m pip install -q --upgrade --no-deps --no-index --target /tmp/site_old .carry/old/*.whl || exit 3
  for round in 1 2; do
    TAIL=6 run "host_new_$round" 60 python3 bench/host_overhead.py 2000 "${HOST_LOOPS:-grad_outputs}"
    PYTHONPATH=/tmp/site_old TAIL=6 run "host_old_$round" 60 python3 bench/host_overhead.py 2000 "${HOST_LOOPS:-grad_outputs}"
  done
  tests=$(ls .carry/new/test_gpu_rows .carry/rows/test_gpu_rows .carry/bin/test_gpu_rows 2>/dev/null | head -n 1)
  [ -n "$tests" ] && CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run rust_gpu_pip 200 "$tests" --ignored --test-threads 1 ${RUST_FILTER:-}
  TAIL=6 run pytest_capture 150 python3 -m pytest tests/python -q -rs -p no:cacheprovider -k "captured or one_call or pool or replay or counts"
  ;;
probe)
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  TAIL=200 run train_probe 420 python3 bench/train_probe.py ${PROBE_ARGS:-}
  ;;
final)  # one call: the GPU tests on the pip cuDNN, then training steps with 12 rounds
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run rust_gpu_pip 150 .carry/bin/test_gpu_rows --ignored --test-threads 1
  TAIL=6 run pytest_gpu 200 python3 -m pytest tests/python -q -rs -x -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=6 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
  memcheck_subset 100
  TAIL=40 run train 330 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes 4.8 --steps 12 --warmup 2
  ;;
suites)  # the anchor suite and the broad suite in one call
  TAIL=12 run perf 170 python3 bench/perf.py --csv "$out/perf.csv"
  TAIL=16 run broad 330 python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch real --max-minutes 4.6
  ;;
broad)  # the broad suite, then our configurations beside the frontend autotune's
  TAIL=16 run broad 330 python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch real --max-minutes 4.6
  TAIL=80 run candidates 150 bash -c 'cd bench && python3 candidates.py --rows dil2_3x3_c256_28:tf32 3d_3x3x3_c64_16x56:f16'
  ;;
suite)  # the broad suite alone (BROAD_BATCH, BROAD_MINUTES, BROAD_LIMIT), for a call's
       # last minutes of device time
  TAIL=40 run broad "${BROAD_LIMIT:-330}" python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch "${BROAD_BATCH:-real}" --max-minutes "${BROAD_MINUTES:-4.3}"
  ;;
check)  # the GPU tests (pip cuDNN), then the broad suite
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run rust_gpu_pip 150 .carry/bin/test_gpu_rows --ignored --test-threads 1
  TAIL=6 run pytest_gpu 200 python3 -m pytest tests/python -q -rs -x -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=6 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
  memcheck_subset 100
  TAIL=12 run broad "${BROAD_LIMIT:-200}" python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch "${BROAD_BATCH:-real}" --max-minutes "${BROAD_MINUTES:-3}"
  ;;
survey)  # the GPU tests (pip cuDNN), the broad suite's batch-1 rows, the layer zoo
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run rust_gpu_pip 150 .carry/bin/test_gpu_rows --ignored --test-threads 1
  TAIL=6 run pytest_gpu 200 python3 -m pytest tests/python -q -rs -x -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=6 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
  TAIL=12 run broad 180 python3 bench/broad.py --csv "$out/broad.csv" --md "$out/broad.md" --batch 1 --max-minutes "${BROAD_MINUTES:-2.4}"
  TAIL=60 run zoo 220 bash -c "cd bench && python3 zoo.py --csv $out/zoo.csv --max-minutes ${ZOO_MINUTES:-2.8} ${ZOO_ARGS:-}"
  ;;
first)  # where the measured tier's first sights spend their time, per configuration
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  TAIL=6 run pytest_default 150 python3 -m pytest tests/python/test_default_choice.py -q -rs -x -p no:cacheprovider
  TAIL=8 run first_sight "${FIRST_LIMIT:-300}" env CUDNN_RS_FIND_TRACE=1 bash -c \
    "cd bench && python3 first_sight.py --csv $out/first_sight.csv --max-minutes ${FIRST_MINUTES:-4} ${FIRST_ARGS:-} 2>$out/find_trace.txt"
  gzip -f "$out/find_trace.txt"
  [ -n "${ZOO_ARGS:-}" ] && TAIL=20 run zoo 150 bash -c "cd bench && python3 zoo.py --csv $out/zoo.csv --max-minutes ${ZOO_MINUTES:-1.5} $ZOO_ARGS"
  [ -n "${BROAD_MINUTES:-}" ] && TAIL=14 run broad "${BROAD_LIMIT:-330}" python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" \
    --md "$out/broad.md" --batch "${BROAD_BATCH:-real}" --max-minutes "$BROAD_MINUTES"
  ;;
closing)  # the grouped layers' first sights with their trace, the broad suite at both
         # batches, then (with ZOO_ARGS) the layer zoo
  abs_out=$(cd "$out" && pwd)
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  TAIL=8 run first_sight "${FIRST_LIMIT:-90}" env CUDNN_RS_FIND_TRACE=1 bash -c \
    "cd bench && python3 first_sight.py --csv $abs_out/first_sight.csv --max-minutes ${FIRST_MINUTES:-1} --layers ${FIRST_LAYERS:-grp32} --batch ${FIRST_BATCH:-real} 2>$abs_out/find_trace.txt"
  gzip -f "$out/find_trace.txt"
  TAIL=12 run broad 210 python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch real --max-minutes 3.1
  TAIL=12 run broad1 150 python3 bench/broad.py --csv "$out/broad1.csv" --md "$out/broad1.md" --batch 1 --max-minutes 2.2
  [ -n "${ZOO_ARGS:-}" ] && TAIL=24 run zoo "${ZOO_LIMIT:-150}" bash -c "cd bench && python3 zoo.py --csv $abs_out/zoo.csv --max-minutes ${ZOO_MINUTES:-2} $ZOO_ARGS"
  ;;
rust)  # the Rust GPU tests on both cuDNN builds, memcheck on its subset
  rust_gpu_both 150
  memcheck_subset 200
  ;;
pytest)  # pytest on the GPU and the interop tests
  TAIL=6 run pytest_gpu 330 python3 -m pytest tests/python -q -rs -x -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=3 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
  ;;
onecalltrain)  # the one-call Function in training steps (see the usage above)
  for spelling in bound contract; do
    TAIL=14 run "train_onecall_$spelling" 280 python3 bench/train.py \
      --csv "$out/train_onecall_$spelling.csv" --md "$out/train_onecall_$spelling.md" \
      --max-minutes 3.5 --steps 12 --warmup 2 --settle-steps 1 --one-call \
      --one-call-spelling "$spelling" \
      --models "${ONECALL_MODELS:-resnet50,mobilenet_v3_large}" \
      --variants "${ONECALL_VARIANTS:-f16:cl,bf16:nchw,f32:nchw}"
  done
  ;;
train)  # the training steps alone (TRAIN_MINUTES, TRAIN_LIMIT; TRAIN_ARGS: more arguments,
        # e.g. "--models more --variants f32:nchw,f16:cl")
  TAIL=40 run train "${TRAIN_LIMIT:-300}" python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes "${TRAIN_MINUTES:-3.8}" --steps 12 --warmup 2 ${TRAIN_ARGS:-}
  ;;
measure)  # the broad suite at both batches, then the training steps
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  TAIL=12 run broad 200 python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch real --max-minutes 3
  TAIL=12 run broad1 150 python3 bench/broad.py --csv "$out/broad1.csv" --md "$out/broad1.md" --batch 1 --max-minutes 2.2
  TAIL=40 run train 270 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes "${TRAIN_MINUTES:-3.8}" --steps 12 --warmup 2
  ;;
look)  # the broad suite, then each dgrad problem of two training variants timed alone
  TAIL=16 run broad 330 python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch real --max-minutes 4.4
  TAIL=120 run train_probe 220 python3 bench/train_probe.py --layers --steps 5 --top 12 \
    --variants "${PROBE_VARIANTS:-mobilenet_v3_large:f32:cl,resnet50:f16:cl}"
  ;;
spy)  # where the host time of the dgrad calls goes in a training step
  python3 -m pip install -q --no-deps --no-index --target /tmp/spy .carry/tools/py_spy*.whl || exit 3
  variant=${SPY_VARIANT:-resnet50:f16:nchw}
  for be in torch array; do
    # py-spy runs the workload as its child (a parent may trace its child).
    TAIL=3 run "spy_$be" 150 /tmp/spy/bin/py-spy record --native --rate 400 --format raw \
      -o "$out/spy_$be.txt" -- python3 bench/train_probe.py --variants "$variant" --spin "$be" --seconds 20
    python3 bench/spy_report.py "$out/spy_$be.txt" --top 45 >>"$out/spy_$be.log" 2>&1
    gzip -f "$out/spy_$be.txt"
  done
  TAIL=80 run train_probe 200 python3 bench/train_probe.py --variants "$variant" --profile --steps 9
  TAIL=16 run host_overhead 60 python3 bench/host_overhead.py 3000
  ;;
hostspy)  # where conv_input_grad's host time goes, tiny problem (the GPU work is a few us)
  python3 -m pip install -q --no-deps --no-index --target /tmp/spy .carry/tools/py_spy*.whl || exit 3
  [ "${SPY_ONLY:-0}" = 1 ] || TAIL=22 run host_overhead 90 python3 bench/host_overhead.py 3000
  # .carry/spy/: a wheel built with symbols (CARGO_PROFILE_RELEASE_STRIP=none), if staged.
  spy_path=$PYTHONPATH
  if ls .carry/spy/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-deps --no-index --target /tmp/spysite .carry/spy/*.whl && spy_path=/tmp/spysite
  fi
  IFS=';' read -ra loops <<<"${SPY_LOOPS:-conv_input_grad (torch;conv_input_grad, 8}"
  for loop in "${loops[@]}"; do
    name=spy_$(echo "$loop" | tr -c 'a-z0-9' '_' | cut -c1-24)
    TAIL=3 PYTHONPATH=$spy_path run "$name" 120 /tmp/spy/bin/py-spy record --native --rate "${SPY_RATE:-250}" --format raw \
      -o "$out/$name.txt" -- python3 bench/host_overhead.py "${SPY_CALLS:-400000}" "$loop"
    python3 bench/spy_report.py "$out/$name.txt" --under "${SPY_UNDER:-input_grad}" --top 70 >>"$out/$name.log" 2>&1
    gzip -f "$out/$name.txt"
  done
  ;;
all)
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  TAIL=6 run pytest_gpu 150 python3 -m pytest tests/python -q -rs -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  TAIL=14 run train 200 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes 2.6
  TAIL=14 run broad 230 python3 bench/broad.py --csv "$out/broad.csv" --png "$out/broad.png" --md "$out/broad.md" --batch real --max-minutes 3.3
  ;;
kernel)  # the depthwise kernel of our own: the GPU tests (Rust with memcheck, pytest,
         # interop), bench/dw_sweep.py, the zoo's ten models with NCHW depthwise layers,
         # bench/direct_probe.py
  gpu_tests
  TAIL=40 run dw_sweep 150 bash -c "cd bench && python3 dw_sweep.py"
  abs_out=$(cd "$out" && pwd)
  TAIL=16 run zoo_dw 200 bash -c "cd bench && python3 zoo.py --models efficientnet_b0,mobilenet_v2,shufflenet_v2_x1_0,mnasnet1_0,convnext_small,efficientnet_v2_s,mobilenet_v3_small,lraspp_mobilenet_v3_large,mvit_v2_s,s3d --configs ${ZOO_CONFIGS:-f32:nchw,tf32:nchw,f16:nchw,bf16:nchw} --csv $abs_out/zoo_dw.csv --max-minutes ${ZOO_MINUTES:-3} --top 12"
  [ "${PROBE:-1}" = 1 ] && TAIL=4 run probe 100 bash -c "cd bench && python3 direct_probe.py"
  ;;
random)  # the GPU tests (Rust with memcheck, pytest, interop), bench/random_layers.py
         # (RANDOM_ARGS, RANDOM_MINUTES), then the training steps (TRAIN_MINUTES; 0: not)
  gpu_tests
  abs_out=$(cd "$out" && pwd)
  TAIL=60 run random_layers 400 bash -c "cd bench && python3 random_layers.py --csv $abs_out/random_layers.csv --max-minutes ${RANDOM_MINUTES:-3} ${RANDOM_ARGS:-}"
  [ "${TRAIN_MINUTES:-2}" != 0 ] && TAIL=30 run train 240 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes "${TRAIN_MINUTES:-2}" --steps 8 --warmup 2
  ;;
sight)  # the measured tier's first sights: cudnn_rs.torch and the array API on the GPU
        # (test_gpu_arrays.py), bench/first_sight.py at the realistic batch with its
        # trace, then bench/random_layers.py --measured (RANDOM_ARGS, RANDOM_MINUTES)
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  TAIL=6 run pytest_arrays 150 python3 -m pytest tests/python/test_gpu_arrays.py -q -rs -p no:cacheprovider
  TAIL=8 run first_sight 260 env CUDNN_RS_FIND_TRACE=1 bash -c \
    "cd bench && python3 first_sight.py --csv $out/first_sight.csv --batch real --max-minutes ${FIRST_MINUTES:-3.5} 2>$out/find_trace.txt"
  gzip -f "$out/find_trace.txt"
  abs_out=$(cd "$out" && pwd)
  TAIL=30 run random_measured 200 bash -c "cd bench && python3 random_layers.py --measured --csv $abs_out/random_measured.csv --max-minutes ${RANDOM_MINUTES:-2.6} ${RANDOM_ARGS:---seed 2 --rows 60}"
  ;;
wide)  # the GPU tests (Rust with memcheck, also on the eight-output entry points; pytest;
      # interop), bench/dw_sweep.py on the stride-1 rows (NCHW), then the measured tier on
      # random layers with where each find's time went (RANDOM_ARGS, RANDOM_MINUTES)
  gpu_tests
  CUDNN_RS_DIRECT_TX=8 memcheck_subset 120 memcheck_x8
  only="3x3 s1,5x5 s1,7x7 s1,3x3 s1 N1,7x7 s1 56,7x7 s1 28,7x7 s1 7,7x7 s1 N1,3x3 s1 112,3x3 s1 56,5x5 s1 14"
  TAIL=36 run dw_sweep 150 bash -c "cd bench && python3 dw_sweep.py --layout nchw --only '$only'"
  abs_out=$(cd "$out" && pwd)
  TAIL=12 run random_measured 150 bash -c "cd bench && python3 random_layers.py --measured --csv $abs_out/random_measured.csv --max-minutes ${RANDOM_MINUTES:-1.8} ${RANDOM_ARGS:---seed 2 --rows 60}"
  ;;
unseen)  # layers drawn at random (new seeds) in both tiers, the measured tier's finds
         # traced; then PYTEST_K's pytest subset and BROAD_LAYERS' broad rows
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  abs_out=$(cd "$out" && pwd)
  TAIL=24 run random_layers 200 bash -c "cd bench && python3 random_layers.py --csv $abs_out/random_layers.csv --seed ${RANDOM_SEED:-4} --rows ${RANDOM_ROWS:-80} --max-minutes ${RANDOM_MINUTES:-2.5} ${RANDOM_ARGS:-}"
  TAIL=24 run random_measured 220 env CUDNN_RS_FIND_TRACE=1 bash -c \
    "cd bench && python3 random_layers.py --measured --csv $abs_out/random_measured.csv --seed ${MEASURED_SEED:-5} --rows ${MEASURED_ROWS:-60} --max-minutes ${MEASURED_MINUTES:-2.8} ${MEASURED_ARGS:-} 2>$abs_out/random_trace.txt"
  gzip -f "$out/random_trace.txt"
  [ -n "${PYTEST_K:-}" ] && TAIL=6 run pytest_subset 150 python3 -m pytest tests/python -q -rs -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "$PYTEST_K"
  if [ -n "${BROAD_LAYERS:-}" ]; then
    TAIL=20 run broad_some 200 bash -c "cd bench && python3 broad.py --layers $BROAD_LAYERS --csv $abs_out/broad_some.csv --max-minutes 2.5"
  fi
  if [ -n "${TRAIN_MINUTES:-}" ]; then
    TAIL=40 run train 240 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes "$TRAIN_MINUTES" --steps 10 --warmup 2
  fi
  ;;
models)  # the zoo's models with NCHW depthwise layers (ZOO_CONFIGS, ZOO_MINUTES), then the
        # training steps (TRAIN_MINUTES)
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  abs_out=$(cd "$out" && pwd)
  TAIL=16 run zoo_dw 220 bash -c "cd bench && python3 zoo.py --models efficientnet_b0,mobilenet_v2,shufflenet_v2_x1_0,mnasnet1_0,convnext_small,efficientnet_v2_s,mobilenet_v3_small,lraspp_mobilenet_v3_large,mvit_v2_s,s3d --configs ${ZOO_CONFIGS:-f32:nchw,f16:nchw,bf16:nchw} --csv $abs_out/zoo_dw.csv --max-minutes ${ZOO_MINUTES:-2.6} --top 12"
  TAIL=40 run train 240 python3 bench/train.py --csv "$out/train.csv" --md "$out/train.md" --max-minutes "${TRAIN_MINUTES:-3}" --steps 10 --warmup 2
  ;;
tx)  # the stride-1 square filters' four- and eight-output entry points against each other
    # and cuDNN (bench/dw_sweep.py, NCHW), then the kernel's tests on the eight-output ones
  only="3x3 s1,5x5 s1,7x7 s1,3x3 s1 N1,7x7 s1 56,7x7 s1 28,7x7 s1 7,7x7 s1 N1,3x3 s1 112,3x3 s1 56,5x5 s1 14"
  for tx in 4 8; do
    CUDNN_RS_DIRECT=all CUDNN_RS_DIRECT_TX=$tx TAIL=36 run "dw_tx$tx" 150 bash -c "cd bench && python3 dw_sweep.py --layout nchw --only '$only'"
  done
  CUDNN_RS_DIRECT=0 TAIL=36 run dw_cudnn 200 bash -c "cd bench && python3 dw_sweep.py --layout nchw --only '$only'"
  CUDNN_RS_DIRECT_TX=8 TAIL=4 run pytest_tx8 150 python3 -m pytest tests/python/test_direct_kernel.py -q -rs -p no:cacheprovider
  ;;
nhwc)  # the channels-last entry points: their tests, then against cuDNN on stride-1 squares
      # (bench/dw_sweep.py, channels last)
  TAIL=6 run pytest_nhwc 200 python3 -m pytest tests/python/test_direct_kernel.py -q -rs -p no:cacheprovider -k "cl or channels_last"
  only="3x3 s1,5x5 s1,7x7 s1,3x3 s1 N1,7x7 s1 56,7x7 s1 28,7x7 s1 7,7x7 s1 N1,3x3 s1 112,3x3 s1 56,5x5 s1 14"
  TAIL=36 run dw_cl 120 bash -c "cd bench && python3 dw_sweep.py --layout cl --only '$only'"
  CUDNN_RS_DIRECT=0 TAIL=36 run dw_cl_cudnn 200 bash -c "cd bench && python3 dw_sweep.py --layout cl --only '$only'"
  ;;
clmodels)  # the zoo's depthwise models in channels last (the NHWC entry points), then the
          # measured tier's first sights of the grouped layers with their trace
  abs_out=$(cd "$out" && pwd)
  TAIL=16 run zoo_dw_cl 260 bash -c "cd bench && python3 zoo.py --models efficientnet_b0,mobilenet_v2,shufflenet_v2_x1_0,mnasnet1_0,convnext_small,efficientnet_v2_s,mobilenet_v3_small,lraspp_mobilenet_v3_large --configs f32:cl,f16:cl,bf16:cl --csv $abs_out/zoo_dw_cl.csv --max-minutes 3.2 --top 12"
  TAIL=8 run first_sight 120 env CUDNN_RS_FIND_TRACE=1 bash -c \
    "cd bench && python3 first_sight.py --csv $abs_out/first_sight.csv --max-minutes 1.5 --layers grp32 --batch real 2>$abs_out/find_trace.txt"
  gzip -f "$out/find_trace.txt"
  ;;
compare)  # this build against another in .carry/alt/ (a branch's wheel, its test_gpu_rows,
          # and its changed test files in .carry/alt/tests/): bench/dw_sweep.py (DW_ARGS)
          # with each, pytest -k PYTEST_K with this one, then the other's Rust GPU tests
          # and its pytest (ALT_K), with its test files over this copy's
  TAIL=40 run dw_sweep 200 bash -c "cd bench && python3 dw_sweep.py ${DW_ARGS:-}"
  [ -n "${PYTEST_K:-}" ] && TAIL=6 run pytest_gpu 200 python3 -m pytest tests/python -q -rs -p no:cacheprovider -k "$PYTEST_K"
  rm -rf /tmp/site_alt
  python3 -m pip install -q --no-deps --no-index --target /tmp/site_alt .carry/alt/*.whl || exit 3
  [ -d .carry/alt/tests ] && cp .carry/alt/tests/*.py tests/python/
  PYTHONPATH=/tmp/site_alt TAIL=40 run alt_dw_sweep 200 bash -c "cd bench && python3 dw_sweep.py ${DW_ARGS:-}"
  CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=4 run alt_rust_gpu 150 .carry/alt/test_gpu_rows --ignored --test-threads 1
  PYTHONPATH=/tmp/site_alt TAIL=6 run alt_pytest 300 python3 -m pytest tests/python -q -rs -p no:cacheprovider -k "${ALT_K:-direct or default}"
  ;;
sights)  # first calls, traced: efficientnet_b0's first sights in the measured tier
        # (PROBE_VARIANTS), then layers drawn at random (RANDOM_SEED) in the default tier and
        # the same layers in the measured tier; each trace in its own file
  variants=${PROBE_VARIANTS:-efficientnet_b0:bf16:nchw,efficientnet_b0:f16:nchw}
  abs_out=$(cd "$out" && pwd)
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  TAIL=30 run first_sights 150 env CUDNN_RS_FIND_TRACE=1 bash -c \
    "python3 bench/train_probe.py --first --variants $variants --top 10 2>$abs_out/sights_trace.txt"
  TAIL=24 run random_layers 200 env CUDNN_RS_FIND_TRACE=1 bash -c \
    "cd bench && python3 random_layers.py --csv $abs_out/random_layers.csv --seed ${RANDOM_SEED:-41} --rows ${RANDOM_ROWS:-80} --max-minutes ${RANDOM_MINUTES:-2.5} 2>$abs_out/random_default_trace.txt"
  TAIL=24 run random_measured 220 env CUDNN_RS_FIND_TRACE=1 bash -c \
    "cd bench && python3 random_layers.py --measured --csv $abs_out/random_measured.csv --seed ${RANDOM_SEED:-41} --rows ${MEASURED_ROWS:-60} --max-minutes ${MEASURED_MINUTES:-2.8} 2>$abs_out/random_trace.txt"
  gzip -f "$out"/*trace.txt
  # The device tool returns a limited number of files (eight, by name, on 2026-12-07):
  # the CSVs and traces go back as one archive whose name sorts first.
  ( cd "$out" && tar -czf bundle_sights.tar.gz ./*trace.txt.gz ./*.csv && rm -f ./*trace.txt.gz ./*.csv )
  ;;
held)  # the measured tier with its timings held (the default) and not (CUDNN_RS_HOLD=0),
      # traced, in the order HELD_ORDER (1: held, 0: not; by default 0 1 1 0, so that a
      # drift of the machine hits both alike), each round layers drawn at random
      # (RANDOM_SEED, MEASURED_ROWS, MEASURED_MINUTES) and efficientnet_b0's first sights
      # (PROBE_VARIANTS); then the measured tier's tests unless HELD_TESTS=0
  variants=${PROBE_VARIANTS:-efficientnet_b0:f16:nchw}
  abs_out=$(cd "$out" && pwd)
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  round=0
  for hold in ${HELD_ORDER:-0 1 1 0}; do
    round=$((round + 1))
    tag="hold${hold}_r$round"
    TAIL=3 run "random_measured_$tag" 200 env CUDNN_RS_HOLD=$hold CUDNN_RS_FIND_TRACE=1 bash -c \
      "cd bench && python3 random_layers.py --measured --csv $abs_out/random_measured_$tag.csv --seed ${RANDOM_SEED:-43} --rows ${MEASURED_ROWS:-60} --max-minutes ${MEASURED_MINUTES:-2.0} 2>$abs_out/random_${tag}_trace.txt"
    TAIL=3 run "first_sights_$tag" 120 env CUDNN_RS_HOLD=$hold CUDNN_RS_FIND_TRACE=1 bash -c \
      "python3 bench/train_probe.py --first --variants $variants --top 10 >$abs_out/first_sights_$tag.txt 2>$abs_out/sights_${tag}_trace.txt"
  done
  gzip -f "$out"/*trace.txt
  ( cd "$out" && tar -czf bundle_held.tar.gz ./*trace.txt.gz ./*.csv ./first_sights_hold*.txt ./*.log && rm -f ./*trace.txt.gz ./*.csv ./first_sights_hold*.txt ./random_measured_hold*.log ./first_sights_hold*.log )
  [ "${HELD_TESTS:-1}" = 0 ] && exit $fail
  # The timings done: the Rust GPU tests beside pytest's (memcheck: `onecall`).
  ( CUDNN_RS_CUDNN_PATH="$pip_cudnn/libcudnn.so.9" TAIL=3 run rust_gpu_pip 120 .carry/bin/test_gpu_rows --ignored --test-threads 1
    ) >"$out/rust_chain.txt" 2>&1 &
  rust_chain=$!
  TAIL=4 run pytest_measured 150 python3 -m pytest tests/python -q -rs -p no:cacheprovider -k "measured or find or benchmark"
  wait "$rust_chain"
  cat "$out/rust_chain.txt"
  grep -q 'rc [1-9]' "$out/rust_chain.txt" && fail=1
  ;;
ab)  # the measured tier of this build (1) against the wheel in .carry/alt/ (0), traced, in
    # the order AB_ORDER (by default 1 0 0 1, so that a drift of the machine hits both
    # alike), each round layers drawn at random (RANDOM_SEED, MEASURED_ROWS,
    # MEASURED_MINUTES) and efficientnet_b0's first sights (PROBE_VARIANTS)
  python3 -m pip install -q --no-deps --no-index --target /tmp/site_alt .carry/alt/*.whl || exit 3
  variants=${PROBE_VARIANTS:-efficientnet_b0:f16:nchw}
  abs_out=$(cd "$out" && pwd)
  TAIL=10 run wheel_demo 60 bash -c wheel_check
  round=0
  for which in ${AB_ORDER:-1 0 0 1}; do
    round=$((round + 1))
    tag="ab${which}_r$round"
    site=/tmp/site
    [ "$which" = 0 ] && site=/tmp/site_alt
    TAIL=3 PYTHONPATH=$site run "random_measured_$tag" 200 env CUDNN_RS_FIND_TRACE=1 bash -c \
      "cd bench && python3 random_layers.py --measured --csv $abs_out/random_measured_$tag.csv --seed ${RANDOM_SEED:-43} --rows ${MEASURED_ROWS:-60} --max-minutes ${MEASURED_MINUTES:-2.0} 2>$abs_out/random_${tag}_trace.txt"
    TAIL=3 PYTHONPATH=$site run "first_sights_$tag" 120 env CUDNN_RS_FIND_TRACE=1 bash -c \
      "python3 bench/train_probe.py --first --variants $variants --top 10 >$abs_out/first_sights_$tag.txt 2>$abs_out/sights_${tag}_trace.txt"
  done
  gzip -f "$out"/*trace.txt
  ( cd "$out" && tar -czf bundle_ab.tar.gz ./*trace.txt.gz ./*.csv ./first_sights_ab*.txt ./*.log && rm -f ./*trace.txt.gz ./*.csv ./first_sights_ab*.txt ./random_measured_ab*.log ./first_sights_ab*.log )
  ;;
handles)  # a new Handle() every call (see the usage above)
  python3 -m pip install -q --no-deps --no-index --target /tmp/site_old .carry/old/*.whl || exit 3
  round=0
  for which in ${HANDLE_ORDER:-new old new old}; do
    round=$((round + 1))
    site=/tmp/site
    [ "$which" = old ] && site=/tmp/site_old
    for mode in ${HANDLE_MODES:-plain measured}; do
      flag=""
      [ "$mode" = measured ] && flag=--measured
      TAIL=13 PYTHONPATH=$site run "handle_probe_${mode}_${which}_r$round" 150 bash -c "cd bench && python3 handle_probe.py $flag $which"
    done
  done
  TAIL=4 run pytest_handles 120 python3 -m pytest tests/python -q -rs -p no:cacheprovider -k "handle_made or measuring_handle or handles"
  ;;
onecall)  # the GPU tests when one call may be all there is: the Rust chain runs beside
         # pytest (one GPU, 16 cores), each with its own limits; the logs tell each rc
  TAIL=12 run wheel_demo 60 bash -c wheel_check
  ( rust_gpu_both 120; memcheck_subset 150 ) >"$out/rust_chain.txt" 2>&1 &
  rust_chain=$!
  TAIL=6 run pytest_gpu 330 python3 -m pytest tests/python -q -rs -p no:cacheprovider --ignore=tests/python/test_gpu_interop.py -k "gpu or default or arrays or readme or driver"
  wait "$rust_chain"
  cat "$out/rust_chain.txt"
  grep -q 'rc [1-9]' "$out/rust_chain.txt" && fail=1
  TAIL=3 run pytest_interop 100 python3 -X faulthandler -m pytest tests/python/test_gpu_interop.py -q -p no:cacheprovider
  TAIL=6 run pytest_background 100 python3 -m pytest tests/python/test_direct_kernel.py -q -rs -p no:cacheprovider -k "measured or background"
  ;;
esac
exit $fail
