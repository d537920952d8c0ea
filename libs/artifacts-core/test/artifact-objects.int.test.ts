// ArtifactObjects against the real SeaweedFS of the harness, and resolveArtifactStore against the
// real control plane. Each refusal test names the layer that refused: the store itself (it checks
// the signed Content-Length, key, expiry and x-amz-checksum-sha256), or our own check.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import { API_GROUP_VERSION, artifactObjectKey } from '@kruntimes/api';
import { isKruntimesError } from '@kruntimes/errors';
import { kruntimesClients } from '@kruntimes/run-client';
import type { KruntimesClients } from '@kruntimes/run-client';
import { Cluster, ObjectStore } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { ArtifactObjects } from '../src/artifact-objects.ts';
import { resolveArtifactStore } from '../src/resolve-artifact-store.ts';
import type { ArtifactStoreResolveError } from '../src/resolve-artifact-store.ts';
import type { UploadGrant } from '../src/artifact-objects.ts';

const BUCKET = 'artifacts';
let store: ObjectStore;
let objects: ArtifactObjects;

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
  objects = new ArtifactObjects(
    { endpoint: store.endpoint, bucket: BUCKET, prefix: 'krt', region: store.region, forcePathStyle: true },
    store.credentials,
  );
});
afterAll(async () => {
  objects.destroy();
  await store.stop();
});

let sequence = 0;
function key(id = 'out.csv'): string {
  sequence += 1;
  return artifactObjectKey('krt', 'team-a', `uid-${String(sequence)}`, 1, id);
}

