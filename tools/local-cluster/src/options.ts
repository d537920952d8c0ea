import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

export interface LocalClusterOptions {
  dir: string;
  controllerManager: boolean;
  crdDirectories: string[];
}

export const USAGE = `Usage: node tools/local-cluster/src/main.ts --dir DIR [--no-controller-manager] [--crds DIR]... [--no-crds]

Starts etcd, kube-apiserver and kube-controller-manager on loopback in the foreground and
writes admin.kubeconfig, alice.kubeconfig, bob.kubeconfig and cluster.json into DIR, and
the internal CA into DIR/internal-ca (ca.crt, ca.key; made once, kept across runs).
Stops everything and removes its state on SIGTERM or SIGINT.

  --dir DIR                 where to write the kubeconfigs (created if missing)
  --crds DIR                install the CRDs in DIR/*.yaml (repeatable;
                            default: deploy/charts/kruntimes/crds)
  --no-crds                 install no CRDs
  --no-controller-manager   run without kube-controller-manager`;

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
  return {
    dir: resolve(values.dir),
    controllerManager: !values['no-controller-manager'],
    crdDirectories: values['no-crds'] ? [] : (values.crds ?? [defaultCrdDirectory]).map((d) => resolve(d)),
  };
}
