# Makes this folder's record_ops runs: bash gen_all.sh OUTDIR [NAME ...] (default: every run).
# 2 ranks; on one GPU both share it and talk over Gloo (PG=gloo), on two over NCCL.
# Each run gets its own TORCH_TRACE folder (OUTDIR/NAME/trace) and its own Inductor cache.
# GPARITY_TORCHOPS: libgparity_torchops.so built against this machine's PyTorch.
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
  rm -rf "${G:?}/$name"
  mkdir -p "$G/$name"
  env TORCH_TRACE="$G/$name/trace" TORCHINDUCTOR_CACHE_DIR="/tmp/inductor-$name" "$@" timeout 240 \
    python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$here/gen_record_kernels.py" "$mode" "$G/$name" \
    >"$G/$name.log" 2>&1
  echo "$name rc=$? $(ls "$G/$name" | wc -l) files"
  grep -E "^rank|Error|error" "$G/$name.log" | tail -4
}
shift
names=${*:-eager inductor inductor_repeat inductor_pass1 inductor_nondet inductor_nondet_repeat inductor_ro inductor_python}
for n in $names; do
  case $n in
    eager) two eager eager ;;
    inductor | inductor_repeat) two "$n" inductor ;;
    inductor_python) two inductor_python inductor BACKEND=python ;;
    inductor_pass1) two inductor_pass1 inductor_pass1 ;;
    inductor_nondet | inductor_nondet_repeat) two "$n" inductor_nondet SEQ=1024 ;;
    inductor_ro) two inductor_ro inductor_ro ;;
  esac
done
