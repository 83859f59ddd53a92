#!/usr/bin/env bash
# On a CUDA machine: run the kernel tests on CUDA (real Triton kernels, not the interpreter), the sm_90 compile
# check, the 1M-token indexer benchmark and the 1M-token read benchmark. Outputs go to $OUT (or ./gpu_check_out when OUT is unset).
#   bash scripts/gpu_check.sh            (INDEXPOOL_DATA=<shared/data folder> if it is not at ../shared/data)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-gpu_check_out}"
mkdir -p "$OUT"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python
export TRITON_INTERPRET=0 HF_HUB_OFFLINE=1
status=0

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || { echo "no CUDA device (nvidia-smi failed)"; exit 2; }
"$PY" -c "import torch; assert torch.cuda.is_available(), 'torch sees no CUDA device'; print(torch.cuda.get_device_name())" \
  > "$OUT/device.txt" 2>&1 || { cat "$OUT/device.txt"; exit 2; }

echo "== kernel tests on CUDA"
"$PY" -m pytest -q tests/kernels -p no:cacheprovider 2>&1 | tee "$OUT/kernel_tests.txt" || status=1

echo "== 1M-token benchmark with the indexer caches on CUDA (Triton kernels)"
"$PY" -m model.bench.indexer --tokens 32000,128000,1000000 --threads 0 --device cuda --json \
  --data "${INDEXPOOL_DATA:-../shared/data}" \
  > "$OUT/bench_1m.json" 2> "$OUT/bench_1m.log" || status=1
tail -3 "$OUT/bench_1m.log"

echo "== end to end: a 1M-token collection indexed, 20 questions through the read cache"
echo "   (indexing and the question's read run on the CPU: the CUDA path for them is not built yet, issue 12)"
"$PY" -m model.bench.read --tokens 1000000 --json "$OUT/bench_read_1m.json" \
  > "$OUT/bench_read_1m.txt" 2> "$OUT/bench_read_1m.log" || status=1
cat "$OUT/bench_read_1m.txt"
echo "outputs in $OUT (status $status)"
exit $status
