// `dev down|status|env|logs`: read the state directory of a running `dev up`.
import { readdir, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { formatElapsed } from './dev-binaries.ts';
import { environmentProcesses, processAlive, recordedSockets, stillListening, terminate } from './dev-processes.ts';
import { readState, stateFile } from './dev-state.ts';
import { httpsStatus } from './dev-https.ts';
import { componentHealth } from './dev-parts.ts';

export type Out = (line: string) => void;

/**
 * Asks the supervisor to stop everything (SIGTERM: it stops the components in order), then
 * sweeps whatever of the state directory is still alive (SIGTERM, SIGKILL after a grace;
 * also after a supervisor that was itself killed) and checks that no port is left listening.
 */
export async function down(dir: string, out: Out): Promise<number> {
  const started = performance.now();
  const state = await readState(dir);
  const groups = Object.values(state?.components ?? {}).map((component) => component.pid);
  if (state !== undefined && (await processAlive(state.supervisorPid))) {
    out(`stopping the dev environment (supervisor pid ${String(state.supervisorPid)})`);
    process.kill(state.supervisorPid, 'SIGTERM');
    // The supervisor gives each component 10 s before SIGKILL; beyond a minute it is stuck.
    const deadline = performance.now() + 60_000;
    while ((await processAlive(state.supervisorPid)) && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const leftovers = await environmentProcesses(dir, state === undefined ? [] : [state.supervisorPid, ...groups]);
  if (leftovers.length > 0) {
    out(`stopping ${String(leftovers.length)} processes: ${leftovers.join(', ')}`);
    const survivors = await terminate(leftovers, 10_000);
    if (survivors.length > 0) {
      out(`processes survived SIGKILL: ${survivors.join(', ')}`);
      return 1;
    }
  } else if (state === undefined) {
    out(`nothing is running in ${dir}`);
    return 0;
  }
  const sockets = state === undefined ? [] : recordedSockets(state);
  const listening = await stillListening(sockets);
  if (listening.length > 0) {
    out(`still listening: ${listening.map((s) => `${s.host}:${String(s.port)}`).join(' ')}`);
    return 1;
  }
  // A supervisor that was killed could not remove it; everything it names is gone now.
  await rm(stateFile(dir), { force: true });
  out(
    `stopped in ${formatElapsed(performance.now() - started)}: no process left${sockets.length > 0 ? `, none of ${String(sockets.length)} ports listening` : ''}`,
  );
  return 0;
}

export async function status(dir: string, out: Out): Promise<number> {
  const state = await readState(dir);
  if (state === undefined || !(await processAlive(state.supervisorPid))) {
    out(`not running (no live ${stateFile(dir)})`);
    return 3;
  }
  out(`dev environment: ${state.phase} since ${state.startedAt} (supervisor pid ${String(state.supervisorPid)}, state ${dir})`);
  let healthy = true;
  if (state.apiServer !== undefined && state.kubeconfig !== undefined) {
    const ok = await apiServerReady(state.apiServer, state.kubeconfig);
    healthy &&= ok;
    out(`  ${'kube-apiserver'.padEnd(20)} ${ok ? 'ready' : 'NOT READY'}  ${state.apiServer}`);
  }
  const failed = state.failed ?? {};
  for (const [name, component] of Object.entries(state.components)) {
    const alive = await processAlive(component.pid);
    let health = componentHealth(alive, failed[name]);
    healthy &&= failed[name] === undefined;
    if (alive && name === 'runtime-gateway' && state.gatewayUrl !== undefined && state.gatewayCaFile !== undefined) {
      const answered = (await httpsStatus(`${state.gatewayUrl}/`, await readFile(state.gatewayCaFile, 'utf8'))) !== undefined;
      health = answered ? `serving ${state.gatewayUrl}` : 'NOT ANSWERING';
      healthy &&= answered;
    }
    if (alive && failed[name] === undefined && name === 'prometheus' && state.prometheusUrl !== undefined) {
      const ready =
        (await fetch(`${state.prometheusUrl}/-/ready`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined))?.ok === true;
      health = ready ? `serving ${state.prometheusUrl}` : 'NOT READY';
      healthy &&= ready;
    }
    healthy &&= alive;
    out(`  ${name.padEnd(20)} ${health}  pid ${String(component.pid)}  log ${component.log}`);
  }
  // A part whose component never ran (or has none: the object store) is said here.
  for (const [name, failure] of Object.entries(failed)) {
    if (name in state.components) continue;
    healthy = false;
    out(`  ${name.padEnd(20)} FAILED: ${failure.reason}  log ${failure.log}`);
  }
  return healthy ? 0 : 1;
}

/** `/readyz` of the API server answers 200 to the kubeconfig's user (its bearer token, its cluster's CA). */
async function apiServerReady(server: string, kubeconfig: string): Promise<boolean> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  const token = config.getCurrentUser()?.token;
  const ca = config.getCurrentCluster()?.caData;
  if (token === undefined || ca === undefined) return false;
  return new Promise((resolve) => {
    const req = request(
      `${server}/readyz`,
      { ca: Buffer.from(ca, 'base64').toString(), headers: { authorization: `Bearer ${token}` }, timeout: 2_000 },
      (response) => {
        response.resume();
        resolve(response.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      resolve(false);
    });
    req.end();
  });
}

export async function env(dir: string, out: Out): Promise<number> {
  const state = await readState(dir);
  if (state?.kubeconfig === undefined || !(await processAlive(state.supervisorPid))) {
    out(`# not running (no live ${stateFile(dir)}); start it with: krt dev up`);
    return 3;
  }
  out(`export KUBECONFIG=${state.kubeconfig}`);
  if (state.gatewayUrl !== undefined) out(`export KRT_GATEWAY_URL=${state.gatewayUrl}`);
  if (state.gatewayCaFile !== undefined) out(`export KRT_GATEWAY_CA_FILE=${state.gatewayCaFile}`);
  if (state.invokerKubeconfig !== undefined)
    out(`# non-admin (get Runs in demo only), for krt invoke: krt --kubeconfig ${state.invokerKubeconfig} invoke RUN`);
  return 0;
}

/** A component's log, or a Pod container's (`POD/CONTAINER` or `NAMESPACE/POD/CONTAINER`); no target: what there is. */
export async function logs(dir: string, target: string | undefined, write: (text: string) => void): Promise<number> {
  const components = (await readdir(join(dir, 'logs')).catch(() => []))
    .filter((file) => file.endsWith('.log'))
    .map((file) => file.slice(0, -4));
  const state = await readState(dir);
  const nodeLogs = join(state?.nodeDir ?? join(dir, 'node'), 'logs');
  // The agent keeps container logs in <ns>_<pod>_<uid>/<container>.log.
  const containers: { namespace: string; pod: string; container: string; file: string }[] = [];
  for (const podDir of await readdir(nodeLogs).catch(() => [])) {
    const [namespace = '', pod = ''] = podDir.split('_');
    for (const file of await readdir(join(nodeLogs, podDir)).catch(() => [])) {
      if (file.endsWith('.log')) containers.push({ namespace, pod, container: file.slice(0, -4), file: join(nodeLogs, podDir, file) });
    }
  }
  const controlPlane =
    state?.controlPlaneDir === undefined
      ? []
      : (await readdir(state.controlPlaneDir).catch(() => [])).filter((file) => file.endsWith('.log')).map((file) => file.slice(0, -4));
  if (target === undefined) {
    write(`components: ${[...components, ...controlPlane].join(' ')}\n`);
    write(`containers (POD/CONTAINER):\n${containers.map((c) => `  ${c.namespace}/${c.pod}/${c.container}`).join('\n')}\n`);
    return 0;
  }
  let file: string | undefined;
  if (components.includes(target)) file = join(dir, 'logs', `${target}.log`);
  else if (controlPlane.includes(target) && state?.controlPlaneDir !== undefined) file = join(state.controlPlaneDir, `${target}.log`);
  else {
    const parts = target.split('/');
    const matches = containers.filter((c) =>
      parts.length === 3
        ? c.namespace === parts[0] && c.pod === parts[1] && c.container === parts[2]
        : parts.length === 2 && c.pod === parts[0] && c.container === parts[1],
    );
    // A Pod replaced under the same name leaves older logs: the newest file is the one meant.
    file = matches.at(-1)?.file;
  }
  if (file === undefined) {
    write(`no log for ${JSON.stringify(target)}; \`krt dev logs\` lists them\n`);
    return 3;
  }
  write(await readFile(file, 'utf8'));
  return 0;
}