function sha256Hex(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

async function put(grant: UploadGrant, body: Buffer, url = grant.url, headers = grant.headers): Promise<{ status: number; text: string }> {
  // fetch computes Content-Length from the body itself; the grant's value is what it must equal.
  const { 'content-length': _length, ...rest } = headers;
  const response = await fetch(url, { method: grant.method, body, headers: rest, signal: AbortSignal.timeout(10_000) });
  return { status: response.status, text: await response.text() };
}

async function grantFor(objectKey: string, body: Buffer, expiresInSeconds = 60): Promise<UploadGrant> {
  return objects.presignUpload(objectKey, { size: body.length, sha256Hex: sha256Hex(body), mediaType: 'text/csv', expiresInSeconds });
}

const BODY = Buffer.from('a,b\n1,2\n');

describe('presigned uploads', () => {
  test('a PUT of the signed body succeeds; stat, sha256, list and download then see exactly that object', async () => {
    const objectKey = key();
    const grant = await grantFor(objectKey, BODY);
    expect(grant.method).toBe('PUT');
    expect(new URL(grant.url).searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(
      expect.arrayContaining(['content-length', 'content-type', 'host', 'if-none-match', 'x-amz-checksum-sha256']),
    );
    // The checksum is a signed header, not a query parameter that a client could drop.
    expect(new URL(grant.url).searchParams.has('x-amz-checksum-sha256')).toBe(false);
    expect(grant.headers).toEqual({
      'content-length': String(BODY.length),
      'content-type': 'text/csv',
      'if-none-match': '*',
      'x-amz-checksum-sha256': createHash('sha256').update(BODY).digest('base64'),
    });
    expect(grant.expiresAt.getTime()).toBeGreaterThan(Date.now() + 50_000);

    expect((await put(grant, BODY)).status).toBe(200);
    const stat = await objects.stat(objectKey);
    expect([stat?.size, stat?.contentType, stat?.lastModified instanceof Date]).toEqual([BODY.length, 'text/csv', true]);
    expect(await objects.sha256(objectKey, 1024)).toEqual({ sha256Hex: sha256Hex(BODY), size: BODY.length });
    const listed = [];
    for await (const object of objects.list(objectKey.slice(0, objectKey.lastIndexOf('/') + 1))) listed.push(object);
    expect(listed.map((object) => [object.key, object.size, object.lastModified instanceof Date])).toEqual([
      [objectKey, BODY.length, true],
    ]);
    const chunks: Buffer[] = [];
    for await (const chunk of (await objects.download(objectKey))!) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks)).toEqual(BODY);
  });

  test('refused by the store: a body larger than the signed size (SignatureDoesNotMatch on Content-Length)', async () => {
    const objectKey = key();
    const grant = await grantFor(objectKey, BODY);
    const larger = Buffer.concat([BODY, Buffer.from('3,4\n')]);
    const answer = await put(grant, larger);
    expect(answer.status).toBe(403);
    expect(answer.text).toMatch(/SignatureDoesNotMatch/);
    expect(await objects.stat(objectKey)).toBeUndefined();
  });

  test('refused by the store: a body smaller than the signed size', async () => {
    const objectKey = key();
    const grant = await grantFor(objectKey, BODY);
    const answer = await put(grant, BODY.subarray(0, 3));
    expect(answer.status).toBe(403);
    expect(answer.text).toMatch(/SignatureDoesNotMatch/);
    expect(await objects.stat(objectKey)).toBeUndefined();
  });

  test('refused by the store: the same signature on another key (another artifact, another attempt, outside the prefix)', async () => {
    const objectKey = key();
    const grant = await grantFor(objectKey, BODY);
    const signedPath = new URL(grant.url).pathname;
    for (const otherPath of [
      signedPath.replace(/out\.csv$/, 'other.csv'),
      signedPath.replace(/\/1\/out\.csv$/, '/2/out.csv'),
      `/${BUCKET}/elsewhere/out.csv`,
    ]) {
      const other = new URL(grant.url);
      other.pathname = otherPath;
      const answer = await put(grant, BODY, other.toString());
      expect([otherPath, answer.status]).toEqual([otherPath, 403]);
      expect(answer.text).toMatch(/SignatureDoesNotMatch/);
    }
    const listed = [];
    for await (const object of objects.list('')) listed.push(object.key);
    expect(listed.filter((k) => k.endsWith('other.csv') || k.includes('elsewhere') || k.endsWith('/2/out.csv'))).toEqual([]);
  });

  test('refused by the store: a PUT after the grant expired (1 s grant, PUT after 2.5 s)', async () => {
    const objectKey = key();
    const grant = await grantFor(objectKey, BODY, 1);
    await sleep(2_500);
    const answer = await put(grant, BODY);
    expect(answer.status).toBe(403);
    expect(answer.text).toMatch(/AccessDenied|expired/i);
    expect(await objects.stat(objectKey)).toBeUndefined();
  });

  test('refused by the store: a body of the signed size whose sha256 differs from the signed checksum (BadDigest)', async () => {
    const objectKey = key();
    const grant = await grantFor(objectKey, BODY);
    const tampered = Buffer.from(BODY);
    tampered[0] = 'A'.charCodeAt(0);
    const answer = await put(grant, tampered);
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(/BadDigest/);
    expect(await objects.stat(objectKey)).toBeUndefined();
  });

  test('refused by the store: the signed body without the checksum header, or with another media type', async () => {
    const objectKey = key();
    const grant = await grantFor(objectKey, BODY);
    const { 'x-amz-checksum-sha256': _checksum, ...withoutChecksum } = grant.headers;
    expect((await put(grant, BODY, grant.url, withoutChecksum)).status).toBe(403);
    expect((await put(grant, BODY, grant.url, { ...grant.headers, 'content-type': 'text/html' })).status).toBe(403);
    expect(await objects.stat(objectKey)).toBeUndefined();
  });

  test('refused by the store: a written object is never replaced through a grant, neither another body for its key nor the same grant again (412)', async () => {
    const objectKey = key();
    const other = Buffer.from('a,b\n6,6\n');
    const [first, second] = [await grantFor(objectKey, BODY), await grantFor(objectKey, other)];
    expect((await put(first, BODY)).status).toBe(200);
    for (const [grant, body] of [
      [second, other],
      [first, BODY],
    ] as const) {
      const answer = await put(grant, body);
      expect(answer.status).toBe(412);
      expect(answer.text).toMatch(/PreconditionFailed/);
    }
    // Without the header the signature no longer matches: the condition cannot be dropped.
    const { 'if-none-match': _condition, ...unconditional } = second.headers;
    expect((await put(second, other, second.url, unconditional)).status).toBe(403);
    expect(await objects.sha256(objectKey, 1024)).toEqual({ sha256Hex: sha256Hex(BODY), size: BODY.length });
  });

  test('accepted by the store, caught by our check: an object overwritten with the admin credentials has another sha256 and size', async () => {
    const objectKey = key();
    expect((await put(await grantFor(objectKey, BODY), BODY)).status).toBe(200);
    await store.putObject(BUCKET, objectKey, 'x,y\n9,9,9\n', 'text/csv');
    const stored = await objects.sha256(objectKey, 1024);
    expect(stored).toBeDefined();
    expect(stored?.sha256Hex).not.toBe(sha256Hex(BODY));
    expect(stored?.size).not.toBe(BODY.length);
  });

  test('refused by our check: a grant for an invalid size, digest, media type or lifetime', async () => {
    const objectKey = key();
    const base = { size: 1, sha256Hex: sha256Hex(BODY), mediaType: 'text/csv', expiresInSeconds: 60 };
    for (const bad of [{ size: -1 }, { size: 1.5 }, { sha256Hex: 'ABC' }, { mediaType: 'csv' }, { expiresInSeconds: 0 }]) {
      await expect(objects.presignUpload(objectKey, { ...base, ...bad })).rejects.toMatchObject({ code: 'InvalidRequest' });
    }
  });
});

