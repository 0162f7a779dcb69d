#!/usr/bin/env bash
# Device-side: unpack the carried site-packages and nixl, then run the one-box stack twice on one GPU with the
# bundle's host launcher: arm 1 SGLang's nixl backend (UCX over TCP + cuda_copy, UCX protocol selection printed),
# arm 2 mooncake over TCP; the same `pdrepro sweep` bench loop on each, raw files kept under $OUT.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }
PHASE=${1:-all}
mkdir -p /tmp/stage; mv gpu-carry/p.* /tmp/stage/ 2>/dev/null; ls /tmp/stage
if [ "$PHASE" = stage ]; then exit 0; fi
if [ ! -d /tmp/site/sglang ]; then
step "unpack"
mkdir -p /tmp/site
cat /tmp/stage/p.* > /tmp/bundle.tar && tar -C /tmp -xf /tmp/bundle.tar && rm /tmp/bundle.tar
cat /tmp/bundle/site.tar.xz.* | xz -d -T16 | tar -C /tmp/site -x
python3 -m pip install -q --no-index --no-deps --target /tmp/site /tmp/bundle/nixl*.whl 2>&1 | tail -2
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=python3; pd() { "$PY" -m pdrepro "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
"$PY" -c "import sglang, nixl, mooncake, torch; print('sglang', sglang.__version__, 'torch', torch.__version__)" 2>&1 | tail -1 | tee "$OUT/versions.txt"
"$PY" -m pip list --path /tmp/site 2>/dev/null | grep -i -E "nixl|mooncake|sglang|ucx" | tee -a "$OUT/versions.txt"
if [ ! -f /tmp/model/config.json ]; then step "offline model"
pd offline-model --scenario onebox-qwen25-0.5b --out /tmp/model --dataset /tmp/model/sharegpt.json > "$OUT/offline-model.out" 2>&1 || { cat "$OUT/offline-model.out"; exit 2; }
fi
SARGS=(--server-arg='--attention-backend triton' --server-arg='--sampling-backend pytorch' --server-arg='--grammar-backend none' --server-arg='--enable-metrics')
arm() {  # arm NAME [extra stack-up args...]
  local name=$1; shift; local run=/tmp/runs/$name; mkdir -p "$run/console"
  step "$name: stack up"
  pd stack up --target onebox --launcher host --scenario onebox-qwen25-0.5b --out "$run" --model /tmp/model \
    --dataset /tmp/model/sharegpt.json --gpus 0 "${SARGS[@]}" "$@" > "$run/console/stack-up.out" 2>&1
  local up=$?; tail -3 "$run/console/stack-up.out"
  if [ $up -eq 0 ]; then
    read -r router prefill decode < <("$PY" -c "
import json,sys; p=json.load(open('$run/stack.json'))['processes']; b={x['role']:x['health_url'].rsplit('/',1)[0] for x in p}; print(b['router'],b['prefill'],b['decode'])")
    step "$name: sweep"
    pd sweep --scenario onebox-qwen25-0.5b --router "$router" --prefill "$prefill" --decode "$decode" --out "$run" \
      --model-path /tmp/model --dataset-path /tmp/model/sharegpt.json --bench-in-place --logs-from "$run/logs" --metrics \
      --length-timeout 120 $SWEEP_EXTRA > "$run/console/sweep.out" 2>&1; echo "sweep exit $?"; tail -5 "$run/console/sweep.out"
  fi
  step "$name: stack down"
  pd stack down "$run" > "$run/console/stack-down.out" 2>&1
  tar -C /tmp/runs -cJf "$OUT/$name.tar.xz" "$name"; ls -la "$OUT/$name.tar.xz"
}
if [ "$PHASE" = nixl ] || [ "$PHASE" = all ]; then SWEEP_EXTRA="--no-transport-proof --no-analyze"
UCX_TLS=tcp,cuda_copy UCX_LOG_LEVEL=info UCX_PROTO_INFO=y arm nixl --server-arg='--disaggregation-transfer-backend nixl'
fi
if [ "$PHASE" = mooncake ] || [ "$PHASE" = all ]; then SWEEP_EXTRA=""
arm mooncake-tcp --force-tcp; fi
step done
