#!/usr/bin/env bash
# A real node's network (README.md, "Names and addresses"): the namespace krt-node and
# a veth pair, the host end 10.203.0.1/30 (where kube-apiserver binds), the node end
# 10.203.0.2/30; the host reaches Pods and Services through the node end.
#
# KRT_NODE_INDEX=N (node-env.sh; default 1) makes node N's: namespace krt-nodeN, its own
# veth pair and /30, its Pod CIDR routed to it. The host forwards between the nodes (Pod to
# Pod, Pod to Service across nodes) and nothing else: forwarding is on for the nodes' veth
# ends only, and a packet coming in from a node for anything but the nodes' and the Pods'
# networks is unreachable (policy rules), so nothing of a node leaves through the host.
#
# Usage: tools/real-node/net.sh up|down   (root; idempotent; prints nothing on stdout)
set -euo pipefail

# shellcheck source=node-env.sh
. "$(dirname "$0")/node-env.sh"
krt_node_env
# The policy rules of this node's veth (priorities per node, so that down removes its own).
RULE_PRIORITY=$((20300 + 10 * NODE_INDEX))

started=$(date +%s)
log() { printf '[real-node] %s (%ss)\n' "$*" "$(($(date +%s) - started))" >&2; }
in_ns() { ip netns exec "$NS" "$@"; }

up() {
  [ -e "/run/netns/$NS" ] || ip netns add "$NS"
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    # A half-made pair (the node end still on the host) would block the next attempt.
    ip link del "$NODE_IF" 2>/dev/null || true
    ip link add "$HOST_IF" type veth peer name "$NODE_IF"
  fi
  # The node end is either still on the host (just made) or already in the namespace.
  if ip link show "$NODE_IF" >/dev/null 2>&1; then ip link set "$NODE_IF" netns "$NS"; fi
  ip addr replace "$HOST_IP/$PREFIX" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  in_ns ip link set lo up
  in_ns ip addr replace "$NODE_IP/$PREFIX" dev "$NODE_IF"
  in_ns ip link set "$NODE_IF" up
  in_ns ip route replace default via "$HOST_IP" dev "$NODE_IF"
  ip route replace "$POD_CIDR" via "$NODE_IP" dev "$HOST_IF"
  # The host's calls to ClusterIPs go through the first node's kube-proxy (run.sh's invokes).
  [ "$NODE_INDEX" != 1 ] || ip route replace "$SERVICE_CIDR" via "$NODE_IP" dev "$HOST_IF"
  forward_between_nodes
  # The node routes between its Pods' bridge and the veth; net.* sysctls are per namespace.
  in_ns sysctl -qw net.ipv4.ip_forward=1
  # kube-proxy's rules must see bridged Pod-to-Pod traffic (a Service backed by a Pod on
  # the same bridge). On this kernel br_netfilter is built in, its sysctls per namespace.
  if in_ns test -d /proc/sys/net/bridge; then
    in_ns sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
  else
    log "warning: no /proc/sys/net/bridge in the namespace (br_netfilter missing): Services backed by a Pod on the same node may not answer"
  fi
  # Pods answer the node's ARP for 10.204.0.1 on the bridge, and the node replies to Pod
  # traffic routed in from the host: loose reverse-path filtering keeps both.
  in_ns sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
  log "net up: $NS, $HOST_IF $HOST_IP/$PREFIX <-> $NODE_IF $NODE_IP/$PREFIX"
}

# A packet from one node to another node's Pods crosses the host: in through one veth's
# host end, out through the other's. Forwarding on these interfaces only (the host's
# net.ipv4.ip_forward stays as it is), and from them only to the nodes and their Pods.
forward_between_nodes() {
  del_rules
  ip rule add priority "$RULE_PRIORITY" iif "$HOST_IF" to "$PODS_CIDR" lookup main
  ip rule add priority "$((RULE_PRIORITY + 1))" iif "$HOST_IF" to "$NODES_CIDR" lookup main
  ip rule add priority "$((RULE_PRIORITY + 2))" iif "$HOST_IF" unreachable
  sysctl -qw "net.ipv4.conf.$HOST_IF.forwarding=1"
}

del_rules() {
  local priority
  for priority in "$RULE_PRIORITY" "$((RULE_PRIORITY + 1))" "$((RULE_PRIORITY + 2))"; do
    # Bounded: one rule per priority is what up adds; an interrupted run may have left two.
    for _ in 1 2 3; do ip rule del priority "$priority" 2>/dev/null || break; done
  done
}

down() {
  ip route del "$POD_CIDR" via "$NODE_IP" 2>/dev/null || true
  [ "$NODE_INDEX" != 1 ] || ip route del "$SERVICE_CIDR" via "$NODE_IP" 2>/dev/null || true
  del_rules
  # Deleting one end deletes the pair; deleting the namespace deletes the node end with it.
  ip link del "$HOST_IF" 2>/dev/null || true
  if [ -e "/run/netns/$NS" ]; then
    local pids
    pids=$(ip netns pids "$NS" 2>/dev/null || true)
    [ -z "$pids" ] || log "warning: processes still in $NS (node.sh down first): $(echo "$pids" | tr '\n' ' ')"
    ip netns del "$NS"
  fi
  log "net down: $NS"
}

[ "$(id -u)" = 0 ] || { echo "net.sh: must run as root" >&2; exit 1; }
case "${1-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
