# Makes this folder's cases on 2 GPUs (NCCL): bash gen_all.sh OUTDIR
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_TRACE_CPP_STACK=0 TORCH_NCCL_DUMP_ON_TIMEOUT=1 FR_TIMEOUT_S=${FR_TIMEOUT_S:-20} TORCHINDUCTOR_FORCE_DISABLE_CACHES=1
G=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$G"
for c in ${CASES:-eager compiled moved moved_rank1}; do
  d="$G/$c"
  mkdir -p "$d"
  if [ "$c" = eager ]; then unset TORCH_TRACE; else export TORCH_TRACE="$d/trace"; fi
  # A hang dumps through the watchdog under PyTorch's own names (both it has used).
  env TORCH_FR_DUMP_TEMP_FILE="$d/nccl_trace_rank_" TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$d/nccl_trace_rank_" \
  timeout 120 python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$here/gen_moved.py" "$c" "$d" \
    >"$d.log" 2>&1
  echo "$c rc=$? files: $(ls "$d" | tr '\n' ' ') trace: $(ls "$d/trace" 2>/dev/null | tr '\n' ' ')"
  grep -E "^rank|Error|error" "$d.log" | cut -c1-200 | head -12
done
