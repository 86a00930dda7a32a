# Makes this folder's dumps on 4 GPUs (NCCL): bash gen_all.sh OUTDIR
# Every case at 2 ranks (GPUs 0,1) and 4 ranks; hung cases end by the NCCL watchdog's timeout.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_NCCL_TRACE_CPP_STACK=0
export FR_TIMEOUT_S=${FR_TIMEOUT_S:-20}
G=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$G"
run() {
  n=$1 c=$2
  d="$G/${c}_${n}r"
  mkdir -p "$d"
  # Both names PyTorch has used for the dump's file prefix (the rank is appended).
  env TORCH_FR_DUMP_TEMP_FILE="$d/nccl_trace_rank_" TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$d/nccl_trace_rank_" \
    timeout 150 python3 -m torch.distributed.run --standalone --nproc_per_node "$n" "$here/gen_fr.py" "$c" "$d" \
    >"$d.log" 2>&1
  echo "$c ${n}r rc=$? files: $(ls "$d" | tr '\n' ' ')"
  grep -E "^rank|Watchdog|timed out|dump|Timeout" "$d.log" | cut -c1-200 | head -12
}
for n in 2 4; do
  for c in healthy inversion skip; do run "$n" "$c"; done
done
