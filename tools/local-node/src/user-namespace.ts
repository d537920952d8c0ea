import type { V1Container, V1Pod, V1PodSecurityContext, V1SecurityContext } from '@kubernetes/client-node';

/**
 * Pods with `spec.hostUsers: false`, as the kubelet runs them: each in user namespaces whose
 * uids and gids 0-65535 are a host range of its own. Pure decisions; user-namespace-holder.ts
 * and pod-ownership.ts do the I/O.
 */

/** Ids inside a Pod's user namespace, as the kubelet maps them. */
export const RANGE_SIZE = 65_536;
/** Far above any host account and the 65534 overflow ids: the ranges only need to be unique on the host. */
export const FIRST_RANGE_BASE = 1_000_000_000;
/** The last valid id is 2^32 - 2 ((uid_t)-1 means "unchanged" to setresuid). */
export const RANGE_COUNT = Math.floor((0xff_ff_ff_fe - FIRST_RANGE_BASE + 1) / RANGE_SIZE);

export function rangeBase(index: number): number {
  return FIRST_RANGE_BASE + index * RANGE_SIZE;
}

/** Round-robin from `cursor`, like the address pool: a Pod's successor gets other ids. undefined: every range is held. */
export function chooseRangeIndex(held: ReadonlySet<number>, cursor: number, count: number = RANGE_COUNT): number | undefined {
  for (let i = 0; i < count; i++) {
    const index = (((cursor + i) % count) + count) % count;
    if (!held.has(index)) return index;
  }
  return undefined;
}

/** What /proc/PID/uid_map (and gid_map) get: inside 0-65535 to the Pod's range. */
export function idMapLine(base: number): string {
  return `0 ${String(base)} ${String(RANGE_SIZE)}\n`;
}

export function usesUserNamespace(pod: V1Pod): boolean {
  return pod.spec?.hostUsers === false;
}

/** Every capability setpriv knows (capabilities(7) of Linux 6.x), without CAP_. */
export const ALL_CAPABILITIES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
] as const;

/** containerd's default set: what a container holds unless its securityContext drops it. */
export const DEFAULT_CAPABILITIES = [
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
] as const;

/** Who a container's process is inside its Pod's user namespace, and what it may do there. */
export interface ContainerIdentity {
  uid: number;
  gid: number;
  /** Supplementary groups: the Pod's fsGroup and supplementalGroups, nothing else. */
  groups: number[];
  /** Exactly these (bounding, permitted, effective, inheritable, ambient), sorted. */
  capabilities: string[];
  noNewPrivs: boolean;
}

/**
 * The container's identity as the kubelet and containerd resolve it: the container's
 * securityContext over the Pod's; no runAsUser is uid 0 (a mapped image has no USER);
 * runAsNonRoot refuses uid 0 as the kubelet does (CreateContainerConfigError).
 */
export function containerIdentity(pod: V1Pod, container: V1Container): ContainerIdentity | Error {
  const podContext: V1PodSecurityContext = pod.spec?.securityContext ?? {};
  const context: V1SecurityContext = container.securityContext ?? {};
  const uid = context.runAsUser ?? podContext.runAsUser ?? 0;
  const gid = context.runAsGroup ?? podContext.runAsGroup ?? 0;
  const name = container.name;
  for (const [what, id] of [
    ['runAsUser', uid],
    ['runAsGroup', gid],
  ] as const) {
    if (!inRange(id))
      return new Error(`container ${name}: ${what} ${String(id)} is outside the user namespace's 0-${String(RANGE_SIZE - 1)}`);
  }
  if ((context.runAsNonRoot ?? podContext.runAsNonRoot) === true && uid === 0)
    return new Error(`container ${name} has runAsNonRoot and would run as root (uid 0)`);
  const groups = [
    ...new Set([...(podContext.fsGroup === undefined ? [] : [podContext.fsGroup]), ...(podContext.supplementalGroups ?? [])]),
  ];
  const outside = groups.find((group) => !inRange(group));
  if (outside !== undefined) return new Error(`container ${name}: group ${String(outside)} is outside the user namespace's ids`);
  const capabilities = containerCapabilities(context);
  if (capabilities instanceof Error) return new Error(`container ${name}: ${capabilities.message}`);
  return {
    uid,
    gid,
    groups: groups.sort((a, b) => a - b),
    capabilities,
    // Privileged implies escalation, as the API server's validation has it.
    noNewPrivs: context.allowPrivilegeEscalation === false && context.privileged !== true,
  };
}

