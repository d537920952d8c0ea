import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { UidRangePool } from './uid-range-pool.ts';
import {
  FIRST_RANGE_BASE,
  RANGE_COUNT,
  RANGE_SIZE,
  chooseRangeIndex,
  containerIdentity,
  idMapLine,
  rangeBase,
  setprivArgs,
  volumeAccess,
} from './user-namespace.ts';
import type { ContainerIdentity } from './user-namespace.ts';

const SERVER_CAPS = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID'];

/** The walled Runtime Pod of libs/runtime-workload, reduced to what the node reads. */
function runtimePod(overrides: { server?: V1Container['securityContext']; fsGroup?: number } = {}): V1Pod {
  return {
    spec: {
      hostUsers: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        ...(overrides.fsGroup === undefined ? {} : { fsGroup: overrides.fsGroup }),
      },
      containers: [
        {
          name: 'runtimed',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          volumeMounts: [
            { name: 'workspace', mountPath: '/workspace' },
            { name: 'token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
            { name: 'api', mountPath: '/var/run/kruntimes/api', readOnly: true },
          ],
        },
        {
          name: 'runtime-server',
          securityContext: overrides.server ?? {
            runAsUser: 0,
            runAsGroup: 0,
            runAsNonRoot: false,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'], add: SERVER_CAPS },
          },
          volumeMounts: [
            { name: 'workspace', mountPath: '/workspace' },
            { name: 'api', mountPath: '/var/run/kruntimes/api' },
          ],
        },
      ],
      volumes: [
        { name: 'workspace', emptyDir: {} },
        { name: 'api', emptyDir: { medium: 'Memory' } },
        { name: 'token', projected: { sources: [] } },
        { name: 'unused', secret: { secretName: 's' } },
      ],
    },
  };
}

function identities(pod: V1Pod): Map<string, ContainerIdentity> {
  const result = new Map<string, ContainerIdentity>();
  for (const container of pod.spec?.containers ?? []) {
    const identity = containerIdentity(pod, container);
    if (identity instanceof Error) throw identity;
    result.set(container.name, identity);
  }
  return result;
}

