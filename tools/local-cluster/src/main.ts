// The control plane in the foreground, for working by hand (see USAGE in options.ts).
// Later issues grow this into the full local cluster.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ControlPlane, KUBE_PROXY_USER, REPO_ROOT, kubeconfigYaml, nodeUser } from '@kruntimes/testing';
import { ensureInternalCa } from './internal-ca.ts';
import { parseOptions, USAGE, UsageError } from './options.ts';

const log = (line: string): void => {
  process.stderr.write(`[local-cluster] ${line}\n`);
};

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2), join(REPO_ROOT, 'deploy/charts/kruntimes/crds'));

  // Register before starting: a signal during the start must still stop what was started.
  let stopRequested: (signal: NodeJS.Signals) => void = () => undefined;
  const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
    stopRequested = resolve;
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
    process.on(signal, () => {
      stopRequested(signal);
    });
  // Signal listeners do not keep Node running, and every child is unref'd.
  const keepAlive = setInterval(() => undefined, 1 << 30);

  try {
    const started = performance.now();
    const controlPlane = await ControlPlane.start({
      controllerManager: options.controllerManager,
      crdDirectories: options.crdDirectories,
      log,
      ...(options.bindAddress === undefined ? {} : { bindAddress: options.bindAddress }),
      ...(options.securePort === undefined ? {} : { securePort: options.securePort }),
      ...(options.nodes === undefined ? {} : { nodes: options.nodes }),
    });
    try {
      const kubeconfigs = await controlPlane.cluster.writeKubeconfigs(options.dir);
      await writeFile(join(options.dir, 'cluster.json'), JSON.stringify(controlPlane.info, null, 2), { mode: 0o600 });
      log(`up in ${Math.round(performance.now() - started)} ms: ${controlPlane.server}`);
      const [first] = options.nodes ?? [];
      if (first !== undefined) {
        // writeKubeconfigs leaves out the system: identities; a real node needs a kubelet's
        // and kube-proxy's. node.kubeconfig: the first node's (tools/real-node's node 1).
        const { server, caPem } = controlPlane.info;
        for (const [file, name] of [
          ['node', nodeUser(first).name],
          ...(options.nodes ?? []).map((node) => [`node-${node}`, nodeUser(node).name] as const),
          ['kube-proxy', KUBE_PROXY_USER.name],
        ] as const) {
          const path = join(options.dir, `${file}.kubeconfig`);
          const { token } = controlPlane.cluster.user(name);
          await writeFile(path, kubeconfigYaml({ server, caPem, user: name, token }), { mode: 0o600 });
          kubeconfigs[file] = path;
        }
      }
      for (const [user, path] of Object.entries(kubeconfigs)) log(`  ${user}: ${path}`);
      log(`export KUBECONFIG=${kubeconfigs.admin ?? ''}`);
      // Kept across runs (made only when missing): what a controller-manager takes as --internal-ca-dir.
      const caDir = join(options.dir, 'internal-ca');
      await ensureInternalCa(caDir);
      log(`  internal CA: ${caDir} (ca.crt, ca.key; controller-manager --internal-ca-dir ${caDir})`);
      log('stop with SIGTERM or Ctrl-C');

      const outcome = await Promise.race([
        stopSignal.then((signal) => ({ signal })),
        controlPlane.anyExit().then((process) => ({ process })),
      ]);
      if ('process' in outcome) {
        const failure = await outcome.process.failure('exited unexpectedly');
        log(failure.message);
        return 1;
      }
      log(`${outcome.signal}: stopping`);
      return 0;
    } finally {
      await controlPlane.stop();
      log('stopped');
    }
  } finally {
    clearInterval(keepAlive);
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      // An empty message is --help: usage on stdout, success.
      if (error.message === '') process.stdout.write(`${USAGE}\n`);
      else process.stderr.write(`${error.message}\n\n${USAGE}\n`);
      process.exitCode = error.message === '' ? 0 : 2;
      return;
    }
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 1;
  },
);
