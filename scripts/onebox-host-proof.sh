#!/usr/bin/env bash
# The one-box proof on a GPU host without Docker, with the bundle alone: an offline model of the
# scenario's geometry, `pdrepro stack up` (prefill, decode, router as host processes), the engine's
# own ceiling on the same GPUs (`pdrepro gpu-check`), `pdrepro sweep` with its transport proof,
# `pdrepro stack down`, then `pdrepro check` and `pytest repro/` on the stopped stack's files. Run it with the Python that serves SGLang
# (`make gpu-venv`, then PYTHON=.venv-gpu/bin/python); `make onebox-host-proof` calls it with that Python.
#
#   RUN      run directory (default runs/onebox-host-<UTC time>)
#   MODEL    model folder; made offline by `pdrepro offline-model` when it has no config.json
#   DATASET  ShareGPT JSON (made with the model when missing)
#   GPUS     GPU ids for the servers (default: 0 = both servers share GPU 0)
#   TCP      1: MC_FORCE_TCP=1 for servers and ceiling; auto (default): 1 when the host has no
#            RDMA device (/sys/class/infiniband empty), else the engine picks RDMA
#   SERVER_ARGS  extra server flags, one per line, after the scenario's launch.extra_server_args (default: none;
#                the one-box scenario carries the kernel backends a lean wheel set has, and --enable-metrics)
# Exit: the first non-zero status of stack up, sweep, check and the gates; the stack is stopped on
# every exit, and each step's console output is kept in RUN/console/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

PY=${PYTHON:-python3}
SCENARIO=${SCENARIO:-onebox-qwen25-0.5b}
RUN=${RUN:-runs/onebox-host-$(date -u +%Y%m%d-%H%M%S)}
MODEL=${MODEL:-runs/offline-model}
DATASET=${DATASET:-$MODEL/sharegpt.json}
GPUS=${GPUS:-0}
TCP=${TCP:-auto}
SERVER_ARGS=${SERVER_ARGS-}
pdrepro() { "$PY" -m pdrepro "$@"; }

mkdir -p "$RUN/console"
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }
# Each step's output goes to the console and to RUN/console/<name>.out.
logged() { local name=$1; shift; "$@" 2>&1 | tee "$RUN/console/$name.out"; return "${PIPESTATUS[0]}"; }

if [ "$TCP" = auto ]; then
  if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then TCP=0; else TCP=1; fi
fi
tcp_flag=(); ceiling_transport=auto
if [ "$TCP" = 1 ]; then tcp_flag=(--force-tcp); ceiling_transport=tcp; fi
server_args=()
while IFS= read -r line; do [ -n "$line" ] && server_args+=("--server-arg=$line"); done <<< "$SERVER_ARGS"

# offline-model never overwrites a model or a dataset it finds (it would take --force): a MODEL that holds a
# model but no DATASET is the user's to complete, not ours to remake.
if [ ! -f "$MODEL/config.json" ]; then
  step "offline model of $SCENARIO's geometry into $MODEL"
  logged offline-model pdrepro offline-model --scenario "$SCENARIO" --out "$MODEL" --dataset "$DATASET" || exit $?
elif [ ! -f "$DATASET" ]; then
  echo "onebox-host-proof: $MODEL holds a model but $DATASET is missing; give DATASET=, or move $MODEL away to make both" >&2
  exit 2
fi

stopped=
stop() {
  [ -n "$stopped" ] && return; stopped=1
  step "stack down"
  logged stack-down pdrepro stack down "$RUN" || true
}
trap stop EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

step "stack up ($SCENARIO, GPUs $GPUS, MC_FORCE_TCP=$TCP)"
logged stack-up pdrepro stack up --target onebox --launcher host --scenario "$SCENARIO" --out "$RUN" \
  --model "$MODEL" --dataset "$DATASET" --gpus "$GPUS" "${tcp_flag[@]}" "${server_args[@]}" || exit $?
urls=$("$PY" - "$RUN" <<'EOF'
import json, sys
procs = json.load(open(f"{sys.argv[1]}/stack.json"))["processes"]
base = {p["role"]: p["health_url"].rsplit("/", 1)[0] for p in procs}
print(base["router"], base["prefill"], base["decode"])
EOF
) || exit 2
read -r router prefill decode <<< "$urls"

# The engine alone on the same GPUs and transport, while the servers hold their memory: the
# ceiling the report sets each length's per-request bandwidth against.
# One GPU id puts both sides on that GPU, as the servers share it.
step "engine ceiling: pdrepro gpu-check --gpus $GPUS --transport $ceiling_transport"
logged gpu-check pdrepro gpu-check --scenario "$SCENARIO" --gpus "$GPUS" --layouts one,layers \
  --transport "$ceiling_transport" --out "$RUN/engine-ceiling" \
  || echo "engine ceiling failed (exit $?); the sweep goes on without it"

step "sweep against $router"
logged sweep pdrepro sweep --scenario "$SCENARIO" --router "$router" --prefill "$prefill" --decode "$decode" \
  --out "$RUN" --model-path "$MODEL" --dataset-path "$DATASET" --bench-in-place --logs-from "$RUN/logs" --metrics
swept=$?
if [ "$swept" -eq 2 ]; then exit 2; fi
# Stopped before the verdicts: the servers append to RUN/logs while they run (health probes),
# so the inputs check and the gates judge are final only once they are down.
stop
step "check"
logged check pdrepro check "$RUN"; checked=$?
step "gates: pytest repro/ --run-dir $RUN"
logged gates "$PY" -m pytest repro/ --run-dir "$RUN" -p no:cacheprovider -q -rs; gated=$?
step "done: $RUN (report $RUN/report.md)"
for status in $swept $checked $gated; do [ "$status" -eq 0 ] || exit "$status"; done
