import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, ListBucketsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Watchdog } from '@kruntimes/host';
import { ensureBinaries } from './binaries.ts';
import { ControlPlaneError } from './errors.ts';
import { ManagedProcess } from './managed-process.ts';
import { freePorts, LOOPBACK } from './ports.ts';

export interface ObjectStoreOptions {
  /** Directory with `weed`; default: ensureBinaries(). */
  binDir?: string;
  /** Parent of the state directory (data, identity config, log); default: the OS temp dir. */
  tmpRoot?: string;
  /** Bound on the whole start, binaries excluded. Default 60 s. */
  startTimeoutMs?: number;
  /** Progress lines; default: none. */
  log?: (line: string) => void;
}

export interface ObjectStoreCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** The signing region the store is addressed with (SeaweedFS accepts any; clients need one). */
export const OBJECT_STORE_REGION = 'us-east-1';
const START_ATTEMPTS = 3;
/** Bound on one request of the harness's own client. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Bound on the keys listObjects returns (the harness's tests hold a handful). */
const LIST_MAX_KEYS = 10_000;

/**
 * SeaweedFS (`weed mini`: master, volume server, filer and S3 gateway in one process)
 * on free loopback ports, in a temp dir, with one S3 identity whose random keys are
 * `credentials` (admin: every bucket, every action). Nothing else is authorized: the S3
 * gateway refuses anonymous requests once an identity config exists. `stop()` stops it
 * and removes its data; if the test process dies first, the watchdog sidecar does.
 */
export class ObjectStore {
  /** `http://127.0.0.1:PORT`, the S3 API (path-style addressing). */
  readonly endpoint: string;
  readonly region = OBJECT_STORE_REGION;
  readonly credentials: ObjectStoreCredentials;
  readonly dir: string;
  /** Milliseconds from spawn until the S3 API answered a signed request. */
  readonly startupMs: number;
  readonly #process: ManagedProcess;
  readonly #ports: WeedPorts;
  readonly #watchdog: Watchdog;
  readonly #client: S3Client;
  #stopping: Promise<void> | undefined;

  private constructor(
    endpoint: string,
    credentials: ObjectStoreCredentials,
    dir: string,
    startupMs: number,
    process: ManagedProcess,
    ports: WeedPorts,
    watchdog: Watchdog,
  ) {
    this.endpoint = endpoint;
    this.credentials = credentials;
    this.dir = dir;
    this.startupMs = startupMs;
    this.#process = process;
    this.#ports = ports;
    this.#watchdog = watchdog;
    this.#client = this.client();
  }

  static async start(options: ObjectStoreOptions = {}): Promise<ObjectStore> {
    const log = options.log ?? (() => undefined);
    const binDir = options.binDir ?? (await ensureBinaries());
    for (let attempt = 1; ; attempt++) {
      try {
        return await ObjectStore.#startOnce(binDir, options, log);
      } catch (error) {
        // Free ports are chosen before weed binds them; another process can win that race.
        const portTaken = error instanceof ControlPlaneError && /address already in use|is not available on/i.test(error.logTail);
        if (!portTaken || attempt >= START_ATTEMPTS) throw error;
        log('a port was taken before weed could bind it; starting again');
      }
    }
  }

  static async #startOnce(binDir: string, options: ObjectStoreOptions, log: (line: string) => void): Promise<ObjectStore> {
    const dir = await mkdtemp(join(options.tmpRoot ?? tmpdir(), 'kruntimes-s3-'));
    const watchdog = Watchdog.start({ graceMs: 5_000, owner: 'the object store of the test harness' });
    watchdog.watchDirectory(dir);
    let process: ManagedProcess | undefined;
    let ports: WeedPorts | undefined;
    try {
      const credentials: ObjectStoreCredentials = {
        accessKeyId: `KRT${randomBytes(10).toString('hex').toUpperCase()}`,
        secretAccessKey: randomBytes(30).toString('base64url'),
      };
      const identities = {
        identities: [
          {
            name: 'admin',
            credentials: [{ accessKey: credentials.accessKeyId, secretKey: credentials.secretAccessKey }],
            actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'],
          },
        ],
      };
      await writeFile(join(dir, 's3-identities.json'), JSON.stringify(identities), { mode: 0o600 });
      await mkdir(join(dir, 'data'));
      ports = await weedPorts();
      const started = performance.now();
      process = ManagedProcess.start(weedSpec(binDir, dir, ports), watchdog);
      const endpoint = `http://${LOOPBACK}:${String(ports.s3)}`;
      const client = s3Client(endpoint, credentials);
      try {
        // A signed ListBuckets that succeeds means the gateway is up and has loaded the identity.
        await process.untilReady(
          'the S3 API of weed to answer a signed request',
          async () => {
            await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(2_000) });
            return true as const;
          },
          options.startTimeoutMs ?? 60_000,
        );
      } finally {
        client.destroy();
      }
      const startupMs = Math.round(performance.now() - started);
      log(`SeaweedFS S3 API ready at ${endpoint} after ${String(startupMs)} ms`);
      return new ObjectStore(endpoint, credentials, dir, startupMs, process, ports, watchdog);
    } catch (error) {
      try {
        await stopProcess(process, ports, dir, watchdog);
      } catch (stopError) {
        throw new AggregateError([error, stopError], 'starting the object store failed, and so did stopping what had started');
      }
      throw error;
    }
  }

  get pid(): number {
    return this.#process.pid;
  }

  /** A new S3 client with the admin credentials; the caller destroys it. */
  client(): S3Client {
    return s3Client(this.endpoint, this.credentials);
  }

  /** Creates a bucket. */
  async createBucket(name: string): Promise<void> {
    await this.#client.send(new CreateBucketCommand({ Bucket: name }), { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  }

  /** Writes an object with the admin credentials (tests use it to tamper with what was uploaded). */
  async putObject(bucket: string, key: string, body: Uint8Array | string, contentType = 'application/octet-stream'): Promise<void> {
    await this.#client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }), {
      abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  }

  /** Every key under `prefix`, sorted, bounded by LIST_MAX_KEYS. */
  async listKeys(bucket: string, prefix = ''): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token === undefined ? {} : { ContinuationToken: token }) }),
        { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) },
      );
      for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined && keys.length < LIST_MAX_KEYS);
    return keys.sort();
  }

  /** Resolves when weed exits on its own: the store is then broken. */
  get exited(): Promise<unknown> {
    return this.#process.exited;
  }

  stop(): Promise<void> {
    this.#client.destroy();
    this.#stopping ??= stopProcess(this.#process, this.#ports, this.dir, this.#watchdog);
    return this.#stopping;
  }
}

