import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { durationFromMillis, healthV1, runtimeServerV1 } from '@kruntimes/proto';
import { ClientError, Metadata, Status, createClient } from 'nice-grpc';
import { executeToEnd, executionRequest, startServerProcess, waitFor } from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
/** This file's own uids: test files run side by side, and two servers with one range would share users. */
const RUN_UIDS = '3800000-3800099';
const SECRET = `s3cr3t-${randomUUID()}`;
/** As a walled Pod starts its server: its own PID namespace, through the images' entry. */
const WALLED = { throughWallEntry: true };

/**
 * The victim: leaves its secret in its environment, a command line, its working directory
 * and its TMPDIR, says its pid, waits (bounded) for the test's go, then reports what it wrote, as it would alone.
 */
const VICTIM = `echo "$SECRET" > secret-in-cwd.txt
echo "$SECRET" > "$TMPDIR/secret.txt"
(exec -a "krt-victim $SECRET" sleep 301) &
printf '%s' "$$" > "$SIGNALS/pid.tmp"
# The umask is 077: the attacker must know where to aim.
chmod 644 "$SIGNALS/pid.tmp" && mv "$SIGNALS/pid.tmp" "$SIGNALS/victim.pid"
for i in $(seq 600); do [ -e "$SIGNALS/go" ] && break; sleep 0.1; done
printf '{"cwd":"%s","tmp":"%s"}' "$(cat secret-in-cwd.txt)" "$(cat "$TMPDIR/secret.txt")" > "$KRT_OUTPUTS_FILE"
kill %1
`;

/**
 * The attacker, another Run on the same Runtime Server: tries each way into the victim and
 * reports, per way, "open" or "denied" as its outputs. Leaves a setsid survivor behind.
 */
const ATTACKER = `v=$(cat "$SIGNALS/victim.pid")
[ -n "$v" ] || exit 3
root=$(dirname "$(dirname "$PWD")")
out='{' sep=
try() { if eval "$2" >/dev/null 2>&1; then r=open; else r=denied; fi; out="$out$sep\\"$1\\":\\"$r\\""; sep=,; }
try environ 'grep -q "$SECRET" /proc/$v/environ'
try proc_entry 'test -e /proc/$v'
try cmdline 'grep -qs "$SECRET" /proc/[0-9]*/cmdline'
try cwd 'ls /proc/$v/cwd/'
try cwd_file 'cat /proc/$v/cwd/secret-in-cwd.txt'
try ptrace_mem 'head -c1 /proc/$v/mem'
try fds 'ls /proc/$v/fd/'
try signal0 'kill -0 $v'
try signal 'kill -STOP $v'
try list_sandboxes 'ls "$root"/'
try victim_tmp 'cat "$root/$VICTIM/tmp/secret.txt"'
try victim_work 'cat "$root/$VICTIM/work/victim.sh"'
try victim_outputs 'printf "{}" > "$root/$VICTIM/out/outputs.json"'
try function_source 'echo "echo hijacked" >> "$root/$FUNCTION/work/main.sh"'
try own_source 'echo "# mine" >> attack.sh'
setsid sleep 302 </dev/null >/dev/null 2>&1 &
printf '%s}' "$out" > "$KRT_OUTPUTS_FILE"
`;

/** Every way in, as the attacker reports it when the wall holds. */
const ALL_DENIED = Object.fromEntries(
  [
    'environ',
    'proc_entry',
    'cmdline',
    'cwd',
    'cwd_file',
    'ptrace_mem',
    'fds',
    'signal0',
    'signal',
    'list_sandboxes',
    'victim_tmp',
    'victim_work',
    'victim_outputs',
    'function_source',
    'own_source',
  ].map((way) => [way, 'denied']),
);

async function processesRunning(commandLine: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry))) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.replaceAll('\0', ' ').trim() === commandLine) found.push(Number(pid));
  }
  return found;
}

