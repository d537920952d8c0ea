import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { credentials, experimental } from '@grpc/grpc-js';
import type { ChannelCredentials, ServerCredentials, ServerInterceptor } from '@grpc/grpc-js';
import { identityOfCertificate } from '@kruntimes/workload-pki';
import type { Logger } from 'pino';

type CertificateProvider = experimental.CertificateProvider;
type CaListener = experimental.CaCertificateUpdateListener;
type IdentityListener = experimental.IdentityCertificateUpdateListener;

/** The files of the `<runtime>-runtimed-tls` Secret as mounted (kubernetes.io/tls plus ca.crt). */
export const TLS_FILES = { ca: 'ca.crt', cert: 'tls.crt', key: 'tls.key' } as const;

/** One loaded, checked version of the workload certificate. */
export interface TlsSnapshot {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
  /** The URI SAN of the certificate (its workload identity). */
  identity: string;
  /** Increases on every change: channels built on an older one are rebuilt. */
  version: number;
}

export interface TlsMaterialOptions {
  /** The directory on this host (container root already applied). */
  dir: string;
  /** The identity the certificate must carry: this runtimed's own (runtimeIdentity). */
  expectedIdentity: string;
  logger: Logger;
  /** How often the files are checked for a change (mtime, size, inode). */
  pollMs?: number;
}

const DEFAULT_POLL_MS = 1_000;

/**
 * runtimed's workload certificate, re-read whenever its files change (a Secret volume
 * update swaps them through a symlink; the controller-manager renews the leaf well before
 * it expires). Polling the files' stat is simple and also sees symlink swaps, which
 * fs.watch reports unreliably. A version is accepted only when the three files parse, the
 * key matches the certificate and the certificate carries this runtimed's own identity;
 * otherwise the previous version stays in use (logged).
 *
 * It is a grpc-js CertificateProvider: servers built with `serverCredentials` get every
 * new version through grpc-js's own secure-context update, so new connections use the
 * new certificate while open ones finish on the old.
 */
export class TlsMaterial implements CertificateProvider {
  readonly #options: TlsMaterialOptions;
  readonly #caListeners = new Set<CaListener>();
  readonly #identityListeners = new Set<IdentityListener>();
  #current: TlsSnapshot | undefined;
  #signature = '';
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;
  #lastProblem = '';

  constructor(options: TlsMaterialOptions) {
    this.#options = options;
  }

  /** Loads what is there now (missing files are not an error: readiness waits) and starts watching. */
  async start(): Promise<void> {
    await this.check();
    this.#timer = setInterval(() => void this.check(), this.#options.pollMs ?? DEFAULT_POLL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  get loaded(): boolean {
    return this.#current !== undefined;
  }

  get current(): TlsSnapshot | undefined {
    return this.#current;
  }

  /** Re-reads the files if they changed; one check at a time. */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #check(): Promise<void> {
    const paths = [TLS_FILES.ca, TLS_FILES.cert, TLS_FILES.key].map((file) => join(this.#options.dir, file));
    let signature: string;
    try {
      const stats = await Promise.all(paths.map((path) => stat(path)));
      signature = stats.map((s) => `${s.ino}:${s.size}:${s.mtimeMs}`).join('|');
    } catch (error) {
      this.#problem(`the TLS files are not readable in ${this.#options.dir}`, error);
      return;
    }
    if (signature === this.#signature) return;
    try {
      const [ca, cert, key] = await Promise.all(paths.map((path) => readFile(path)));
      if (ca === undefined || cert === undefined || key === undefined) return;
      const identity = checkMaterial(ca, cert, key, this.#options.expectedIdentity);
      this.#signature = signature;
      this.#current = { ca, cert, key, identity, version: (this.#current?.version ?? 0) + 1 };
    } catch (error) {
      this.#problem('the TLS files are not a usable workload certificate', error);
      return;
    }
    this.#lastProblem = '';
    const { ca, cert, key, version } = this.#current;
    this.#options.logger.info(
      { version, identity: this.#current.identity, notAfter: new X509Certificate(cert).validTo },
      'workload certificate loaded',
    );
    for (const listener of this.#caListeners) listener({ caCertificate: ca });
    for (const listener of this.#identityListeners) listener({ certificate: cert, privateKey: key });
  }

  #problem(message: string, error: unknown): void {
    const text = `${message}: ${error instanceof Error ? error.message : String(error)}`;
    // Once per distinct problem, not once per poll.
    if (text !== this.#lastProblem) this.#options.logger.warn({ dir: this.#options.dir, err: error }, message);
    this.#lastProblem = text;
  }

  addCaCertificateListener(listener: CaListener): void {
    this.#caListeners.add(listener);
    // Asynchronously: grpc-js registers its watcher only after adding the listener.
    queueMicrotask(() => {
      if (this.#current !== undefined && this.#caListeners.has(listener)) listener({ caCertificate: this.#current.ca });
    });
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.#caListeners.delete(listener);
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.#identityListeners.add(listener);
    queueMicrotask(() => {
      if (this.#current !== undefined && this.#identityListeners.has(listener))
        listener({ certificate: this.#current.cert, privateKey: this.#current.key });
    });
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.#identityListeners.delete(listener);
  }

  /**
   * Server credentials that follow the files: server authentication only (`mutual`
   * false: the gateway's port), or mTLS requiring a client certificate that chains to
   * ca.crt (the peer port; the identity itself is checked by `interceptors`).
   * Until the files are loaded the server drops connections.
   */
  serverCredentials(mutual: boolean, interceptors: ServerInterceptor[] = []): ServerCredentials {
    // grpc-js 1.14 passes its first argument on as the identity provider and the second
    // as the CA provider (the declared parameter names are the other way round).
    const base = experimental.createCertificateProviderServerCredentials(this, mutual ? this : null, mutual);
    return interceptors.length === 0 ? base : experimental.createServerCredentialsWithInterceptors(base, interceptors);
  }

  /**
   * Client credentials of this version for a peer hop: our certificate as the client
   * identity, ca.crt as the only trust root, and the server must carry exactly
   * `expectedIdentity` (besides the DNS name check against the target name override).
   */
  static channelCredentials(snapshot: TlsSnapshot, expectedIdentity: string): ChannelCredentials {
    return credentials.createSsl(snapshot.ca, snapshot.key, snapshot.cert, {
      checkServerIdentity: (_hostname, certificate) => {
        const identity = identityOfCertificate(pemOfDer(certificate.raw));
        return identity === expectedIdentity
          ? undefined
          : new Error(`the peer's certificate identity ${identity ?? '(none)'} is not ${expectedIdentity}`);
      },
    });
  }
}

/** Throws unless the files are one usable workload certificate of this identity; returns it. */
function checkMaterial(ca: Buffer, cert: Buffer, key: Buffer, expectedIdentity: string): string {
  const leaf = new X509Certificate(cert);
  const authority = new X509Certificate(ca);
  if (!leaf.checkPrivateKey(createPrivateKey(key))) throw new Error('tls.key does not belong to tls.crt');
  if (!leaf.verify(authority.publicKey)) throw new Error('tls.crt is not signed by ca.crt');
  const identity = identityOfCertificate(cert.toString('utf8'));
  if (identity !== expectedIdentity) throw new Error(`tls.crt carries identity ${identity ?? '(none)'}, not ${expectedIdentity}`);
  return identity;
}

/** A DER certificate (as TLS peers present it) in PEM. */
export function pemOfDer(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