function s3Client(endpoint: string, credentials: ObjectStoreCredentials): S3Client {
  return new S3Client({
    endpoint,
    region: OBJECT_STORE_REGION,
    forcePathStyle: true,
    // A copy: the SDK marks the object it is given (`$source`), which would change `credentials`.
    credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
    // The harness probes and writes; the SDK's own retries would only stretch a bounded wait.
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

async function stopProcess(
  process: ManagedProcess | undefined,
  ports: WeedPorts | undefined,
  dir: string,
  watchdog: Watchdog,
): Promise<void> {
  const errors: unknown[] = [];
  try {
    await process?.stop();
  } catch (error) {
    errors.push(error);
  }
  for (const path of [dir, ...(ports === undefined ? [] : grpcSocketPaths(ports))]) {
    try {
      await rm(path, { recursive: true, force: true, maxRetries: 3 });
    } catch (error) {
      errors.push(error);
    }
  }
  watchdog.close();
  if (errors.length > 0) throw new AggregateError(errors, 'stopping the object store failed');
}

/** Every port `weed mini` listens on; all explicit, so that it never picks one itself. */
interface WeedPorts {
  master: number;
  masterGrpc: number;
  volume: number;
  volumeGrpc: number;
  filer: number;
  filerGrpc: number;
  s3: number;
  s3Grpc: number;
  admin: number;
  adminGrpc: number;
  webdav: number;
}

async function weedPorts(): Promise<WeedPorts> {
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc, admin, adminGrpc, webdav] = (await freePorts(11)) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc, admin, adminGrpc, webdav };
}

/**
 * weed also serves its gRPC ports on Unix sockets at fixed paths in /tmp (not TMPDIR); it
 * removes them on a clean exit, not after SIGKILL.
 */
function grpcSocketPaths(ports: WeedPorts): string[] {
  return [
    ['master', ports.masterGrpc],
    ['volume', ports.volumeGrpc],
    ['filer', ports.filerGrpc],
    ['s3', ports.s3Grpc],
    ['admin', ports.adminGrpc],
  ].map(([name, port]) => `/tmp/seaweedfs-${String(name)}-grpc-${String(port)}.sock`);
}

/**
 * `weed mini` rather than `weed server -s3`: both honour the identity config, but `weed
 * server`'s filer holds its announcement to the master for about 8 s on a fresh cluster
 * (waiting for peers a single-node cluster never has), so its first write succeeds about
 * 11 s after start against about 5 s for `weed mini`, which skips that wait.
 */
function weedSpec(binDir: string, dir: string, ports: WeedPorts) {
  const port = (value: number): string => String(value);
  return {
    component: 'weed' as const,
    command: join(binDir, 'weed'),
    args: [
      'mini',
      `-dir=${join(dir, 'data')}`,
      `-ip=${LOOPBACK}`,
      `-ip.bind=${LOOPBACK}`,
      `-master.port=${port(ports.master)}`,
      `-master.port.grpc=${port(ports.masterGrpc)}`,
      // No statistics to seaweedfs.com: the harness dials nothing but loopback.
      '-master.telemetry=false',
      `-volume.port=${port(ports.volume)}`,
      `-volume.port.grpc=${port(ports.volumeGrpc)}`,
      `-filer.port=${port(ports.filer)}`,
      `-filer.port.grpc=${port(ports.filerGrpc)}`,
      `-filer.localSocket=${join(dir, 'filer.sock')}`,
      `-s3.port=${port(ports.s3)}`,
      `-s3.port.grpc=${port(ports.s3Grpc)}`,
      `-s3.config=${join(dir, 's3-identities.json')}`,
      `-s3.localSocket=${join(dir, 's3.sock')}`,
      // Buckets exist only when a test creates them; the catalog endpoints are not used.
      '-s3.autoCreateBucket=false',
      '-s3.port.iceberg=0',
      '-s3.port.lance=0',
      // Not used, but mini reserves their ports anyway: explicit ones, so that none collides.
      '-webdav=false',
      `-webdav.port=${port(ports.webdav)}`,
      '-admin.ui=false',
      `-admin.port=${port(ports.admin)}`,
      `-admin.port.grpc=${port(ports.adminGrpc)}`,
      '-admin.port.legacy=0',
    ],
    logFile: join(dir, 'weed.log'),
    // glog writes its own log files to os.TempDir(): into the state dir, removed with it.
    env: { TMPDIR: dir },
  };
}
