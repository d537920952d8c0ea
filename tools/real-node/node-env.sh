# shellcheck shell=bash
# The names and addresses of real node N (README.md, "Names and addresses"), for net.sh and
# node.sh: KRT_NODE_INDEX 1 (the default) is the first node, whose names carry no number (as
# before there was a second); node N (2-9) gets its own namespace, veth pair, /30, Pod CIDR,
# state and run directories and cgroup root. Sets the variables below; prints nothing.
#
#            namespace  veth host/node end       host IP      node IP      Pod CIDR        node name
#   node 1   krt-node   krt-host / krt-node0     10.203.0.1   10.203.0.2   10.204.0.0/24   krt-node
#   node N   krt-nodeN  krt-hostN / krt-nodeN-0  10.203.0.4N-3 10.203.0.4N-2 10.204.(N-1).0/24 krt-nodeN
krt_node_env() { # index (default KRT_NODE_INDEX, else 1)
  local i=${1:-${KRT_NODE_INDEX:-1}}
  case "$i" in [1-9]) ;; *) echo "KRT_NODE_INDEX=$i: a node index is 1-9" >&2; return 2 ;; esac
  NODE_INDEX=$i
  # The state dir of the first node is also the run's (images.sh's archives, the control
  # plane's pid file): the others keep theirs inside it.
  BASE_STATE=${KRT_REAL_NODE_DIR:-/var/lib/krt-real-node}
  if [ "$i" = 1 ]; then
    NS=krt-node NODE_NAME=krt-node HOST_IF=krt-host NODE_IF=krt-node0
    STATE=$BASE_STATE RUN=/run/krt-real-node
    # The kubelet's cgroups: /kubepods in every hierarchy, as before.
    CGROUP_ROOT=
    # local-cluster's node.kubeconfig is the first --node's.
    NODE_KUBECONFIG=node.kubeconfig
  else
    NS=krt-node$i NODE_NAME=krt-node$i HOST_IF=krt-host$i NODE_IF=krt-node$i-0
    STATE=$BASE_STATE/node$i RUN=/run/krt-real-node$i
    # Two kubelets under one cgroup root would each remove the other's Pod cgroups as
    # orphans (the kubelet's cleanup of pod cgroups it does not know): /krt-nodeN/kubepods.
    CGROUP_ROOT=/krt-node$i
    NODE_KUBECONFIG=node-krt-node$i.kubeconfig
  fi
  # A /30 per node out of 10.203.0.0/24 (the host's end first), a /24 of Pods out of 10.204.0.0/16.
  HOST_IP=10.203.0.$((4 * (i - 1) + 1)) NODE_IP=10.203.0.$((4 * (i - 1) + 2)) PREFIX=30
  POD_CIDR=10.204.$((i - 1)).0/24 POD_GATEWAY=10.204.$((i - 1)).1
  # Every node's and every Pod's network: what the host forwards between the nodes.
  NODES_CIDR=10.203.0.0/24 PODS_CIDR=10.204.0.0/16
  SERVICE_CIDR=10.255.0.0/24 # the control plane's --service-cluster-ip-range
  # The cluster's add-ons (CoreDNS, kube-scheduler) run on node 1 only: every node's Pods
  # resolve through CoreDNS at node 1's address.
  FIRST_NODE_IP=10.203.0.2
}