describe('id ranges', () => {
  test.each([
    { held: [], cursor: 0, count: 4, chosen: 0 },
    { held: [0, 1], cursor: 0, count: 4, chosen: 2 },
    { held: [3], cursor: 3, count: 4, chosen: 0 },
    { held: [], cursor: 9, count: 4, chosen: 1 },
    { held: [0, 1, 2, 3], cursor: 2, count: 4, chosen: undefined },
  ])('held $held from $cursor of $count: $chosen', ({ held, cursor, count, chosen }) => {
    expect(chooseRangeIndex(new Set(held), cursor, count)).toBe(chosen);
  });

  test('ranges are 65536 ids from 1e9, all below (uid_t)-1, mapped inside from 0', () => {
    expect(rangeBase(0)).toBe(FIRST_RANGE_BASE);
    expect(rangeBase(1)).toBe(FIRST_RANGE_BASE + RANGE_SIZE);
    expect(rangeBase(RANGE_COUNT - 1) + RANGE_SIZE - 1).toBeLessThanOrEqual(0xff_ff_ff_fe);
    expect(rangeBase(RANGE_COUNT) + RANGE_SIZE - 1).toBeGreaterThan(0xff_ff_ff_fe);
    expect(idMapLine(rangeBase(2))).toBe(`0 ${String(FIRST_RANGE_BASE + 2 * RANGE_SIZE)} 65536\n`);
  });

  test('two pools on one host never hand out one range twice; a released one is taken again only after the others', () => {
    const dir = mkdtempSync(join(tmpdir(), 'uid-ranges-'));
    try {
      const first = new UidRangePool(dir, { start: 5 });
      const second = new UidRangePool(dir, { start: 5 });
      const a = first.allocate();
      const b = second.allocate();
      expect([a, b]).toEqual([rangeBase(5), rangeBase(6)]);
      first.release(a);
      expect(first.allocate()).toBe(rangeBase(7));
      expect(second.allocate()).toBe(rangeBase(8));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('containerIdentity', () => {
  const pod = runtimePod();
  const container = (name: string): V1Container => pod.spec?.containers.find((c) => c.name === name) ?? { name };

  test.each([
    {
      what: 'runtimed: the Pod uid and gid, no capabilities, no escalation',
      pod,
      container: container('runtimed'),
      identity: { uid: 65532, gid: 65532, groups: [], capabilities: [], noNewPrivs: true },
    },
    {
      what: 'the walled Runtime Server: uid 0 with exactly its add list',
      pod,
      container: container('runtime-server'),
      identity: { uid: 0, gid: 0, groups: [], capabilities: SERVER_CAPS, noNewPrivs: true },
    },
    {
      what: "no securityContext: root with containerd's defaults",
      pod: { spec: { containers: [] } },
      container: { name: 'c' },
      identity: {
        uid: 0,
        gid: 0,
        groups: [],
        capabilities: [
          'AUDIT_WRITE',
          'CHOWN',
          'DAC_OVERRIDE',
          'FOWNER',
          'FSETID',
          'KILL',
          'MKNOD',
          'NET_BIND_SERVICE',
          'NET_RAW',
          'SETFCAP',
          'SETGID',
          'SETPCAP',
          'SETUID',
          'SYS_CHROOT',
        ],
        noNewPrivs: false,
      },
    },
    {
      what: 'drop some, add CAP_-prefixed, fsGroup and supplementalGroups as groups',
      pod: { spec: { containers: [], securityContext: { runAsUser: 7, fsGroup: 9, supplementalGroups: [11, 9] } } },
      container: { name: 'c', securityContext: { capabilities: { drop: ['ALL'], add: ['cap_net_admin', 'KILL'] } } },
      identity: { uid: 7, gid: 0, groups: [9, 11], capabilities: ['KILL', 'NET_ADMIN'], noNewPrivs: false },
    },
  ])('$what', ({ pod: p, container: c, identity }) => {
    expect(containerIdentity(p, c)).toEqual(identity);
  });

  test.each([
    { what: 'runAsNonRoot as uid 0', context: { runAsUser: 0, runAsNonRoot: true }, message: /runAsNonRoot and would run as root/ },
    { what: 'a uid outside the namespace', context: { runAsUser: 70_000 }, message: /runAsUser 70000 is outside/ },
    { what: 'an unknown capability', context: { capabilities: { add: ['FLY'] } }, message: /unknown capability FLY/ },
  ])('refuses $what', ({ context, message }) => {
    const result = containerIdentity({ spec: { containers: [] } }, { name: 'c', securityContext: context });
    expect(result).toBeInstanceOf(Error);
    expect((result as Error).message).toMatch(message);
  });
});

test.each([
  {
    identity: { uid: 65532, gid: 65532, groups: [], capabilities: [], noNewPrivs: true },
    args: [
      '--reuid=65532',
      '--regid=65532',
      '--clear-groups',
      '--inh-caps=-all',
      '--ambient-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
    ],
  },
  {
    identity: { uid: 0, gid: 0, groups: [5, 6], capabilities: ['KILL', 'SETUID'], noNewPrivs: false },
    args: [
      '--reuid=0',
      '--regid=0',
      '--groups=5,6',
      '--inh-caps=-all,+kill,+setuid',
      '--ambient-caps=-all,+kill,+setuid',
      '--bounding-set=-all,+kill,+setuid',
    ],
  },
])('setprivArgs $identity.uid', ({ identity, args }) => {
  expect(setprivArgs(identity)).toEqual(args);
});

describe('volumeAccess', () => {
  const pod = runtimePod();
  test.each([
    {
      volume: 'workspace',
      access: { owner: 0, group: 65532, mode: 0o770 },
      why: 'shared emptyDir: the server as owner, runtimed by group',
    },
    { volume: 'api', access: { owner: 0, group: 65532, mode: 0o770 }, why: 'the API token emptyDir (the server narrows it to 0750)' },
    {
      volume: 'token',
      access: { owner: undefined, group: 65532, mode: 0o750 },
      why: "runtimed's token: nobody's in the Pod, runtimed's group: the server's DAC_OVERRIDE does not count",
    },
    { volume: 'unused', access: { owner: undefined, group: 0, mode: 0o700 }, why: 'mounted by nobody' },
  ])('$volume: $why', ({ volume, access }) => {
    expect(volumeAccess(pod, volume, identities(pod))).toEqual(access);
  });

  test('an fsGroup is the group, setgid on emptyDirs', () => {
    const withGroup = runtimePod({ fsGroup: 2000 });
    expect(volumeAccess(withGroup, 'workspace', identities(withGroup))).toEqual({ owner: 0, group: 2000, mode: 0o2770 });
  });

  test("non-root mounters of different groups and no fsGroup: the kubelet's open modes", () => {
    const mixed = runtimePod({ server: { runAsUser: 1000, runAsGroup: 1000 } });
    expect(volumeAccess(mixed, 'workspace', identities(mixed))).toEqual({ owner: undefined, group: 0, mode: 0o777 });
  });
});
