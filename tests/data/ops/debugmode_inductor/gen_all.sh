# Makes this folder's logs on 2 GPUs (NCCL): bash gen_all.sh OUTDIR [NAME ...] (default: every run)
# On 4 GPUs, two halves side by side: CUDA_VISIBLE_DEVICES=0,1 bash gen_all.sh OUT eager inductor &
# CUDA_VISIBLE_DEVICES=2,3 bash gen_all.sh OUT inductor_repeat ... (every run is independent).
# PACK=DIR: each run's folder and log also packed as DIR/NAME.tar.gz once it ends.
# Each run gets its own TORCH_TRACE folder (OUTDIR/NAME/trace) and its own Inductor cache.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCHINDUCTOR_FORCE_DISABLE_CACHES=1
G=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$G"
python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count())'
two() {
  name=$1 mode=$2
  shift 2
  mkdir -p "$G/$name"
  env TORCH_TRACE="$G/$name/trace" TORCHINDUCTOR_CACHE_DIR="/tmp/inductor-$name" "$@" timeout 240 \
    python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$here/gen_inductor.py" "$mode" "$G/$name" \
    >"$G/$name.log" 2>&1
  echo "$name rc=$? $(ls "$G/$name" | wc -l) files"
  grep -E "^rank|Error|error" "$G/$name.log" | tail -4
  if [ -n "${PACK:-}" ]; then (cd "$G" && tar czf "$PACK/$name.tar.gz" "$name" "$name.log"); fi
}
shift
names=${*:-eager inductor inductor_repeat inductor_pass1 inductor_nondet inductor_nondet_repeat}
for n in $names; do
  case $n in
    eager) two eager eager ;;
    inductor | inductor_repeat) two "$n" inductor ;;
    inductor_pass1) two inductor_pass1 inductor_pass1 ;;
    inductor_nondet | inductor_nondet_repeat) two "$n" inductor_nondet SEQ=1024 ;;
  esac
done
