import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, chown, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { KruntimesError } from '@kruntimes/errors';
import { healthV1 } from '@kruntimes/proto';
import type { ServerMiddleware } from 'nice-grpc';

/** The metadata key runtimed's calls carry the Runtime Server's token in. */
export const API_TOKEN_METADATA = 'authorization';

/** Health stays open: it tells nothing but SERVING, and the kubelet's probes carry no token. */
const OPEN_SERVICE_PREFIX = `/${healthV1.HealthDefinition.fullName}/`;

/**
 * Makes this server's token (random, new at every start) and writes it to `file`, which
 * runtimed reads and the Runs' users cannot (0600, or 0640 for group `gid`: runtimed's
 * group where it is another user). Written beside and renamed into place: a reader never
 * sees half a token. With `gid`, its directory (a volume of its own, made 0777 by the
 * kubelet) becomes `0750 <this user>:gid` first: no Run can put a file there, replace the
 * token or remove it.
 */
export async function writeApiToken(file: string, gid: number | undefined): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const owner = process.getuid?.() ?? 0;
  if (gid !== undefined) {
    await chown(dirname(file), owner, gid);
    await chmod(dirname(file), 0o750);
  }
  const partial = `${file}.${String(process.pid)}.partial`;
  await writeFile(partial, token, { mode: 0o600 });
  if (gid !== undefined) {
    await chown(partial, owner, gid);
    await chmod(partial, 0o640);
  }
  await rename(partial, file);
  return token;
}

/**
 * Server middleware: every call but health must carry `authorization: Bearer <token>`, or
 * it fails Unauthenticated before any service code runs (user code on the Pod reaches the
 * port, never the token). Put after errorMiddleware, which maps the error.
 */
export function apiTokenMiddleware(token: string): ServerMiddleware {
  const expected = Buffer.from(`Bearer ${token}`);
  return async function* requireApiToken(call, context) {
    if (!call.method.path.startsWith(OPEN_SERVICE_PREFIX)) {
      const given = Buffer.from(context.metadata.get(API_TOKEN_METADATA) ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw new KruntimesError('Unauthenticated', 'the Runtime Server answers runtimed only: this call carries no valid token');
      }
    }
    return yield* call.next(call.request, context);
  };
}
