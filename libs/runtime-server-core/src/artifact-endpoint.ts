import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import type { Logger } from 'pino';
import { ResultManifest, declarationProblems, parseArtifactClaim } from './artifact-claims.ts';
import type { ArtifactClaim, DeclaredOutput } from './artifact-claims.ts';
import { ArtifactGrantsClient } from './artifact-grants-client.ts';
import type { UploadGrant } from './artifact-grants-client.ts';
import { readJson, sendJson } from './http-json.ts';
import { InputWait, WAIT_REQUEST_BYTES, endAfterAnswer, waitForInput } from './wait-for-input.ts';
import type { SessionHooks } from './wait-for-input.ts';

/** A request body larger than this is refused: a claim is four short fields. */
export const ARTIFACT_REQUEST_BYTES = 16 * 1024;
/** A request that has not arrived whole within this long is dropped. */
const REQUEST_TIMEOUT_MS = 15_000;
/** Requests of one execution at a time; more are refused (429) rather than queued. */
export const ARTIFACT_REQUESTS_IN_FLIGHT = 8;
/** Connections of the listener, all executions together. */
const MAX_CONNECTIONS = 256;

/** ExecuteRequest.artifacts: how the execution reaches runtimed's grants, and what it may upload. */
export interface ArtifactAccess {
  readonly grantAddress: string;
  readonly grantToken: string;
  readonly declared: readonly DeclaredOutput[];
}

/** One execution's view of the endpoint, from its start until it ends. */
export interface ArtifactSession {
  /** KRT_ARTIFACTS_URL and KRT_ARTIFACTS_TOKEN for the user-code process. */
  readonly env: Readonly<Record<string, string>>;
  /** Ends the session: its token is refused from now on. Returns the ResultManifest. */
  close(): ArtifactClaim[];
  /**
   * Resolves once no wait for input is in flight any more (an AwaitInput already sent
   * is answered or has passed its deadline), so that the ending knows whether it waits.
   */
  settled(): Promise<void>;
}

type Answer = UploadGrant | ArtifactClaim | { attempt: number };

interface Session {
  readonly token: Buffer;
  readonly access: ArtifactAccess;
  readonly manifest: ResultManifest;
  readonly grants: ArtifactGrantsClient;
  /** Aborted at close: a grant in flight is not handed out after the execution ended. */
  readonly ended: AbortController;
  readonly logger: Logger;
  readonly wait: InputWait;
  readonly hooks: SessionHooks | undefined;
  inFlight: number;
}

/**
 * The local artifacts endpoint of a Runtime Server: one HTTP listener on loopback for
 * every execution, each known by its own random bearer token (never runtimed's grant
 * token). User code asks it for upload grants, which it forwards to runtimed, and
 * records its ResultManifest here.
 */
export class ArtifactEndpoint {
  readonly #server: Server;
  readonly #url: string;
  readonly #logger: Logger;
  /** By SHA-256 of the token, so that the lookup reveals nothing usable about a token. */
  readonly #sessions = new Map<string, Session>();

  private constructor(server: Server, url: string, logger: Logger) {
    this.#server = server;
    this.#url = url;
    this.#logger = logger;
  }

