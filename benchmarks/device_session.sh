#!/usr/bin/env bash
# One device call: the GPU benchmark and GPU tests, logs and CSV under $OUT (see BENCHMARKS.md).
#   bash benchmarks/device_session.sh [smoke|host|tune|profile|bench|wide|bisect|tests|final|resume|pending|fifth|sampler|onelaunch|sixth|topp|toppsweep|topp2|hist|histonly|hmask|warps|eighth|radix|last|ninth|ninthrest|searchtable|tenth|int32|onelaunch2|tenthfinal|tenthrest|eleventh|eleventhrest|knobs|twelfth|thirteenth|eleventhfinal|s12a|s12b|s12c|s12d|s12e|next|s13a|s13b|s13c|s13d|s13e|s13f|s14a|s14b|s14bmain|s14bknobs|s14c|s15a|s15b|s15c|s16a|s16b|s16c|s16d|s17a|s17b|s17c|s17e|s18a|s18b|s18c|s18d|s19a|s19b|s19c|s19d|s19e|s19f|s20a|s20b|s20c|s21a|s21b|s22a|s22c|s23a|s23b|s23c|s23d|s24a|s24b|s24c|s24d|s25a|s25b|s25c|s26a|s26b|s26c|s27a|s27b|s27c|s27d|s27e|s27f|s28a|s28b|s28c|s28d|s28e|s29a|s29b|s29c|s29d|s30a|s30b|s30c|s30d|s30e|s31b|s31c|s32a|s32b|s32c|s32e|s33a|s33b|s33c|s34a|s34b|s35a|s36a|s36b|s36c|s37a|s37b|s38a|s38b|s39a|s39c|s39d|s40b|s40d|s40e|s41a|s41b|s41c|s41d|s42a|s42b|s43a|s43b|s43c|s43d|s43e|s43f|s44a|s44b|s44c|s45a|s45b|s45c|s46a|s46b|s46c|s46d|s46e|s46f|s46g|s47a|s47b|s48a|s49a|s49b|s49c|s49d|s50a|s50b|s50c|s50d|s50e|s50f|s51a|s51b|s52a|s52b|s52c|s52d|s53a|s53b|s53c|s53d|s54a|s54b|s54c|s54d|s54e]
# (bisect: the toggles below, then the tests stage; resume: the tests named by $TESTS (default
# all), then the bench over $BENCH_B; pending: the GPU checks not yet run at the current defaults; fifth: the one-launch paths; sampler: issue 6's GPU tests and bench;
# onelaunch: the one-launch GPU tests and where they stop winning; sixth: the fused samplers by
# default, GPU tests then the sampler bench; topp: the fused top-p sampler, 16 vs 8 pivots;
# topp2: its tests and bench after the four-loads-in-flight change; hist: the histogram band's
# hit rates and knobs, its GPU tests, the sampler bench; histonly: only the hit rates and knobs;
# hmask: masked histograms (QRITA_TOPP_HMASK) against the default, and its GPU test; warps: the
# candidate pass with one warp per program, the fused top-p sampler's warps and tiles; eighth:
# the GPU tests of the masks and top_k at the one-warp candidate pass, then the bench; radix:
# the wide compaction's tiles / warps, then the bench at the radix top-k search; last: the
# session's GPU tests and a short bench)
# The CSVs' commit column: the device's copy of the repository may carry a stale .git, so pass
# the local HEAD in the command: QRITA_COMMIT=$(git rev-parse --short HEAD) here, written into
# the run command as a literal (bench.py prefers it to git).
set -u -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" XLA_PYTHON_CLIENT_PREALLOCATE=false
unset TRITON_INTERPRET
OUT="${OUT:-results}"; mkdir -p "$OUT"
# Triton's compile cache in the (ignored) .triton_cache/ of the repository: it stays on a warm
# machine between calls. What this call compiled (the cache's entries newer than its start)
# comes back as $OUT/triton_cache.tgz, split into 15 MB parts (.0, .1; none when more than two
# would be needed), so the next call can carry it: `bash benchmarks/merge_triton_cache.sh
# <files_at>` here, then carry [".triton_cache"]. GPU tests spend most of their time compiling
# kernel variants otherwise (s40e, s41a: over 150 s each)
export TRITON_CACHE_DIR="$PWD/.triton_cache"; mkdir -p "$TRITON_CACHE_DIR"
CACHE_MARK=$(mktemp); touch "$CACHE_MARK"
pack_cache() {
  local n
  rm -f "$OUT"/triton_cache.tgz*
  find "$TRITON_CACHE_DIR" -mindepth 1 -maxdepth 1 -newer "$CACHE_MARK" -printf '%f\n' \
    > /tmp/qrita_cache_new.txt
  [[ -s /tmp/qrita_cache_new.txt ]] || return 0
  tar czf /tmp/qrita_cache.tgz -C "$TRITON_CACHE_DIR" -T /tmp/qrita_cache_new.txt 2>/dev/null \
    || return 0
  split -b 15000000 -d -a 1 /tmp/qrita_cache.tgz "$OUT/triton_cache.tgz."
  n=$(find "$OUT" -maxdepth 1 -name 'triton_cache.tgz.*' | wc -l)
  if [[ $n -gt 2 ]]; then
    rm -f "$OUT"/triton_cache.tgz.*
  fi
}
# the device tool returns at most 8 files: past 5 result files, they all go into one
# results.tgz (extract it where the call's files land)
pack_results() {
  local n
  n=$(find "$OUT" -type f ! -name 'triton_cache.tgz*' ! -name results.tgz | wc -l)
  if [[ $n -gt 5 ]]; then
    # (the archive is written outside $OUT: tar fails on an archive inside what it reads)
    tar czf /tmp/qrita_results.tgz -C "$OUT" --exclude='triton_cache.tgz*' . 2>/dev/null \
      && find "$OUT" -mindepth 1 ! -name 'triton_cache.tgz*' -delete \
      && mv /tmp/qrita_results.tgz "$OUT/results.tgz"
  fi
}
trap 'pack_cache; pack_results' EXIT
stage="${1:-final}"
# gpu_tests NAME SECONDS NODEID...: the GPU tests named, verbose, into pytest_gpu_<NAME>.log
gpu_tests() {
  local name=$1 seconds=$2; shift 2
  timeout "$seconds" python3 -m pytest -m gpu -p no:cacheprovider -rf --tb=short -v "$@" 2>&1 \
    | tee "$OUT/pytest_gpu_$name.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300 | tail -30
}
# gpu_tests_k NAME SECONDS EXPR: test_backend_gpu.py's tests selected by -k EXPR, quiet, into
# pytest_gpu_<NAME>.log
gpu_tests_k() {
  timeout "$2" python3 -m pytest -p no:cacheprovider -rf --tb=short -q tests/test_backend_gpu.py \
    -k "$3" 2>&1 | tee "$OUT/pytest_gpu_$1.log" | tail -4
}
# cycle_probe SECONDS KIND...: jax_cycle_probe.py's rows for these call kinds
cycle_probe() {
  local seconds=$1; shift
  timeout "$seconds" python3 benchmarks/jax_cycle_probe.py --out "$OUT" --calls "$@" 2>&1 \
    | grep -v -i warn | tail -24
}
# host_table: adapter_overhead.py at B = 8 into adapter_overhead.txt, its host table shown
host_table() {
  timeout 120 python3 benchmarks/adapter_overhead.py --batch 8 2>&1 | grep -v -i warn \
    > "$OUT/adapter_overhead.txt"; grep -A5 "^host" "$OUT/adapter_overhead.txt"
}
# bench_zipf NAME SECONDS BATCHES: masks and top_k, zipf, V = 131072, fp32 and bf16, eager and
# graph, into bench_<NAME>.log and the CSV
bench_zipf() {
  timeout "$2" python3 benchmarks/bench.py --out "$OUT" --ops masks,top_k --vocab 131072 \
    --dtypes float32,bfloat16 --batch "$3" --workloads zipf \
    --scenarios topk50,topk1000,topp0.9,topk100_topp0.9,k50,k1000 --graphs --warmup 5 --rep 25 \
    --check-rows 4 --no-progress > "$OUT/bench_$1.log" 2>&1
  echo "bench exit $?"; tail -c 4500 "$OUT/bench_$1.log"
}
# profile_envs ENV...: B = 1024 fp32 zipf profiles of the main scenarios, once per environment
# setting ("" = the defaults), each into profile_<setting>/ (A/B of a measuring knob)
profile_envs() {
  for env in "$@"; do
    name=$(echo "${env:-default}" | tr '=' '_')
    echo "== env '$env'"
    env $env timeout "${EXTRA_S:-110}" python3 benchmarks/profile_pipeline.py \
      --out "$OUT/profile_$name" --batch 1024 --dtypes float32 --workloads zipf \
      --scenarios topk50,k50,topk1000,k1000,topp0.9,topk100_topp0.9 2>&1 | grep -v Warn \
      | grep zipf | cut -c1-420
  done
}
# profile_knobs WORKLOADS DEFAULT_SCENARIOS KNOB_SCENARIOS ENV...: B = 1024 fp32 profiles, once per
# environment setting ("" = the defaults, with DEFAULT_SCENARIOS; a knob, with KNOB_SCENARIOS),
# each into p_<setting>/ (A/B of measuring knobs; $KNOB_S seconds each, default 90)
# prof NAME SCENARIOS WORKLOADS [ENV...]: a B = 1024 profile (dtypes PROF_DTYPES, default
# float32) of the scenarios with ENV set, into p_NAME/ (KNOB_S seconds at most)
prof() {
  local name=$1 scen=$2 wl=$3; shift 3
  echo "== $name"
  env "$@" timeout "${KNOB_S:-90}" python3 benchmarks/profile_pipeline.py --out "$OUT/p_$name" \
    --batch "${PROF_BATCH:-1024}" --dtypes "${PROF_DTYPES:-float32}" --workloads "$wl" \
    --scenarios "$scen" 2>&1 \
    | grep -v Warn | grep -E "zipf|gaussian" | cut -c1-400
}
# prof_tables PREFIX SCEN WL TABLE...: prof of each launch table (QRITA_LAUNCH_TABLE;
# "default": none) on the same inputs, named PREFIX + the table
prof_tables() {
  local prefix=$1 scen=$2 wl=$3 table; shift 3
  for table in "$@"; do
    prof "${prefix}$(echo "$table" | tr '=,' '__')" "$scen" "$wl" \
      $([[ $table == default ]] || echo "QRITA_LAUNCH_TABLE=$table")
  done
}
# ab_bench SECONDS BATCHES ENV0 ENV1: masks / top_k (topk50, topp0.9, k50; zipf, fp32 and bf16)
# with the settings ENV0, then ENV1 ("VAR=value ..."), into ab_0/ and ab_1/
ab_bench() {
  local seconds=$1 batches=$2 opt; shift 2
  for opt in 0 1; do
    env ${1} timeout "$seconds" python3 benchmarks/bench.py --out "$OUT/ab_$opt" --ops masks,top_k \
      --vocab 131072 --dtypes float32,bfloat16 --batch "$batches" --workloads zipf \
      --scenarios topk50,topp0.9,k50 --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress \
      > "$OUT/bench_ab_$opt.log" 2>&1
    echo "bench settings '${1}' exit $?"; tail -c 2600 "$OUT/bench_ab_$opt.log"
    shift
  done
}
# sample_graphs_ab SECONDS BATCHES: the sampler without, then with its eager graphs
# (QRITA_EAGER_GRAPHS_SAMPLE), into sample_0/ and sample_1/
sample_graphs_ab() {
  for sample_graphs in 0 1; do
    QRITA_EAGER_GRAPHS_SAMPLE=$sample_graphs \
      timeout "$1" python3 benchmarks/bench.py \
      --out "$OUT/sample_$sample_graphs" --ops sample --vocab 131072 --dtypes float32,bfloat16 \
      --batch "$2" --workloads zipf --peers torch_sort --graphs --warmup 10 --rep 50 --check-rows 4 \
      --no-progress > "$OUT/bench_sample_$sample_graphs.log" 2>&1
    echo "sample bench graphs=$sample_graphs exit $?"; tail -c 2000 "$OUT/bench_sample_$sample_graphs.log"
  done
}
profile_knobs() {
  local wl=$1 scen_default=$2 scen_knob=$3 env name scen; shift 3
  for env in "$@"; do
    name=$(echo "${env:-default}" | tr '=' '_')
    scen=$scen_knob; [[ -z $env ]] && scen=$scen_default
    echo "== env '$env'"
    env $env timeout "${KNOB_S:-90}" python3 benchmarks/profile_pipeline.py --out "$OUT/p_$name" \
      --batch 1024 --dtypes float32 --workloads "$wl" --scenarios "$scen" 2>&1 \
      | grep -v Warn | grep -E "zipf|gaussian" | cut -c1-400
  done
}
if [[ $stage == tune || $stage == host ]]; then
  timeout 120 python3 benchmarks/host_overhead.py --out "$OUT" 2>&1 | grep -v Warn | head -70
fi
if [[ $stage == tune ]]; then
  timeout "${TUNE_S:-200}" python3 benchmarks/tune_launch.py --stage "${TUNE_STAGE:-cand}" --out "$OUT" --batch "${TUNE_B:-1,64,1024}" 2>&1 | grep -v Warn | tee "$OUT/tune.log" | tail -90
fi
if [[ $stage == profile || $stage == tune ]]; then
  timeout "${PROFILE_S:-400}" python3 benchmarks/profile_pipeline.py --out "$OUT" --batch "${PROFILE_B:-1,64,1024}" 2>&1 \
    | grep -v Warn | tee "$OUT/profile.log" | tail -60
fi
BENCH_S="${BENCH_S:-180}"; TESTS_S="${TESTS_S:-190}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)" | tee -a "$OUT/device.txt"
if [[ $stage == smoke ]]; then
  timeout 280 python3 benchmarks/smoke_gpu.py 2>&1 | tee "$OUT/smoke.log"
fi
if [[ $stage == bench || $stage == final ]]; then
  timeout "$BENCH_S" python3 benchmarks/bench.py --out "$OUT" --ops "${BENCH_OPS:-masks,top_k}" --vocab 131072 --dtypes float32,bfloat16 \
    --batch "${BENCH_B:-1,8,64,256,1024}" \
    --graphs --plot --warmup 5 --rep 25 --check-rows 4 --no-progress > "$OUT/bench.log" 2>&1
  echo "bench exit $?"; tail -c 3500 "$OUT/bench.log"
fi
if [[ $stage == wide ]]; then  # the top-p paths first: real vocabularies, batches, sampler
  m=tests/test_triton_masks.py
  timeout "$TESTS_S" python3 -m pytest -q -m gpu -p no:cacheprovider -x \
    $m::test_gpu_batches $m::test_gpu_real_vocab $m::test_gpu_deterministic_and_batch_invariant \
    tests/test_triton_sampling.py 2>&1 | tee "$OUT/pytest_gpu_wide.log" | tail -25
fi
if [[ $stage == bisect ]]; then  # the real-vocab cells that failed at f2c921f, per toggle
  c="tests/test_triton_masks.py::test_gpu_real_vocab[32000-float32]"
  for env in "QRITA_FAST_LAUNCH=0" "QRITA_FAST_LAUNCH=1" "QRITA_LAUNCH_TABLE=cand=512x2" \
             "QRITA_LAUNCH_TABLE=wide=256x2"; do
    echo "== $env"; env $env timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider "$c" \
      --tb=short 2>&1 | grep -E "^E |passed|failed" | cut -c1-400 | head -14
  done 2>&1 | tee "$OUT/bisect.log"
fi
if [[ $stage == tests || $stage == final || $stage == bisect || $stage == resume ]]; then
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  all="$t tests/test_backend_gpu.py $m::test_gpu_real_vocab $m::test_gpu_batches
    $m::test_gpu_deterministic_and_batch_invariant $m::test_gpu_cuda_graph_capture_and_replay
    $m::test_gpu_more_than_2_31_elements tests/test_fastlaunch.py tests/test_triton_sampling.py"
  # resume: TESTS names the node ids still to run (a previous call ran out of time)
  timeout "$TESTS_S" python3 -m pytest -q -m gpu -p no:cacheprovider -rf --tb=short \
    ${TESTS:-$all} 2>&1 | tee "$OUT/pytest_gpu.log" | grep -E "passed|failed|^FAILED|^E " | cut -c1-300 | tail -25
fi
if [[ $stage == pending ]]; then  # GPU checks not yet run at the current defaults (BENCHMARKS.md)
  m=tests/test_triton_masks.py
  timeout "${TESTS_S:-300}" python3 -m pytest -q -m gpu -p no:cacheprovider -rf --tb=short \
    "$m::test_gpu_one_launch_topk_mask" \
    tests/test_backend_gpu.py::test_jax_jit_sampler_runs_on_the_device tests/test_triton_sampling.py \
    tests/test_fastlaunch.py "$m::test_gpu_real_vocab[262144-bfloat16]" 2>&1 \
    | tee "$OUT/pytest_gpu_pending.log" | grep -E "passed|failed|^FAILED|^E " | cut -c1-300 | tail -25
  timeout 60 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -20
  for one in 0 1; do  # the one-launch top-k mask (opt-in) against the pipeline, small batches
    QRITA_ONE_LAUNCH=$one timeout 90 python3 benchmarks/bench.py --out "$OUT/one_launch_$one" \
      --ops masks --vocab 32768,131072,262144 --batch 1,8,16 --dtypes float32,bfloat16 \
      --scenarios topk50,topk1000 --peers "" --graphs --warmup 5 --rep 25 --check-rows 4 \
      --no-progress 2>&1 | tail -22
  done
fi
if [[ $stage == fifth ]]; then  # one-launch top_k + masks by default at B <= 16: GPU tests, bench
  m=tests/test_triton_masks.py
  timeout "${TESTS_S:-260}" python3 -m pytest -q -m gpu -p no:cacheprovider -rf --tb=short \
    "$m::test_gpu_one_launch_topk_mask" tests/test_triton_top_k.py "$m::test_gpu_batches" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$m::test_gpu_real_vocab[262144-bfloat16]" tests/test_fastlaunch.py 2>&1 \
    | tee "$OUT/pytest_gpu_fifth.log" | grep -E "passed|failed|^FAILED|^E " | cut -c1-300 | tail -25
  timeout 60 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -45
  timeout "$BENCH_S" python3 benchmarks/bench.py --out "$OUT" --ops "${BENCH_OPS:-masks,top_k}" --vocab 131072 --dtypes float32,bfloat16 \
    --batch "${BENCH_B:-1,8,64,1024}" --graphs --plot --warmup 5 --rep 25 --check-rows 4 \
    --no-progress > "$OUT/bench.log" 2>&1
  echo "bench exit $?"; tail -c 5000 "$OUT/bench.log"
fi
if [[ $stage == sampler ]]; then  # issue 6: the sampler's GPU tests not yet run, then its benchmark
  timeout "${TESTS_S:-240}" python3 -m pytest -v -m gpu -p no:cacheprovider -rf --tb=short --timeout 150 \
    tests/test_triton_sampling.py --deselect "tests/test_triton_sampling.py::test_gpu_real_shapes" 2>&1 \
    | tee "$OUT/pytest_gpu_sampler.log" | grep -E "PASSED|FAILED|ERROR|^E |passed|failed" | cut -c1-220 | tail -30
  timeout 200 python3 -m pytest -v -p no:cacheprovider --tb=short --timeout 180 \
    "tests/test_triton_sampling.py::test_fused_sampler_matches_the_reference" 2>&1 \
    | tee "$OUT/pytest_gpu_fused_sampler.log" | grep -E "PASSED|FAILED|^E |passed|failed" | cut -c1-220
  for fused in 0 1; do  # the multi-call sampler, then the fused one (opt-in until measured)
    QRITA_FUSED_SAMPLER=$fused timeout "$BENCH_S" python3 benchmarks/bench.py --out "$OUT/fused_$fused" \
      --ops sample --vocab 131072 --dtypes float32,bfloat16 --batch "${BENCH_B:-1,8,64,1024}" \
      --peers "$([[ $fused == 0 ]] && echo torch_sort,flashinfer)" --graphs --warmup 5 --rep 25 \
      --check-rows 4 --no-progress > "$OUT/bench_sampler_$fused.log" 2>&1
    echo "bench fused=$fused exit $?"; tail -c 3000 "$OUT/bench_sampler_$fused.log"
  done
fi
if [[ $stage == onelaunch ]]; then  # the one-launch kernels after a refactor, and up to which B they win
  m=tests/test_triton_masks.py
  timeout "${TESTS_S:-200}" python3 -m pytest -v -m gpu -p no:cacheprovider -rf --tb=short --timeout 150 \
    "$m::test_gpu_one_launch_topk_mask" tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    "$m::test_gpu_real_vocab[262144-bfloat16]" "$m::test_gpu_more_than_2_31_elements" 2>&1 \
    | tee "$OUT/pytest_gpu_onelaunch.log" | grep -E "PASSED|FAILED|^E |passed|failed" | cut -c1-220
  for one in 0 1:64; do  # off / forced on up to B=64, batches around the current limit of 16
    QRITA_ONE_LAUNCH=$one timeout 120 python3 benchmarks/bench.py --out "$OUT/one_launch_${one%%:*}" \
      --ops masks,top_k --vocab 131072 --batch 8,16,32,64 --dtypes float32,bfloat16 --workloads zipf \
      --scenarios topk50,topk1000,k50,k1000 --peers "" --graphs --warmup 5 --rep 25 --check-rows 4 \
      --no-progress > "$OUT/bench_one_launch_${one%%:*}.log" 2>&1
    echo "one_launch=$one exit $?"; tail -c 2500 "$OUT/bench_one_launch_${one%%:*}.log"
  done
  for rows in 0 256; do  # QRITA_CHUNK_ROWS: scratch bounded by row chunks (memory target) vs speed
    QRITA_CHUNK_ROWS=$rows timeout 120 python3 benchmarks/bench.py --out "$OUT/chunk_$rows" \
      --ops masks,top_k --vocab 131072 --batch 256,1024 --dtypes float32,bfloat16 --workloads zipf \
      --scenarios topk50,topp0.9,k50 --peers "" --warmup 5 --rep 25 --check-rows 4 \
      --no-progress > "$OUT/bench_chunk_$rows.log" 2>&1
    echo "chunk_rows=$rows exit $?"; tail -c 1800 "$OUT/bench_chunk_$rows.log"
  done
fi
if [[ $stage == resume ]]; then
  timeout "$BENCH_S" python3 benchmarks/bench.py --out "$OUT" --ops "${BENCH_OPS:-masks,top_k}" --vocab 131072 --dtypes float32,bfloat16 \
    --batch "${BENCH_B:-1,8,64,256,1024}" --graphs --plot --warmup 5 --rep 25 --check-rows 4 \
    --no-progress > "$OUT/bench.log" 2>&1
  echo "bench exit $?"; tail -c 3500 "$OUT/bench.log"
fi
if [[ $stage == sixth ]]; then  # fused samplers (top-k-bounded and top-p) as the default
  t=tests/test_triton_sampling.py
  timeout "${TESTS_S:-300}" python3 -m pytest -v -m gpu -p no:cacheprovider -rf --tb=short --timeout 250 \
    $t::test_gpu_fused_samplers_reproducible_invariant_capturable "$t::test_gpu_real_shapes[1024-float32]" \
    "$t::test_gpu_real_shapes[1-bfloat16]" 2>&1 \
    | tee "$OUT/pytest_gpu_sixth.log" | grep -E "PASSED|FAILED|^E |passed|failed" | cut -c1-300 | tail -30
  timeout "${BENCH_S:-200}" python3 benchmarks/bench.py --out "$OUT/sample" --ops sample --vocab 131072 \
    --dtypes float32,bfloat16 --batch "${BENCH_B:-1,64,1024}" --peers torch_sort,flashinfer --graphs \
    --warmup 5 --rep 25 --check-rows 4 --no-progress > "$OUT/bench_sample.log" 2>&1
  echo "bench exit $?"; tail -c 5000 "$OUT/bench_sample.log"
fi
if [[ $stage == topp ]]; then  # the fused top-p sampler: its GPU tests, then 16 vs 8 pivots per round
  t=tests/test_triton_sampling.py
  timeout "${TESTS_S:-150}" python3 -m pytest -v -m gpu -p no:cacheprovider -rf --tb=short --timeout 140 \
    "$t::test_gpu_fused_samplers_reproducible_invariant_capturable[None-0.9-None]" \
    "$t::test_gpu_fused_samplers_reproducible_invariant_capturable[None-None-0.7]" 2>&1 \
    | tee "$OUT/pytest_gpu_topp.log" | grep -E "PASSED|FAILED|^E |passed|failed" | cut -c1-300 | tail -20
  for piv in 16 8; do
    QRITA_TOPP_PIVOTS=$piv timeout "${BENCH_S:-100}" python3 benchmarks/bench.py --out "$OUT/topp_$piv" --ops sample \
      --vocab 131072 --dtypes float32,bfloat16 --batch "${BENCH_B:-1,64,1024}" --scenarios topp0.9,topp0.99 \
      --peers "" --graphs --warmup 5 --rep 25 --check-rows 4 --no-progress > "$OUT/bench_topp_$piv.log" 2>&1
    echo "pivots=$piv exit $?"; grep -E "^sample|NO:" "$OUT/bench_topp_$piv.log" | cut -c1-200
  done
