# ---- How steps start and stop (the same block in every rendered script) ----
# launch NAME NODE gpu|plain [KEY=VALUE ...] -- ARGV...
#   starts ARGV as a background job step on NODE, stdout/stderr to
#   $JOB_DIR/logs/NAME.log. RUNTIME picks how:
#     docker  docker run --rm on the node (host network, the RDMA devices,
#             IPC_LOCK, memlock, all GPUs for servers; MOUNTS read-only and
#             JOB_DIR writable at the same paths), removed when the step ends
#             or is signalled;
#     pyxis   srun --container-image (enroot through the pyxis plugin);
#     host    ARGV runs directly on the node (software installed there).
# step NAME NODE|- [KEY=VALUE ...] -- ARGV...   runs in the foreground, on
#   NODE through srun or, with -, in this batch shell.
STEP_PIDS=()
CONTAINERS=()
# Unique on a Docker engine that several clusters' nodes share.
CONTAINER_PREFIX=pdrepro-${SLURM_CLUSTER_NAME:-slurm}-$SLURM_JOB_ID
pd_log() { printf '[pdrepro %(%H:%M:%S)T] %s\n' -1 "$*"; }
pd_fail() { pd_log "error: $*" >&2; exit 2; }

# The Docker step: removes its container on any exit of the step, scancel included.
pd_container() {
  local name=$1; shift
  trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
  trap 'exit 143' TERM INT HUP
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run --rm --name "$name" "$@" &
  wait "$!"
}
export -f pd_container

pd_srun() { # NODE ARGV...: one task on NODE, sharing the node with the other steps
  local node=$1; shift
  srun --nodes=1 --ntasks=1 --nodelist="$node" --overlap --kill-on-bad-exit=1 "$@"
}

node_ip() { # the address a node's servers advertise and are reached on
  local node=$1 ip
  if [ -n "$NET_IFACE" ]; then
    ip=$(pd_srun "$node" ip -4 -o addr show dev "$NET_IFACE" | awk '{split($4, a, "/"); print a[1]; exit}')
  else
    ip=$(getent ahostsv4 "$node" | awk '{print $1; exit}')
  fi
  [ -n "$ip" ] || pd_fail "no IPv4 address for node $node (NET_IFACE='$NET_IFACE'); set NET_IFACE to the RDMA netdev"
  printf '%s\n' "$ip"
}

pd_command() { # NAME gpu|plain KEY=VALUE... -- ARGV...: the step's command for RUNTIME
  local name=$1 kind=$2; shift 2
  local env=() m
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  case $RUNTIME in
    host) CMD=(env "${env[@]}" "$@") ;;
    pyxis)
      local mounts=()
      for m in "${MOUNTS[@]}"; do mounts+=("$m:$m:ro"); done
      mounts+=("$JOB_DIR:$JOB_DIR")
      CMD=(--container-image="$IMAGE" --container-name="$CONTAINER_PREFIX-$name")
      CMD+=(--container-mounts="$(IFS=,; echo "${mounts[*]}")")
      CMD+=(env "${env[@]}" "$@") ;;
    docker)
      local flags=(--network host --init)
      [ "$kind" = gpu ] && flags+=(--ipc host --gpus all --cap-add IPC_LOCK --cap-add SYS_RESOURCE
                                   --ulimit "memlock=$MEMLOCK" --device /dev/infiniband)
      for m in "${MOUNTS[@]}"; do flags+=(-v "$m:$m:ro"); done
      flags+=(-v "$JOB_DIR:$JOB_DIR")
      for m in "${env[@]}"; do flags+=(-e "$m"); done
      CONTAINERS+=("$CONTAINER_PREFIX-$name")
      CMD=(bash -c 'pd_container "$@"' pd_container "$CONTAINER_PREFIX-$name" "${flags[@]}" "$IMAGE" "$@") ;;
    *) pd_fail "RUNTIME=$RUNTIME: use docker, pyxis or host" ;;
  esac
}

launch() {
  local name=$1 node=$2 kind=$3; shift 3
  pd_command "$name" "$kind" "$@"
  pd_log "starting $name on $node ($RUNTIME)"
  pd_srun "$node" --job-name="$name" --output="$JOB_DIR/logs/$name.log" "${CMD[@]}" &
  STEP_PIDS+=("$!")
}

step() {
  local name=$1 node=$2; shift 2
  pd_log "running $name on ${node/#-/the batch host}"
  if [ "$node" = - ]; then
    local env=()
    while [ "$1" != "--" ]; do env+=("$1"); shift; done
    shift
    env "${env[@]}" "$@"
  else
    pd_command "$name" plain "$@"
    pd_srun "$node" --job-name="$name" "${CMD[@]}"
  fi
}

wait_ready() { # URL: until it answers 200, failing early when a server step ended
  local url=$1 deadline=$((SECONDS + READY_TIMEOUT_S)) pid
  pd_log "waiting for $url (up to ${READY_TIMEOUT_S} s)"
  until curl -fsS -m 10 -o /dev/null "$url" 2>/dev/null; do
    for pid in "${STEP_PIDS[@]}"; do
      kill -0 "$pid" 2>/dev/null || pd_fail "a server step ended before $url was ready; see $JOB_DIR/logs/"
    done
    [ "$SECONDS" -lt "$deadline" ] || pd_fail "$url not ready after ${READY_TIMEOUT_S} s; see $JOB_DIR/logs/"
    sleep 5
  done
  pd_log "ready: $url"
}

node_record() { # ROLE NODE SCENARIO: the node's record (pdrepro doctor --out) in $JOB_DIR/nodes, whatever its verdict
  local role=$1 node=$2 scenario=$3 software=()
  case $RUNTIME in
    docker) software=(--image "$IMAGE") ;;   # the servers' image: its digest must match on both nodes
    host) software=(--python python) ;;      # the Python the servers run with: its packages
  esac
  pd_log "recording the $role node $node (doctor, on the node itself)"
  pd_srun "$node" "$BUNDLE/.venv/bin/pdrepro" doctor --role "$role" --scenario "$scenario" "${software[@]}" \
    --out "$JOB_DIR/nodes/$role.json" >"$JOB_DIR/logs/doctor-$role.log" 2>&1 || true
  [ -s "$JOB_DIR/nodes/$role.json" ] || pd_fail "no record of the $role node $node: see $JOB_DIR/logs/doctor-$role.log"
}

pd_alive() { local p; for p in "${STEP_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }

cleanup() {
  local rc=$? pid i
  set +e
  trap - EXIT TERM INT HUP
  pd_log "stopping ${#STEP_PIDS[@]} server step(s)"
  # srun passes the signal on to its step; the Docker steps remove their container.
  for pid in "${STEP_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for ((i = 0; i < STOP_GRACE_S; i++)); do
    pd_alive || break
    sleep 1
  done
  for pid in "${STEP_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  if [ "$RUNTIME" = docker ] && [ "${#CONTAINERS[@]}" -gt 0 ]; then
    # Belt and braces for a step killed before its trap ran.
    for node in $(printf '%s\n' "${NODES[@]}" | sort -u); do
      timeout 60 srun --nodes=1 --ntasks=1 --nodelist="$node" --overlap \
        docker rm -f "${CONTAINERS[@]}" >/dev/null 2>&1 || true
    done
  fi
  pd_log "job ends with exit code $rc"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