  /** Listens on an ephemeral port of `host`, which must be a loopback address. */
  static async start(host: string, logger: Logger): Promise<ArtifactEndpoint> {
    if (!isLoopbackHost(host)) throw new KruntimesError('InvalidRequest', `refusing to serve artifacts on ${host}: loopback only`);
    const server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: REQUEST_TIMEOUT_MS });
    server.maxConnections = MAX_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${String(port)}`;
    const endpoint = new ArtifactEndpoint(server, url, logger);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      void endpoint.#serve(request, response);
    });
    logger.info({ url }, 'artifacts endpoint listening');
    return endpoint;
  }

  get url(): string {
    return this.#url;
  }

  /**
   * Starts an execution's session; throws InvalidRequest when runtimed's access is
   * malformed. Without `hooks` the session refuses to wait for input.
   */
  open(access: ArtifactAccess, logger: Logger, hooks?: SessionHooks): ArtifactSession {
    const problems = declarationProblems(access.declared);
    if (access.grantToken === '') problems.push('artifacts.grant_token is empty');
    if (problems.length > 0) throw new KruntimesError('InvalidRequest', problems.join('; '));
    const grants = new ArtifactGrantsClient(access.grantAddress);
    const token = randomBytes(32).toString('base64url');
    const key = digestOf(token);
    const ended = new AbortController();
    const session: Session = {
      token: Buffer.from(token),
      access,
      manifest: new ResultManifest(access.declared.length),
      grants,
      ended,
      logger,
      wait: new InputWait({ grants, grantToken: access.grantToken, ended: ended.signal, logger }),
      hooks,
      inFlight: 0,
    };
    this.#sessions.set(key, session);
    return {
      env: { KRT_ARTIFACTS_URL: this.#url, KRT_ARTIFACTS_TOKEN: token },
      // Idempotent: the first close fixes the manifest.
      close: () => {
        if (!session.ended.signal.aborted) {
          this.#sessions.delete(key);
          session.ended.abort(new KruntimesError('Unauthenticated', 'the execution has ended'));
          // An AwaitInput in flight still needs the channel.
          void session.wait.settled().then(() => {
            grants.close();
          });
        }
        return session.manifest.entries();
      },
      settled: () => session.wait.settled(),
    };
  }

  /** Stops listening (the executions' sessions are closed by the executions). */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => {
      this.#server.close(() => {
        resolve();
      });
    });
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const { answer, session } = await this.#handle(request);
      sendJson(response, 200, answer);
      if ('attempt' in answer) endAfterAnswer(response, session.hooks);
    } catch (error) {
      const typed = isKruntimesError(error) ? error : new KruntimesError('Internal', 'internal error');
      if (!isKruntimesError(error)) this.#logger.error({ err: error }, 'artifacts endpoint failed');
      sendJson(response, typed.httpStatus, { code: typed.code, message: typed.message });
    }
  }

  async #handle(request: IncomingMessage): Promise<{ answer: Answer; session: Session }> {
    const session = this.#authenticate(request.headers.authorization);
    const route = routeOf(request);
    if (session.inFlight >= ARTIFACT_REQUESTS_IN_FLIGHT) {
      throw new KruntimesError('InvocationInFlight', `at most ${ARTIFACT_REQUESTS_IN_FLIGHT} artifact requests at a time`);
    }
    session.inFlight += 1;
    try {
      return { answer: await this.#route(route, request, session), session };
    } finally {
      session.inFlight -= 1;
    }
  }

  async #route(route: Route, request: IncomingMessage, session: Session): Promise<Answer> {
    if (route === 'wait') {
      const read = async () => {
        const body = await readJson(request, WAIT_REQUEST_BYTES);
        assertOpen(session);
        return body;
      };
      return { attempt: await waitForInput(session.wait, session.hooks, read) };
    }
    if (session.wait.waitingAttempt !== undefined) {
      throw new KruntimesError('StaleAttempt', 'the execution waits for input: its attempt is over');
    }
    const claim = parseArtifactClaim(await readJson(request, ARTIFACT_REQUEST_BYTES), session.access.declared);
    // The execution may have ended while the body arrived.
    assertOpen(session);
    if (route === 'manifest') {
      session.manifest.record(claim);
      session.logger.info({ artifactId: claim.artifactId, size: claim.size, sha256: claim.sha256 }, 'artifact recorded');
      return claim;
    }
    const grant = await session.grants.grant(session.access.grantToken, claim, session.ended.signal).catch((error: unknown) => {
      // Aborted because the execution ended: say so, whatever the abort looked like.
      assertOpen(session);
      throw error;
    });
    assertOpen(session);
    session.logger.info({ artifactId: claim.artifactId, size: claim.size, expiresAt: grant.expiresAt }, 'artifact upload granted');
    return grant;
  }

  #authenticate(header: string | undefined): Session {
    const token = /^Bearer ([A-Za-z0-9_-]{1,256})$/.exec(header ?? '')?.[1];
    const session = token === undefined ? undefined : this.#sessions.get(digestOf(token));
    const given = Buffer.from(token ?? '');
    if (session?.token.length !== given.length || !timingSafeEqual(session.token, given)) {
      throw new KruntimesError('Unauthenticated', 'missing or unknown artifacts token (Authorization: Bearer $KRT_ARTIFACTS_TOKEN)');
    }
    return session;
  }
}

function assertOpen(session: Session): void {
  if (session.ended.signal.aborted) throw new KruntimesError('Unauthenticated', 'the execution has ended');
}

type Route = 'grants' | 'manifest' | 'wait';
const ROUTES: Readonly<Record<string, Route>> = { '/v1/grants': 'grants', '/v1/manifest': 'manifest', '/v1/wait-for-input': 'wait' };

function routeOf(request: IncomingMessage): Route {
  const path = (request.url ?? '').split('?')[0] ?? '';
  const route = Object.hasOwn(ROUTES, path) ? ROUTES[path] : undefined;
  if (route === undefined)
    throw new KruntimesError(
      'RouteNotFound',
      `no route ${(request.url ?? '').slice(0, 200)}: POST /v1/grants, /v1/manifest or /v1/wait-for-input`,
    );
  if (request.method !== 'POST') throw new KruntimesError('MethodNotAllowed', `${path} accepts POST only`);
  return route;
}

function digestOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function isLoopbackHost(host: string): boolean {
  return host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The host of the artifacts endpoint for a Runtime Server listening on `listen`: the same loopback host, or 127.0.0.1. */
export function artifactEndpointHost(listen: string): string {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):\d{1,5}$/.exec(listen);
  const host = match?.[1] ?? match?.[2];
  return host !== undefined && isLoopbackHost(host) ? host : '127.0.0.1';
}