fi
if [[ $stage == toppsweep ]]; then  # the fused top-p sampler's launch: pivots x block x warps
  for cfg in 8:512:8 8:1024:8 8:2048:16 4:1024:8 4:2048:8; do
    IFS=: read -r piv blk wrp <<< "$cfg"
    QRITA_TOPP_PIVOTS=$piv QRITA_TOPP_BLOCK=$blk QRITA_TOPP_WARPS=$wrp timeout 80 python3 benchmarks/bench.py \
      --out "$OUT/sweep_${piv}_${blk}_${wrp}" --ops sample --vocab 131072 --dtypes float32,bfloat16 --batch 1,1024 \
      --workloads zipf --scenarios topp0.9 --peers "" --warmup 5 --rep 20 --check-rows 4 --no-progress \
      > "$OUT/sweep.log" 2>&1
    echo "cfg=$cfg exit $?"; grep -E "^sample|NO:" "$OUT/sweep.log" | cut -c1-120
  done
fi
if [[ $stage == topp2 ]]; then  # the fused top-p sampler at its defaults: GPU tests, then its bench
  t=tests/test_triton_sampling.py
  timeout "${TESTS_S:-110}" python3 -m pytest -v -m gpu -p no:cacheprovider -rf --tb=short --timeout 100 \
    "$t::test_gpu_fused_samplers_reproducible_invariant_capturable[None-0.9-None]" \
    "$t::test_gpu_fused_samplers_reproducible_invariant_capturable[None-None-0.7]" 2>&1 \
    | tee "$OUT/pytest_gpu_topp2.log" | grep -E "PASSED|FAILED|^E |passed|failed" | cut -c1-300 | tail -20
  timeout "${BENCH_S:-80}" python3 benchmarks/bench.py --out "$OUT/topp2" --ops sample --vocab 131072 \
    --dtypes float32,bfloat16 --batch 1,64,1024 --scenarios topp0.9 --peers "" --graphs --warmup 5 \
    --rep 20 --check-rows 4 --no-progress > "$OUT/bench_topp2.log" 2>&1
  echo "bench exit $?"; grep -E "^sample|NO:" "$OUT/bench_topp2.log" | cut -c1-160
fi
if [[ $stage == histonly ]]; then  # the histogram band's ablation / knobs only
  timeout "${HIST_S:-500}" python3 benchmarks/topp_hist.py --out "$OUT" --batch "${HIST_B:-1,1024}" \
    ${HIST_CONFIGS:+--configs "$HIST_CONFIGS"} ${HIST_DTYPES:+--dtypes "$HIST_DTYPES"} \
    ${HIST_WORKLOADS:+--workloads "$HIST_WORKLOADS"} 2>&1 | grep -v Warn | tee "$OUT/topp_hist.log" | cut -c1-220
fi
if [[ $stage == hist ]]; then  # the fused top-p sampler's histogram band: knobs, GPU tests, bench
  timeout "${HIST_S:-200}" python3 benchmarks/topp_hist.py --out "$OUT" --batch "${HIST_B:-1,1024}" \
    ${HIST_CONFIGS:+--configs "$HIST_CONFIGS"} ${HIST_DTYPES:+--dtypes "$HIST_DTYPES"} \
    ${HIST_WORKLOADS:+--workloads "$HIST_WORKLOADS"} 2>&1 | grep -v Warn | tee "$OUT/topp_hist.log" | cut -c1-220
  t=tests/test_triton_sampling.py
  timeout "${TESTS_S:-150}" python3 -m pytest -v -m gpu -p no:cacheprovider -rf --tb=short --timeout 140 \
    "$t::test_gpu_fused_samplers_reproducible_invariant_capturable[None-0.9-None]" \
    "$t::test_gpu_fused_samplers_reproducible_invariant_capturable[None-None-0.7]" \
    "$t::test_gpu_real_shapes" 2>&1 \
    | tee "$OUT/pytest_gpu_hist.log" | grep -E "PASSED|FAILED|^E |passed|failed" | cut -c1-300 | tail -20
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT/hist" --ops sample --vocab 131072 \
    --dtypes float32,bfloat16 --batch 1,64,1024 --scenarios topp0.9,topp0.99 --peers torch_sort --graphs \
    --warmup 5 --rep 20 --check-rows 4 --no-progress > "$OUT/bench_hist.log" 2>&1
  echo "bench exit $?"; grep -E "^sample|NO:" "$OUT/bench_hist.log" | cut -c1-160
fi
if [[ $stage == hmask ]]; then  # masked histograms vs the default (issue 6, next session's first call)
  for hm in 0 1; do
    QRITA_TOPP_HMASK=$hm timeout "${HIST_S:-150}" python3 benchmarks/topp_hist.py --out "$OUT/hmask$hm" \
      --batch "${HIST_B:-1,1024}" --configs "hist:64:4096,hist:64:4096:4" 2>&1 | grep -v Warn \
      | tee "$OUT/topp_hist_hmask$hm.log" | cut -c1-220
  done
  QRITA_TOPP_HMASK=1 timeout "${TESTS_S:-120}" python3 -m pytest -q -m gpu -p no:cacheprovider --timeout 100 \
    "tests/test_triton_sampling.py::test_gpu_fused_samplers_reproducible_invariant_capturable[None-0.9-None]" \
    2>&1 | tail -3 | tee "$OUT/pytest_gpu_hmask.log"
fi
if [[ $stage == warps ]]; then  # fewer warps: block-wide reductions become shuffles
  timeout "${TUNE_S:-260}" python3 benchmarks/tune_launch.py --stage cand_warps --out "$OUT" \
    --batch "${TUNE_B:-64,1024}" --dtypes "${TUNE_D:-float32,bfloat16}" 2>&1 | grep -v Warn \
    | tee "$OUT/tune_cand_warps.log" | cut -c1-200
  for w in ${TOPP_WARPS:-2 4 16}; do
    QRITA_TOPP_WARPS=$w timeout "${HIST_S:-80}" python3 benchmarks/topp_hist.py --out "$OUT/topp_warps$w" \
      --batch 1024 --configs "hist:64:4096,hist:64:1024" --workloads zipf --dtypes float32 2>&1 \
      | grep -v Warn | sed "s/^/warps=$w /" | tee -a "$OUT/topp_warps.log" | cut -c1-200
  done
fi
if [[ $stage == eighth ]]; then  # the one-warp candidate pass by default: GPU tests, then bench
  m=tests/test_triton_masks.py
  timeout "${TESTS_S:-250}" python3 -m pytest -q -m gpu -p no:cacheprovider -rf --tb=short \
    tests/test_triton_top_k.py "$m::test_gpu_batches" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$m::test_gpu_cuda_graph_capture_and_replay" "$m::test_gpu_one_launch_topk_mask" \
    "$m::test_gpu_real_vocab" 2>&1 | tee "$OUT/pytest_gpu_eighth.log" \
    | grep -E "passed|failed|^FAILED|^E " | cut -c1-300 | tail -25
  timeout "$BENCH_S" python3 benchmarks/bench.py --out "$OUT" --ops "${BENCH_OPS:-masks,top_k}" \
    --vocab 131072 --dtypes float32,bfloat16 --batch "${BENCH_B:-64,256,1024}" --graphs --plot \
    --warmup 5 --rep 25 --check-rows 4 --no-progress > "$OUT/bench.log" 2>&1
  echo "bench exit $?"; tail -c 6000 "$OUT/bench.log"
fi
if [[ $stage == radix ]]; then  # radix top-k search: the wide compaction's tiles, then bench
  timeout "${TUNE_S:-150}" python3 benchmarks/tune_launch.py --stage wide_warps --out "$OUT" \
    --batch 1024 --dtypes float32,bfloat16 2>&1 | grep -v Warn | tee "$OUT/tune_wide_warps.log" \
    | cut -c1-200
  timeout "$BENCH_S" python3 benchmarks/bench.py --out "$OUT" --ops "${BENCH_OPS:-masks,top_k}" \
    --vocab 131072 --dtypes "${BENCH_D:-float32,bfloat16}" --batch "${BENCH_B:-1,64,1024}" \
    --workloads zipf --graphs --warmup 5 --rep 25 --check-rows 4 --no-progress > "$OUT/bench.log" 2>&1
  echo "bench exit $?"; grep -E "^(masks|top_k)|^op" "$OUT/bench.log" | cut -c1-190
  QRITA_SELECT_SORT=torch timeout 100 python3 benchmarks/bench.py --out "$OUT/sort_torch" --ops top_k \
    --vocab 131072 --dtypes float32 --batch 64,1024 --workloads zipf --graphs --warmup 5 --rep 25 \
    --check-rows 4 --no-progress > "$OUT/bench_sort_torch.log" 2>&1
  echo "QRITA_SELECT_SORT=torch"; grep -E "^(top_k)|^op" "$OUT/bench_sort_torch.log" | cut -c1-190
fi
if [[ $stage == last ]]; then  # GPU tests at the session's defaults, then a short bench
  m=tests/test_triton_masks.py
  timeout "${TESTS_S:-200}" python3 -m pytest -m gpu -p no:cacheprovider -rf --tb=short \
    tests/test_triton_primitives.py tests/test_triton_top_k.py "$m::test_gpu_batches" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_cuda_graph_capture_and_replay" \
    -v 2>&1 | tee "$OUT/pytest_gpu_last.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300 | tail -40
  echo; timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT" --ops masks,top_k \
    --vocab 131072 --dtypes float32 --batch 64,1024 --workloads zipf \
    --scenarios topk50,topk1000,topp0.9,k50,k1000 --warmup 5 --rep 25 --check-rows 4 \
    --no-progress > "$OUT/bench.log" 2>&1
  echo "bench exit $?"; grep -E "^(masks|top_k)|^op" "$OUT/bench.log" | cut -c1-190
fi
if [[ $stage == ninth ]]; then  # the top-k retry: profile (rows retried, kernel times), bench, GPU tests
  timeout "${PROFILE_S:-170}" python3 benchmarks/profile_pipeline.py --out "$OUT" --batch "${PROFILE_B:-1024}" \
    --dtypes float32 --scenarios "${PROFILE_SCEN:-topk1000,k1000,topk50,topk100_topp0.9,k50}" 2>&1 \
    | grep -v Warn | tee "$OUT/profile.log" | cut -c1-330
  timeout "${BENCH_S:-110}" python3 benchmarks/bench.py --out "$OUT" --ops masks,top_k \
    --vocab 131072 --dtypes float32 --batch "${BENCH_B:-1024}" --workloads zipf \
    --scenarios topk50,topk1000,topk100_topp0.9,k50,k1000 --warmup 5 --rep 25 --check-rows 4 \
    --no-progress > "$OUT/bench.log" 2>&1
  echo "bench exit $?"; grep -E "^(masks|top_k)|^op" "$OUT/bench.log" | cut -c1-190
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  timeout "${TESTS_S:-280}" python3 -m pytest -m gpu -p no:cacheprovider -rf --tb=short -v \
    "$m::test_gpu_top_k_retry_rows_exact" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_batches[gaussian-64]" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$t::test_gpu_top_k_real_vocab" \
    "$m::test_gpu_cuda_graph_capture_and_replay" 2>&1 | tee "$OUT/pytest_gpu_ninth.log" \
    | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300 | tail -30
fi
if [[ $stage == searchtable ]]; then  # the per-row search: denser packing, fewer warps
  for table in "" search=2048x8 search=1024x4; do
    echo "== table '$table'"
    QRITA_LAUNCH_TABLE=$table timeout "${EXTRA_S:-150}" python3 benchmarks/profile_pipeline.py \
      --out "$OUT/table_${table:-default}" --batch 1024 --dtypes float32 \
      --scenarios topk1000,topk50,k50 2>&1 | grep -v Warn | grep zipf | cut -c1-330
  done
fi
if [[ $stage == tenth ]]; then  # the per-row search's packing by k; the top-p band's sample
  for table in "" search=2048x8 search=2048x4 search=512x4; do
    echo "== table '$table'"
    QRITA_LAUNCH_TABLE=$table timeout "${EXTRA_S:-90}" python3 benchmarks/profile_pipeline.py \
      --out "$OUT/table_$(echo "${table:-default}" | tr '=' '_')" --batch 1024 --dtypes float32 --workloads zipf \
      --scenarios topk1000,k1000,topk50,k50 2>&1 | grep -v Warn | grep zipf | cut -c1-400
  done
  for table in "" band=2048x0 band=8192x0; do
    echo "== table '$table'"
    QRITA_LAUNCH_TABLE=$table timeout "${BAND_S:-70}" python3 benchmarks/profile_pipeline.py \
      --out "$OUT/band_$(echo "${table:-default}" | tr '=' '_')" --batch 1024 --dtypes float32 \
      --scenarios topp0.9 2>&1 | grep -v Warn | grep -E "zipf|gaussian" | cut -c1-400
  done
fi
if [[ $stage == int32 ]]; then  # int32 key compares in the pivot rounds and the wide compaction
  # (the fused-reduction A/B of the tenth session's call 2 was the stage "fused" at 2422a1e)
  timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_triton_primitives.py 2>&1 \
    | tee "$OUT/pytest_gpu_primitives.log" | tail -2
  profile_envs "" QRITA_SEARCH_INT32=0
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests int32 "${TESTS_S:-250}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_top_k_retry_rows_exact" "$m::test_gpu_batches[gaussian-64]" \
    "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_batches[gaussian-1024]" \
    "$m::test_gpu_cuda_graph_capture_and_replay"
fi
if [[ $stage == onelaunch2 ]]; then  # one launch up to B = 64 vs the pipeline; chunked rows
  for one in 0 1:64; do
    QRITA_ONE_LAUNCH=$one timeout 110 python3 benchmarks/bench.py --out "$OUT/one_launch_${one%%:*}" \
      --ops masks,top_k --vocab 131072 --batch 16,32,64 --dtypes float32 --workloads zipf \
      --scenarios topk50,topk1000,k50,k1000 --peers torch --graphs --warmup 5 --rep 25 --check-rows 4 \
      --no-progress > "$OUT/bench_one_launch_${one%%:*}.log" 2>&1
    echo "one_launch=$one exit $?"; tail -c 2200 "$OUT/bench_one_launch_${one%%:*}.log"
  done
  for rows in 0 256; do  # QRITA_CHUNK_ROWS: scratch bounded by row chunks (memory target) vs speed
    QRITA_CHUNK_ROWS=$rows timeout 100 python3 benchmarks/bench.py --out "$OUT/chunk_$rows" \
      --ops masks,top_k --vocab 131072 --batch 1024 --dtypes float32 --workloads zipf \
      --scenarios topk50,topp0.9,k50 --peers "" --warmup 5 --rep 25 --check-rows 4 \
      --no-progress > "$OUT/bench_chunk_$rows.log" 2>&1
    echo "chunk_rows=$rows exit $?"; tail -c 1500 "$OUT/bench_chunk_$rows.log"
  done
fi
if [[ $stage == tenthfinal ]]; then  # GPU tests the int32 stage did not reach, then a short bench
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests tenthfinal "${TESTS_S:-370}" "$m::test_gpu_real_vocab" "$t::test_gpu_top_k_real_vocab" \
    "$m::test_gpu_one_launch_topk_mask" "$t::test_gpu_top_k_cuda_graph" \
    "$m::test_gpu_more_than_2_31_elements"
  bench_zipf tenthfinal "${BENCH_S:-170}" 64,1024
fi
if [[ $stage == tenthrest ]]; then  # the GPU tests of the masks / top_k not run at 368a9e4
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests tenthrest "${TESTS_S:-420}" "$m::test_gpu_real_vocab[262144-float32]" \
    "$m::test_gpu_real_vocab[262144-bfloat16]" "$m::test_gpu_one_launch_topk_mask" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_more_than_2_31_elements"
fi
if [[ $stage == ninthrest ]]; then  # the GPU tests the ninth stage's call did not reach
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  timeout "${TESTS_S:-400}" python3 -m pytest -m gpu -p no:cacheprovider -rf --tb=short -v \
    "$t::test_gpu_top_k_real_vocab" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$m::test_gpu_batches[gaussian-1024]" "$m::test_gpu_batches[zipf-64]" \
    "$t::test_gpu_top_k_cuda_graph" 2>&1 | tee "$OUT/pytest_gpu_ninthrest.log" \
    | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300 | tail -30
fi
if [[ $stage == eleventh ]]; then  # pass A's merge: A/B against QRITA_MERGE=0, its GPU tests
  profile_envs "" QRITA_MERGE=0
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests eleventh "${TESTS_S:-300}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_top_k_retry_rows_exact" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$m::test_gpu_batches[gaussian-1024]" "$t::test_gpu_top_k_cuda_graph"
fi
if [[ $stage == eleventhrest ]]; then  # the other GPU tests of the masks / top_k, then the bench
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests eleventhrest "${TESTS_S:-330}" "$m::test_gpu_real_vocab" "$t::test_gpu_top_k_real_vocab" \
    "$m::test_gpu_one_launch_topk_mask" "$m::test_gpu_more_than_2_31_elements" \
    "$m::test_gpu_batches[gaussian-64]"
  timeout "${BENCH_S:-200}" python3 benchmarks/bench.py --out "$OUT" --ops masks,top_k --vocab 131072 \
    --dtypes float32,bfloat16 --batch 1,64,1024 --workloads zipf \
    --scenarios topk50,topk1000,topp0.9,topk100_topp0.9,k50,k1000 --graphs --warmup 5 --rep 25 \
    --check-rows 4 --no-progress > "$OUT/bench_eleventh.log" 2>&1
  echo "bench exit $?"; tail -c 5000 "$OUT/bench_eleventh.log"
fi
if [[ $stage == knobs || $stage == twelfth ]]; then  # write-pass tiles, top_k sort warps (A/B)
  for env in "" QRITA_LAUNCH_TABLE=write=4096x8 QRITA_LAUNCH_TABLE=write=1024x4 \
      QRITA_LAUNCH_TABLE=write=2048x8 QRITA_LAUNCH_TABLE=write=4096x4 \
      QRITA_LAUNCH_TABLE=sortbig=0x4 QRITA_LAUNCH_TABLE=sortbig=0x16; do
    name=$(echo "${env:-default}" | tr '=' '_')
    echo "== env '$env'"
    env $env timeout 60 python3 benchmarks/profile_pipeline.py --out "$OUT/knob_$name" \
      --batch 1024 --dtypes float32 --workloads zipf --scenarios topk50,k1000 2>&1 \
      | grep -v Warn | grep zipf | cut -c1-300
  done
fi
if [[ $stage == twelfth ]]; then  # GPU tests at the loop-packed dense search
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests twelfth "${TESTS_S:-290}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$m::test_gpu_top_k_retry_rows_exact" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_batches[gaussian-1024]"
fi
if [[ $stage == thirteenth ]]; then  # the per-row search's persistent grid (A/B), then GPU tests
  KNOB_S=75 profile_knobs zipf topk50,k50,k1000,topk1000,topp0.9,topk100_topp0.9 topk50,k1000 \
    "" QRITA_LAUNCH_TABLE=thrprog=2x0 QRITA_LAUNCH_TABLE=thrprog=8x0 QRITA_LAUNCH_TABLE=sortbig=0x32
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests thirteenth "${TESTS_S:-330}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_top_k_retry_rows_exact" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$t::test_gpu_top_k_batches_deterministic_invariant" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$t::test_gpu_top_k_cuda_graph"
fi
if [[ $stage == eleventhfinal ]]; then  # GPU tests not run at the session's final kernels, bench
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests eleventhfinal "${TESTS_S:-230}" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_real_vocab[262144-float32]" \
    "$m::test_gpu_more_than_2_31_elements" "$m::test_gpu_one_launch_topk_mask" \
    "$m::test_gpu_real_vocab[262144-bfloat16]"
  bench_zipf eleventhfinal "${BENCH_S:-190}" 64,1024
fi
if [[ $stage == s12a ]]; then  # twelfth session: the band writes its rows (A/B), pass A tiles for top-p
  KNOB_S=60 profile_knobs zipf,gaussian topp0.9,topp0.99,topk100_topp0.9 topp0.9 "" \
    QRITA_BAND_WRITE=0 QRITA_LAUNCH_TABLE=cand=512x1 QRITA_LAUNCH_TABLE=cand=1024x4 \
    QRITA_LAUNCH_TABLE=wide=256x1
  m=tests/test_triton_masks.py
  gpu_tests s12a "${TESTS_S:-200}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_batches[gaussian-1024]" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$m::test_gpu_cuda_graph_capture_and_replay" "$m::test_gpu_real_vocab[32000-float32]" \
    "$m::test_gpu_real_vocab[151936-float16]" "$m::test_gpu_real_vocab[262144-bfloat16]"
fi
if [[ $stage == s12b ]]; then  # the band's write kernel (guess + correction): A/B, tiles, GPU tests
  KNOB_S=50 profile_knobs zipf,gaussian topp0.9,topp0.99 topp0.9 "" QRITA_BAND_WRITE=0 \
    QRITA_LAUNCH_TABLE=write=4096x8 QRITA_LAUNCH_TABLE=write=1024x4
  m=tests/test_triton_masks.py
  gpu_tests s12b "${TESTS_S:-260}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_batches[gaussian-1024]" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$m::test_gpu_cuda_graph_capture_and_replay" "$m::test_gpu_real_vocab[151936-float16]" \
    "$m::test_gpu_real_vocab[262144-bfloat16]" "$m::test_gpu_real_vocab[201088-float32]"
fi
if [[ $stage == s12c ]]; then  # the per-row search in two launches (A/B), then GPU tests
  EXTRA_S=120 profile_envs "" QRITA_THRESHOLD_SPLIT=0
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests s12c "${TESTS_S:-300}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_top_k_retry_rows_exact" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_batches[gaussian-64]" \
    "$t::test_gpu_top_k_real_vocab[262144-float32]"
fi
if [[ $stage == s12d ]]; then  # the σ-cutoff's small ranks (A/B), GPU tests, the bench
  KNOB_S=100 profile_knobs zipf topk50,k50,topk1000,k1000,topp0.9,topk100_topp0.9 \
    topk50,k50,topk100_topp0.9 "" QRITA_CUTOFF_SMALL=0
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests s12d "${TESTS_S:-230}" "$m::test_gpu_one_launch_topk_mask" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$m::test_gpu_top_k_retry_rows_exact" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_real_vocab[262144-bfloat16]" "$t::test_gpu_top_k_real_vocab[128256-bfloat16]"
  bench_zipf s12d "${BENCH_S:-170}" 64,1024
fi
if [[ $stage == s12e ]]; then  # the session's last call: fp32 B = 1024 bench, then GPU tests
  timeout "${BENCH_S:-90}" python3 benchmarks/bench.py --out "$OUT" --ops masks,top_k --vocab 131072 \
    --dtypes float32 --batch 1024 --workloads zipf \
    --scenarios topk50,topk1000,topk100_topp0.9,k50,k1000 --graphs --warmup 5 --rep 25 \
    --check-rows 4 --no-progress > "$OUT/bench_s12e.log" 2>&1
  echo "bench exit $?"; tail -c 1500 "$OUT/bench_s12e.log"
  m=tests/test_triton_masks.py; t=tests/test_triton_top_k.py
  gpu_tests s12e "${TESTS_S:-170}" "$m::test_gpu_batches[zipf-1024]" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$m::test_gpu_top_k_retry_rows_exact" "$t::test_gpu_top_k_cuda_graph"
fi
if [[ $stage == s13a ]]; then  # the band in a launch of its own (sorted sample vs pivot rounds, warps), the rounds' tile; the cutoff's warps
  prof default topp0.9,topk50,k50,topk100_topp0.9 zipf,gaussian
  prof bandpivot topp0.9 zipf,gaussian QRITA_BAND_SORT=0
  prof band8 topp0.9 zipf QRITA_LAUNCH_TABLE=band=4096x8
  prof round256 topp0.9 zipf,gaussian QRITA_LAUNCH_TABLE=round=256x4
  prof round512x8 topp0.9 zipf QRITA_LAUNCH_TABLE=round=512x8
  prof cutoff8 topk50,k50,topk100_topp0.9 zipf QRITA_LAUNCH_TABLE=cutoff=0x8
  prof cutoff16 topk50,k50 zipf QRITA_LAUNCH_TABLE=cutoff=0x16
fi
if [[ $stage == s13b ]]; then  # GPU tests of the wide stage's new launch, then the sampler's B = 1024 cells
  m=tests/test_triton_masks.py
  gpu_tests s13b "${TESTS_S:-250}" "$m::test_gpu_batches" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$m::test_gpu_more_than_2_31_elements" "$m::test_gpu_real_vocab"
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT" --ops sample,masks --vocab 131072 \
    --dtypes float32 --batch 1024 --workloads zipf --scenarios topp0.9,topk100_topp0.9,topk50 \
    --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress > "$OUT/bench_s13b.log" 2>&1
  echo "bench exit $?"; tail -c 3000 "$OUT/bench_s13b.log"
fi
if [[ $stage == s13c ]]; then  # the band kernel's warps (pivot rounds), the rounds at 1 warp; then the s13b GPU tests
  prof default topp0.9 zipf
  prof band8 topp0.9 zipf QRITA_LAUNCH_TABLE=band=4096x8
  prof band16 topp0.9 zipf QRITA_LAUNCH_TABLE=band=4096x16
  prof round128x1 topp0.9 zipf QRITA_LAUNCH_TABLE=round=128x1
  m=tests/test_triton_masks.py
  gpu_tests s13c "${TESTS_S:-250}" "$m::test_gpu_batches" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$m::test_gpu_more_than_2_31_elements" "$m::test_gpu_real_vocab"