describe('reading and removing objects', () => {
  test('stat, sha256 and download of a missing object are undefined', async () => {
    const objectKey = key();
    expect(await objects.stat(objectKey)).toBeUndefined();
    expect(await objects.sha256(objectKey, 1024)).toBeUndefined();
    expect(await objects.download(objectKey)).toBeUndefined();
  });

  test('sha256 refuses an object past maxBytes (ArtifactTooLarge)', async () => {
    const objectKey = key();
    await store.putObject(BUCKET, objectKey, Buffer.alloc(64 * 1024, 1));
    await expect(objects.sha256(objectKey, 1024)).rejects.toMatchObject({ code: 'ArtifactTooLarge' });
  });

  test('list yields every object under the prefix and refuses to go past its bound; remove tolerates absent keys', async () => {
    const small = new ArtifactObjects(objects.location, store.credentials, { maxListedKeys: 5 });
    const prefix = 'krt/team-b/';
    const keys = Array.from({ length: 6 }, (_, index) => `${prefix}uid-p/1/a${String(index)}`);
    await Promise.all(keys.map(async (k) => store.putObject(BUCKET, k, 'x')));
    try {
      const seen: string[] = [];
      for await (const object of objects.list(prefix)) seen.push(object.key);
      expect(seen.sort()).toEqual([...keys].sort());
      // The bound holds: a listing past maxListedKeys is an error, not a silent cut.
      await expect(
        (async () => {
          for await (const _ of small.list(prefix)) {
            /* drain */
          }
        })(),
      ).rejects.toMatchObject({ code: 'ArtifactStoreUnavailable' });
      await objects.remove([...keys, `${prefix}uid-p/1/never-existed`]);
      expect(await store.listKeys(BUCKET, prefix)).toEqual([]);
    } finally {
      small.destroy();
    }
  });

  test('an unreachable store is ArtifactStoreUnavailable, not undefined', async () => {
    const unreachable = new ArtifactObjects({ ...objects.location, endpoint: 'http://127.0.0.1:1' }, store.credentials, {
      maxAttempts: 1,
      requestTimeoutMs: 2_000,
    });
    try {
      await expect(unreachable.stat(key())).rejects.toMatchObject({ code: 'ArtifactStoreUnavailable' });
    } finally {
      unreachable.destroy();
    }
  });

  test('wrong credentials are ArtifactStoreUnavailable (the store answers 403), not a missing object', async () => {
    const wrong = new ArtifactObjects(objects.location, { ...store.credentials, secretAccessKey: 'wrong' }, { maxAttempts: 1 });
    try {
      const error = await wrong.stat(key()).then(
        () => undefined,
        (reason: unknown) => reason as Error & { code?: string },
      );
      expect([error?.code, error?.message]).toEqual(['ArtifactStoreUnavailable', expect.stringMatching(/HTTP 403/) as unknown]);
    } finally {
      wrong.destroy();
    }
  });
});