function containerCapabilities(context: V1SecurityContext): string[] | Error {
  if (context.privileged === true) return [...ALL_CAPABILITIES].sort();
  const known = new Set<string>(ALL_CAPABILITIES);
  const normalize = (names: string[] | undefined): string[] | Error => {
    const result: string[] = [];
    for (const raw of names ?? []) {
      const capability = raw.toUpperCase().replace(/^CAP_/, '');
      if (capability !== 'ALL' && !known.has(capability)) return new Error(`unknown capability ${raw}`);
      result.push(capability);
    }
    return result;
  };
  const drop = normalize(context.capabilities?.drop);
  const add = normalize(context.capabilities?.add);
  if (drop instanceof Error) return drop;
  if (add instanceof Error) return add;
  const kept = drop.includes('ALL') ? [] : DEFAULT_CAPABILITIES.filter((capability) => !drop.includes(capability));
  const all = add.includes('ALL') ? [...ALL_CAPABILITIES] : [...kept, ...add];
  return [...new Set(all)].sort();
}

function inRange(id: number): boolean {
  return Number.isInteger(id) && id >= 0 && id < RANGE_SIZE;
}

/**
 * setpriv's options for the identity: its uid and gid, exactly its groups, its capabilities
 * in every set (a uid-0 process gets the bounding set on exec, others the ambient one), and
 * no_new_privs when the container disallows escalation.
 */
export function setprivArgs(identity: ContainerIdentity): string[] {
  const caps = `-all${identity.capabilities.map((capability) => `,+${capability.toLowerCase()}`).join('')}`;
  return [
    `--reuid=${String(identity.uid)}`,
    `--regid=${String(identity.gid)}`,
    identity.groups.length === 0 ? '--clear-groups' : `--groups=${identity.groups.join(',')}`,
    `--inh-caps=${caps}`,
    `--ambient-caps=${caps}`,
    `--bounding-set=${caps}`,
    ...(identity.noNewPrivs ? ['--no-new-privs'] : []),
  ];
}

/**
 * Owner, group and mode of one volume's directory, in the Pod's ids; `owner` undefined is
 * the host's root, which the Pod's user namespace does not map: no process of the Pod is its
 * owner nor can override its mode (DAC_OVERRIDE in a user namespace counts only on files
 * whose owner and group it maps).
 */
export interface VolumeAccess {
  owner: number | undefined;
  group: number;
  /** Of the volume's directories; files keep the mode the volume gives them. */
  mode: number;
}

/**
 * Closed to everyone but the containers that mount the volume: their common group (the
 * Pod's fsGroup, else the gid the non-root ones share) and, when one of them is uid 0, that
 * root as the owner. An emptyDir is writable by them, the other volumes (Secrets, projected
 * tokens, ConfigMaps, downward API) readable only. Mounted by nobody: host root's, 0700.
 * Mounted by non-root containers of several groups without an fsGroup: open to all (the
 * kubelet's modes), as nothing else lets each of them in.
 */
export function volumeAccess(pod: V1Pod, volumeName: string, identities: ReadonlyMap<string, ContainerIdentity>): VolumeAccess {
  const volume = pod.spec?.volumes?.find((v) => v.name === volumeName);
  const emptyDir = volume?.emptyDir !== undefined;
  const mounters = (pod.spec?.containers ?? [])
    .filter((container) => (container.volumeMounts ?? []).some((mount) => mount.name === volumeName))
    .flatMap((container) => {
      const identity = identities.get(container.name);
      return identity === undefined ? [] : [identity];
    });
  if (mounters.length === 0) return { owner: undefined, group: 0, mode: 0o700 };
  const root = mounters.some((identity) => identity.uid === 0);
  const others = mounters.filter((identity) => identity.uid !== 0);
  const uids = new Set(others.map((identity) => identity.uid));
  const gids = new Set(others.map((identity) => identity.gid));
  const fsGroup = pod.spec?.securityContext?.fsGroup;
  const [onlyGid] = gids;
  const group = fsGroup ?? (gids.size === 1 ? onlyGid : gids.size === 0 ? 0 : undefined);
  const [onlyUid] = uids;
  // Writable volumes need an owner in the Pod (to chmod, chown); read-only ones are best nobody's.
  const owner = root ? 0 : emptyDir && uids.size === 1 ? onlyUid : undefined;
  if (group === undefined) return { owner: root ? 0 : undefined, group: 0, mode: emptyDir ? 0o777 : 0o755 };
  return { owner, group, mode: emptyDir ? (fsGroup === undefined ? 0o770 : 0o2770) : 0o750 };
}