fi
if [[ $stage == s13d ]]; then  # the compaction after the rounds (tile x warps); the rest of the real-vocab tests; the B = 1024 sampler / mask bench
  prof default topp0.9 zipf
  prof wide2_128x4 topp0.9 zipf QRITA_LAUNCH_TABLE=wide2=128x4
  prof wide2_256x4 topp0.9 zipf QRITA_LAUNCH_TABLE=wide2=256x4
  prof wide2_512x8 topp0.9 zipf QRITA_LAUNCH_TABLE=wide2=512x8
  timeout "${BENCH_S:-170}" python3 benchmarks/bench.py --out "$OUT" --ops sample,masks --vocab 131072 \
    --dtypes float32 --batch 1024 --workloads zipf --scenarios topp0.9,topk100_topp0.9,topk50 \
    --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress > "$OUT/bench_s13d.log" 2>&1
  echo "bench exit $?"; tail -c 2500 "$OUT/bench_s13d.log"
  m=tests/test_triton_masks.py
  gpu_tests s13d "${TESTS_S:-200}" "$m::test_gpu_real_vocab[151936-float32]" \
    "$m::test_gpu_real_vocab[262144-bfloat16]" "$m::test_gpu_real_vocab[151936-float16]" \
    "$m::test_gpu_real_vocab[201088-float32]" "$m::test_gpu_real_vocab[262144-float32]" \
    "$m::test_gpu_real_vocab[128256-bfloat16]"
fi
if [[ $stage == s13e ]]; then  # the sampler's host time (B = 1024 and 1); the real-vocab tests cut in s13d
  only="public sample k100 p0.9,public sample k50,ops sample_with_uniforms k100 p0.9,philox uniforms,public topk50 mask"
  timeout 150 python3 benchmarks/host_overhead.py --out "$OUT/host1024" --batch 1024 --only "$only" --rows 30 2>&1 | grep -v Warn | head -150
  timeout 60 python3 benchmarks/host_overhead.py --out "$OUT/host1" --batch 1 --only "$only" --rows 5 2>&1 | grep "host" | head -10
  m=tests/test_triton_masks.py
  gpu_tests s13e "${TESTS_S:-150}" "$m::test_gpu_real_vocab[262144-float32]" "$m::test_gpu_real_vocab[128256-bfloat16]"
fi
if [[ $stage == s13f ]]; then  # the session's last call: uniforms by kernel arguments (host time), the B = 1024 bench, sampler GPU tests
  only="public sample k100 p0.9,public sample k50,philox uniforms"
  timeout 90 python3 benchmarks/host_overhead.py --out "$OUT/host1024" --batch 1024 --only "$only" --rows 12 2>&1 | grep "host" | head -6
  timeout 60 python3 benchmarks/host_overhead.py --out "$OUT/host1" --batch 1 --only "$only" --rows 5 2>&1 | grep "host" | head -6
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT" --ops sample,masks --vocab 131072 \
    --dtypes float32 --batch 1024 --workloads zipf --scenarios topp0.9,topk100_topp0.9,topk50 \
    --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress > "$OUT/bench_s13f.log" 2>&1
  echo "bench exit $?"; tail -c 2200 "$OUT/bench_s13f.log"
  timeout 60 python3 -m pytest -p no:cacheprovider -q tests/test_triton_sampling.py -k "uniforms_match or fresh_seeds" \
    tests/test_sampling_reference.py::test_philox_matches_triton_randint4x_bit_for_bit 2>&1 | tail -2
  s=tests/test_triton_sampling.py
  gpu_tests s13f "${TESTS_S:-130}" "$s::test_gpu_reproducible" "$s::test_gpu_batch_invariant" \
    "$s::test_gpu_cuda_graph_capture_and_replay" "$s::test_gpu_public_api_torch_and_1d" \
    "$s::test_gpu_real_shapes"
fi
if [[ $stage == next ]]; then  # prepared, not run: the JAX adapter's direct DLPack import; pass A's lean masses (A/B); GPU tests not run at the thirteenth session's kernels
  timeout 60 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -20
  timeout 90 python3 -m pytest -m gpu -p no:cacheprovider -q tests/test_backend_gpu.py 2>&1 | tail -3
  prof default topp0.9,topk100_topp0.9 zipf,gaussian
  prof lean topp0.9,topk100_topp0.9 zipf,gaussian QRITA_LAUNCH_TABLE=lean=1x0
  prof split2 topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=roundsplit=2x0
  prof split4 topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=roundsplit=4x0
  # the 16-bit dtypes' band at 50% of the slots (default since 13th session, from band_sim.py) vs 75%
  PROF_DTYPES=bfloat16,float16 KNOB_S=150 prof b16 topp0.9,topp0.99 zipf,gaussian
  PROF_DTYPES=bfloat16,float16 KNOB_S=150 prof b16_75 topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=bandpct=75x0
  s=tests/test_triton_sampling.py; t=tests/test_triton_top_k.py; m=tests/test_triton_masks.py
  gpu_tests next "${TESTS_S:-400}" "$s::test_gpu_real_shapes" "$s::test_gpu_support_and_fit_over_many_draws" \
    "$s::test_gpu_per_row_parameters_real_vocab" "$s::test_gpu_fused_samplers_reproducible_invariant_capturable" \
    "$t::test_gpu_top_k_real_vocab" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$m::test_gpu_top_k_retry_rows_exact" "$m::test_gpu_batches" "$m::test_gpu_real_vocab"
fi
if [[ $stage == s14a ]]; then  # fourteenth session, call 1: the prepared A/Bs of `next` (adapter overhead; lean pass A; round split; the 16-bit band cap)
  timeout 60 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -20
  KNOB_S=80 prof default topp0.9,topk100_topp0.9 zipf,gaussian
  KNOB_S=80 prof lean topp0.9,topk100_topp0.9 zipf,gaussian QRITA_LAUNCH_TABLE=lean=1x0
  KNOB_S=60 prof split2 topp0.9 zipf,gaussian QRITA_LAUNCH_TABLE=roundsplit=2x0
  KNOB_S=60 prof split4 topp0.9 zipf,gaussian QRITA_LAUNCH_TABLE=roundsplit=4x0
  # the 16-bit dtypes' band at 50% of the slots (default since 13th session, from band_sim.py) vs 75%
  PROF_DTYPES=bfloat16,float16 KNOB_S=100 prof b16 topp0.9,topp0.99 zipf
  PROF_DTYPES=bfloat16,float16 KNOB_S=100 prof b16_75 topp0.9,topp0.99 zipf QRITA_LAUNCH_TABLE=bandpct=75x0
fi
if [[ $stage == s14b || $stage == s14bmain ]]; then  # the rejection draw of top-p (QRITA_TOPP_SAMPLER=reject, written blind in the fourteenth session): GPU tests, host time at B = 1, the sampler bench with and without it, its tiles / warps
  gpu_tests s14b "${TESTS_S:-120}" tests/test_triton_reject_topp.py
  for env in "QRITA_TOPP_SAMPLER=reject" ""; do
    name=$(echo "${env:-default}" | tr '=' '_')
    env $env timeout 60 python3 benchmarks/host_overhead.py --out "$OUT/host1_$name" --batch 1 \
      --only "public sample p0.9" --rows 3 2>&1 | grep "host" | sed "s/^/$name /" | head -3
  done
  for env in "QRITA_TOPP_SAMPLER=reject" ""; do
    name=$(echo "${env:-default}" | tr '=' '_')
    env $env timeout "${BENCH_S:-120}" python3 benchmarks/bench.py --out "$OUT/sample_$name" --ops sample \
      --vocab 131072 --dtypes float32,bfloat16 --batch 1,64,1024 --workloads zipf,gaussian \
      --scenarios topp0.9,topp0.99 --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress \
      --peers '' > "$OUT/bench_sample_$name.log" 2>&1
    echo "bench $name exit $?"; tail -c 2600 "$OUT/bench_sample_$name.log"
  done
fi
if [[ $stage == s14b || $stage == s14bknobs ]]; then  # the rejection draw's tiles / groups / warps at B = 1024 (KNOBS overrides the list)
  for knob in ${KNOBS:-QRITA_REJECT_BLOCK=1024 QRITA_REJECT_BLOCK=4096 QRITA_REJECT_GROUP=4 QRITA_REJECT_GROUP=16 QRITA_REJECT_WARPS=4 QRITA_REJECT_WARPS=16}; do
    name=$(echo "$knob" | tr '=' '_')
    env QRITA_TOPP_SAMPLER=reject "$knob" timeout 60 python3 benchmarks/bench.py --out "$OUT/knob_$name" \
      --ops sample --vocab 131072 --dtypes float32 --batch "${KNOB_B:-1024}" --workloads zipf --scenarios topp0.9 \
      --warmup 5 --rep 20 --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^sample" \
      | sed "s/^/$name /"
  done
fi
if [[ $stage == s14c ]]; then  # the GPU tests not run at the thirteenth session's defaults (was `next`'s second half)
  s=tests/test_triton_sampling.py; t=tests/test_triton_top_k.py; m=tests/test_triton_masks.py
  timeout 90 python3 -m pytest -m gpu -p no:cacheprovider -q tests/test_backend_gpu.py 2>&1 | tail -3
  gpu_tests s14c "${TESTS_S:-420}" "$s::test_gpu_real_shapes" "$s::test_gpu_support_and_fit_over_many_draws" \
    "$s::test_gpu_per_row_parameters_real_vocab" "$s::test_gpu_fused_samplers_reproducible_invariant_capturable" \
    "$t::test_gpu_top_k_real_vocab" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$m::test_gpu_top_k_retry_rows_exact" "$m::test_gpu_batches" "$m::test_gpu_real_vocab"
fi
if [[ $stage == s15a ]]; then  # fifteenth session: the rejection draw as sample's default for top-k-off rows (per-row temperatures, log-probabilities, mixed per-row k): GPU tests, the sampler bench
  s=tests/test_triton_sampling.py
  gpu_tests s15a "${TESTS_S:-300}" tests/test_triton_reject_topp.py \
    "$s::test_gpu_fused_samplers_reproducible_invariant_capturable" "$s::test_gpu_support_and_fit_over_many_draws" \
    "$s::test_gpu_batch_invariant" "$s::test_gpu_cuda_graph_capture_and_replay" "$s::test_gpu_reproducible" \
    "$s::test_gpu_public_api_torch_and_1d"
  timeout 60 python3 benchmarks/host_overhead.py --out "$OUT/host1" --batch 1 \
    --only "public sample p0.9" --rows 3 2>&1 | grep "host" | head -1
  timeout "${BENCH_S:-200}" python3 benchmarks/bench.py --out "$OUT/sample" --ops sample \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64,256,1024 --workloads zipf,gaussian \
    --scenarios topp0.9,topp0.99,topk100_topp0.9 --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress \
    > "$OUT/bench_sample.log" 2>&1
  echo "bench exit $?"; tail -c 6000 "$OUT/bench_sample.log"
fi
if [[ $stage == s15b ]]; then  # the rejection draw's small-batch split (rows over programs): GPU tests, the sampler bench split vs one program per row, its knobs at B = 1; then s15a's remaining GPU tests
  s=tests/test_triton_sampling.py
  gpu_tests s15b "${TESTS_S:-120}" tests/test_triton_reject_topp.py
  for env in "" "QRITA_REJECT_SPLIT_B=0"; do
    name=$(echo "${env:-default}" | tr '=' '_')
    env $env timeout "${BENCH_S:-90}" python3 benchmarks/bench.py --out "$OUT/sample_$name" --ops sample \
      --vocab 32768,131072,262144 --dtypes float32,bfloat16 --batch 1,8,32,64 --workloads zipf \
      --scenarios topp0.9,topp0.99 --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress \
      --peers '' > "$OUT/bench_sample_$name.log" 2>&1
    echo "bench $name exit $?"; grep -E "^sample" "$OUT/bench_sample_$name.log" | cut -c1-120
  done
  for knob in ${KNOBS:-QRITA_REJECT_SPLIT_BLOCK=2048 QRITA_REJECT_SPLIT_BLOCK=512 QRITA_REJECT_SPLIT_GROUP=1 QRITA_REJECT_SPLIT_GROUP=4 QRITA_REJECT_SPLIT_WARPS=8 QRITA_REJECT_CHECKS=1 QRITA_REJECT_CHECKS=3}; do
    name=$(echo "$knob" | tr '=' '_')
    env "$knob" timeout 40 python3 benchmarks/bench.py --out "$OUT/knob_$name" \
      --ops sample --vocab 131072 --dtypes float32 --batch 1,32 --workloads zipf --scenarios topp0.9 \
      --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^sample" \
      | sed "s/^/$name /" | cut -c1-150
  done
  gpu_tests s15b_rest "${REST_S:-200}" "$s::test_gpu_batch_invariant" "$s::test_gpu_cuda_graph_capture_and_replay" \
    "$s::test_gpu_reproducible" "$s::test_gpu_public_api_torch_and_1d"
fi
# split_vs_one SECONDS VOCABS DTYPES WORKLOADS: the rejection draw's host time at B = 1, then the
# sampler bench (topp0.9, B = 1 ... 128) with the small-batch split forced on and off
split_vs_one() {
  timeout 40 python3 benchmarks/host_overhead.py --out "$OUT/host1" --batch 1 \
    --only "public sample p0.9" --rows 3 2>&1 | grep "host" | head -1
  for env in "QRITA_REJECT_SPLIT_B=256" "QRITA_REJECT_SPLIT_B=0"; do
    name=$(echo "$env" | tr '=' '_')
    env $env timeout "$1" python3 benchmarks/bench.py --out "$OUT/sample_$name" --ops sample \
      --vocab "$2" --dtypes "$3" --batch 1,8,32,64,128 --workloads "$4" \
      --scenarios topp0.9 --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress \
      --peers '' > "$OUT/bench_sample_$name.log" 2>&1
    echo "bench $name exit $?"; grep -E "^sample" "$OUT/bench_sample_$name.log" | cut -c1-120
  done
}
if [[ $stage == s15c ]]; then  # the split's single scratch buffer: its GPU test, host time at B = 1, split vs one program at B <= 128; then the owed mask / top_k GPU tests
  gpu_tests s15c "${TESTS_S:-90}" tests/test_triton_reject_topp.py
  split_vs_one 60 131072 float32 zipf,gaussian
  t=tests/test_triton_top_k.py; m=tests/test_triton_masks.py
  gpu_tests s15c_owed "${OWED_S:-150}" "$m::test_gpu_real_vocab" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$t::test_gpu_top_k_real_vocab" "$m::test_gpu_batches"
fi
if [[ $stage == s16a ]]; then  # next session, call 1: the split with 3 launches (the last check finishes), one scratch view, knobs read once (written without a GPU): its GPU tests, host time at B = 1, split vs one program up to B = 128 (decides QRITA_REJECT_SPLIT_B)
  gpu_tests s16a "${TESTS_S:-150}" tests/test_triton_reject_topp.py
  split_vs_one 90 32768,131072,262144 float32,bfloat16 zipf
fi
if [[ $stage == s16b ]]; then  # the split with several groups per program (grid (B, P)): its GPU test (tokens equal for any P), split vs one program per row up to B = 1024, the programs-per-launch target and warps
  gpu_tests s16b "${TESTS_S:-120}" tests/test_triton_reject_topp.py::test_gpu_reject_topp_real_vocab
  for env in "QRITA_REJECT_SPLIT_B=0" "QRITA_REJECT_SPLIT_B=4096" \
      "QRITA_REJECT_SPLIT_B=4096 QRITA_REJECT_SPLIT_PROGRAMS=16384" \
      "QRITA_REJECT_SPLIT_B=4096 QRITA_REJECT_SPLIT_PROGRAMS=1024" \
      "QRITA_REJECT_SPLIT_B=4096 QRITA_REJECT_SPLIT_WARPS=8"; do
    name=$(echo "$env" | tr '= ' '_-')
    env $env timeout "${BENCH_S:-70}" python3 benchmarks/bench.py --out "$OUT/big_$name" --ops sample \
      --vocab 131072 --dtypes float32 --batch 64,256,1024 --workloads zipf \
      --scenarios topp0.9 --warmup 5 --rep 20 --check-rows 2 --no-progress \
      --peers '' 2>&1 | grep -E "^sample" | sed "s/^/$name /" | cut -c1-150
  done
  timeout "${BENCH_S:-70}" python3 benchmarks/bench.py --out "$OUT/small" --ops sample \
    --vocab 131072 --dtypes float32 --batch 1,32 --workloads zipf --scenarios topp0.9 --graphs \
    --warmup 5 --rep 20 --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^sample" | cut -c1-150
fi
if [[ $stage == s16c ]]; then  # the split's groups per program loaded one tile ahead: its GPU test, then tiles / warps / programs per launch at B = 1 ... 1024 against one program per row (decides whether the split serves every B)
  gpu_tests s16c "${TESTS_S:-120}" tests/test_triton_reject_topp.py::test_gpu_reject_topp_real_vocab
  for env in "QRITA_REJECT_SPLIT_B=0" "QRITA_REJECT_SPLIT_B=4096" \
      "QRITA_REJECT_SPLIT_B=4096 QRITA_REJECT_SPLIT_WARPS=8" \
      "QRITA_REJECT_SPLIT_B=4096 QRITA_REJECT_SPLIT_WARPS=8 QRITA_REJECT_SPLIT_PROGRAMS=2048" \
      "QRITA_REJECT_SPLIT_B=4096 QRITA_REJECT_SPLIT_WARPS=8 QRITA_REJECT_SPLIT_BLOCK=2048 QRITA_REJECT_SPLIT_GROUP=1" \
      "QRITA_REJECT_SPLIT_B=4096 QRITA_REJECT_SPLIT_WARPS=8 QRITA_REJECT_SPLIT_BLOCK=2048 QRITA_REJECT_SPLIT_GROUP=1 QRITA_REJECT_SPLIT_PROGRAMS=1024"; do
    name=$(echo "$env" | sed 's/QRITA_REJECT_SPLIT_//g' | tr '= ' '_-')
    env $env timeout "${BENCH_S:-70}" python3 benchmarks/bench.py --out "$OUT/c_$name" --ops sample \
      --vocab 131072 --dtypes float32 --batch ${SIZES:-1,32,256,1024} --workloads zipf \
      --scenarios topp0.9 --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress \
      --peers '' 2>&1 | grep -E "^sample" | sed "s/^/$name /" | cut -c1-140
  done
fi
if [[ $stage == s16d ]]; then  # the split at every batch size (2048 x 1, 8 warps): the sampler's GPU tests, the sampler bench, the programs-per-launch target at B = 256 / 1024
  s=tests/test_triton_sampling.py
  gpu_tests s16d "${TESTS_S:-300}" tests/test_triton_reject_topp.py \
    "$s::test_gpu_batch_invariant" "$s::test_gpu_cuda_graph_capture_and_replay" "$s::test_gpu_reproducible" \
    "$s::test_gpu_public_api_torch_and_1d" "$s::test_gpu_fused_samplers_reproducible_invariant_capturable" \
    "$s::test_gpu_support_and_fit_over_many_draws"
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT/sample" --ops sample \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64,256,1024 --workloads zipf,gaussian \
    --scenarios topp0.9,topp0.99 --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress \
    > "$OUT/bench_sample.log" 2>&1
  echo "bench exit $?"; grep -E "^sample" "$OUT/bench_sample.log" | cut -c1-130
  for n in 16384 1024; do
    QRITA_REJECT_SPLIT_PROGRAMS=$n timeout 60 python3 benchmarks/bench.py --out "$OUT/programs_$n" --ops sample \
      --vocab 131072 --dtypes float32 --batch 256,1024 --workloads zipf --scenarios topp0.9 \
      --warmup 5 --rep 20 --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^sample" | sed "s/^/programs $n /" | cut -c1-130
  done
fi
if [[ $stage == s17a ]]; then  # next session, call 1 (written without a GPU): the split's stats kernel by row kind (greedy: first of order only; others: mass and +inf count only; 71 registers, was 78) and the read-ahead of 2 tiles (QRITA_REJECT_SPLIT_AHEAD=2): GPU tests, bench against the sixteenth session's 591 us
  s=tests/test_triton_sampling.py
  gpu_tests s17a "${TESTS_S:-240}" tests/test_triton_reject_topp.py "$s::test_gpu_batch_invariant" \
    "$s::test_gpu_fused_samplers_reproducible_invariant_capturable"
  for env in "QRITA_REJECT_SPLIT_AHEAD=1" "QRITA_REJECT_SPLIT_AHEAD=2" "QRITA_REJECT_SPLIT=0"; do
    name=$(echo "$env" | tr '=' '_')
    env $env timeout "${BENCH_S:-70}" python3 benchmarks/bench.py --out "$OUT/$name" --ops sample \
      --vocab 131072 --dtypes float32,bfloat16 --batch 1,32,256,1024 --workloads zipf \
      --scenarios topp0.9 --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress \
      --peers '' 2>&1 | grep -E "^sample" | sed "s/^/$name /" | cut -c1-140
  done
fi
if [[ $stage == s17b ]]; then  # the GPU tests of masks / top_k still owed after the sixteenth session's call 6 (stopped at 320 s)
  t=tests/test_triton_top_k.py; m=tests/test_triton_masks.py
  gpu_tests s17b "${TESTS_S:-400}" "$m::test_gpu_real_vocab[151936-float16]" "$m::test_gpu_real_vocab[262144-bfloat16]" \
    "$t::test_gpu_top_k_real_vocab" "$m::test_gpu_batches"
fi
# bench_ab OP SCENARIOS SECONDS BATCHES ENV...: the OP bench (fp32, zipf and gaussian, V = 131072,
# eager and graph replay, every cell checked first) once per environment setting, into <setting>/
bench_ab() {
  local op=$1 scenarios=$2 seconds=$3 batches=$4 env name; shift 4
  for env in "$@"; do
    name=$(echo "$env" | tr ' =,' '___')
    env $env timeout "$seconds" python3 benchmarks/bench.py --out "$OUT/$name" --ops "$op" \
      --vocab 131072 --dtypes float32 --batch "$batches" --workloads zipf,gaussian \
      --scenarios "$scenarios" --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress \
      --peers '' 2>&1 | grep -E "^$op" | cut -c1-110 | sed "s/^/$name /"
  done
}
# sample_ab SECONDS BATCHES ENV...: the sampler's topp0.9 (A/B of a measuring knob)
sample_ab() { bench_ab sample topp0.9 "$@"; }
# sample_profile ENV...: the rejection draw's kernel profile (zipf and gaussian topp0.9, B = 1024,
# fp32) once per environment setting, into profile_<setting>/
sample_profile() {
  for env in "$@"; do
    name=$(echo "$env" | tr ' =' '__')
    env $env timeout "${PROFILE_S:-50}" python3 benchmarks/profile_pipeline.py \
      --out "$OUT/profile_$name" --batch 1024 --dtypes float32 --workloads zipf,gaussian \
      --scenarios sample_topp0.9 2>&1 | cut -c1-400 | grep -E "^(zipf|gaussian)"
  done
}
# host_costs: host time per call at B = 1 and the adapters' cost per call (issue 5)
host_costs() {
  timeout 50 python3 benchmarks/host_overhead.py --out "$OUT/host" --rows 30 \
    --only "public sample p0.9,public topk50 mask,public top_k k50" > "$OUT/host_overhead.txt" 2>&1
  grep -E "^(public|topk|torch)" "$OUT/host_overhead.txt" | head -12
  timeout 80 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -12
}
if [[ $stage == s17c ]]; then  # seventeenth session, call 3: no compile per seed / offset / p (do_not_specialize), round 0 kept on the group bound, grid (P, B); GPU tests, A/B bench, the sampler's kernel profile
  s=tests/test_triton_sampling.py
  gpu_tests s17c "${TESTS_S:-280}" tests/test_triton_reject_topp.py \
    "$s::test_gpu_no_compile_per_seed_offset_or_p" "$s::test_gpu_batch_invariant" \
    "$s::test_gpu_cuda_graph_capture_and_replay" "$s::test_gpu_public_api_torch_and_1d" \
    tests/test_fastlaunch.py tests/test_backend_gpu.py::test_jax_jit_sampler_runs_on_the_device
  sample_ab "${BENCH_S:-45}" 1,64,1024 QRITA_REJECT_BOUND=1 QRITA_REJECT_BOUND=0 \
    QRITA_REJECT_SPLIT_ROWS_LAST=1
  timeout "${PROFILE_S:-80}" python3 benchmarks/profile_pipeline.py --out "$OUT/profile" \
    --batch 1,1024 --dtypes float32 --workloads zipf,gaussian \
    --scenarios sample_topp0.9,sample_topk100_topp0.9 2>&1 | cut -c1-400 | tail -10
