import { isIPv4 } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

export interface LocalClusterOptions {
  dir: string;
  controllerManager: boolean;
  crdDirectories: string[];
  /** kube-apiserver's address; absent: loopback. */
  bindAddress?: string;
  /** kube-apiserver's port; absent: a free one. */
  securePort?: number;
  /** The kubelets that join (tools/real-node), the first one the default node; absent: none. */
  nodes?: string[];
}

/** The real node's name (tools/real-node/README.md): the default of --node with --bind-address. */
export const REAL_NODE_NAME = 'krt-node';

export const USAGE = `Usage: node tools/local-cluster/src/main.ts --dir DIR [--no-controller-manager] [--crds DIR]... [--no-crds]
         [--bind-address IPV4] [--secure-port PORT] [--node NAME | --no-node]

Starts etcd, kube-apiserver and kube-controller-manager on loopback in the foreground and
writes admin.kubeconfig, alice.kubeconfig, bob.kubeconfig and cluster.json into DIR, and
the internal CA into DIR/internal-ca (ca.crt, ca.key; made once, kept across runs).
Stops everything and removes its state on SIGTERM or SIGINT.

  --dir DIR                 where to write the kubeconfigs (created if missing)
  --crds DIR                install the CRDs in DIR/*.yaml (repeatable;
                            default: deploy/charts/kruntimes/crds)
  --no-crds                 install no CRDs
  --no-controller-manager   run without kube-controller-manager
  --bind-address IPV4       kube-apiserver's address (default 127.0.0.1); another address
                            must exist on this host and becomes the \`kubernetes\` Service's
                            endpoint (tools/real-node: 10.203.0.1, after net.sh up)
  --secure-port PORT        kube-apiserver's port (default: a free one)
  --node NAME               a kubelet NAME joins: writes node-NAME.kubeconfig
                            (system:node:NAME) and kube-proxy.kubeconfig (system:kube-proxy)
                            into DIR, and node.kubeconfig for the first --node (repeatable;
                            default with --bind-address: ${REAL_NODE_NAME}, tools/real-node)
  --no-node                 no kubelet joins, whatever the address`;

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function parseOptions(argv: readonly string[], defaultCrdDirectory: string): LocalClusterOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        dir: { type: 'string' },
        crds: { type: 'string', multiple: true },
        'no-crds': { type: 'boolean', default: false },
        'no-controller-manager': { type: 'boolean', default: false },
        'bind-address': { type: 'string' },
        'secure-port': { type: 'string' },
        node: { type: 'string', multiple: true },
        'no-node': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values } = parsed;
  if (values.help) throw new UsageError('');
  if (values.dir === undefined || values.dir === '') throw new UsageError('--dir is required');
  if (values['no-crds'] && values.crds !== undefined) throw new UsageError('--crds and --no-crds exclude each other');
  const bindAddress = values['bind-address'];
  if (bindAddress !== undefined && !isIPv4(bindAddress)) throw new UsageError(`--bind-address: '${bindAddress}' is not an IPv4 address`);
  const port = values['secure-port'];
  const securePort = port === undefined ? undefined : Number(port);
  if (port !== undefined && !(/^\d+$/.test(port) && securePort !== undefined && securePort >= 1 && securePort <= 65535)) {
    throw new UsageError(`--secure-port: '${port}' is not a port number (1-65535)`);
  }
  if (values.node !== undefined && values['no-node']) throw new UsageError('--node and --no-node exclude each other');
  // A non-loopback address is there for a real node to reach: by default, that node joins.
  const nodes = values['no-node'] ? undefined : (values.node ?? (bindAddress === undefined ? undefined : [REAL_NODE_NAME]));
  // A DNS label: the node's name is also its user's name and the kubelet's hostname.
  for (const node of nodes ?? []) {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(node)) {
      throw new UsageError(`--node: '${node}' is not a node name (lowercase letters, digits and '-', at most 63)`);
    }
  }
  if (nodes !== undefined && new Set(nodes).size !== nodes.length) throw new UsageError(`--node: a name given twice (${nodes.join(', ')})`);
  return {
    dir: resolve(values.dir),
    controllerManager: !values['no-controller-manager'],
    crdDirectories: values['no-crds'] ? [] : (values.crds ?? [defaultCrdDirectory]).map((d) => resolve(d)),
    ...(bindAddress === undefined ? {} : { bindAddress }),
    ...(securePort === undefined ? {} : { securePort }),
    ...(nodes === undefined ? {} : { nodes }),
  };
}