describe('resolveArtifactStore', () => {
  const cluster = Cluster.fromEnvironment();
  let namespace: TestNamespace;
  let core: CoreV1Api;
  let stores: KruntimesClients['artifactStores'];
  let kube: KubernetesObjectApi;

  beforeEach(async () => {
    namespace = await cluster.createNamespace({ prefix: 'artifact-store' });
    const config = cluster.kubeConfig();
    core = config.makeApiClient(CoreV1Api);
    stores = kruntimesClients(config).artifactStores;
    kube = KubernetesObjectApi.makeApiClient(config);
  });
  afterEach(async () => {
    await namespace.delete();
  });

  async function createStore(secretName = 'store-credentials'): Promise<void> {
    await kube.create({
      apiVersion: API_GROUP_VERSION,
      kind: 'ArtifactStore',
      metadata: { name: 'main', namespace: namespace.name },
      spec: { endpoint: store.endpoint, bucket: BUCKET, prefix: 'krt', credentialsSecretRef: { name: secretName } },
    } as never);
  }

  async function createSecret(data: Record<string, string>): Promise<void> {
    await core.createNamespacedSecret({
      namespace: namespace.name,
      body: { metadata: { name: 'store-credentials' }, stringData: data },
    });
  }

  test('reads the store with its defaults and its Secret, and the credentials work against the store', async () => {
    await createStore();
    await createSecret({ accessKeyId: store.credentials.accessKeyId, secretAccessKey: store.credentials.secretAccessKey });
    const resolved = await resolveArtifactStore(core, stores, namespace.name, 'main');
    expect(resolved.location).toEqual({
      endpoint: store.endpoint,
      bucket: BUCKET,
      prefix: 'krt',
      region: 'us-east-1',
      forcePathStyle: true,
    });
    expect(resolved.credentials).toEqual(store.credentials);
    expect(resolved.store.metadata.name).toBe('main');
    const viaResolved = new ArtifactObjects(resolved.location, resolved.credentials);
    try {
      expect(await viaResolved.stat(key())).toBeUndefined();
    } finally {
      viaResolved.destroy();
    }
  });

  test('a missing ArtifactStore, a missing Secret and a Secret without a key are ArtifactStoreUnavailable with a clear message', async () => {
    const failure = async (): Promise<ArtifactStoreResolveError> => {
      try {
        await resolveArtifactStore(core, stores, namespace.name, 'main');
      } catch (error) {
        expect(isKruntimesError(error, 'ArtifactStoreUnavailable')).toBe(true);
        return error as ArtifactStoreResolveError;
      }
      throw new Error('resolveArtifactStore succeeded');
    };
    expect(await failure()).toMatchObject({ problem: 'StoreNotFound', message: `ArtifactStore ${namespace.name}/main not found` });
    await createStore();
    const noSecret = await failure();
    expect(noSecret.problem).toBe('SecretNotFound');
    expect(noSecret.message).toMatch(/^Secret .*\/store-credentials .* not found$/);
    await createSecret({ accessKeyId: store.credentials.accessKeyId });
    const noKey = await failure();
    expect(noKey.problem).toBe('SecretInvalid');
    expect(noKey.message).toMatch(/has no key secretAccessKey$/);
  });
});