fi
if [[ $stage == s17e ]]; then  # call 4: the checks' value compares and their own program target; host and adapter cost per call (issue 5); the sampler bench at the defaults
  s=tests/test_triton_sampling.py
  gpu_tests s17e "${TESTS_S:-150}" tests/test_triton_reject_topp.py "$s::test_gpu_batch_invariant" \
    "$s::test_gpu_cuda_graph_capture_and_replay"
  sample_ab "${AB_S:-40}" 64,1024 QRITA_REJECT_CHECK_PROGRAMS=0 \
    QRITA_REJECT_CHECK_PROGRAMS=16384 QRITA_REJECT_CHECK_PROGRAMS=65536
  host_costs
  timeout "${BENCH_S:-140}" python3 benchmarks/bench.py --out "$OUT/sample" --ops sample \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64,256,1024 --workloads zipf,gaussian \
    --scenarios topp0.9,topk100_topp0.9 --graphs --warmup 5 --rep 20 --check-rows 2 \
    --no-progress --peers '' 2>&1 | grep -E "^sample" | cut -c1-140
fi
if [[ $stage == s18a ]]; then  # next session, call 1 (written without a GPU): the sampler GPU tests owed since call 4, the JAX direct import's fix (jax_dlpack_probe) and the adapters' cost after the JAX / CuPy adapter changes, the bound with the groups' near masses (QRITA_REJECT_BOUND=2) against the default
  s=tests/test_triton_sampling.py
  gpu_tests s18a "${TESTS_S:-270}" "$s::test_gpu_batch_invariant" \
    "$s::test_gpu_cuda_graph_capture_and_replay" "$s::test_gpu_reproducible" \
    tests/test_backend_gpu.py tests/test_triton_reject_topp.py::test_gpu_reject_topp_real_vocab
  timeout 60 python3 benchmarks/jax_dlpack_probe.py --out "$OUT" 2>&1 | grep -v Warn | tail -30
  host_costs
  sample_ab "${AB_S:-40}" 1,64,1024 QRITA_REJECT_BOUND=1 QRITA_REJECT_BOUND=2
fi
if [[ $stage == s18b ]]; then  # call 3: more check launches (a row's rounds past the last launch run in one program, a latency tail) with the bound at 1 and 2; the reject GPU test (bound 2 compared); where the adapters' host time goes (cProfile); the kernels' profile
  gpu_tests s18b "${TESTS_S:-150}" tests/test_triton_reject_topp.py::test_gpu_reject_topp_real_vocab
  sample_ab "${AB_S:-36}" 64,1024 "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=2" \
    "QRITA_REJECT_CHECKS=4 QRITA_REJECT_BOUND=2" "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=1"
  sample_profile "QRITA_REJECT_CHECKS=2 QRITA_REJECT_BOUND=2" \
    "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=2"
  timeout "${ADAPTER_S:-90}" python3 benchmarks/adapter_profile.py --calls 1000 --out "$OUT" \
    2>&1 | grep -v Warn | head -12
fi
if [[ $stage == s18c ]]; then  # call 4: fewer reductions per entry in the split (groups of 2 or 4 tiles, or 4096-entry tiles; the statistics kernel is bound by its per-group reductions: one more cost 31 µs at B = 1024), 3 check launches
  sample_ab "${AB_S:-34}" 1,64,1024 \
    "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=2 QRITA_REJECT_SPLIT_GROUP=2" \
    "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=1 QRITA_REJECT_SPLIT_GROUP=2" \
    "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=2 QRITA_REJECT_SPLIT_GROUP=4" \
    "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=2 QRITA_REJECT_SPLIT_BLOCK=4096" \
    "QRITA_REJECT_CHECKS=3 QRITA_REJECT_BOUND=2"
fi
if [[ $stage == s18d ]]; then  # call 5 (final kernels: groups of 2, 3 checks, bound 2): the CuPy adapter's bare capsules (GPU tests, cost per call), the pair reductions and read-ahead A/B, the sampler GPU tests
  s=tests/test_triton_sampling.py
  gpu_tests s18d_cupy "${CUPY_S:-70}" tests/test_backend_gpu.py -k cupy
  sample_ab "${AB_S:-34}" 1,64,1024 QRITA_REJECT_FUSED=1 QRITA_REJECT_FUSED=0 \
    QRITA_REJECT_SPLIT_AHEAD=2
  timeout 80 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -12
  gpu_tests s18d "${TESTS_S:-240}" tests/test_triton_reject_topp.py::test_gpu_reject_topp_real_vocab \
    "$s::test_gpu_batch_invariant" "$s::test_gpu_cuda_graph_capture_and_replay" \
    "$s::test_gpu_reproducible"
fi
if [[ $stage == s19a ]]; then  # next session, call 1 (written without a GPU): the split with one-warp programs, whose group reductions need no barrier (sm90 AOT: 23 bar.sync -> 3 in the statistics kernel, 108 registers at 512 x 8), groups of 4096 entries as now; then their kernel profile
  W1="QRITA_REJECT_SPLIT_WARPS=1 QRITA_REJECT_SPLIT_BLOCK=512 QRITA_REJECT_SPLIT_GROUP=8"
  W2="QRITA_REJECT_SPLIT_WARPS=2 QRITA_REJECT_SPLIT_BLOCK=1024 QRITA_REJECT_SPLIT_GROUP=4"
  W4="QRITA_REJECT_SPLIT_WARPS=4 QRITA_REJECT_SPLIT_BLOCK=1024 QRITA_REJECT_SPLIT_GROUP=4"
  sample_ab "${AB_S:-34}" 1,64,1024 QRITA_REJECT_SPLIT_WARPS=8 \
    "$W1 QRITA_REJECT_SPLIT_PROGRAMS=16384" "$W1 QRITA_REJECT_SPLIT_PROGRAMS=32768" \
    "$W2 QRITA_REJECT_SPLIT_PROGRAMS=8192" "$W4 QRITA_REJECT_SPLIT_PROGRAMS=8192"
  sample_profile QRITA_REJECT_SPLIT_WARPS=8 "$W1 QRITA_REJECT_SPLIT_PROGRAMS=16384"
fi
if [[ $stage == s19b ]]; then  # nineteenth session, call 2: which of s19a's winner's knobs (4 warps, 1024-entry tiles, groups of 4, 8192 programs: 259 / 268 µs at B = 1024) does it
  W4="QRITA_REJECT_SPLIT_WARPS=4 QRITA_REJECT_SPLIT_BLOCK=1024 QRITA_REJECT_SPLIT_GROUP=4"
  sample_ab "${AB_S:-34}" 1,64,1024 "$W4 QRITA_REJECT_SPLIT_PROGRAMS=8192" \
    "$W4 QRITA_REJECT_SPLIT_PROGRAMS=4096" "$W4 QRITA_REJECT_SPLIT_PROGRAMS=16384" \
    "QRITA_REJECT_SPLIT_WARPS=4 QRITA_REJECT_SPLIT_PROGRAMS=8192" \
    "QRITA_REJECT_SPLIT_WARPS=8 QRITA_REJECT_SPLIT_PROGRAMS=8192" \
    "QRITA_REJECT_SPLIT_WARPS=4 QRITA_REJECT_SPLIT_BLOCK=512 QRITA_REJECT_SPLIT_GROUP=8 QRITA_REJECT_SPLIT_PROGRAMS=8192" \
    "QRITA_REJECT_SPLIT_WARPS=2 QRITA_REJECT_SPLIT_BLOCK=512 QRITA_REJECT_SPLIT_GROUP=8 QRITA_REJECT_SPLIT_PROGRAMS=8192"
  sample_profile "$W4 QRITA_REJECT_SPLIT_PROGRAMS=8192"
fi
if [[ $stage == s19c ]]; then  # call 3: the new split defaults (4 warps, tiles of 1024, groups of 4, 8192 programs): the sampler's GPU tests, the sampler bench (fp32 and bf16, both workloads), read-ahead at the new tiles
  s=tests/test_triton_sampling.py
  gpu_tests s19c "${TESTS_S:-240}" tests/test_triton_reject_topp.py::test_gpu_reject_topp_real_vocab \
    "$s::test_gpu_batch_invariant" "$s::test_gpu_cuda_graph_capture_and_replay" \
    "$s::test_gpu_reproducible"
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT/bench" --ops sample \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64,256,1024 --workloads zipf,gaussian \
    --scenarios topp0.9,topk100_topp0.9 --graphs --warmup 5 --rep 20 --check-rows 2 \
    --no-progress 2>&1 | grep -E "^sample" | cut -c1-140
  sample_ab "${AB_S:-34}" 1,64,1024 QRITA_REJECT_SPLIT_AHEAD=2
fi
# mask_ab SECONDS BATCHES ENV...: the top-p masks, topp0.9 and topk100_topp0.9
mask_ab() { bench_ab masks topp0.9,topk100_topp0.9 "$@"; }
if [[ $stage == s19d ]]; then  # call 4: the top-p masks' prepared, never-measured A/Bs: pass A's lean masses (lean=1x0) and the 16-way rounds split over 2 / 4 programs per segment (roundsplit), B = 1 to 1024; then kernel profiles
  mask_ab "${AB_S:-60}" 1,8,64,256,1024 QRITA_LAUNCH_TABLE=default QRITA_LAUNCH_TABLE=lean=1x0 \
    QRITA_LAUNCH_TABLE=roundsplit=2x0 QRITA_LAUNCH_TABLE=roundsplit=4x0 \
    QRITA_LAUNCH_TABLE=lean=1x0,roundsplit=4x0
  KNOB_S=60 prof default topp0.9 zipf,gaussian
  KNOB_S=60 prof lean_split4 topp0.9 zipf,gaussian QRITA_LAUNCH_TABLE=lean=1x0,roundsplit=4x0
fi
if [[ $stage == s19e ]]; then  # call 5: the masks at lean pass A + rounds over 2 programs (new defaults): the top-p masks bench (fp32 and bf16), then the masks' GPU tests
  timeout "${BENCH_S:-120}" python3 benchmarks/bench.py --out "$OUT/bench" --ops masks \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64,256,1024 --workloads zipf,gaussian \
    --scenarios topp0.9,topk100_topp0.9 --graphs --warmup 5 --rep 20 --check-rows 2 \
    --no-progress --peers '' 2>&1 | grep -E "^masks" | cut -c1-110
  m=tests/test_triton_masks.py
  gpu_tests s19e "${TESTS_S:-330}" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$m::test_gpu_cuda_graph_capture_and_replay" "$m::test_gpu_batches" "$m::test_gpu_real_vocab"
fi
if [[ $stage == s19f ]]; then  # call 6 (short): is the token the same with 1, 2 and 3 check launches (then small batches could take 1: two launches fewer, less host time), and the B <= 64 A/B; then the bf16 top-p masks' profile
  timeout "${ID_S:-60}" python3 benchmarks/checks_identity.py 2>&1 | tail -14
  sample_ab "${AB_S:-30}" 1,8,64 QRITA_REJECT_CHECKS=3 QRITA_REJECT_CHECKS=1
  PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-60}" prof b16 topp0.9 zipf
fi
if [[ $stage == s20a ]]; then  # next session, call 1 (written without a GPU): the masks at the 1024 x 4 write tile (nineteenth session: profiled, never checked against the oracle there) and the launch sites (fastlaunch.launch_site: CPU-tested only): the bench (every bench cell is checked first), host time per call at B = 1, then fastlaunch's and the masks' GPU tests, (262144, bf16) first
  timeout "${BENCH_S:-200}" python3 benchmarks/bench.py --out "$OUT/bench" --ops masks,top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64,256,1024 --workloads zipf,gaussian \
    --scenarios topk50,topk1000,topp0.9,topk100_topp0.9,k50,k1000 --graphs --warmup 5 --rep 20 \
    --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^(masks|top_k)" | cut -c1-110
  # host time per call at B = 1 since the launch sites (nineteenth session, CPU-measured only)
  timeout 60 python3 benchmarks/host_overhead.py --out "$OUT/host" --rows 25 \
    --only "public sample p0.9,public topk50 mask,public top_k k50,topp0.9" \
    > "$OUT/host_overhead.txt" 2>&1; grep -E "^(public|topp)" "$OUT/host_overhead.txt" | head -8
  m=tests/test_triton_masks.py
  gpu_tests s20a "${TESTS_S:-330}" tests/test_fastlaunch.py "$m::test_gpu_real_vocab[262144-bfloat16]" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_cuda_graph_capture_and_replay" \
    "$m::test_gpu_batches" "$m::test_gpu_real_vocab"
fi
if [[ $stage == s20b ]]; then  # call 2: the bench at B = 256 and 1024 (zipf, fp32 and bf16, every cell checked first: the 1024 x 4 write tile at large batches), then the sampler's GPU tests at the launch sites and the masks' bf16 real-vocab tests
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT/bench" --ops masks,top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1024,256 --workloads zipf \
    --scenarios topk50,topk1000,topp0.9,topk100_topp0.9,k50,k1000 --graphs --warmup 5 --rep 20 \
    --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^(masks|top_k)" | cut -c1-110
  s=tests/test_triton_sampling.py
  gpu_tests s20b "${TESTS_S:-300}" tests/test_triton_reject_topp.py::test_gpu_reject_topp_real_vocab \
    "$s::test_gpu_batch_invariant" "$s::test_gpu_cuda_graph_capture_and_replay" "$s::test_gpu_reproducible" \
    "$s::test_gpu_fused_samplers_reproducible_invariant_capturable" \
    tests/test_triton_masks.py::test_gpu_real_vocab -k "not float32 or reject or sampl"
fi
if [[ $stage == s20c ]]; then  # call 3: pass A without masses for top-k rows (top-k + top-p): the masks' bench (checked first), the threshold kernel's warps A/B, then the masks' GPU tests
  timeout "${BENCH_S:-100}" python3 benchmarks/bench.py --out "$OUT/bench" --ops masks \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1024,256 --workloads zipf,gaussian \
    --scenarios topk100_topp0.9,topk50 --graphs --warmup 5 --rep 20 --check-rows 2 \
    --no-progress --peers '' 2>&1 | grep -E "^masks" | cut -c1-110
  bench_ab masks topk100_topp0.9 "${AB_S:-40}" 1024 QRITA_LAUNCH_TABLE=search=1024x4 \
    QRITA_LAUNCH_TABLE=search=1024x16
  m=tests/test_triton_masks.py
  gpu_tests s20c "${TESTS_S:-200}" "$m::test_gpu_batches" "$m::test_gpu_top_k_retry_rows_exact" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_real_vocab" -k "not bfloat16 and not float16"
fi
if [[ $stage == s21a ]]; then  # next session, call 1 (written without a GPU): issue 3's memory target (extra memory at most 2% of the logits at B >= 64: 33 MiB = 6.4% at B = 1024 fp32 now) by row chunks (QRITA_CHUNK_ROWS, never measured): time and peak extra memory per chunk size, then the 16-bit real-vocab masks tests not yet run at the lean top-k + top-p pass A
  for c in 0 256 128; do
    bench_ab masks topk50,topp0.9,topk100_topp0.9 "${AB_S:-60}" 1024,256 QRITA_CHUNK_ROWS=$c
  done
  m=tests/test_triton_masks.py
  gpu_tests s21a "${TESTS_S:-300}" "$m::test_gpu_real_vocab" -k "not float32"
fi
if [[ $stage == s21b ]]; then  # next session, call 2 (written without a GPU): small-batch top-k
  # small batches: graph replay takes the pipeline, whose one-warp pass A is latency-bound at
  # B = 1 (twentieth session: topk50 62.6 us graph vs 41.5 eager through the one-launch kernel):
  # pass A's own tile / warps for top-k alone (candsmall), and the one-launch kernel in graphs
  for op in masks top_k; do
    sc=$([[ $op == masks ]] && echo topk50,topk1000 || echo k50,k1000)
    bench_ab $op $sc "${AB_S:-60}" 1,8,64 QRITA_LAUNCH_TABLE=default \
      QRITA_LAUNCH_TABLE=candsmall=512x4 QRITA_LAUNCH_TABLE=candsmall=512x8 \
      QRITA_LAUNCH_TABLE=candsmall=1024x8 QRITA_ONE_LAUNCH=1
  done
fi
if [[ $stage == s22a ]]; then  # twenty-first session, call 3: candsmall on by default (B <= 8) and the small-k search's own slots (cap_small, 1024): GPU tests of top-k alone at small batches in a graph, batch invariance and batches, then the top-k bench (memory column) and the cap_small A/B at B = 1024, 64
  m=tests/test_triton_masks.py
  gpu_tests s22a "${TESTS_S:-300}" "$m::test_gpu_small_batch_top_k_in_a_graph" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$m::test_gpu_batches" \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    tests/test_triton_top_k.py::test_gpu_top_k_cuda_graph
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT/bench" --ops masks,top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64,256,1024 --workloads zipf,gaussian \
    --scenarios topk50,topk1000,k50,k1000 --graphs --warmup 5 --rep 20 \
    --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^(masks|top_k)" | cut -c1-130
  bench_ab masks topk50 "${AB_S:-35}" 1024,64 QRITA_LAUNCH_TABLE=capsmall=0x0
  bench_ab top_k k50 "${AB_S:-35}" 1024,64 QRITA_LAUNCH_TABLE=capsmall=0x0
fi
if [[ $stage == s22c ]]; then  # twenty-first session, last call: the GPU tests of top-k alone at the final defaults (candsmall 1024x8 at B <= 8, the small-k search's 2048 slots, also in the one-launch kernels), the one-launch kernels' slots A/B (graph column: their GPU time), then the top-k bench (fp32 and bf16, memory column)
  m=tests/test_triton_masks.py t=tests/test_triton_top_k.py
  gpu_tests s22c "${TESTS_S:-180}" "$m::test_gpu_small_batch_top_k_in_a_graph" \
    "$m::test_gpu_one_launch_topk_mask" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$t::test_gpu_top_k_real_vocab" "$m::test_gpu_batches"
  for op in masks top_k; do
    sc=$([[ $op == masks ]] && echo topk50 || echo k50)
    bench_ab $op $sc "${AB_S:-22}" 1,8 QRITA_ONE_LAUNCH=1 "QRITA_ONE_LAUNCH=1 QRITA_LAUNCH_TABLE=capsmall=0x0"
  done
  timeout "${BENCH_S:-100}" python3 benchmarks/bench.py --out "$OUT/bench" --ops masks,top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1024,1,8 --workloads zipf,gaussian \
    --scenarios topk50,k50 --graphs --warmup 5 --rep 20 \
    --check-rows 2 --no-progress --peers '' 2>&1 | grep -E "^(masks|top_k)" | cut -c1-130
fi
if [[ $stage == s23a ]]; then  # next session, call 1 (written without a GPU): the GPU tests owed at the twenty-first session's defaults (the one-launch kernels at 2048 slots), then candsmall for top-k + top-p with a scalar k (candsmallkp, off: never measured) at small batches
  m=tests/test_triton_masks.py t=tests/test_triton_top_k.py
  gpu_tests s23a "${TESTS_S:-280}" "$m::test_gpu_one_launch_topk_mask" \
    "$t::test_gpu_top_k_batches_deterministic_invariant" "$t::test_gpu_top_k_cuda_graph" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$t::test_gpu_top_k_real_vocab"
  bench_ab masks topk100_topp0.9 "${AB_S:-40}" 1,8 QRITA_LAUNCH_TABLE=default \
    QRITA_LAUNCH_TABLE=candsmallkp=1x0
fi
if [[ $stage == s23b ]]; then  # twenty-second session, call 2: where B = 1 and 8 spend their time in the pipeline (graph replays' path), then the GPU tests owed at the twenty-first session's defaults and candsmallkp's
  PROF_BATCH=1,8 KNOB_S="${PROF_S:-100}" prof small topk50,k50,topk1000,topp0.9,topk100_topp0.9 zipf \
    QRITA_ONE_LAUNCH=0
  m=tests/test_triton_masks.py t=tests/test_triton_top_k.py
  gpu_tests s23b "${TESTS_S:-360}" "$m::test_gpu_small_batch_top_k_in_a_graph" \
    "$m::test_gpu_one_launch_topk_mask[bfloat16]" "$t::test_gpu_top_k_batches_deterministic_invariant" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_deterministic_and_batch_invariant" \
    "$t::test_gpu_top_k_real_vocab"
fi
if [[ $stage == s23c ]]; then  # twenty-second session, call 3: pass A at B = 1 and 8 (12 us of ~33 at B = 1: 16 programs, ~7 one-by-one appends per 1024-entry tile): prefix sums only, and tiles up to the whole segment
  for table in default sparsesmall=0x0 candsmall=2048x8,sparsesmall=0x0 \
      candsmall=4096x16,sparsesmall=0x0 candsmall=8192x16,sparsesmall=0x0; do
    PROF_BATCH=1,8 KNOB_S="${PROF_S:-70}" prof "$(echo $table | tr '=,' '__')" topk50,k50,topk1000 \
      zipf QRITA_ONE_LAUNCH=0 QRITA_LAUNCH_TABLE=$table
  done
fi
if [[ $stage == s23d ]]; then  # twenty-second session, call 4: the search's and the cutoff kernel's warps at B <= 8 (searchb, cutoffb); the small-batch defaults (candsmall 2048 x 8, prefix sums only; candsmallkp on) on the bench at B = 1, 8, 64 (fp32 and bf16, zipf), then their graph test
  for table in searchb=0x2 searchb=0x8 cutoffb=0x8; do
    PROF_BATCH=1,8 KNOB_S="${PROF_S:-50}" prof "$(echo $table | tr '=,' '__')" topk50,k50,topk1000 \
      zipf QRITA_ONE_LAUNCH=0 QRITA_LAUNCH_TABLE=$table
  done
  timeout "${BENCH_S:-200}" python3 benchmarks/bench.py --out "$OUT/bench" --ops masks,top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,8,64 --workloads zipf \
    --scenarios topk50,topk1000,topk100_topp0.9,k50,k1000 --graphs --warmup 5 --rep 25 \
    --check-rows 4 --no-progress --peers '' > "$OUT/bench_s23d.log" 2>&1
  echo "bench exit $?"; tail -c 5000 "$OUT/bench_s23d.log"
  gpu_tests s23d "${TESTS_S:-150}" tests/test_triton_masks.py::test_gpu_small_batch_top_k_in_a_graph
fi
if [[ $stage == s24a ]]; then  # next session, call 1 (written without a GPU): the small-batch graph and top_k GPU tests at searchb=0x8, flatb=1x0 (the search's 8 warps, measured 1-1.7 us faster, and its flat packing, not measured, at B <= 8: no GPU test yet) and QRITA_SEARCH_FUSED=1 (one reduction per top-k pivot round), their profiles at B = 1 and 8, a bench A/B with oracle checks, then the GPU tests still owed (the one-launch bf16 test, determinism / batch invariance, top_k real vocab)
  m=tests/test_triton_masks.py t=tests/test_triton_top_k.py
  QRITA_SEARCH_FUSED=1 QRITA_LAUNCH_TABLE=searchb=0x8,flatb=1x0 gpu_tests s24a_small "${SMALL_S:-150}" \
    "$m::test_gpu_small_batch_top_k_in_a_graph" "$t::test_gpu_top_k_cuda_graph" \
    "$t::test_gpu_top_k_batches_deterministic_invariant"
  for table in default searchb=0x8 flatb=1x0 searchb=0x8,flatb=1x0; do
    PROF_BATCH=1,8 KNOB_S="${PROF_S:-50}" prof "$(echo $table | tr '=,' '__')" \
      topk50,k50,topk100_topp0.9 zipf QRITA_ONE_LAUNCH=0 QRITA_LAUNCH_TABLE=$table
  done
  PROF_BATCH=1,8 KNOB_S="${PROF_S:-50}" prof fused_default topk50,k50,topk100_topp0.9 zipf \
    QRITA_ONE_LAUNCH=0 QRITA_SEARCH_FUSED=1
  PROF_BATCH=1,8 KNOB_S="${PROF_S:-50}" prof fused_searchb_flatb topk50,k50,topk100_topp0.9 zipf \
    QRITA_ONE_LAUNCH=0 QRITA_SEARCH_FUSED=1 QRITA_LAUNCH_TABLE=searchb=0x8,flatb=1x0
  bench_ab masks topk50,topk100_topp0.9 "${AB_S:-45}" 1,8 QRITA_LAUNCH_TABLE=default \
    "QRITA_SEARCH_FUSED=1 QRITA_LAUNCH_TABLE=searchb=0x8,flatb=1x0"
  gpu_tests s24a "${TESTS_S:-240}" "$m::test_gpu_one_launch_topk_mask[bfloat16]" \
    "$m::test_gpu_deterministic_and_batch_invariant" "$t::test_gpu_top_k_real_vocab"
fi
if [[ $stage == s34a ]]; then  # thirty-fourth session, call 2 (~500 s warm): the new tests on the GPU (the top-p cutoff's skipped search, the wide compaction's loop without NaN terms and its exp2 weights: bit-equal statistics there), then fp32 and bf16 top-p profiles of wideunswitch / wideexp2 against the default on the same inputs (the default includes the cutoff's skip: its kernel against s33c's 44 us)
  timeout "${KNOB_TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_wide.py tests/test_triton_masks.py tests/test_triton_primitives.py \
    -k "lean_compaction or exp2 or unswitched or top_p_cutoff" 2>&1 \
    | tee "$OUT/pytest_knobs.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-70}" prof_tables t_ topp0.9,topp0.99 zipf \
    ${TABLES:-default wideunswitch=1x0 wideunswitch=1x0,wideexp2=1x0}
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-70}" \
    prof_tables bf16_ topp0.9,topp0.99 zipf ${TABLES16:-default wideunswitch=1x0,wideexp2=1x0}
