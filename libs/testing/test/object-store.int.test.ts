// The object store of the harness: a real SeaweedFS on loopback that answers only its own identity.
import { GetObjectCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { access } from 'node:fs/promises';
import { ObjectStore } from '../src/object-store.ts';
import { survivingProcesses } from '../src/processes.ts';

test('starts on loopback, creates a bucket, stores and lists objects, refuses other keys, and stops without a surviving process', async () => {
  const store = await ObjectStore.start();
  try {
    expect(store.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    process.stderr.write(`[object-store] S3 API ready after ${String(store.startupMs)} ms\n`);
    const started = performance.now();
    await store.createBucket('harness');
    await store.putObject('harness', 'a/b/one.txt', 'one', 'text/plain');
    process.stderr.write(`[object-store] bucket and first object ${String(Math.round(performance.now() - started))} ms after ready\n`);
    await store.putObject('harness', 'a/c/two.txt', 'two');
    expect(await store.listKeys('harness', 'a/')).toEqual(['a/b/one.txt', 'a/c/two.txt']);
    const client = store.client();
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: 'harness', Key: 'a/b/one.txt' }));
      expect([await object.Body?.transformToString(), object.ContentType]).toEqual(['one', 'text/plain']);
    } finally {
      client.destroy();
    }

    // A secret that is not the identity's is refused by the store itself, and so is no signature at all.
    const anonymous = await fetch(`${store.endpoint}/harness/a/b/one.txt`);
    expect(anonymous.status).toBe(403);
    const stranger = new S3Client({
      endpoint: store.endpoint,
      region: store.region,
      forcePathStyle: true,
      maxAttempts: 1,
      credentials: { accessKeyId: store.credentials.accessKeyId, secretAccessKey: `${store.credentials.secretAccessKey}x` },
    });
    try {
      await expect(stranger.send(new ListBucketsCommand({}))).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    } finally {
      stranger.destroy();
    }
  } finally {
    const pid = store.pid;
    const started = performance.now();
    await store.stop();
    process.stderr.write(`[object-store] stopped in ${String(Math.round(performance.now() - started))} ms\n`);
    expect(await survivingProcesses([pid])).toEqual([]);
    await expect(access(store.dir)).rejects.toThrow(/ENOENT/);
  }
});
