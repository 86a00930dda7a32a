# Makes this folder's logs on one GPU (2 ranks share it over Gloo): bash gen_all.sh OUTDIR
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PG=gloo NN_MODULE=1 HASH_FN=norm,hash_tensor
G=$1
mkdir -p "$G"
python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count())'
two() {
  name=$1 mode=$2
  shift 2
  env "$@" timeout 300 python3 -m torch.distributed.run --standalone --nproc_per_node 2 gen_debugmode.py "$mode" "$G/$name" >"$G/$name.log" 2>&1
  echo "$name rc=$? $(ls "$G/$name" | wc -l) files"
  tail -3 "$G/$name.log"
}
two eager eager
two compile compile
two compile_gelu compile_gelu
two compile_gelu_rank1 compile_gelu BUG_RANKS=1
STEPS=1 timeout 300 python3 gen_debugmode.py compile_inductor "$G/compile_inductor" >"$G/compile_inductor.log" 2>&1
echo "compile_inductor rc=$?"
tail -3 "$G/compile_inductor.log"
