#!/usr/bin/env bash
# Device-side: the stack launcher's ownership proof against real SGLang processes on one GPU.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }
mkdir -p /tmp/stage; mv gpu-carry/p.* /tmp/stage/ 2>/dev/null; ls /tmp/stage
[ "${1:-}" = stage ] && exit 0
if [ ! -d /tmp/site/sglang ]; then
  step unpack; mkdir -p /tmp/site
  cat /tmp/stage/p.* > /tmp/bundle.tar && tar -C /tmp -xf /tmp/bundle.tar && rm /tmp/bundle.tar
  cat /tmp/bundle/site.tar.xz.* | xz -d -T16 | tar -C /tmp/site -x
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
pd() { python3 -m pdrepro "$@"; }
[ -f /tmp/model/config.json ] || { step model; pd offline-model --scenario onebox-qwen25-0.5b --out /tmp/model --dataset /tmp/model/sharegpt.json >/dev/null 2>&1 || exit 2; }
R=/tmp/runs/stackproof; rm -rf $R; mkdir -p /tmp/runs
step "stack up"
pd stack up --target onebox --launcher host --out $R --model /tmp/model --dataset /tmp/model/sharegpt.json --gpus 0 --force-tcp \
  --server-arg='--attention-backend triton' --server-arg='--sampling-backend pytorch' --server-arg='--grammar-backend none' \
  --server-arg=--enable-metrics 2>&1 | tail -4; echo "up exit ${PIPESTATUS[0]}"
step "status"; pd stack status $R; python3 -c "import json;[print(p['name'],p.get('title')) for p in json.load(open('$R/stack.json'))['processes']]"; echo "status exit $?"
id=$(python3 -c "import json;print(json.load(open('$R/stack.json')).get('stack_id',''))")
echo "stack id: $id"
step "processes carrying the marker"
for p in /proc/[0-9]*; do pid=${p#/proc/}; if 2>/dev/null tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx "PDREPRO_STACK_ID=$id"; then
  echo "$pid pgid=$(ps -o pgid= -p $pid) $(tr '\0' ' ' < $p/cmdline | cut -c1-100)"; fi; done
step "all python/sglang processes"; ps -eo pid,pgid,sid,comm,args | grep -E "sglang|python" | grep -v grep | cut -c1-150
step "a foreign sleep put into the record"
setsid sleep 600 & foreign=$!; sleep 0.5; foreign=$(pgrep -n -x sleep)
cp $R/stack.json /tmp/stack.json.orig
python3 - "$R/stack.json" "$foreign" <<'PY'
import json,sys; p=sys.argv[1]; r=json.load(open(p)); r['processes'][0]['pid']=int(sys.argv[2]); json.dump(r,open(p,'w'))
PY
pd stack down $R --grace 10; echo "down (tampered) exit $?"; kill -0 $foreign && echo "foreign sleep alive: good"
cp /tmp/stack.json.orig $R/stack.json
step "stack down"; pd stack down $R --grace 20; echo "down exit $?"
sleep 2; step "left after down"; ps -eo pid,comm,args | grep -E "sglang|launch_server|router" | grep -v grep | cut -c1-150; nvidia-smi --query-compute-apps=pid,used_memory --format=csv
kill $foreign; step "status after down"; pd stack status $R; echo "status exit $?"
cp $R/stack.json $OUT/stack.json; cp -r $R/logs $OUT/ 2>/dev/null; rm -f $OUT/logs/*.log.gz; for f in $OUT/logs/*.log; do xz "$f"; done
step done