fi
if [[ $stage == s34b ]]; then  # thirty-fourth session's call 3 (~330 s warm): the GPU tests at the defaults with the cutoff's skipped search (TABLE: a launch table to run them at, e.g. the knobs s34a made the defaults)
  QRITA_LAUNCH_TABLE="${TABLE:-}" gpu_tests s34b "${TESTS_S:-320}" tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant tests/test_triton_masks.py::test_gpu_batches tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay tests/test_triton_masks.py::test_gpu_top_k_retry_rows_exact "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]" tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant
fi
if [[ $stage == s36a ]]; then  # thirty-sixth session, call 1 (~480 s cold): the fixed-point tests on the GPU, the batch-invariance and graph tests with the histogram band, another compaction tile and the rounds split over more programs at B <= 64 (TABLE), then fp32 top-p profiles of the default against widefixed with them (TABLES)
  timeout "${KNOB_TESTS_S:-110}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_wide.py tests/test_triton_masks.py -k "fixed" 2>&1 \
    | tee "$OUT/pytest_fixed.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  QRITA_LAUNCH_POINTERS=1 QRITA_LAUNCH_TABLE="${TABLE:-widefixed=1x0,histsmall=64x0,widesmall=512x4,roundsmall=8x0}" \
    gpu_tests s36a "${TESTS_S:-150}" tests/test_fastlaunch.py::test_gpu_outputs_with_addresses \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    tests/test_triton_masks.py::test_gpu_batches tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay
  timeout 60 python3 benchmarks/fastlaunch_overhead.py --n 2000 --repeats 7 --out "$OUT" 2>&1 | tail -8
  # host time per eager call, tensors to the launcher as tensors (0) or addresses (1), alternated
  for round in 1 2 3; do for ptr in 0 1; do
    QRITA_LAUNCH_POINTERS=$ptr timeout 60 python3 benchmarks/host_overhead.py --out "$OUT/host_${ptr}_$round" \
      --rows 12 --only "public topp0.9 mask,public topk50 mask,public top_k k50,public sample p0.9" 2>&1 \
      | grep 'B=1' | sed "s/^/ptr=$ptr round $round: /"
  done; done
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-55}" prof_tables t_ topp0.9,topp0.99 zipf \
    ${TABLES:-default widefixed=1x0,histsmall=64x0 widefixed=1x0,histsmall=64x0,widesmall=512x4,roundsmall=8x0}
fi
if [[ $stage == s36c ]]; then  # thirty-sixth session, the short form of s36a (~330 s cold) for a call with little device time: the fixed-point tests, the launcher's cost with addresses, one round of host time both ways, and fp32 top-p profiles of the default against widefixed with the small batches' settings
  timeout "${KNOB_TESTS_S:-80}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_wide.py tests/test_triton_masks.py -k "fixed" 2>&1 \
    | tee "$OUT/pytest_fixed.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  timeout 40 python3 benchmarks/fastlaunch_overhead.py --n 2000 --repeats 5 --out "$OUT" 2>&1 | tail -8
  for ptr in 0 1; do
    QRITA_LAUNCH_POINTERS=$ptr timeout 50 python3 benchmarks/host_overhead.py --out "$OUT/host_$ptr" \
      --rows 12 --only "public topp0.9 mask,public top_k k50" 2>&1 | grep 'B=1' | sed "s/^/ptr=$ptr: /"
  done
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-60}" prof_tables t_ topp0.9 zipf \
    ${TABLES:-default widefixed=1x0,histsmall=64x0,widesmall=512x4,roundsmall=8x0}
fi
if [[ $stage == s36b ]]; then  # thirty-sixth session, call 2 (~400 s warm): more fp32 tables (TABLES), then bf16 top-p, default against widefixed with the small batches' settings (TABLES16)
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-55}" prof_tables t_ topp0.9,topp0.99 zipf \
    ${TABLES:-widefixed=1x0 widefixed=1x0,histsmall=64x0,widesmall=256x2,roundsmall=4x0 widefixed=1x0,histsmall=64x0,widesmall=512x4,roundsmall=8x0,wideunswitch=1x0}
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-55}" \
    prof_tables bf16_ topp0.9 zipf ${TABLES16:-default widefixed=1x0,histsmall=64x0,widesmall=512x4,roundsmall=8x0}
fi
if [[ $stage == s37a ]]; then  # thirty-seventh session, call 2 (~540 s cold): the GPU tests at the new defaults (fixed-point masses, the histogram band at B <= 64, the small batches' compaction tile at B <= 8, addresses to the launcher) and of the eager graphs, then fp32 top-p profiles at B = 1, 8, 256 of the old default, the new one and the new one without the small batches' tile, eager graphs' profiles at B = 1, 8, and bf16 of the old and new defaults
  gpu_tests s37a "${TESTS_S:-250}" tests/test_eager_graph.py \
    tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]" \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,8,256} KNOB_S="${PROF_S:-45}" prof_tables t_ topp0.9 zipf \
    ${TABLES:-widefixed=0x0,histsmall=0x0 default widesmall=0x0}
  PROF_BATCH=1,8 KNOB_S="${PROF_S:-45}" prof eager_graphs topp0.9,topk50,topk100_topp0.9 zipf \
    QRITA_EAGER_GRAPHS=1
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B16:-1,1024} PROF_DTYPES=bfloat16 KNOB_S="${PROF_S16:-45}" \
    prof_tables bf16_ topp0.9 zipf ${TABLES16:-widefixed=0x0,histsmall=0x0 default}
fi
if [[ $stage == s37b ]]; then  # thirty-seventh session, call 3 (~420 s cold): the eager graphs (now on) and the batch-invariance, batches and real-vocabulary GPU tests at the new defaults, then bf16 B = 1024 top-p of the old and new defaults
  gpu_tests s37b "${TESTS_S:-300}" tests/test_eager_graph.py \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    tests/test_triton_masks.py::test_gpu_batches \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]"
  # shellcheck disable=SC2086
  PROF_BATCH=1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S16:-45}" \
    prof_tables bf16_ topp0.9 zipf ${TABLES16:-widefixed=0x0,histsmall=0x0 default}
fi
if [[ $stage == s39a ]]; then  # thirty-ninth session, call 1 (~450 s cold): the eager graphs' GPU tests (warm-up on the capture's path; the opt-in in-place masks, sampler graphs, top_k and masks by address)
  gpu_tests s39a "${TESTS_S:-450}" tests/test_eager_graph.py
  pack_cache
fi
if [[ $stage == s40b ]]; then  # call 2 (~550 s warm): s39b without the probe (s40d ran it): the sampler with and without its graphs, host time, the adapters, the B = 1 / 8 top-p profiles with histsplit=4x0, bf16 against fp32 at B = 1024
  sample_graphs_ab "${SAMPLE_S:-90}" "${BATCHES:-1,8,64}"
  QRITA_EAGER_GRAPHS_SAMPLE=1 timeout 45 python3 benchmarks/host_overhead.py --out "$OUT/host_1" --rows 12 \
    --only "public topp0.9 mask,public topk50 mask,public top_k k50,public sample p0.9,public sample k100 p0.9" 2>&1 | grep 'B=1'
  timeout 60 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -25
  PROF_BATCH=1,8 KNOB_S="${PROF_S:-60}" prof_tables small_ topp0.9 zipf default histsplit=4x0
  PROF_BATCH=1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-90}" prof big topk50,topp0.9 zipf
fi
if [[ $stage == s40d ]]; then  # one call (~560 s cold) when starts fail: the masks-by-address probe, top-k alone's pass A tiles at B = 64 / 256 (candmid; two tiles in flight), then the A/B bench of masks by address (off / on)
  QRITA_EAGER_GRAPHS_MASK_ADDRESS=1 timeout 45 python3 benchmarks/address_probe.py 2>&1 \
    | grep -v Warn | tee "$OUT/address_probe.txt" | tail -12
  PROF_BATCH=64,256 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-45}" \
    prof_tables mid_ topk50,k50 zipf default candmid=256x1 candmid=512x1 candmid=256x1,ahead=2x1
  ab_bench "${BENCH_S:-90}" "${BATCHES:-64,256}" QRITA_EAGER_GRAPHS_MASK_ADDRESS=0 \
    QRITA_EAGER_GRAPHS_MASK_ADDRESS=1
fi
if [[ $stage == s46b ]]; then  # (~250 s + start) pass A with more warps per program now that it has load slots: one-warp programs cap an SM at 32 warps (32 blocks an SM), and bf16's pass A reads at ~63% of the floor with neither more slots nor wider one-warp tiles helping (s43d, s45a); 2 and 4 warps a program, at B = 256 / 1024
  PROF_BATCH=256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-80}" \
    prof_tables pw_ k50,k1000,topp0.9 zipf default cand=256x2 cand=512x4
fi
if [[ $stage == s46a ]]; then  # next session (~450 s + start): bf16's keyed count by its tile (the wide band compaction's tile for 16-bit rows, 256 x 1 since the eighth session, before the keyed count; s45b: neither fewer registers nor a launch of its own helped it), topp0.9 profiles at B = 256 / 1024; then s45c
  PROF_BATCH=256,1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-45}" \
    prof_tables wt_ topp0.9 zipf default wide=512x1 wide=1024x1 wide=512x2 wide=1024x4 wide=128x1
  # then s46b's pass A warps (its block comes before this one in the file)
  PROF_BATCH=256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-80}" \
    prof_tables pw_ k50,k1000,topp0.9 zipf default cand=256x2 cand=512x4
fi
if [[ $stage == s51b ]]; then  # (~200 s) issue 5: the CuPy adapter's direct exchange without CuPy's deprecated toDlpack / fromDlpack (x.__dlpack__ on CuPy's own stream; cupy.from_dlpack of torch's capsule): the CuPy GPU tests, the exchange probe, the adapters' host table
  timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_backend_gpu.py tests/test_backend_cupy.py -k "cupy or zero_copy or owns or round_trip" 2>&1 \
    | tee "$OUT/pytest_gpu_s51b.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  timeout 60 python3 benchmarks/cupy_exchange_probe.py --out "$OUT" 2>&1 | grep -v -i warn
  timeout 150 python3 benchmarks/adapter_overhead.py --batch 8 2>&1 | grep -v -i warn \
    > "$OUT/adapter_overhead.txt"; tail -14 "$OUT/adapter_overhead.txt"
fi
if [[ $stage == s54e ]]; then  # (~130 s) the last of a short budget: the eager sampling GPU test alone (its unseeded part with QRITA_JAX_EAGER_UNSEEDED=1 inside)
  gpu_tests_k s54e 125 "eager_sampling_by_jit"
fi
if [[ $stage == s54d ]]; then  # (~250 s) s54a cut to fit a short budget: its GPU tests, then the probe's unseeded row
  gpu_tests_k s54d 170 "eager_sampling or sampler_under_vmap"
  QRITA_JAX_EAGER_UNSEEDED=1 cycle_probe 90 "sample topp0.9 unseeded"
fi
if [[ $stage == s54c ]]; then  # (~200 s, a two-GPU machine: kind nvidia-h100-x2) issue 5's "an array on GPU 1 runs on GPU 1", never run before: the second-GPU tests of torch (every op, alternating devices), CuPy, JAX and the launcher
  nvidia-smi -L
  timeout 400 python3 -m pytest -p no:cacheprovider -rs --tb=short -q tests/test_backend_gpu.py \
    tests/test_fastlaunch.py -k "second_gpu or current_device" 2>&1 | tee "$OUT/pytest_gpu_s54c.log" | tail -15
fi
if [[ $stage == s54b ]]; then  # (~300 s) issues 3 / 4 / 6 at the current defaults: the targets' cells (V = 131072, zipf, B = 1 and 1024, fp32; bf16 at B = 1024 for the 0.6x rule), eager and graph, the torch peers in the same run; peak extra memory in the CSV
  timeout 330 python3 benchmarks/bench.py --out "$OUT/targets" --ops masks,top_k,sample --vocab 131072 \
    --dtypes float32 --batch 1,1024 --workloads zipf \
    --scenarios topk50,topp0.9,topk100_topp0.9,topk1000,k50,k1000 --graphs --warmup 5 --rep 20 \
    --check-rows 2 --peers torch_sort --no-progress > "$OUT/bench_targets.log" 2>&1
  echo "bench exit $?"; tail -c 5000 "$OUT/bench_targets.log"
  timeout 150 python3 benchmarks/bench.py --out "$OUT/targets_bf16" --ops masks,top_k \
    --vocab 131072 --dtypes bfloat16 --batch 1024 --workloads zipf \
    --scenarios topk50,topp0.9,topk100_topp0.9,k50,k1000 --graphs --warmup 5 --rep 20 \
    --check-rows 2 --peers '' --no-progress > "$OUT/bench_targets_bf16.log" 2>&1
  echo "bench exit $?"; tail -c 2500 "$OUT/bench_targets_bf16.log"
fi
if [[ $stage == s54a ]]; then  # (~250 s) issues 5 / 6, written after s53d (not yet run): an int seed / offset value's first call takes the exchanges; the jitted sampler under vmap: those GPU tests, then the probe's sample rows (a fixed seed, a new seed every call: expect the exchanges' time) and the adapters' host table
  gpu_tests_k s54a 200 "eager_sampling or sampler_under_vmap or eager_unseeded"
  QRITA_JAX_EAGER_UNSEEDED=1 cycle_probe 160 "sample topp0.9 seed7" "sample topp0.9 unseeded"
  timeout 60 python3 benchmarks/cupy_exchange_probe.py --out "$OUT" 2>&1 | grep -v -i warn
  [[ ${HOST_TABLE:-0} == 1 ]] && host_table
fi
if [[ $stage == s53d ]]; then  # (~250 s) issues 5 / 6: s53c with seeds / offsets kept as device scalars per value (no transfer per call): the eager-sampling GPU test, the probe's sample rows (a fixed seed, and a new seed every call)
  gpu_tests_k s53d 150 "eager_sampling"
  cycle_probe 200 "sample k50 seed7" "sample topp0.9 seed7" "sample topp0.9 seed+1"
fi
if [[ $stage == s53c ]]; then  # (~350 s) issues 5 / 6: eager seeded sample / probs / candidates on JAX by cached jitted programs: the sampler GPU tests, the probe's sample rows, the adapters' host table
  gpu_tests_k s53c 240 "jax_jit_sampler or command_buffer_sampler or eager_sampling"
  cycle_probe 150 "sample k50 seed7" "sample topp0.9 seed7"
  host_table
fi
if [[ $stage == s53b ]]; then  # (~200 s) issue 6: s53a's sampler test and probe rows again (their API use is fixed)
  gpu_tests_k s53b 200 "jax_jit_sampler or command_buffer_sampler"
  cycle_probe 150 "sample k50 seed7" "sample topp0.9 seed7"
fi
if [[ $stage == s53a ]]; then  # (~450 s) issues 5 / 6: top_k's XLA-owned copy and eager top_k by jit by default; the jitted sampler recorded (seeded calls: XLA-owned copies, a private torch pool): the command-buffer / eager-by-jit / sampler GPU tests, the probe's sample and top_k rows, the adapters' host table
  gpu_tests_k s53a 280 "command_buffer or eager_by_jit or jax_jit_sampler"
  cycle_probe 150 "sample k50 seed7" "sample topp0.9 seed7" "top_k k50"
  host_table; tail -6 "$OUT/adapter_overhead.txt"
fi
if [[ $stage == s52d ]]; then  # (~140 s) issue 5: s52c's probe with QRITA_JAX_TOP_K_COPY=1 (top_k's command buffer reads an XLA-owned copy of its input; eager top_k by jit), then the command-buffer top_k and eager-by-jit GPU tests (both settings)
  QRITA_JAX_TOP_K_COPY=1 timeout 100 python3 benchmarks/jax_cycle_probe.py --out "$OUT" 2>&1 \
    | grep -v -i warn | grep -E "top_k|jax "
  timeout 60 python3 -m pytest -p no:cacheprovider -rf --tb=short -q tests/test_backend_gpu.py \
    -k "command_buffer_top_k or eager_by_jit" 2>&1 | tee "$OUT/pytest_gpu_s52d.log" | tail -3
fi
if [[ $stage == s52c ]]; then  # (~100 s) issue 5: jitted / eager-by-jit calls when the buffers change between calls (pools of 1, 4, 64 inputs): do command buffers re-trace?
  timeout 200 python3 benchmarks/jax_cycle_probe.py --out "$OUT" 2>&1 | grep -v -i warn | tail -30
fi
if [[ $stage == s52b ]]; then  # (~300 s) issue 5: eager JAX calls through cached jitted programs compiled for command buffers (the default now): the adapters' GPU tests at default XLA flags (the JAX ones first), the jit probe at default flags, the adapters' host table
  timeout 200 python3 -m pytest -p no:cacheprovider -rf --tb=short -q tests/test_backend_gpu.py \
    -k "jax" 2>&1 | tee "$OUT/pytest_gpu_s52b_jax.log" | tail -4
  timeout 150 python3 -m pytest -p no:cacheprovider -rf --tb=short -q tests/test_backend_gpu.py \
    -k "not jax" 2>&1 | tee "$OUT/pytest_gpu_s52b_rest.log" | tail -4
  timeout 100 python3 benchmarks/jax_jit_probe.py --out "$OUT" --tag s52b 2>&1 \
    | grep -v -i warn | grep -E "jit x|jit qrita|inside|eager"
  timeout 120 python3 benchmarks/adapter_overhead.py --batch 8 2>&1 | grep -v -i warn \
    > "$OUT/adapter_overhead.txt"; grep -A5 "^host" "$OUT/adapter_overhead.txt"; tail -6 "$OUT/adapter_overhead.txt"
fi
if [[ $stage == s52a ]]; then  # (~300 s) issue 5: command buffers on by default for the jitted masks and top_k (the arena only while XLA records): the adapters' GPU tests at default XLA flags, the jit ones at min graph size 1, the jit probe (cb 0 / 1 at min graph size 1, cb 1 at default flags), the adapters' host table
  timeout "${TESTS_S:-200}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_backend_gpu.py 2>&1 | tee "$OUT/pytest_gpu_s52a.log" | tail -4
  XLA_FLAGS=--xla_gpu_graph_min_graph_size=1 timeout 150 python3 -m pytest -p no:cacheprovider \
    -rf --tb=short -q tests/test_backend_gpu.py -k "jax_jit" 2>&1 \
    | tee "$OUT/pytest_gpu_s52a_graph1.log" | tail -4
  for run in "0 --xla_gpu_graph_min_graph_size=1" "1 --xla_gpu_graph_min_graph_size=1" "1 "; do
    read -r cb flags <<< "$run"
    QRITA_JAX_COMMAND_BUFFER=$cb XLA_FLAGS="$flags" timeout 100 python3 \
      benchmarks/jax_jit_probe.py --out "$OUT" --tag "cb${cb}${flags:+_graph1}" 2>&1 \
      | grep -v -i warn | grep -E "jit x|jit qrita|inside|eager"
  done
  XLA_FLAGS=--xla_gpu_graph_min_graph_size=1 timeout 120 python3 benchmarks/adapter_overhead.py \
    --batch 8 2>&1 | grep -v -i warn > "$OUT/adapter_overhead.txt"; tail -14 "$OUT/adapter_overhead.txt"
fi
if [[ $stage == s51a ]]; then  # next session (~250 s + start), issue 5: the jitted masks with their scratch from XLA and command_buffer_compatible (QRITA_JAX_COMMAND_BUFFER=1; written without a GPU): the GPU tests at default XLA flags and at min graph size 1, then the jit probe both ways (host µs per jitted call)
  for flags in "" "--xla_gpu_graph_min_graph_size=1"; do
    XLA_FLAGS="$flags" timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf \
      --tb=short -q tests/test_backend_gpu.py -k "jax_jit" 2>&1 \
      | tee -a "$OUT/pytest_gpu_s51a.log" | tail -3
  done
  for cb in 0 1; do
    QRITA_JAX_COMMAND_BUFFER=$cb XLA_FLAGS=--xla_gpu_graph_min_graph_size=1 timeout 100 \
      python3 benchmarks/jax_jit_probe.py --out "$OUT" --tag "cb$cb" 2>&1 | grep -v -i warn \
      | grep -E "jit qrita|inside|eager"
  done
fi
if [[ $stage == s50f ]]; then  # (~180 s) the jit probe with both stream scopes timed on one host, then the whole adapters' GPU test file at the session's last commit
  timeout 100 python3 benchmarks/jax_jit_probe.py --out "$OUT" --tag s50f 2>&1 \
    | grep -v -i warn | head -14
  timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_backend_gpu.py 2>&1 | tee "$OUT/pytest_gpu_s50f.log" | tail -4
fi
if [[ $stage == s50e ]]; then  # (~200 s) issue 5: the jit callback's stream scope by torch's C setters: the jit GPU tests, the jit probe, the adapters' host table (JAX jit column)
  timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_backend_gpu.py -k "jax_jit" 2>&1 | tee "$OUT/pytest_gpu_s50e.log" \
    | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  timeout 100 python3 benchmarks/jax_jit_probe.py --out "$OUT" --tag s50e 2>&1 \
    | grep -v -i warn | head -12
  timeout 120 python3 benchmarks/adapter_overhead.py --batch 8 2>&1 | grep -v -i warn \
    > "$OUT/adapter_overhead.txt"; tail -14 "$OUT/adapter_overhead.txt"
fi
if [[ $stage == s50d ]]; then  # (~250 s) issue 5: where a jitted call's host time goes (jax_jit_probe: JAX's dispatch, an empty buffer_callback, command buffers on / off, qrita's callback apart), default XLA flags and min graph size 1; the jit GPU tests after the callback's cached streams and C DLPack import
  timeout 100 python3 benchmarks/jax_jit_probe.py --out "$OUT" --tag default 2>&1 \
    | grep -v -i warn | head -30
  XLA_FLAGS=--xla_gpu_graph_min_graph_size=1 timeout 100 python3 benchmarks/jax_jit_probe.py \
    --out "$OUT" --tag mingraph1 2>&1 | grep -v -i warn | head -14
  timeout "${TESTS_S:-200}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_backend_gpu.py -k "jax_jit" 2>&1 | tee "$OUT/pytest_gpu_s50d.log" \
    | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  # where CuPy's remaining ~19 µs a call goes (cProfile per library)
  timeout 90 python3 benchmarks/adapter_profile.py --calls 500 --out "$OUT" 2>&1 \
    | grep -v -i warn | head -12
fi
if [[ $stage == s50c ]]; then  # (~250 s) issue 5: the stream-ordering test broken on purpose (benchmarks/mutate_jax_order.py: both mutations must fail it), CuPy's exchange alternatives (cupy_exchange_probe), the adapters' GPU tests after the stream scopes became plain functions, the host table again
  for m in nowait wrongstream; do
    QRITA_MUTATION=$m PYTHONPATH=benchmarks timeout 120 python3 -m pytest -p no:cacheprovider \
      -p mutate_jax_order -rf --tb=line -q \
      tests/test_backend_gpu.py::test_jax_eager_orders_the_streams_both_ways 2>&1 \
      | tee "$OUT/pytest_mutation_$m.log" | grep -E "mutate|passed|failed|^E " | cut -c1-240
  done
  timeout 60 python3 benchmarks/cupy_exchange_probe.py --out "$OUT" 2>&1 | grep -v -i warn
  timeout "${TESTS_S:-200}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_backend_gpu.py -k "cupy or jax_eager or jax_inplace" 2>&1 \
    | tee "$OUT/pytest_gpu_s50c.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  timeout 150 python3 benchmarks/adapter_overhead.py --batch 8 2>&1 | grep -v -i warn \
    > "$OUT/adapter_overhead.txt"; tail -14 "$OUT/adapter_overhead.txt"
fi
if [[ $stage == s50b ]]; then  # (~250 s + start) issue 5: the JAX adapter's direct DLPack exchanges (jaxlib export with torch's stream; torch's capsule with a cached event / JAX stream wait), the JAX GPU tests with the new stream-ordering test, the adapters' host table; then bf16 Gaussian-width bands counted in several packed words per lane (keyed_probe packedwords)
  timeout "${TESTS_S:-200}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_backend_gpu.py -k "jax" 2>&1 | tee "$OUT/pytest_gpu_s50b.log" \
    | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  timeout 150 python3 benchmarks/adapter_overhead.py --batch 8 2>&1 | grep -v -i warn \
    > "$OUT/adapter_overhead.txt"; tail -14 "$OUT/adapter_overhead.txt"
  for bv in 40 64; do
    timeout 120 python3 benchmarks/keyed_probe.py --dtype bfloat16 --workload gaussian \
      --band-values $bv --configs 1024x1,512x1 --steps read,mass,hist,packedwords 2>&1 \
      | grep -v -i warn | tee "$OUT/probe_bf16_words_$bv.txt"
  done