/** The result of one invocation of the registration, as text. */
async function invokedResult(client: ServerProcess['client'], registrationId: string, payload: string): Promise<string> {
  const invoked = await client.invokeFunction({
    registrationId,
    invocationId: randomUUID(),
    payload: Buffer.from(payload),
    timeout: durationFromMillis(30_000),
  });
  return Buffer.from(invoked.result).toString();
}

// Needs root: the Runtime Server switches to the Runs' uids (in a Pod: uid 0 of its user namespace).
(process.getuid?.() === 0 ? describe : describe.skip)('Runs on one walled Runtime Server (KRT_RUN_UIDS)', () => {
  let tmp: string;
  let workdir: string;
  let signals: string;
  let server: ServerProcess | undefined;

  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'rs-wall-tmp-'));
    // As /tmp is in a Pod: the Runs' users pass through to their sandboxes.
    chmodSync(tmp, 0o711);
    workdir = mkdtempSync(join(tmpdir(), 'rs-wall-work-'));
    signals = mkdtempSync(join(tmpdir(), 'rs-wall-signals-'));
    // The test's own mailbox, open to both Runs: a pid and a go, nothing of the victim's.
    chmodSync(signals, 0o777);
    writeFileSync(join(workdir, 'victim.sh'), VICTIM);
    writeFileSync(join(workdir, 'attack.sh'), ATTACKER);
    writeFileSync(
      join(workdir, 'main.sh'),
      'handle() { cat; }\nwrite_own() { echo x >> main.sh 2>/dev/null && echo \'"wrote"\' || echo \'"denied"\'; }\n',
    );
  });

  afterEach(async () => {
    await server?.stop();
    for (const dir of [tmp, workdir, signals]) rmSync(dir, { recursive: true, force: true });
  });

  it('a second Run finds every way into the first refused, leaves nothing running, and the first ends as it would alone', async () => {
    server = await startServerProcess(MAIN, { TMPDIR: tmp, KRT_RUN_UIDS: RUN_UIDS }, undefined, WALLED);
    const { client } = server;
    // fn-1: a function whose source the attacker tries to change.
    const { registrationId } = await client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'handle', env: {} });
    const env = { SECRET, SIGNALS: signals };
    // exec-2: the victim.
    const victim = executeToEnd(client, executionRequest({ workdir, entrypoint: 'victim.sh', extra: { env } }));
    await waitFor('the victim running', () => Promise.resolve(existsSync(join(signals, 'victim.pid')) || undefined), {
      timeoutMs: 20_000,
      intervalMs: 20,
    });
    // exec-3: the attacker.
    const attack = await executeToEnd(
      client,
      executionRequest({
        workdir,
        entrypoint: 'attack.sh',
        extra: { env: { SECRET, SIGNALS: signals, VICTIM: 'exec-2', FUNCTION: 'fn-1' } },
      }),
    );
    writeFileSync(join(signals, 'go'), '');
    const alone = await victim;

    expect(attack.exited).toMatchObject({ reason: runtimeServerV1.ExitReason.EXIT_REASON_COMPLETED, exitCode: 0, outputsError: '' });
    expect(attack.exited?.outputs).toEqual(ALL_DENIED);
    expect(alone.exited).toMatchObject({
      reason: runtimeServerV1.ExitReason.EXIT_REASON_COMPLETED,
      exitCode: 0,
      outputsError: '',
      outputs: { cwd: SECRET, tmp: SECRET },
    });
    // The attacker's setsid child ended with its Run.
    expect(await processesRunning('sleep 302')).toEqual([]);
    // The function's source is what it was.
    expect(readFileSync(join(workdir, 'main.sh'), 'utf8')).not.toContain('hijacked');
    expect(await invokedResult(client, registrationId, '{"still":"mine"}')).toBe('{"still":"mine"}');
  });

  it('refuses to start, saying why, where /proc would show every Run the others', async () => {
    // The host's PID namespace: krt-wall-entry leaves its /proc alone.
    await expect(startServerProcess(MAIN, { TMPDIR: tmp, KRT_RUN_UIDS: RUN_UIDS })).rejects.toThrow(
      /KRT_RUN_UIDS is set but \/proc is mounted hidepid=off: every Run would see the others' processes and command lines; start the server through krt-wall-entry/,
    );
  });

  it("a Run's own source is read-only to it, and its outputs file may not point elsewhere", async () => {
    server = await startServerProcess(MAIN, { TMPDIR: tmp, KRT_RUN_UIDS: RUN_UIDS }, undefined, WALLED);
    const { client } = server;
    const { registrationId } = await client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'write_own', env: {} });
    expect(await invokedResult(client, registrationId, 'null')).toBe('"denied"');
    // A link to a file only the server may read: refused, never read as root.
    writeFileSync(join(workdir, 'link.sh'), 'ln -s /etc/shadow "$KRT_OUTPUTS_FILE"\n');
    const linked = await executeToEnd(client, executionRequest({ workdir, entrypoint: 'link.sh' }));
    expect(linked.exited).toMatchObject({ reason: runtimeServerV1.ExitReason.EXIT_REASON_COMPLETED, exitCode: 0, outputs: {} });
    expect(linked.exited?.outputsError).toContain('outputs.json is a symbolic link');
  });

  it('with KRT_API_TOKEN_FILE the API answers only calls that carry the token, which a Run cannot read', async () => {
    const tokenFile = join(tmp, 'api-token');
    server = await startServerProcess(MAIN, { TMPDIR: tmp, KRT_RUN_UIDS: RUN_UIDS, KRT_API_TOKEN_FILE: tokenFile }, undefined, WALLED);
    const { client } = server;
    const runUid = randomUUID();
    const refused = async (call: Promise<unknown>): Promise<Status | undefined> =>
      call.then(
        () => undefined,
        (error: unknown) => (error instanceof ClientError ? error.code : undefined),
      );
    const ids = { registrationId: 'reg-anything', invocationId: randomUUID() };
    // What user code on the Pod would send: the right shapes, no token.
    expect(
      await Promise.all([
        refused(client.getExecution({ runUid, attempt: 1 })),
        refused(client.cancelExecution({ executionId: `${runUid}/1` })),
        refused(client.registerFunction({ runUid, attempt: 1, workdir, handler: 'handle', env: {} })),
        refused(client.invokeFunction({ ...ids, payload: Buffer.from('null'), timeout: durationFromMillis(1_000) })),
        refused(client.unregisterFunction({ registrationId: ids.registrationId })),
        refused(executeToEnd(client, executionRequest({ workdir, entrypoint: 'victim.sh' }))),
        refused(client.getExecution({ runUid, attempt: 1 }, { metadata: Metadata({ authorization: 'Bearer guessed' }) })),
      ]),
    ).toEqual(Array.from({ length: 7 }, () => Status.UNAUTHENTICATED));
    // Health tells nothing but SERVING, and stays open for probes.
    const health = createClient(healthV1.HealthDefinition, server.channel);
    expect((await health.check({ service: '' })).status).toBe(healthV1.HealthCheckResponse_ServingStatus.SERVING);

    // runtimed's calls carry it; a Run tries to read it and to find it.
    const withToken = { metadata: Metadata({ authorization: `Bearer ${readFileSync(tokenFile, 'utf8')}` }) };
    writeFileSync(
      join(workdir, 'steal.sh'),
      `cat "${tokenFile}" > stolen 2>/dev/null && r=open || r=denied; printf '{"token":"%s"}' "$r" > "$KRT_OUTPUTS_FILE"\n`,
    );
    const request = executionRequest({ workdir, entrypoint: 'steal.sh' });
    const stream = client.execute(request, withToken);
    let outputs: Record<string, string> | undefined;
    for await (const { event } of stream) if (event?.$case === 'exited') outputs = event.exited.outputs;
    expect(outputs).toEqual({ token: 'denied' });
    expect(await refused(client.getExecution({ runUid: request.runUid, attempt: 1 }, withToken))).toBeUndefined();
  });
});
