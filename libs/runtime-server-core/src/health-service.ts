import { healthV1 } from '@kruntimes/proto';
import { ServerError, Status } from 'nice-grpc';
import type { CallContext } from 'nice-grpc';

const { HealthCheckResponse_ServingStatus: ServingStatus } = healthV1;

/**
 * grpc.health.v1 for the overall server ("") and the RuntimeServer service. SERVING
 * while the server accepts calls; NOT_SERVING once shutdown began.
 */
export class HealthService {
  #serving = true;
  readonly #services: ReadonlySet<string>;

  constructor(services: readonly string[]) {
    this.#services = new Set(['', ...services]);
  }

  setNotServing(): void {
    this.#serving = false;
  }

  implementation(): healthV1.HealthServiceImplementation {
    return {
      // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
      check: async (request) => {
        if (!this.#services.has(request.service)) throw new ServerError(Status.NOT_FOUND, `unknown service ${request.service}`);
        return { status: this.#status() };
      },
      // Watch is answered once; kubelet and grpc_health_probe use Check.
      watch: async function* (this: HealthService, request: healthV1.HealthCheckRequest, _context: CallContext) {
        yield { status: this.#services.has(request.service) ? this.#status() : ServingStatus.SERVICE_UNKNOWN };
        await Promise.resolve();
      }.bind(this),
    };
  }

  #status(): healthV1.HealthCheckResponse_ServingStatus {
    return this.#serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  }
}