fi
if [[ $stage == s50a ]]; then  # (~300 s + start) keyed_probe.py: the float32 band compaction's appends (a ~3000-entry band by rank, as the library's) against its read and masses; bf16's narrow count against the histogram at 8-value bands
  timeout 120 python3 benchmarks/keyed_probe.py --dtype float32 --band-rank 3000 \
    --configs 128x1,256x2 --steps read,mass,appendonly,append 2>&1 | grep -v -i warn \
    | tee "$OUT/probe_fp32_append.txt"
  timeout 120 python3 benchmarks/keyed_probe.py --dtype bfloat16 --band-values 8 \
    --configs 1024x1,512x1 --steps read,mass,hist,packed 2>&1 | grep -v -i warn \
    | tee "$OUT/probe_bf16_packed.txt"
  # issue 5: does an adapter step wait for the GPU (the JAX call's unexplained ~125 µs)?
  timeout 200 python3 benchmarks/adapter_block_probe.py --out "$OUT" 2>&1 | grep -v -i warn \
    | tail -30
  timeout 150 python3 benchmarks/adapter_overhead.py --batch 8 2>&1 | grep -v -i warn \
    > "$OUT/adapter_overhead.txt"; tail -12 "$OUT/adapter_overhead.txt"
fi
if [[ $stage == s49d ]]; then  # (~150 s) at the defaults (bf16 keynarrow=8): the keyed band's tied-rows GPU test, then the masks bench for bf16 top-p (oracle-checked, peak extra memory)
  timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    "tests/test_triton_masks.py::test_keyed_band_is_exact_and_finishes_tied_rows" \
    2>&1 | tee "$OUT/pytest_gpu_s49d.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  timeout "${BENCH_S:-120}" python3 benchmarks/bench.py --out "$OUT/bench_bf16" --ops masks \
    --vocab 131072 --dtypes bfloat16 --batch 1,64,256,1024 --workloads zipf,gaussian \
    --scenarios topp0.9,topp0.99 --graphs --warmup 5 --rep 20 --check-rows 4 --peers '' \
    --no-progress > "$OUT/bench_bf16.log" 2>&1
  echo "bench exit $?"; grep -E "^masks" "$OUT/bench_bf16.log" | cut -c1-150
fi
if [[ $stage == s49c ]]; then  # (~330 s + start) 16-bit keyed bands of at most 8 values counted in packed 4-bit lane fields, no histogram (keynarrow=8x0), against the default: bf16 zipf topp0.9 / topp0.99 at B = 64 / 256 / 1024, fp16 zipf topp0.99 and bf16 gaussian topp0.99 at B = 1024, the 512-entry tile with it; then (TESTS_S) the 16-bit GPU tests and the narrow tests with it
  PROF_BATCH="${RS_BATCH:-64,256,1024}" PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-50}" \
    prof_tables kn_ topp0.9,topp0.99 zipf default keynarrow=8x0 keynarrow=8x0,wide=512x1
  PROF_BATCH=1024 PROF_DTYPES=float16 KNOB_S="${PROF_S:-50}" \
    prof_tables kn16_ topp0.99 zipf default keynarrow=8x0
  PROF_BATCH=1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-50}" \
    prof_tables kng_ topp0.99 gaussian default keynarrow=8x0
  [[ "${TESTS_S:-0}" -gt 0 ]] && QRITA_LAUNCH_TABLE=keynarrow=8x0 timeout "${TESTS_S}" \
    python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    "tests/test_triton_masks.py::test_gpu_batches_16bit" \
    tests/test_triton_wide.py::test_narrow_keyed_count_is_the_histogram_s \
    tests/test_triton_masks.py::test_narrow_keyed_band_gives_the_same_answers \
    2>&1 | tee "$OUT/pytest_gpu_s49c.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
fi
if [[ $stage == s49a ]]; then  # (~330 s + start) meant to time the wide band's weights by exp2 against exp (wideexp2=0x0): fp32 zipf topp0.9 / topp0.99 and gaussian topp0.99, bf16 zipf topp0.9, at B = 256 / 1024. Void as run: the plan leaves EXP2 out with the fixed-point masses (the default), so both ran the same kernels (BENCHMARKS.md forty-ninth session)
  PROF_BATCH="${RS_BATCH:-256,1024}" PROF_DTYPES=float32 KNOB_S="${PROF_S:-50}" \
    prof_tables e2_ topp0.9,topp0.99 zipf default wideexp2=0x0
  PROF_BATCH=1024 PROF_DTYPES=float32 KNOB_S="${PROF_S:-50}" \
    prof_tables e2g_ topp0.99 gaussian default wideexp2=0x0
  PROF_BATCH="${RS_BATCH:-256,1024}" PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-50}" \
    prof_tables e2b_ topp0.9 zipf default wideexp2=0x0
fi
if [[ $stage == s49b ]]; then  # (~250 s) the masks' GPU tests at the defaults: batches, 16-bit, determinism and batch invariance, graphs
  timeout "${TESTS_S:-400}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-64]" \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1]" \
    "tests/test_triton_masks.py::test_gpu_batches_16bit" \
    "tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant" \
    "tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay" \
    2>&1 | tee "$OUT/pytest_gpu_s49b.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
fi
if [[ $stage == s48a ]]; then  # (~420 s + start) the wide rounds' per-row totals by integer atomics (roundatomic=1x0: no scratch per segment and part) alone and with 4 programs per segment at listed batches (roundlisted=4x0, which alone doubles that scratch), on fp16 gaussian topp0.9 and bf16 zipf topp0.99; peak extra memory of fp32 topp0.9 B = 1024 both ways (bench, oracle-checked); the masks' GPU tests with both
  for dt_case in float16:topp0.9:gaussian bfloat16:topp0.99:zipf; do
    IFS=: read -r dt scen wl <<< "$dt_case"
    PROF_BATCH="${RS_BATCH:-256,1024}" PROF_DTYPES=$dt KNOB_S="${PROF_S:-45}" \
      prof_tables "ra_${dt}_" "$scen" "$wl" default roundatomic=1x0 roundatomic=1x0,roundlisted=4x0 roundlisted=4x0
  done
  for table in default roundatomic=1x0,roundlisted=4x0; do
    QRITA_LAUNCH_TABLE=$([[ $table == default ]] || echo "$table") timeout 60 python3 benchmarks/bench.py \
      --out "$OUT/mem_$(echo "$table" | tr '=,' '__')" --ops masks --vocab 131072 --dtypes float32 \
      --batch 1024 --workloads zipf --scenarios topp0.9 --graphs --warmup 5 --rep 20 --check-rows 4 \
      --peers '' --no-progress > "$OUT/bench_mem_$(echo "$table" | tr '=,' '__').log" 2>&1
    echo "memory bench '$table' exit $?"; grep -E "^masks" "$OUT/bench_mem_$(echo "$table" | tr '=,' '__').log" | cut -c1-150
  done
  [[ "${TESTS_S:-170}" -gt 0 ]] && QRITA_LAUNCH_TABLE=roundatomic=1x0,roundlisted=4x0 timeout "${TESTS_S:-170}" \
    python3 -m pytest -p no:cacheprovider \
    -rf --tb=short -v "tests/test_triton_masks.py::test_gpu_batches_16bit" \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-64]" \
    2>&1 | tee "$OUT/pytest_gpu_s48a.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
fi
if [[ $stage == s47a ]]; then  # (~420 s + start) the wide stage's 16-way rounds over more programs per segment at listed batches (roundlisted; fixed-point masses, order-free, so the split may follow B): rows the band misses (fp32 zipf topp0.99: ~85 of 1024, rounds 195 us; fp16 gaussian topp0.9: 36, rounds 295 us); the masks' GPU tests at roundlisted=8x0; then, with PASS_A=1, pass A's warps at B = 1024 (the old s46b)
  PROF_BATCH="${RS_BATCH:-256,1024}" PROF_DTYPES=float32 KNOB_S="${PROF_S:-50}" \
    prof_tables rs_ topp0.99 zipf default roundlisted=4x0 roundlisted=8x0
  PROF_BATCH="${RS_BATCH:-256,1024}" PROF_DTYPES=float16 KNOB_S="${PROF_S:-50}" \
    prof_tables rs16_ topp0.9 gaussian default roundlisted=4x0 roundlisted=8x0
  [[ "${TESTS_S:-170}" -gt 0 ]] && QRITA_LAUNCH_TABLE=roundlisted=8x0 timeout "${TESTS_S:-170}" python3 -m pytest -p no:cacheprovider \
    -rf --tb=short -v "tests/test_triton_masks.py::test_gpu_batches[gaussian-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches_16bit" \
    2>&1 | tee "$OUT/pytest_gpu_s47a.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  [[ -n "${PASS_A:-}" ]] && PROF_BATCH=1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-50}" \
    prof_tables pw_ k50,k1000,topp0.9 zipf default cand=256x2 cand=512x4
fi
if [[ $stage == s47b ]]; then  # (~200 s + start) why the bench's eager column read top_k k50 B = 1024 at 369 us when back-to-back calls run at 261 (eager_probe.py); the sampler by address at small batches; CuPy's import by the CUDA array interface
  for case in top_k:50:1024:float32 top_k:50:1024:bfloat16; do
    timeout 45 python3 benchmarks/eager_probe.py --case "$case" 2>&1 | grep -v Warn \
      | tee -a "$OUT/eager_probe.txt" | cut -c1-600
  done
  # issue 6: the sampler's small batches by address (no static logits copy), alternating
  for round in 1 2; do
    for by_address in 0 1; do
      echo "== sample by address $by_address round $round"
      QRITA_EAGER_GRAPHS_SAMPLE_ADDRESS=$by_address timeout 30 python3 benchmarks/graph_probe.py \
        --calls 4 --steps --step-calls 300 --cases sample:topp0.9:1:float32,sample:topk50:8:bfloat16 \
        2>&1 | grep -v Warn | tee -a "$OUT/sample_address.txt" | grep "back-to-back\|per step"
    done
  done
  # issue 5: CuPy's import by the CUDA array interface among the bare steps
  timeout 60 python3 benchmarks/adapter_profile.py --calls 500 --out "$OUT" 2>&1 | grep -v Warn | head -14
  # issue 4: eager top_k / masks at B = 1024 replaying a graph by address (default: up to 256 rows)
  for rows in 256 1024 256; do
    QRITA_EAGER_GRAPHS_ADDRESS_ROWS=$rows timeout 70 python3 benchmarks/bench.py --out "$OUT/addr_$rows" \
      --ops top_k,masks --vocab 131072 --dtypes float32,bfloat16 --batch 1024 --workloads zipf \
      --scenarios k50,k1000,topk50,topp0.9 --graphs --warmup 5 --rep 20 --check-rows 2 --peers '' \
      --no-progress > "$OUT/bench_addr_$rows.log" 2>&1
    echo "address rows $rows exit $?"; grep -E "^(top_k|masks)" "$OUT/bench_addr_$rows.log" | cut -c1-150
  done
fi
if [[ $stage == s46g ]]; then  # (~90 s + start) float16's wide tile: s46f read fp16 Gaussian top-p at 1024 x 1 far slower than bf16 (B = 1024 1984 us graph), with no baseline: 1024 x 1 against 256 x 1
  PROF_BATCH=256,1024 PROF_DTYPES=float16 KNOB_S="${PROF_S:-50}" \
    prof_tables wf_ topp0.9 zipf,gaussian default wide=256x1
fi
if [[ $stage == s46f ]]; then  # (~260 s + start) 16-bit rows' wide tile at 1024 x 1 (the default now): the 16-bit GPU tests at real batches, an oracle-checked bf16 / fp16 top-p bench; then the host time of replayed eager calls at this tree against the forty-fifth session's package (hostab/, a copy of f77876b's qrita, not committed), alternating
  timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_triton_masks.py::test_gpu_batches_16bit \
    2>&1 | tee "$OUT/pytest_gpu_s46f.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  timeout "${AB_S:-70}" python3 benchmarks/bench.py --out "$OUT/topp16" --ops masks \
    --vocab 131072 --dtypes bfloat16,float16 --batch 64,256,1024 --workloads zipf,gaussian \
    --scenarios topp0.9,topp0.99 --graphs --warmup 5 --rep 20 --check-rows 4 --peers '' \
    --no-progress > "$OUT/bench_topp16.log" 2>&1
  echo "topp16 exit $?"; grep -E "^masks" "$OUT/bench_topp16.log" | cut -c1-150
  for round in 1 2; do
    for tree in hostab .; do
      echo "== host $tree round $round"
      timeout 40 python3 "$tree/benchmarks/graph_probe.py" --calls 4 --steps --step-calls 300 \
        --cases top_k:50:64:bfloat16,sample:topp0.9:1:float32,mask:topp0.9:1:float32 2>&1 \
        | grep -v Warn | tee -a "$OUT/host_ab.txt" | grep "back-to-back"
    done
  done
fi
if [[ $stage == s46e ]]; then  # (~330 s + start) bf16's keyed count at larger tiles (s46d: 1024 x 1 beat 256 x 1, B = 1024 graph 909.1 -> 878.0 us), zipf topp0.9 and gaussian topp0.99 at B = 64 / 256 / 1024; the eager host time
  PROF_BATCH=64,256,1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-90}" \
    prof_tables wt2_ topp0.9,topp0.99 zipf,gaussian default wide=1024x1 wide=2048x1
  # the eager host time after this session's host-side cuts (graph_probe --steps)
  timeout 40 python3 benchmarks/graph_probe.py --calls 4 --steps --step-calls 200 \
    --cases top_k:50:64:bfloat16,sample:topp0.9:1:float32 2>&1 | grep -v Warn \
    | tee "$OUT/graph_probe_steps.txt" | grep "back-to-back\|host us per step"
fi
if [[ $stage == s46d ]]; then  # (~330 s + start) where an eager call's time goes (s46c: top_k k50 at B = 1024 spends 190 us of host per call, and a call after a synchronise takes 377 us against its 266 us graph replay): back-to-back host and wall time, the host's steps, the GPU activities of one call; then bf16's keyed count by its tile (s46a's first half)
  timeout 60 python3 benchmarks/graph_probe.py --calls 6 --steps --step-calls 200 \
    --cases top_k:50:1024:float32,top_k:50:1024:bfloat16,top_k:50:64:bfloat16,sample:topp0.9:1:float32,mask:topp0.9:1:float32 \
    2>&1 | grep -v Warn | tee "$OUT/graph_probe_steps.txt" | cut -c1-1500
  PROF_BATCH=256,1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-45}" \
    prof_tables wt_ topp0.9 zipf default wide=512x1 wide=1024x1 wide=512x2 wide=1024x4 wide=128x1
fi
if [[ $stage == s46c ]]; then  # (~390 s + start) the adapters' host time, then s45c
  # issue 5: where the CuPy and JAX adapters' host time goes now (cProfile; the CuPy stream
  # check by torch's raw getters is new in the forty-fifth session)
  timeout "${ADAPTER_S:-60}" python3 benchmarks/adapter_profile.py --calls 500 --out "$OUT" \
    2>&1 | grep -v Warn | head -14
  # and JAX's way back by jaxlib's __cuda_array_interface__ import against its DLPack import
  timeout 40 python3 benchmarks/jax_dlpack_probe.py --out "$OUT" 2>&1 | grep -v Warn | tail -8
  stage=s45c
fi
if [[ $stage == s45c ]]; then  # (~260 s + start) the forty-fifth session's last defaults (the wide band's compaction at 80 registers for float32, its search at 80): the masks' GPU tests at real batches, then an oracle-checked topp0.9 bench against the defaults before them
  timeout "${TESTS_S:-170}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-1024]" \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    2>&1 | tee "$OUT/pytest_gpu_s45c.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  for table in "" compactregs=0x0,wsearchregs=0x0; do
    QRITA_LAUNCH_TABLE=$table timeout "${AB_S:-40}" python3 benchmarks/bench.py \
      --out "$OUT/topp_${table:-default}" --ops masks --vocab 131072 --dtypes float32,bfloat16 \
      --batch 256,1024 --workloads zipf --scenarios topp0.9 --graphs --warmup 5 --rep 20 \
      --check-rows 4 --peers '' --no-progress > "$OUT/bench_topp_${table:-default}.log" 2>&1
    echo "topp '$table' exit $?"; grep -E "^masks" "$OUT/bench_topp_${table:-default}.log" | cut -c1-150
  done
  # s45b's top_k eager calls at B = 1024 ran 100-150 us over their graph replays: do they replay?
  timeout 40 python3 benchmarks/graph_probe.py --calls 12 \
    --cases top_k:50:1024:float32,top_k:50:1024:bfloat16,top_k:50:64:bfloat16 2>&1 \
    | grep -v Warn | tee "$OUT/graph_probe.txt" | tail -30
fi
if [[ $stage == s45b ]]; then  # (~480 s + start) the forty-fifth session's defaults (top-p's pass A with two load slots at every batch at 64 registers, the float32 wide compaction's two slots, the rank sort's 32 warps up to 64 rows): their GPU tests, then the wide band's compaction and search at fewer registers (compactregs, wsearchregs; off) and bf16's keyed count in a launch of its own (keysplit; off), topp0.9 profiles at B = 64 / 256 / 1024, then the oracle-checked bench of the defaults
  timeout "${TESTS_S:-170}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-64]" \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    2>&1 | tee "$OUT/pytest_gpu_s45b.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  PROF_BATCH=64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-60}" \
    prof_tables cr_ topp0.9 zipf default compactregs=96x0 compactregs=80x0 compactregs=64x0 \
    wsearchregs=80x0
  PROF_BATCH=64,256,1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-50}" \
    prof_tables ks_ topp0.9 zipf keysplit=1x0 keysplit=1x64
  timeout "${AB_S:-110}" python3 benchmarks/bench.py \
    --out "$OUT/bench_s45b" --ops masks,top_k --vocab 131072 --dtypes float32,bfloat16 \
    --batch 64,256,1024 --workloads zipf --scenarios topk50,topp0.9,k50,k1000 --graphs \
    --warmup 5 --rep 20 --check-rows 4 --peers torch_sort --no-progress \
    > "$OUT/bench_s45b.log" 2>&1
  echo "bench s45b exit $?"; grep -E "^(masks|top_k)" "$OUT/bench_s45b.log" | cut -c1-150
  pack_cache
fi
if [[ $stage == s45a ]]; then  # next session (~420 s + start): what the forty-fourth session could not time (five device starts failed): four load slots in pass A at 64 registers (slots=4x128,slotsregs=64x0), top-p's two at every batch at 64 registers (slots=2x1024,slotsregs=64x0) and two in the wide compaction (widepaired=1x0) against the defaults, profiles at B = 64 / 256 / 1024; the GPU tests under both; then s43e (the rank sort's warps at B <= 64, oracle-checked)
  PROF_BATCH=64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-100}" \
    prof_tables s4_ k50,k1000,topk50 zipf default slots=4x128,slotsregs=64x0
  PROF_BATCH=64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-100}" \
    prof_tables wp_ topp0.9 zipf default widepaired=1x0 slots=2x1024,slotsregs=64x0
  QRITA_LAUNCH_TABLE=slots=4x128,slotsregs=64x0,widepaired=1x0 timeout "${TESTS_S:-150}" python3 -m pytest \
    -p no:cacheprovider -rf --tb=short -v \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-64]" \
    2>&1 | tee "$OUT/pytest_gpu_s45a.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  stage=s43e
fi
if [[ $stage == s44c ]]; then  # (~180 s + start; s44b's core when device time is short): four load slots (slots=4x128) against the default two, top-k / topk50 profiles at B = 64 / 1024, then the GPU tests under it
  PROF_BATCH=64,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-80}" \
    prof_tables s4_ k50,k1000,topk50 zipf default slots=4x128
  QRITA_LAUNCH_TABLE=slots=4x128 timeout "${TESTS_S:-100}" python3 -m pytest \
    -p no:cacheprovider -rf --tb=short -v \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[64-float32]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[1024-bfloat16]" \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    2>&1 | tee "$OUT/pytest_gpu_s44c.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
fi
if [[ $stage == s44b ]]; then  # (~300 s + start): pass A with four load slots (slots=4x128) against the default two, for top-k / topk50 at B = 64 / 1024; the wide compaction with two slots (widepaired=1x0, off on GPUs) for top-p; the oracle-checked bench and the GPU tests under both
  PROF_BATCH=64,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-100}" \
    prof_tables s4_ k50,k1000,topk50 zipf default slots=4x128
  PROF_BATCH=64,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-60}" \
    prof_tables wp_ topp0.9 zipf default widepaired=1x0
  QRITA_LAUNCH_TABLE=slots=4x128,widepaired=1x0 timeout "${AB_S:-90}" python3 benchmarks/bench.py \
    --out "$OUT/bench_s44b" --ops masks,top_k --vocab 131072 --dtypes float32,bfloat16 \
    --batch 64,1024 --workloads zipf --scenarios topk50,topp0.9,k50,k1000 --graphs \
    --warmup 5 --rep 20 --check-rows 4 --peers '' --no-progress \
    > "$OUT/bench_s44b.log" 2>&1
  echo "bench s44b exit $?"; grep -E "^(masks|top_k)" "$OUT/bench_s44b.log" | cut -c1-150
  QRITA_LAUNCH_TABLE=slots=4x128,widepaired=1x0 timeout "${TESTS_S:-120}" python3 -m pytest \
    -p no:cacheprovider -rf --tb=short -v \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[64-float32]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[1024-bfloat16]" \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-64]" \
    2>&1 | tee "$OUT/pytest_gpu_s44b.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  pack_cache
fi
if [[ $stage == s44a ]]; then  # forty-fourth session (~420 s + start): pass A with two tiles a turn in their own load slots (paired=1x0, off on GPUs): kernel profiles against the default (k50, k1000, topk50, topp0.9 at B = 64 / 256 / 1024, fp32 and bf16), the oracle-checked bench and the GPU tests under it
  PROF_BATCH=64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-120}" \
    prof_tables pr_ k50,k1000,topk50,topp0.9 zipf default paired=1x0
  QRITA_LAUNCH_TABLE=paired=1x0 timeout "${AB_S:-130}" python3 benchmarks/bench.py \
    --out "$OUT/bench_paired" --ops masks,top_k --vocab 131072 --dtypes float32,bfloat16 \
    --batch 64,1024 --workloads zipf,gaussian --scenarios topk50,topp0.9,k50,k1000 --graphs \
    --warmup 5 --rep 20 --check-rows 4 --peers '' --no-progress \
    > "$OUT/bench_paired.log" 2>&1
  echo "bench paired exit $?"; grep -E "^(masks|top_k)" "$OUT/bench_paired.log" | cut -c1-150
  QRITA_LAUNCH_TABLE=paired=1x0 timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider \
    -rf --tb=short -v tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-64]" \
    2>&1 | tee "$OUT/pytest_gpu_s44a.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  pack_cache
fi
if [[ $stage == s43f ]]; then  # next (~420 s + start): pass A's candidate-only top key (candtop, new in the forty-third session; off on GPUs) against the default: kernel profiles of top_k k50 / k1000 and the topk50 mask at B = 64 / 256 / 1024, fp32 and bf16; the oracle-checked bench and the batch GPU test under it; then s43e's sort warps
  PROF_BATCH=64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-100}" \
    prof_tables ct_ k50,k1000,topk50 zipf default candtop=1x0
  QRITA_LAUNCH_TABLE=candtop=1x0 timeout "${AB_S:-60}" python3 benchmarks/bench.py \
    --out "$OUT/bench_candtop" --ops masks,top_k --vocab 131072 --dtypes float32,bfloat16 \
    --batch 1,64,1024 --workloads zipf,gaussian --scenarios topk50,k50,k1000 --graphs \
    --warmup 5 --rep 20 --check-rows 4 --peers torch_sort --no-progress \
    > "$OUT/bench_candtop.log" 2>&1
  echo "bench candtop exit $?"; grep -E "^(masks|top_k)" "$OUT/bench_candtop.log" | cut -c1-150
  QRITA_LAUNCH_TABLE=candtop=1x0 timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider \
    -rf --tb=short -v tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    2>&1 | tee "$OUT/pytest_gpu_s43f.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  pack_cache
fi
if [[ $stage == s43e ]]; then  # next (~220 s + start): the rank sort at 32 warps for 1024 slots at B <= 64 (sortsmall=64x32, off until this passes; s43c's sortbig=0x32 profile timed it, checking no answer): oracle-checked bench against the default, then the B = 64 GPU test under it
  for table in "" sortsmall=64x32; do
    QRITA_LAUNCH_TABLE=$table timeout "${AB_S:-50}" python3 benchmarks/bench.py \
      --out "$OUT/sort_${table:-default}" --ops top_k --vocab 131072 --dtypes float32,bfloat16 \
      --batch 8,64 --workloads zipf --scenarios k1000 --graphs --warmup 10 --rep 50 \
      --check-rows 8 --peers torch_sort --no-progress > "$OUT/bench_sort_${table:-default}.log" 2>&1
    echo "sort '$table' exit $?"; grep -E "^top_k" "$OUT/bench_sort_${table:-default}.log" | cut -c1-150
  done
  QRITA_LAUNCH_TABLE=sortsmall=64x32 timeout "${TESTS_S:-120}" python3 -m pytest -p no:cacheprovider \
    -rf --tb=short -v "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[64-float32]" \
    2>&1 | tee "$OUT/pytest_gpu_s43e.log" | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300
  pack_cache
