#!/usr/bin/env bash
# One device call: GPU tests and the first measurements, logs under $OUT (see BENCHMARKS.md).
#   bash benchmarks/device_session.sh [smoke|tests|bench|all]
set -u -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" XLA_PYTHON_CLIENT_PREALLOCATE=false
unset TRITON_INTERPRET
OUT="${OUT:-results}"; mkdir -p "$OUT"
stage="${1:-all}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)" | tee -a "$OUT/device.txt"
if [[ $stage == smoke || $stage == all ]]; then
  timeout 280 python3 benchmarks/smoke_gpu.py 2>&1 | tee "$OUT/smoke.log"
fi
if [[ $stage == tests || $stage == all ]]; then
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_triton_masks.py \
    tests/test_triton_top_k.py tests/test_backend_gpu.py -x --durations=10 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
fi
if [[ $stage == bench ]]; then
  timeout 560 python3 benchmarks/bench.py --out "$OUT" "${@:2}" > "$OUT/bench.log" 2>&1; tail -c 6000 "$OUT/bench.log"
fi
