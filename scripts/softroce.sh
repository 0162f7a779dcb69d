#!/usr/bin/env bash
# Soft-RoCE (rxe): RDMA over an ordinary Ethernet interface, so the Mooncake
# Transfer Engine's RDMA path can be exercised on a laptop or VM without an
# RDMA NIC. rxe cannot register GPU memory: it moves host memory only.
#
#   scripts/softroce.sh up [iface]     load rdma_rxe, add rxe0 on IFACE (default: the default-route interface)
#   scripts/softroce.sh down           remove rxe0
#   scripts/softroce.sh status         RDMA devices, ports, GIDs, memlock
#
# Environment: RXE_NAME (default rxe0), SYSFS_ROOT (default /sys, for reading a copy).
set -euo pipefail

RXE_NAME=${RXE_NAME:-rxe0}
SYSFS_ROOT=${SYSFS_ROOT:-/sys}
PROG=softroce

usage() {
    echo "usage: $0 up [iface] | down | status" >&2
    exit 2
}

die() {
    echo "$PROG: $*" >&2
    exit 1
}

default_iface() {
    ip -o route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}'
}

# Why rdma_rxe cannot be loaded here, in words a user can act on.
explain_no_rxe() {
    local kernel detail
    kernel=$(uname -r)
    if grep -qi microsoft /proc/version 2>/dev/null; then
        detail="this is WSL2: its kernel ($kernel) is built without rdma_rxe. Build a WSL kernel with CONFIG_RDMA_RXE=m, or use a Linux VM."
    elif [[ $kernel == *linuxkit* ]]; then
        detail="this is Docker Desktop's VM kernel ($kernel), which has no rdma_rxe. Use a Linux host or VM for soft-RoCE."
    elif [[ ! -d /lib/modules/$kernel ]]; then
        detail="kernel $kernel has no loadable modules here (/lib/modules/$kernel missing) and no InfiniBand/RDMA support built in (no $SYSFS_ROOT/class/infiniband). Run this on a host whose kernel has CONFIG_RDMA_RXE, or install its modules (Ubuntu: linux-modules-extra-$kernel)."
    else
        detail="kernel $kernel has no rdma_rxe module. Install the extra modules (Ubuntu: apt-get install linux-modules-extra-$kernel; Fedora: kernel-modules-extra) or use a kernel with CONFIG_RDMA_RXE."
    fi
    echo "$PROG: cannot load rdma_rxe: $detail" >&2
    echo "$PROG: without soft-RoCE the smoke test still runs, over TCP." >&2
    exit 1
}

rxe_present() {
    [[ -e $SYSFS_ROOT/class/infiniband/$RXE_NAME ]]
}

rxe_netdev() {
    local f
    for f in "$SYSFS_ROOT/class/infiniband/$RXE_NAME"/ports/1/gid_attrs/ndevs/*; do
        [[ -r $f ]] && { cat "$f" 2>/dev/null && return 0; }
    done
    echo "?"
}

need_tools() {
    command -v rdma >/dev/null || die "the 'rdma' tool is missing: install iproute2 (it provides rdma)"
}

need_root() {
    [[ $(id -u) -eq 0 ]] || die "$1 needs root: run it with sudo"
}

load_rxe() {
    if [[ -d $SYSFS_ROOT/module/rdma_rxe ]]; then
        return 0
    fi
    if ! command -v modprobe >/dev/null; then
        [[ -d /lib/modules/$(uname -r) ]] || explain_no_rxe
        die "modprobe is missing: install kmod"
    fi
    modprobe rdma_rxe 2>/dev/null || explain_no_rxe
}

cmd_up() {
    local iface=${1:-}
    if rxe_present; then
        echo "$RXE_NAME already exists on $(rxe_netdev); nothing to do"
        return 0
    fi
    if [[ -z $iface ]]; then
        iface=$(default_iface)
        [[ -n $iface ]] || die "no default route to pick an interface from: pass one, e.g. $0 up eth0"
    fi
    [[ -e $SYSFS_ROOT/class/net/$iface ]] || die "no network interface '$iface' (see: ip -br link)"
    need_root "adding $RXE_NAME"
    need_tools
    load_rxe
    echo "adding $RXE_NAME on $iface ..."
    rdma link add "$RXE_NAME" type rxe netdev "$iface" || die "rdma link add failed; see dmesg (is $iface up with an IPv4 address?)"
    cmd_status
}

cmd_down() {
    if ! rxe_present; then
        echo "$RXE_NAME is not present; nothing to do"
        return 0
    fi
    need_root "removing $RXE_NAME"
    need_tools
    rdma link delete "$RXE_NAME" || die "rdma link delete $RXE_NAME failed; see dmesg"
    echo "removed $RXE_NAME"
}

cmd_status() {
    local base=$SYSFS_ROOT/class/infiniband dev port i type ndev gid found=0
    if [[ -d $base ]]; then
        for dev in "$base"/*; do
            [[ -e $dev ]] || continue
            found=1
            echo "$(basename "$dev"):"
            for port in "$dev"/ports/*; do
                echo "  port $(basename "$port"): state $(cat "$port/state"), phys $(cat "$port/phys_state"), rate $(cat "$port/rate"), $(cat "$port/link_layer")"
                for gid in "$port"/gids/*; do
                    i=$(basename "$gid")
                    [[ $(cat "$gid") == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && continue
                    type=$(cat "$port/gid_attrs/types/$i" 2>/dev/null || echo "?")
                    ndev=$(cat "$port/gid_attrs/ndevs/$i" 2>/dev/null || echo "-")
                    echo "    gid $i: $(cat "$gid") $type on $ndev"
                done
            done
        done
    fi
    if [[ $found -eq 0 ]]; then
        echo "no RDMA devices (create one with: $0 up [iface])"
    fi
    local memlock
    memlock=$(ulimit -l)
    [[ $memlock == unlimited ]] || memlock="$memlock KiB"
    echo "memlock limit: $memlock (RDMA pins buffers; unlimited is best)"
}

[[ $# -ge 1 ]] || usage
action=$1
shift
case $action in
    up)
        [[ $# -le 1 ]] || usage
        cmd_up "$@"
        ;;
    down)
        [[ $# -eq 0 ]] || usage
        cmd_down
        ;;
    status)
        [[ $# -eq 0 ]] || usage
        cmd_status
        ;;
    -h | --help | help)
        sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
        ;;
    *)
        usage
        ;;
esac
