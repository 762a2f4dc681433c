#!/usr/bin/env bash
# A quick GPU check of the default choice (on the GPU machine, after bench/gpu_run.sh
# staged .carry/ here): the default-choice tests, the per-family probe beside PyTorch,
# the default-choice sweep of both cuDNN builds, and the GPU tests that run DefaultAlgo on
# every configuration. Logs and CSVs under $OUT. Each step has its own time limit.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 RUST_BACKTRACE=1
python3 -m pip install -q --upgrade --no-deps --no-index --target /tmp/site .carry/wheels/*.whl .carry/fe/*.whl 2>/dev/null \
  || python3 -m pip install -q --upgrade --no-deps --no-index --target /tmp/site .carry/wheels/*.whl || exit 3
export PYTHONPATH=/tmp/site
pip_cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
run() { local name=$1 limit=$2; shift 2; echo "=== $name"; timeout "$limit" "$@" >"$out/$name.log" 2>&1; echo "    rc $?"; tail -n "${TAIL:-8}" "$out/$name.log" | sed 's/^/    /'; }
TAIL=12 run pytest_default 240 python3 -m pytest tests/python/test_default_choice.py -q -rs -p no:cacheprovider -x
TAIL=45 run probe 300 python3 bench/default_probe.py
for which in pip system; do
  if [ "$which" = pip ]; then lib="$pip_cudnn/libcudnn.so.9"; else lib=/usr/lib/x86_64-linux-gnu/libcudnn.so.9; fi
  [ -f "$lib" ] || continue
  CUDNN_RS_CUDNN_PATH=$lib CUDNN_RS_SWEEP=default TAIL=3 run "sweep_default_$which" 200 .carry/bin/gpu_sweep "$out/sweep_default_$which.csv"
done
TAIL=6 run pytest_gpu_default 300 python3 -m pytest tests/python/test_gpu.py -q -p no:cacheprovider -k "alpha_beta or graph_api or one_call"
exit 0
