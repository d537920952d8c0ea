import { randomBytes } from 'node:crypto';

/** A static-token user of the control plane. */
export interface UserSpec {
  name: string;
  groups: readonly string[];
}

export interface User extends UserSpec {
  token: string;
}

/** Member of `system:masters`: bypasses authorization, like a cluster's break-glass admin. */
export const ADMIN_USER = 'admin';

/**
 * Named users with no rights at all until a test grants them some through RBAC
 * (authenticated users only get discovery and self-reviews from the bootstrap policy).
 */
export const DEFAULT_USERS: readonly UserSpec[] = [
  { name: ADMIN_USER, groups: ['system:masters'] },
  { name: 'alice', groups: [] },
  { name: 'bob', groups: [] },
];

/**
 * The identity kube-controller-manager runs as. The bootstrap RBAC policy grants this
 * user exactly what the manager needs when every controller uses its own service account
 * (`--use-service-account-credentials`), so it needs no `system:masters`.
 */
export const CONTROLLER_MANAGER_USER: UserSpec = { name: 'system:kube-controller-manager', groups: [] };

/**
 * A kubelet's identity: the Node authorizer grants `system:node:NAME` in `system:nodes`
 * exactly what the kubelet of node NAME needs.
 */
export function nodeUser(nodeName: string): UserSpec {
  return { name: `system:node:${nodeName}`, groups: ['system:nodes'] };
}

/** kube-proxy's identity: the bootstrap policy binds this user to system:node-proxier. */
export const KUBE_PROXY_USER: UserSpec = { name: 'system:kube-proxy', groups: [] };

export function withTokens(specs: readonly UserSpec[]): User[] {
  const names = new Set<string>();
  return specs.map((spec) => {
    if (names.has(spec.name)) throw new Error(`duplicate user ${spec.name}`);
    if (!/^[\w:.@-]+$/.test(spec.name) || spec.groups.some((group) => !/^[\w:.@-]+$/.test(group))) {
      // The token file is CSV; names with commas or quotes would corrupt it.
      throw new Error(`user ${spec.name} or its groups contain characters the token file cannot hold`);
    }
    names.add(spec.name);
    return { ...spec, token: randomBytes(24).toString('base64url') };
  });
}

/**
 * kube-apiserver `--token-auth-file`: `token,user,uid[,"group1,group2"]`. The groups column
 * is left out for users without groups: `""` would put them in a group named "".
 */
export function tokenAuthFile(users: readonly User[]): string {
  return users
    .map((user) => {
      const groups = user.groups.length === 0 ? '' : `,"${user.groups.join(',')}"`;
      return `${user.token},${user.name},${user.name}${groups}\n`;
    })
    .join('');
}