fi
if [[ $stage == s43d ]]; then  # (~300 s) pass A's tile for bf16 (s43c: bf16 k50 B = 1024 pass A 153.8 us against an 89 us read, fp32 194.5 against 178): one warp per program, 128 entries a tile, holds 8 bytes a thread in bf16; 256 entries (16 bytes) and two tiles in flight, at B = 256 / 1024; fp32 with two tiles in flight; then the oracle-checked bench of the bf16 table
  PROF_BATCH=256,1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-90}" \
    prof_tables pa_ k50,k1000,topp0.9 zipf default cand=256x1 ahead=2x1 cand=256x1,ahead=2x1
  PROF_BATCH=256,1024 PROF_DTYPES=float32 KNOB_S="${PROF_S:-90}" \
    prof_tables pa32_ k50,k1000,topp0.9 zipf default ahead=2x1
  QRITA_LAUNCH_TABLE=${S43D_TABLE:-cand=256x1} timeout "${AB_S:-60}" python3 benchmarks/bench.py \
    --out "$OUT/bench_cand" --ops masks,top_k --vocab 131072 --dtypes bfloat16 --batch 256,1024 \
    --workloads zipf,gaussian --scenarios topk50,topp0.9,k50,k1000 --graphs --warmup 5 --rep 20 \
    --check-rows 4 --peers torch_sort --no-progress > "$OUT/bench_cand.log" 2>&1
  echo "bench '${S43D_TABLE:-cand=256x1}' exit $?"; grep -E "^(masks|top_k)" "$OUT/bench_cand.log" \
    | cut -c1-150
  pack_cache
fi
if [[ $stage == s43c ]]; then  # (~260 s) where top_k's time goes at k = 50 / 1000, B = 64 / 256 / 1024, fp32 and bf16 (issue 4's 3x torch.topk from B = 64 is missed at k1000 and bf16 k50 B = 64), with the rank sort's warps (k1000: 16 by default, H200-measured; k50: 4)
  PROF_BATCH=64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-90}" \
    prof_tables kk_ k50,k1000 zipf default sortbig=0x8 sortbig=0x32 sort=0x8
fi
if [[ $stage == s43b ]]; then  # (~300 s) s43a's eager top_k numbers ran 10 - 90 us above s42a's where the graphs agreed (fp32 k50 B = 1: 59.8 against 36.6; bf16 B = 1024: 315 against 244): the new defaults against the old ones (fp32: selblock=0x0; bf16: selblock=0x0,selfuse=1x256) in one call, default first and last
  for run in new_fp32:float32: old_fp32:float32:selblock=0x0 new_bf16:bfloat16: \
      old_bf16:bfloat16:selblock=0x0,selfuse=1x256 again_fp32:float32: again_bf16:bfloat16:; do
    IFS=: read -r name dt table <<< "$run"
    QRITA_LAUNCH_TABLE=$table timeout "${AB_S:-60}" python3 benchmarks/bench.py \
      --out "$OUT/$name" --ops top_k --vocab 131072 --dtypes "$dt" --batch 1,64,1024 \
      --workloads zipf --scenarios k50,k1000 --graphs --warmup 10 --rep 50 --check-rows 2 \
      --peers torch_sort --no-progress > "$OUT/bench_$name.log" 2>&1
    echo "$name '$table' exit $?"; grep -E "^top_k" "$OUT/bench_$name.log" | cut -c1-150
  done
fi
if [[ $stage == s43a ]]; then  # forty-third session (~520 s): top_k at the new defaults (the selection's write in 512-entry tiles, the fused search off) at k = 50 / 1000, B = 1 .. 1024, fp32 and bf16, beside torch and FlashInfer; host time and the adapters (s40b's); the sampler's graph test alone (cut off three times compiling)
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT/topk_k" --ops top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,64,256,1024 --workloads zipf \
    --scenarios k50,k1000 --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress \
    > "$OUT/bench_topk_k.log" 2>&1
  echo "top_k k exit $?"; tail -c 3000 "$OUT/bench_topk_k.log"
  QRITA_EAGER_GRAPHS_SAMPLE=1 timeout 45 python3 benchmarks/host_overhead.py --out "$OUT/host_1" --rows 12 \
    --only "public topp0.9 mask,public topk50 mask,public top_k k50,public sample p0.9,public sample k100 p0.9" 2>&1 | grep 'B=1'
  timeout 60 python3 benchmarks/adapter_overhead.py --batch 8 --vocab 131072 2>&1 \
    | grep -v Warn | tee "$OUT/adapter_overhead.txt" | tail -25
  timeout "${TESTS_S:-240}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_eager_graph.py::test_gpu_sampler_graphs_equal_the_plain_path 2>&1 \
    | tee "$OUT/pytest_gpu_s43a.log" | grep -E "PASSED|FAILED|passed|failed|^E " \
    | cut -c1-300 | tail -30
  pack_cache
fi
if [[ $stage == s42b ]]; then  # next (~480 s): the selection write's tile (selblock, new in the forty-second session: bf16's 4096-entry tile holds 146 registers, 1024 holds 40) with and without the fused search at k = 50, B = 64 / 256 / 1024; k = 2048 at B = 1 / 8 / 64 with and without capk (s42a: B = 1 12.6 us slower with it, B = 64 eager 316 against a 121 replay); the GPU runs s42a owed (the large-k test's last assertion, by address bf16, the sampler's graphs)
  PROF_BATCH=64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-120}" \
    prof_tables sb_ k50 zipf default selblock=1024x0 selblock=1024x0,selfuse=0x0 \
    selblock=512x0,selfuse=0x0
  for table in "" capk=0x0; do
    QRITA_LAUNCH_TABLE=$table timeout "${AB_S:-60}" python3 benchmarks/bench.py \
      --out "$OUT/k2048_${table:-default}" --ops top_k --vocab 131072 --dtypes float32,bfloat16 \
      --batch 1,8,64 --workloads zipf --scenarios k2048 --graphs --warmup 10 --rep 50 \
      --check-rows 2 --no-progress > "$OUT/bench_k2048_${table:-default}.log" 2>&1
    echo "k2048 '$table' exit $?"; tail -c 900 "$OUT/bench_k2048_${table:-default}.log"
  done
  e=tests/test_eager_graph.py
  timeout "${TESTS_S:-240}" python3 -m pytest -p no:cacheprovider -rf --tb=short -v \
    tests/test_triton_masks.py::test_large_k_capacity_keeps_the_candidate_path \
    tests/test_triton_top_k.py::test_selection_write_tile_gives_the_oracle_selection \
    "$e::test_gpu_top_k_graphs_by_address_equal_the_plain_path[dtype1]" \
    $e::test_gpu_sampler_graphs_equal_the_plain_path 2>&1 | tee "$OUT/pytest_gpu_s42b.log" \
    | grep -E "PASSED|FAILED|passed|failed|^E " | cut -c1-300 | tail -30
  pack_cache
fi
if [[ $stage == s42a ]]; then  # forty-second session (~520 s): top_k at the new defaults (capk: up to 8192 slots per row at large k; selfuse for 16-bit rows from 256 rows) at k = 50 .. 4096, B = 1 .. 1024, fp32 and bf16; k = 2048 / 4096 with capk=0x0 (the old slots); then the GPU tests of both and the by-address / sampler graph tests s41b's 240 s cut off
  timeout "${BENCH_S:-150}" python3 benchmarks/bench.py --out "$OUT/topk_k" --ops top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch 1,64,256,1024 --workloads zipf \
    --scenarios k50,k1000,k2048,k4096 --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress \
    > "$OUT/bench_topk_k.log" 2>&1
  echo "top_k k exit $?"; tail -c 5200 "$OUT/bench_topk_k.log"
  QRITA_LAUNCH_TABLE=capk=0x0 timeout "${AB_S:-60}" python3 benchmarks/bench.py \
    --out "$OUT/topk_capk0" --ops top_k --vocab 131072 --dtypes float32 --batch 1,64,1024 \
    --workloads zipf --scenarios k2048,k4096 --graphs --warmup 5 --rep 20 --check-rows 2 \
    --no-progress > "$OUT/bench_topk_capk0.log" 2>&1
  echo "capk=0x0 exit $?"; tail -c 1500 "$OUT/bench_topk_capk0.log"
  e=tests/test_eager_graph.py
  gpu_tests s42a "${TESTS_S:-300}" \
    tests/test_triton_masks.py::test_large_k_capacity_keeps_the_candidate_path \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    tests/test_triton_top_k.py::test_gpu_top_k_real_vocab \
    $e::test_gpu_top_k_graphs_by_address_equal_the_plain_path \
    $e::test_gpu_sampler_graphs_equal_the_plain_path
  pack_cache
fi
if [[ $stage == s41d ]]; then  # (~380 s) top_k's search writing the selection itself (selfuse=1x0, new this session: one launch after pass A instead of three): its GPU tests under it, then k50 profiles (graph us, kernels) at B = 16, 64, 256, 1024, fp32 and bf16, default against it
  QRITA_LAUNCH_TABLE=selfuse=1x0 gpu_tests s41d "${TESTS_S:-150}" \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant \
    tests/test_triton_top_k.py::test_gpu_top_k_real_vocab \
    tests/test_triton_top_k.py::test_gpu_top_k_cuda_graph
  PROF_BATCH=16,64,256,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-100}" \
    prof_tables sf_ k50 zipf default selfuse=1x0
fi
if [[ $stage == s41c ]]; then  # (~420 s) the wide compaction's unswitched loop (wideunswitch=1x0; prepared in the thirty-fourth session, never timed; with the fixed-point masses, the default since, its fp32 loop 223 -> 197 sm90 instructions per tile): GPU tests under it, then top-p profiles at B = 1, 64, 1024, fp32 and bf16, default against it; top_k at k = 2048 / 4096
  QRITA_LAUNCH_TABLE=wideunswitch=1x0 gpu_tests s41c "${TESTS_S:-150}" \
    "tests/test_triton_masks.py::test_gpu_batches[zipf-1024]" \
    "tests/test_triton_masks.py::test_gpu_batches[gaussian-64]" \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant
  PROF_BATCH=1,64,1024 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-110}" \
    prof_tables wu_ topp0.9,topp0.99 zipf default wideunswitch=1x0
  # top_k past the fast path's k (issue 4 asks for k up to 4096 on it): where k2048 / k4096
  # stand against torch.topk
  timeout "${BENCH_S:-90}" python3 benchmarks/bench.py --out "$OUT/large_k" --ops top_k \
    --vocab 131072 --dtypes float32 --batch 1,64,1024 --workloads zipf \
    --scenarios k1000,k2048,k4096 --graphs --warmup 5 --rep 20 --check-rows 2 --no-progress \
    > "$OUT/bench_large_k.log" 2>&1
  echo "large k exit $?"; tail -c 1800 "$OUT/bench_large_k.log"
fi
if [[ $stage == s41b ]]; then  # (~480 s) top_k's graph by address ahead of the one-launch kernel at 9-16 rows (QRITA_EAGER_GRAPHS_TOP_K_FROM 17, the old path, then 9, the default), its GPU tests, the mended capture test and the sampler's graphs with their host counters; the sampler's graphs off / on at B = 8 and 64 (s41a timed B = 1 only on both sides)
  e=tests/test_eager_graph.py
  gpu_tests s41b "${TESTS_S:-240}" $e::test_gpu_the_capture_records_what_the_warm_up_ran \
    $e::test_gpu_top_k_graphs_by_address_equal_the_plain_path \
    $e::test_gpu_sampler_graphs_equal_the_plain_path \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[16]"
  # whether the sampler's graphs replay at B = 8 (s41a: eager B = 8 no faster with them) and
  # top_k's at 12-16 rows; a failed capture's error is printed
  timeout "${PROBE_S:-90}" python3 benchmarks/graph_probe.py --calls 12 2>&1 | tee "$OUT/graph_probe.txt"
  for top_k_from in 17 9; do
    QRITA_EAGER_GRAPHS_TOP_K_FROM=$top_k_from timeout "${BENCH_S:-70}" python3 benchmarks/bench.py \
      --out "$OUT/topk_from_$top_k_from" --ops top_k --vocab 131072 --dtypes float32,bfloat16 \
      --batch 8,12,16 --workloads zipf --scenarios k50,k1000 --graphs --warmup 10 --rep 50 \
      --check-rows 4 --no-progress > "$OUT/bench_topk_from_$top_k_from.log" 2>&1
    echo "top_k from $top_k_from rows exit $?"; tail -c 1600 "$OUT/bench_topk_from_$top_k_from.log"
  done
  sample_graphs_ab "${SAMPLE_S:-120}" "${SAMPLE_B:-8,64}"
fi
if [[ $stage == s41a ]]; then  # (~520 s) midrows=128 by default: the GPU tests at B = 128 and the capture test s40e's 150 s cut off, then the sampler without / with its graphs at B = 1, 8, 64 (s40e's 70 s each cut it off at B = 8)
  m=tests/test_triton_masks.py; e=tests/test_eager_graph.py
  gpu_tests s41a "${TESTS_S:-220}" $e::test_gpu_the_capture_records_what_the_warm_up_ran \
    $e::test_gpu_sampler_graphs_equal_the_plain_path \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[128]" \
    "$m::test_gpu_batches[zipf-128]" "$m::test_gpu_batches[gaussian-128]" \
    $m::test_gpu_deterministic_and_batch_invariant
  sample_graphs_ab "${SAMPLE_S:-135}" "${SAMPLE_B:-1,8,64}"
fi
if [[ $stage == s40e ]]; then  # (~500 s, with the carried Triton cache) at the new defaults (masks by address, candmid=256x1 up to 64 rows): their GPU tests, the bench at B = 16-128, the sampler without / with its graphs, then midrows=128 at B = 128
  m=tests/test_triton_masks.py; e=tests/test_eager_graph.py
  gpu_tests s40e "${TESTS_S:-150}" $e::test_gpu_masks_by_address_equal_the_plain_path \
    $e::test_gpu_the_capture_records_what_the_warm_up_ran $e::test_gpu_sampler_graphs_equal_the_plain_path \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[64]" \
    "$m::test_gpu_batches[zipf-64]" "$m::test_gpu_batches[gaussian-64]" $m::test_gpu_deterministic_and_batch_invariant
  timeout "${BENCH_S:-80}" python3 benchmarks/bench.py --out "$OUT/defaults" --ops masks,top_k \
    --vocab 131072 --dtypes float32,bfloat16 --batch "${BATCHES:-16,32,64,128}" --workloads zipf \
    --scenarios topk50,topp0.9,k50 --graphs --warmup 5 --rep 20 --check-rows 4 --no-progress \
    > "$OUT/bench_defaults.log" 2>&1
  echo "bench defaults exit $?"; tail -c 3000 "$OUT/bench_defaults.log"
  sample_graphs_ab "${SAMPLE_S:-70}" "${SAMPLE_B:-1,8,64}"
  PROF_BATCH=128 PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-40}" \
    prof_tables b128_ topk50,k50 zipf default midrows=128x0
fi
if [[ $stage == s39d ]]; then  # one call (~540 s cold) when device time is short: the eager graphs' GPU tests, then masks / top_k at B = 8, 64, 256 at the defaults and with the opt-ins on, on the same card
  gpu_tests s39d "${TESTS_S:-240}" \
    tests/test_eager_graph.py::test_gpu_masks_by_address_equal_the_plain_path \
    tests/test_eager_graph.py::test_gpu_top_k_graphs_by_address_equal_the_plain_path \
    tests/test_eager_graph.py::test_gpu_eager_graphs_equal_the_plain_path \
    tests/test_eager_graph.py::test_gpu_sampler_graphs_equal_the_plain_path \
    tests/test_eager_graph.py::test_gpu_the_capture_records_what_the_warm_up_ran
  ab_bench "${BENCH_S:-140}" "${BATCHES:-8,64,256}" \
    "QRITA_EAGER_GRAPHS_IN_PLACE=0 QRITA_EAGER_GRAPHS_ADDRESS_ROWS=0" \
    "QRITA_EAGER_GRAPHS_IN_PLACE=1 QRITA_EAGER_GRAPHS_ADDRESS_ROWS=256"
fi
if [[ $stage == s39c ]]; then  # call 2 (~480 s warm): masks / top_k at B = 1, 8, 64, 256, eager and graph, with the opt-ins on (in-place static graphs, top_k and masks by address), against s38b's defaults (BENCHMARKS.md thirty-eighth session; same kind of card only)
  QRITA_EAGER_GRAPHS_IN_PLACE=1 QRITA_EAGER_GRAPHS_ADDRESS_ROWS=256 \
    bench_zipf s39c "${BENCH_S:-480}" "${BATCHES:-1,8,64,256}" | tail -32
fi
if [[ $stage == s38a ]]; then  # for the next session (~560 s cold): the GPU tests owed at the thirty-seventh session's defaults (eager graphs captured at a key's second call, the batch invariance across the small-batch tiers, real vocabularies), then host time per eager call
  gpu_tests s38a "${TESTS_S:-420}" tests/test_eager_graph.py \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]" \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant
  timeout 60 python3 benchmarks/host_overhead.py --out "$OUT/host" --rows 12 \
    --only "public topp0.9 mask,public topk50 mask,public top_k k50,public sample p0.9" 2>&1 | grep 'B=1'
fi
if [[ $stage == s38b ]]; then  # for the next session (~500 s warm): the bench grid at the defaults, zipf, V = 131072, fp32 and bf16, eager and graph (BATCHES)
  bench_zipf s38b "${BENCH_S:-480}" "${BATCHES:-1,8,64,256,1024}"
fi
if [[ $stage == s35a ]]; then  # thirty-fifth session (written without a device; ~520 s warm): the wide stage's fixed-point masses (widefixed) and the band following B with them (histsmall): their tests on the GPU, the batch-invariance and graph tests with the histogram band at B <= 64 and the sampled band above (TABLE), then fp32 and bf16 top-p profiles against the default on the same inputs
  timeout "${KNOB_TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_wide.py tests/test_triton_masks.py -k "fixed" 2>&1 \
    | tee "$OUT/pytest_fixed.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  QRITA_LAUNCH_TABLE="${TABLE:-widefixed=1x0,histsmall=64x0}" gpu_tests s35a "${TESTS_S:-150}" \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    tests/test_triton_masks.py::test_gpu_batches tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-60}" prof_tables t_ topp0.9,topp0.99 zipf \
    ${TABLES:-default widefixed=1x0 widefixed=1x0,histsmall=64x0 widefixed=1x0,histsmall=64x0,wideunswitch=1x0}
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-60}" \
    prof_tables bf16_ topp0.9 zipf ${TABLES16:-default widefixed=1x0,histsmall=64x0}
fi
if [[ $stage == s33c ]]; then  # thirty-third session, call 3: the GPU tests at the new defaults (TESTS names others), then profiles of the defaults (B = 1, 64, 256, 1024, fp32 and bf16) for the standings
  gpu_tests s33c "${TESTS_S:-300}" ${TESTS:-tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant tests/test_triton_masks.py::test_gpu_batches tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay tests/test_triton_masks.py::test_gpu_top_k_retry_rows_exact "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]" tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant}
  PROF_BATCH=${PROF_B:-1,64,256,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-220}" \
    prof default topp0.9,topp0.99,topk100_topp0.9 zipf
fi
if [[ $stage == s33b ]]; then  # next session, call 2 (~470 s warm): bfloat16 top-p with the keyed band's counting by float compares (widelean=1x0: sm90 SASS 395 -> 329 loop instructions per 256-entry tile) and with the mask write ranking ties only where the budget ends (writecut=1x0: no block-wide count per tile elsewhere), then fp32 with writecut, the packed appends alone and the band kernel's register limit (bandregs=128x0: 142 registers -> 128 with 48 B of stack; 4 programs per SM instead of 3), each against the default on the same inputs
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-75}" \
    prof_tables bf16_ topp0.9,topp0.99 zipf,gaussian ${TABLES16:-default widelean=1x0 writecut=1x0}
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-60}" prof_tables t_ topp0.9,topp0.99 zipf \
    ${TABLES:-default writecut=1x0 widepacked=1x0 bandregs=128x0}
fi
if [[ $stage == s33a ]]; then  # next session, call 1 (~450 s warm): the wide compaction's interval tests by float compares (widelean=1x0; sm90 SASS at 128 x 1 FLAT fp32: 262 -> 234 loop instructions per tile), with its append positions by one packed scan per tile too (widepacked=1x0,widelean=1x0: 200), and the 16-way rounds' accumulators as (16 pivots, tile) (roundrows=1x0: no shared-memory round trip and 4 barriers per tile, 180 -> 145 instructions) against the default on the same inputs, fp32 top-p, then their tests on the GPU (bit-equal statistics with and without each)
  # shellcheck disable=SC2086
  PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-75}" \
    prof_tables t_ topp0.9,topp0.99 zipf,gaussian \
    ${TABLES:-default widelean=1x0 widepacked=1x0,widelean=1x0 roundrows=1x0}
  timeout "${WIDE_TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py tests/test_triton_primitives.py tests/test_triton_wide.py \
    -k "append_modes or packed_prefix or lean or bound_values or pivot_rows or write_cut" 2>&1 \
    | tee "$OUT/pytest_knobs.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
fi
if [[ $stage == s32e ]]; then  # thirty-first session, call 5 (~370 s): the wide-stage tests with the interpreter's slots on the GPU (they used to assert interpreter-sized modes), the band placed by 2 warps (band=4096x2) against the default on the same inputs, then top_k k50 / k1000 at the new defaults (issue 4)
  timeout "${WIDE_TESTS_S:-130}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k "band_hits_and_misses or rounds_split or rounds_stop or merged_by_their_last or tiles_in_flight" 2>&1 \
    | tee "$OUT/pytest_wide.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  for table in default band=4096x2; do
    PROF_BATCH=${PROF_B2:-1,64,1024} KNOB_S="${PROF_S2:-70}" \
      prof "t_$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf \
      $([[ $table == default ]] || echo QRITA_LAUNCH_TABLE=$table)
  done
  timeout "${BENCH_S:-100}" python3 benchmarks/bench.py --out "$OUT/bench" --ops top_k --vocab 131072 \
    --dtypes float32 --batch 1,64,1024 --workloads zipf --scenarios k50,k1000 --graphs --warmup 5 \
    --rep 25 --check-rows 2 --no-progress --peers torch_sort > "$OUT/bench_topk.log" 2>&1
  echo "bench exit $?"; tail -c 2500 "$OUT/bench_topk.log"
fi
if [[ $stage == s32c ]]; then  # thirty-first session, call 3: the GPU tests s32b's limit cut off (at the new defaults), then profiles of the default (B = 1, 64, 256, 1024, fp32 and bf16) for the standings
  gpu_tests s32c "${TESTS_S:-260}" tests/test_triton_masks.py::test_gpu_top_k_retry_rows_exact \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]" \
    tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant
  PROF_BATCH=${PROF_B:-1,64,256,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-250}" \
    prof default topp0.9,topp0.99,topk100_topp0.9 zipf
fi
if [[ $stage == s32a ]]; then  # thirty-first session, call 1 (no code changes, knobs only; ~450 s on a cold machine): the threshold kernel's searches with one reduction per pivot (QRITA_SEARCH_SPLIT_ROWS=1) against the default on the same inputs (topk100_topp0.9: threshold 97 vs 78 us in two calls of the thirtieth session, other inputs); then fp32 top-p with the rounds merged by their last program (roundmerge=1x0: 4 launches fewer) and with 2 / 4 tiles in flight in pass A and the wide stage (ahead=2x2, 4x4; aheadsmall follows ahead); each profile draws the same inputs (same batches, scenarios, order)
  for knob in default QRITA_SEARCH_SPLIT_ROWS=1; do
    PROF_BATCH=${PROF_B:-64,1024} KNOB_S="${PROF_S:-100}" \
      prof "$(echo $knob | tr '=,' '__')" topk100_topp0.9,topk1000 zipf,gaussian \
      $([[ $knob == default ]] || echo $knob)
  done
  for table in ${TABLES:-default roundmerge=1x0 ahead=2x2 ahead=4x4}; do
    PROF_BATCH=${PROF_B2:-1,64,1024} KNOB_S="${PROF_S2:-60}" \
      prof "t_$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf \
      $([[ $table == default ]] || echo QRITA_LAUNCH_TABLE=$table)
  done
fi
if [[ $stage == s32b ]]; then  # thirty-first session, call 2: the band's sample and warps and the wide compaction's tile (knobs only), fp32 top-p, then the GPU tests at the new defaults (QRITA_SEARCH_SPLIT_ROWS on, roundmerge at unlisted batches; TESTS names others)
  for table in ${TABLES:-default band=4096x8 band=2048x4 wide=256x1 wide=512x1}; do
    PROF_BATCH=${PROF_B2:-1,64,1024} KNOB_S="${PROF_S2:-60}" \
      prof "t_$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf \
      $([[ $table == default ]] || echo QRITA_LAUNCH_TABLE=$table)
  done
  gpu_tests s32b "${TESTS_S:-320}" ${TESTS:-tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant tests/test_triton_masks.py::test_gpu_batches tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay tests/test_triton_masks.py::test_gpu_top_k_retry_rows_exact "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]" tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant}
fi
if [[ $stage == s31c ]]; then  # thirtieth session, call 7: the list of missed rows only at B > 128 (widelist's G), the session's final kernels -- GPU tests, then profiles of the default (B = 1, 64, 256, 1024, fp32 and bf16) and widelist=0x0 at B = 256
  gpu_tests s31c "${TESTS_S:-200}" tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]"
  PROF_BATCH=${PROF_B:-1,64,256,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-200}" \
    prof default topp0.9,topp0.99,topk100_topp0.9 zipf
  PROF_BATCH=${PROF_B2:-256} KNOB_S="${PROF_S2:-60}" \
    prof widelist_0 topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=widelist=0x0
  PROF_BATCH=${PROF_B2:-256} KNOB_S="${PROF_S2:-60}" prof default_256 topp0.9,topp0.99 zipf,gaussian
fi
if [[ $stage == s31b ]]; then  # thirtieth session, call 2: the launches after the band over a list of the rows it missed (widelist=128x0, default) -- GPU tests first (band misses, determinism and batch invariance, graph capture, the keyed band), then profiles: the default (fp32 and bf16), widelist=0x0 (one program per row, as before), QRITA_SEARCH_SPLIT_ROWS=1 (the threshold kernel's searches with one reduction per pivot)
  timeout "${BAND_TESTS_S:-120}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k "keyed_band or band_hits or rounds_stop or rounds_split" 2>&1 \
    | tee "$OUT/pytest_band.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  gpu_tests s31b "${TESTS_S:-170}" tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay \
    tests/test_triton_masks.py::test_gpu_batches
  PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-150}" \
    prof default topp0.9,topp0.99,topk50,topk1000,topk100_topp0.9 zipf,gaussian
  PROF_BATCH=${PROF_B2:-64,1024} KNOB_S="${PROF_S2:-70}" \
    prof widelist_0 topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=widelist=0x0
  PROF_BATCH=${PROF_B2:-64,1024} KNOB_S="${PROF_S2:-70}" \
    prof splitrows topk50,topk1000,topk100_topp0.9 zipf,gaussian QRITA_SEARCH_SPLIT_ROWS=1
fi
if [[ $stage == s30e ]]; then  # next session, call 1 (its first run, call 5 at f0eb35a, ran out of device time while compiling: cold machine): the band's and the cutoff's sample searches and the wide per-row search with one reduction per pivot (QRITA_SEARCH_SPLIT=1: sm90 registers 255 + 880 B of stack -> 142, 237 -> 100, 253 -> 80) against the default, fp32 top-p and top-k B = 1, 64, 1024 profiles, then the GPU tests with it on
  for knob in default QRITA_SEARCH_SPLIT=1; do
    PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S:-200}" \
      prof "$(echo $knob | tr '=,' '__')" topp0.9,topp0.99,topk50,topk1000 zipf,gaussian \
      $([[ $knob == default ]] || echo $knob)
  done
  QRITA_SEARCH_SPLIT=1 gpu_tests s30e "${TESTS_S:-200}" \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" \
    tests/test_triton_masks.py::test_gpu_batches
fi
if [[ $stage == s30d ]]; then  # call 4: at the session's final kernels (both band experiments reverted): test_triton_wide on the GPU (never run there), the 262144 bf16 real-vocab test, graph capture
  timeout "${WIDE_TESTS_S:-120}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_wide.py 2>&1 | tee "$OUT/pytest_wide.log" | grep -E "^E  |passed|failed" \
    | cut -c1-300 | head -20
  gpu_tests s30d "${TESTS_S:-200}" "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]" \
    tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay
fi
if [[ $stage == s30c ]]; then  # call 3: the band's two order statistics in one loop of rounds (two_largest_keys): fp32 / bf16 top-p B = 1, 64, 1024 profile against s30a's; the band's warps (band=4096x8, 4096x16: no spills in the sm90 SASS, 4 warps spill); then its tests on the GPU
  PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-150}" \
    prof default topp0.9,topp0.99 zipf,gaussian
  for table in ${BAND_T:-band=4096x8 band=4096x16}; do
    PROF_BATCH=${PROF_B:-1,64,1024} KNOB_S="${PROF_S2:-80}" \
      prof "$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf QRITA_LAUNCH_TABLE=$table
  done
  timeout "${BAND_TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_primitives.py -k "two_largest or mass_search" 2>&1 \
    | tee "$OUT/pytest_band.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  gpu_tests s30c "${TESTS_S:-200}" "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    "tests/test_triton_masks.py::test_gpu_batches"
fi
if [[ $stage == s30b ]]; then  # call 2: the wide band from its sample's counts in 4096 bins (default) against its order statistics (bandbins=0x0), fp32 and bf16 top-p B = 1, 64, 1024 (profile: band hits, kernel us); then the new band test, test_triton_wide, the 262144 bf16 real-vocab test (cut off in call 1)
  for table in ${BIN_T:-default bandbins=0x0}; do
    PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-170}" \
      prof "$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  timeout "${BAND_TESTS_S:-200}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k "test_sampled_band_bins or test_value_" tests/test_triton_wide.py 2>&1 \
    | tee "$OUT/pytest_band.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  gpu_tests s30b "${TESTS_S:-150}" "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]"
fi
if [[ $stage == s30a ]]; then  # call 1: the keyed band's final form on the GPU (count inside the compaction, open-below rule, _segment_tile, the NaN fix): its test, test_triton_wide, the 16-bit real-vocab tests; then the fp32 / bf16 top-p profile at B = 1, 64, 1024 (the session's baseline)
  timeout "${KEY_TESTS_S:-200}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_keyed_band tests/test_triton_wide.py 2>&1 \
    | tee "$OUT/pytest_keyed.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  gpu_tests s30a "${TESTS_S:-240}" "tests/test_triton_masks.py::test_gpu_real_vocab[128256-bfloat16]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float16]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]"
  PROF_BATCH=${PROF_B:-1,64,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-150}" \
    prof default topp0.9,topp0.99 zipf,gaussian
fi
if [[ $stage == s29d ]]; then  # call 4: the keyed band's count in its own launch (wide_count_values_kernel, keycount=TxW): bf16 and fp16 top-p B = 64, 1024 (profile) at 256x1 (default), 512x2, 1024x4, then the keyed test on the GPU
  for table in ${KEY_T:-default keycount=512x2 keycount=1024x4}; do
    PROF_BATCH=${KEY_B:-64,1024} PROF_DTYPES=bfloat16,float16 KNOB_S="${PROF_S:-120}" \
      prof "$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  timeout "${KEY_TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_keyed_band 2>&1 | tee "$OUT/pytest_keyed.log" \
    | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
fi
if [[ $stage == s29c ]]; then  # call 3: why the keyed band's count (wide_compact_kernel, no copies) takes as long as the compaction (bf16 B = 1024: 474 us for 256 MiB): Nsight Compute on it, the tile / warps sweep (wide=TxW), then the 262144 bf16 real-vocab test (cut off in call 2)
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  if [[ -n $NCU ]]; then
    timeout "${NCU_S:-150}" "$NCU" --kernel-name regex:"wide_compact_kernel|candidates_kernel" \
      --launch-count 2 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats --section InstructionStats \
      python3 benchmarks/profile_pipeline.py --out "$OUT/ncu_prof" --batch 1024 --dtypes bfloat16 \
      --workloads zipf --scenarios topp0.9 > "$OUT/ncu_keyed.txt" 2>&1
    echo "ncu exit $?"; grep -E "wide_compact|candidates_kernel|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Warp Cycles Per Issued|Issued Warp|No Eligible|Executed Ipc|Stall|ERR" "$OUT/ncu_keyed.txt" | head -70
  fi
  for table in ${KEY_T:-wide=512x2 wide=1024x4 wide=2048x8 wide=1024x1}; do
    PROF_BATCH=1024 PROF_DTYPES=bfloat16 KNOB_S="${PROF_S:-60}" \
      prof "$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf QRITA_LAUNCH_TABLE=$table
  done
  gpu_tests s29c "${TESTS_S:-150}" "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]"
fi
if [[ $stage == s29b ]]; then  # call 2: the keyed band of 16-bit rows (key_shift: the band counted per value, on by default) against keyband=0x0, bf16 and fp16 top-p B = 1, 64, 1024 (profile), then its test and the 16-bit real-vocab tests on the GPU
  PROF_BATCH=${KEY_B:-1,64,1024} PROF_DTYPES=bfloat16,float16 KNOB_S="${PROF_S:-200}" \
    prof default topp0.9,topp0.99 zipf,gaussian
  PROF_BATCH=${KEY_B0:-64,1024} PROF_DTYPES=bfloat16,float16 KNOB_S="${PROF0_S:-150}" \
    prof keyband_0x0 topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=keyband=0x0
  timeout "${KEY_TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_keyed_band 2>&1 | tee "$OUT/pytest_keyed.log" \
    | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  gpu_tests s29b "${TESTS_S:-200}" "tests/test_triton_masks.py::test_gpu_real_vocab[128256-bfloat16]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float16]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[262144-bfloat16]"
fi
if [[ $stage == s29a ]]; then  # next session, call 1: test_gpu_batches at the FLAT wide compaction (fp32 default since s28d; owed: its call was lost), then determinism / batch invariance
  gpu_tests s29a "${TESTS_S:-400}" tests/test_triton_masks.py::test_gpu_batches \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant
fi
if [[ $stage == s28e ]]; then  # call 5: pass A's FLAT lanes (candflat=1x0) against the default (wideflat on for fp32 since call 4), fp32, B = 1, 64, 1024 (profile), then the FLAT tests on the GPU (candflat is in 436fe24 only: measured slower, removed)
  for table in ${FLAT_T:-default candflat=1x0}; do
    PROF_BATCH=${FLAT_B:-1,64,1024} KNOB_S="${PROF_S:-170}" prof "$(echo $table | tr '=,' '__')" \
      topk50,k50,topk1000,k1000,topp0.9,topk100_topp0.9 zipf QRITA_LAUNCH_TABLE=$table
  done
  timeout 100 python3 -m pytest -p no:cacheprovider -rf --tb=short -q tests/test_triton_masks.py \
    -k "test_wide_compaction_append_modes or test_pass_a_flat_lanes" 2>&1 | tee "$OUT/pytest_flat.log" | grep -E "^E  |passed|failed" | head
fi
if [[ $stage == s28d ]]; then  # call 4: the wide compaction's FLAT lanes (wideflat=1x0: no layout conversion through shared memory per appending tile) against the default, fp32 and bf16, B = 1, 64, 1024 (profile), then its exactness test on the GPU
  timeout 90 python3 -m pytest -p no:cacheprovider -rf --tb=short -q tests/test_triton_masks.py \
    -k test_wide_compaction_append_modes 2>&1 | tee "$OUT/pytest_wide_flat.log" | grep -E "^E  |passed|failed" | head
  for table in ${FLAT_T:-default wideflat=1x0 wideflat=1x0,wide=256x1}; do
    PROF_BATCH=${FLAT_B:-1,64,1024} PROF_DTYPES=float32,bfloat16 KNOB_S="${PROF_S:-110}" \
      prof "$(echo $table | tr '=,' '__')" topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
fi
if [[ $stage == s28c ]]; then  # call 3: Nsight Compute on pass A and the wide band compaction (fp32 zipf topp0.9, B = 1024, V = 131072): why the compaction reads at ~1.1 TB/s where pass A reads at ~3.3
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  echo "ncu: ${NCU:-none}"; nvidia-smi --query-gpu=name --format=csv,noheader
  if [[ -n $NCU ]]; then
    timeout "${NCU_S:-300}" "$NCU" --kernel-name regex:"candidates_kernel|wide_compact_kernel|write_mask_kernel" \
      --launch-count "${NCU_N:-3}" --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
      python3 benchmarks/profile_pipeline.py --out "$OUT/ncu_prof" --batch 1024 --dtypes float32 \
      --workloads zipf --scenarios topp0.9 > "$OUT/ncu_compact.txt" 2>&1
    echo "ncu exit $?"; grep -E "wide_compact|candidates_kernel|write_mask|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|Warp Cycles Per Issued|Issued Warp|No Eligible|ERR" "$OUT/ncu_compact.txt" | head -90
  fi
fi
if [[ $stage == s28b ]]; then  # call 2: the one-launch hist band counting a fixed sample of each tile (histsample=F: the first 1 / F), its test, then graph replays (profile) B = 1 to 1024 at F = 2, 4, 8 (the histsample knob is in 50fccb9 only: measured slower, removed)
  timeout "${HB_TESTS_S:-120}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_hist_band_is_exact_and_hits 2>&1 \
    | tee "$OUT/pytest_hist_band.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  for t in ${HS_T:-512x50,histsample=4x0 512x50,histsample=8x0 512x25,histsample=4x0 512x50,histsample=2x0}; do
    table=histone=1x0,histband=$t
    PROF_BATCH=1,8,64,256,1024 KNOB_S="${PROF_S:-70}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  PROF_BATCH=256 KNOB_S="${PROF_S:-70}" prof default topp0.9,topp0.99 zipf,gaussian
fi
if [[ $stage == s28a ]]; then  # next session, call 1: the hist band's one-launch form (histone=1x0: no fill, no merge launch) on the GPU: its test, then eager calls in one process (knob_ab) against the sampled band and the two-launch form, then graph replays (profile) B = 1 to 1024
  timeout "${HB_TESTS_S:-120}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_hist_band_is_exact_and_hits 2>&1 \
    | tee "$OUT/pytest_hist_band.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
  timeout "${AB_S:-150}" python3 benchmarks/knob_ab.py --out "$OUT/knob_ab" --knob QRITA_LAUNCH_TABLE \
    --values "default|histband=512x50|histband=512x50,histone=1x0" --rounds 5 --batch 1,8,64 \
    --calls "topp0.9 mask" 2>&1 | grep -v Warn | tail -6
  for table in histband=512x50,histone=1x0; do
    PROF_BATCH=1,8,64,1024 KNOB_S="${PROF_S:-60}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
fi
if [[ $stage == s27f ]]; then  # call 6: the masks' GPU tests that cover top-p at the hist band default (fp32): batches, determinism and batch invariance, graph capture, real vocabularies
  gpu_tests s27f "${TESTS_S:-420}" tests/test_triton_masks.py::test_gpu_batches \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    tests/test_triton_masks.py::test_gpu_cuda_graph_capture_and_replay \
    "tests/test_triton_masks.py::test_gpu_real_vocab[32000-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[262144-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[128256-float32]"
fi
if [[ $stage == s27e ]]; then  # call 5: the bench of the hist band (512 bins, 8192-entry tiles, 8 warps) against the sampled band, top-p masks B = 1 to 1024 (B = 256 included), oracle checks first
  bench_ab masks topp0.9,topp0.99 "${BENCH_S:-150}" 1,8,64,256,1024 \
    QRITA_LAUNCH_TABLE=histband=512x50,histblock=8192x8 QRITA_LAUNCH_TABLE=
fi
if [[ $stage == s27d ]]; then  # call 4: the hist band's tile (entries per tl.histogram call) and warps at 512 and 256 bins, B = 1 to 1024 (profile), then its test
  for table in histband=512x50,histblock=8192x8 histband=512x50,histblock=4096x4 \
      histband=256x50,histblock=8192x8; do
    PROF_BATCH=1,8,64,1024 KNOB_S="${PROF_S:-60}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  timeout "${HB_TESTS_S:-100}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_hist_band_is_exact_and_hits 2>&1 \
    | tee "$OUT/pytest_hist_band.log" | grep -E "^E  |passed|failed" | cut -c1-300 | head -20
fi
if [[ $stage == s27c ]]; then  # call 3: why the hist band's test failed on the GPU (its assertion lines), then the band at 256 and 128 bins (profile, B = 1 to 1024)
  timeout "${HB_TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_hist_band_is_exact_and_hits 2>&1 \
    | tee "$OUT/pytest_hist_band.log" | grep -E "^E  |passed|failed" | cut -c1-400 | head -40
  for table in histband=256x50 histband=128x50; do
    PROF_BATCH=1,8,64,1024 KNOB_S="${PROF_S:-60}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
fi
if [[ $stage == s27b ]]; then  # call 2: the wide band placed from a count histogram of the row (histband=NBxPCT, off by default) against the sampled band, top-p masks B = 1 to 1024 (profile); its test on the GPU; the bf16 / fp16 real-vocab tests at the rounds' stop rule; then the bench of both, oracle checks first
  for table in default histband=1024x50 histband=512x50 histband=1024x25; do
    PROF_BATCH=1,8,64,1024 KNOB_S="${PROF_S:-60}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  timeout "${HB_TESTS_S:-120}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py -k test_hist_band_is_exact_and_hits 2>&1 | tail -4
  gpu_tests s27b "${TESTS_S:-200}" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[128256-bfloat16]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float16]"
  bench_ab masks topp0.9,topp0.99 "${BENCH_S:-60}" 1,8,64,1024 \
    QRITA_LAUNCH_TABLE=histband=${HB:-1024x50} QRITA_LAUNCH_TABLE=
fi
if [[ $stage == s27a ]]; then  # next session, call 1: the wide band placed by two levels of mass histograms (levels=1x0, off by default) against the sampled band, top-p masks at B = 1 to 1024 (profile: band hits and kernel µs); its interpreter test on the GPU; then the bench of both, oracle checks first
  for table in default levels=1x0; do
    PROF_BATCH=1,8,64,1024 KNOB_S="${PROF_S:-100}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  timeout "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -rf --tb=short -q \
    tests/test_triton_masks.py::test_levels_band_is_exact_and_hits 2>&1 | tail -5
  bench_ab masks topp0.9,topp0.99 "${BENCH_S:-60}" 1,8,64,1024 QRITA_LAUNCH_TABLE=levels=1x0 \
    QRITA_LAUNCH_TABLE=
fi
if [[ $stage == s26c ]]; then  # call 3: top-p masks with the wide rounds' stop rule and a fourth round (the default now) against the old three rounds without it, B = 1 to 1024; then the masks' GPU tests that cover top-p at real shapes
  for table in default rounds=3x0,widefit=0x0; do
    PROF_BATCH=1,8,64,1024 KNOB_S="${PROF_S:-100}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  gpu_tests s26c "${TESTS_S:-220}" tests/test_triton_masks.py::test_gpu_batches \
    tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant \
    "tests/test_triton_masks.py::test_gpu_real_vocab[32000-float32]" \
    "tests/test_triton_masks.py::test_gpu_real_vocab[151936-float32]"
fi
if [[ $stage == s26b ]]; then  # call 2: where top-p masks spend their time at B = 1 and 8 (fp32 zipf, gaussian) at the default and at the band's sample / warps and the rounds' split; then a short GPU fuzz run (qrita.testing.fuzz)
  for table in default band=1024x4 band=4096x16 roundsplit=4x0; do
    PROF_BATCH=1,8,64 KNOB_S="${PROF_S:-75}" prof "$(echo $table | tr '=,' '__')" \
      topp0.9,topp0.99 zipf,gaussian QRITA_LAUNCH_TABLE=$table
  done
  timeout "${FUZZ_S:-150}" python3 -m qrita.testing.fuzz --seconds "${FUZZ_RUN_S:-110}" --seed 26 \
    --out "$OUT/fuzz" 2>&1 | grep -v Warn | tail -15
fi
if [[ $stage == s26a ]]; then  # next session, call 1: the one-launch scratch kept (its new form: raw stream handle, a view per size) vs zeroed per call, both inside one process (benchmarks/knob_ab.py, rounds alternate the order; oracle checks first); then k1000 at B = 1024: dense packing up to 2048 candidates (measured slower before the int32 key compares) and the sort at 32 warps
  timeout "${AB_S:-200}" python3 benchmarks/knob_ab.py --out "$OUT/knob_ab" --rounds 5 \
    --batch 1,8 --calls "topk50 mask,top_k k50" 2>&1 | grep -v Warn | tail -6
  for table in default search=2048x8 search=2048x16 sortbig=0x32; do
    KNOB_S="${PROF_S:-45}" prof "$(echo $table | tr '=,' '__')" topk1000,k1000 zipf \
      QRITA_LAUNCH_TABLE=$table
  done
fi
if [[ $stage == s25c ]]; then  # call 3: the bf16 one-launch GPU test alone (its compilation outran every shorter limit), then top-k masks and top_k at B = 1 and 8 with the scratch kept (the default now) and zeroed per call
  gpu_tests s25c "${TESTS_S:-300}" "tests/test_triton_masks.py::test_gpu_one_launch_topk_mask[bfloat16]"
  bench_ab masks topk50,topk1000 "${BENCH_S:-75}" 1,8 QRITA_ONE_LAUNCH_SCRATCH=keep \
    QRITA_ONE_LAUNCH_SCRATCH=zero
  bench_ab top_k k50,k1000 "${BENCH_S:-75}" 1,8 QRITA_ONE_LAUNCH_SCRATCH=keep \
    QRITA_ONE_LAUNCH_SCRATCH=zero
fi
if [[ $stage == s25b ]]; then  # call 2: the GPU tests still owed (the scratch kept by default now), then pass A two tiles ahead (prefetch=2x0) and the cutoff kernel's warps at B = 1024
  gpu_tests s25b "${TESTS_S:-230}" \
    "tests/test_triton_sampling.py::test_gpu_fused_samplers_reproducible_invariant_capturable[1000-0.95-0.8]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[64]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[1024]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_real_vocab[201088-float16]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_real_vocab[262144-float32]" \
    "tests/test_triton_masks.py::test_gpu_one_launch_topk_mask[float32]"
  for table in default prefetch=2x0 cutoff=0x8 cutoff=0x2; do
    KNOB_S="${PROF_S:-45}" prof "$(echo $table | tr '=,' '__')" topk50,k50,topk1000,k1000 zipf \
      QRITA_LAUNCH_TABLE=$table
  done
fi
if [[ $stage == s25a ]]; then  # next session, call 1 (written without a GPU): the one-launch scratch's new layout (counters first, reset by each row's last program; on by default, not yet run on a GPU) and the scratch kept between calls (QRITA_ONE_LAUNCH_SCRATCH=keep, one memset launch less per eager call at B <= 16): its GPU tests, then the host + device time per eager call both ways
  QRITA_ONE_LAUNCH_SCRATCH=keep gpu_tests s25a_keep "${TESTS_S:-260}" \
    "tests/test_triton_masks.py::test_gpu_one_launch_topk_mask[float32]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[1]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant[3]" \
    tests/test_triton_sampling.py::test_gpu_fused_samplers_reproducible_invariant_capturable
  for mode in zero keep; do
    for b in 1 8; do
      echo "== QRITA_ONE_LAUNCH_SCRATCH=$mode B=$b"
      QRITA_ONE_LAUNCH_SCRATCH=$mode timeout 60 python3 benchmarks/host_overhead.py \
        --out "$OUT/host_${mode}_$b" --batch $b --rows 8 \
        --only "public topk50 mask,public top_k k50,public sample k50" 2>&1 | grep -E "us/call"
    done
  done
  gpu_tests s25a_vocab "${VOCAB_S:-140}" tests/test_triton_top_k.py::test_gpu_top_k_real_vocab
fi
if [[ $stage == s24d ]]; then  # call 4: the one-launch GPU tests at the new one-launch tile (2048, prefix sums), then its B = 8 profile
  gpu_tests s24d "${TESTS_S:-150}" "tests/test_triton_masks.py::test_gpu_one_launch_topk_mask[float32]" \
    "tests/test_triton_top_k.py::test_gpu_top_k_batches_deterministic_invariant"
  PROF_BATCH=8 KNOB_S="${PROF_S:-40}" prof one_8 topk50,k50,topk1000,k1000 zipf
fi
if [[ $stage == s24c ]]; then  # call 3: the one-launch kernels' pass A tile (eager B <= 8, kernel times by the profiler: host noise hides them in the eager bench), pass A's append limit above 8 at B = 1024, then the owed masks determinism / batch invariance test
  for table in default candone=2048x0,sparseone=0x0; do
    PROF_BATCH=1,8 KNOB_S="${PROF_S:-40}" prof "one_$(echo $table | tr '=,' '__')" \
      topk50,k50,topk1000,k1000 zipf QRITA_LAUNCH_TABLE=$table
  done
  for table in sparse=16x0 sparse=32x0; do
    KNOB_S="${PROF_S:-40}" prof "$(echo $table | tr '=,' '__')" topk50,topk1000 zipf \
      QRITA_LAUNCH_TABLE=$table
  done
  gpu_tests s24c "${TESTS_S:-150}" tests/test_triton_masks.py::test_gpu_deterministic_and_batch_invariant
fi
if [[ $stage == s24b ]]; then  # call 2: GPU tests at the new default (the search's 8 warps at B <= 8, top-k alone) and the owed masks determinism / batch invariance test; pass A's one-by-one append limit at B = 1024 (sparse 8, chosen before pass A went to one warp per program; k1000 keeps ~2 candidates per 128-entry tile) profiled; then a bench A/B with oracle checks of that limit at 0 (B = 1024) together with the one-launch kernels' pass A in 2048-entry tiles by prefix sums (eager B <= 8: candone, sparseone)
  m=tests/test_triton_masks.py t=tests/test_triton_top_k.py
  gpu_tests s24b "${TESTS_S:-170}" "$m::test_gpu_small_batch_top_k_in_a_graph" \
    "$t::test_gpu_top_k_cuda_graph" "$m::test_gpu_deterministic_and_batch_invariant"
  for table in default sparse=0x0 ${S24B_EXTRA:-}; do
    KNOB_S="${PROF_S:-50}" prof "$(echo $table | tr '=,' '__')" topk50,k50,topk1000,k1000 \
      zipf QRITA_LAUNCH_TABLE=$table
  done
  for op in masks top_k; do
    scen=topk50,topk1000; [[ $op == top_k ]] && scen=k50,k1000
    bench_ab $op $scen "${AB_S:-60}" 1,8,1024 QRITA_LAUNCH_TABLE=default \
      QRITA_LAUNCH_TABLE=sparse=0x0,candone=2048x0,sparseone=0x0
  done
fi
