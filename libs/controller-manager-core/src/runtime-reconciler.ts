import type { KubernetesObject, V1Deployment, V1PodDisruptionBudget, V1Secret, V1Service } from '@kubernetes/client-node';
import { CONDITION_TYPES, LABELS, RUNTIME_KIND, runtimedTlsSecretName } from '@kruntimes/api';
import type { Runtime } from '@kruntimes/api';
import { ensureOwned, specHashed } from '@kruntimes/controller-runtime';
import type {
  ControllerLogger,
  DesiredObject,
  EnsureOwnedResult,
  IdentifiedObject,
  ObjectReconciler,
  OwnedObjectWriter,
  ObjectRef,
  ReadonlyDeep,
  ReconcileResult,
} from '@kruntimes/controller-runtime';
import { thaw, writeStatus } from '@kruntimes/run-client';
import type { ObjectApi } from '@kruntimes/run-client';
import {
  SPEC_HASH_ANNOTATION,
  TLS_SECRET_KEYS,
  podLabelSelector,
  runIsolation,
  runtimedTlsSecret,
  runtimeWorkload,
  workloadProblems,
} from '@kruntimes/runtime-workload';
import type { Deployment, PodDisruptionBudget, Secret, Service, WorkloadConfig } from '@kruntimes/runtime-workload';
import { issueWorkloadCertificate } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { podView, runtimeDemand } from './caches.ts';
import type { ManagerCacheReaders } from './caches.ts';
import type { PoolDecisions, PoolStatus } from './pool-decisions.ts';
import { decideStatusWrite, runtimeStatus } from './runtime-status.ts';
import type { RolloutView } from './runtime-status.ts';
import { rfc3339 } from './rfc3339.ts';
import { decodeSecretData, tlsSecretDecision } from './runtime-tls.ts';
import type { TlsSecretDecision } from './runtime-tls.ts';

/** The caches the Runtime reconciler reads. */
export type RuntimeCaches = Pick<ManagerCacheReaders, 'runs' | 'pods' | 'deployments' | 'services' | 'disruptionBudgets' | 'secrets'>;

export interface RuntimeReconcilerOptions {
  caches: RuntimeCaches;
  /** Creates and replaces the Runtime's TLS Secret, Deployment, Service and PodDisruptionBudget. */
  objects: OwnedObjectWriter;
  runtimes: Pick<ObjectApi<Runtime>, 'replaceStatus'>;
  logger: ControllerLogger;
  workload: WorkloadConfig;
  internalCa: CertificateAuthority;
  /** The autoscaler's decisions, put in the status of Runtimes with spec.scaling. */
  pools: PoolDecisions;
  now: () => number;
}

/** What ensuring the workload found: why it cannot be (status problems), the rollout, when to look at it again. */
interface WorkloadState {
  problems: string[];
  rollout: RolloutView | undefined;
  recheckAfterMs: number | undefined;
}

/**
 * The `runtime` controller (key `namespace/runtime`): the Runtime's TLS Secret (first), Deployment and Service, each
 * through ensureOwned, then its status from the caches. It reads the caches and converges; the event that caused it
 * does not matter.
 */
export class RuntimeReconciler implements ObjectReconciler<Runtime> {
  readonly #options: RuntimeReconcilerOptions;
  readonly #caches: RuntimeCaches;
  /** When this process last wrote each Runtime's status (decideStatusWrite spaces out usage-only writes). */
  readonly #lastStatusWrite = new Map<string, number>();

  constructor(options: RuntimeReconcilerOptions) {
    this.#options = options;
    this.#caches = options.caches;
  }

  /** Gone or deleting: its Deployment, Service and Secret go with it through their owner references. */
  gone({ key }: ObjectRef): void {
    this.#lastStatusWrite.delete(key);
  }

  async reconcile(cached: ReadonlyDeep<Runtime>, { key, namespace, name }: ObjectRef): Promise<ReconcileResult | undefined> {
    const runtime = thaw<Runtime>(cached);
    const workload = await this.#ensureWorkload(runtime);
    const demand = runtimeDemand(this.#caches, cached);
    const status = runtimeStatus({
      generation: runtime.metadata.generation,
      runsPerPod: runtime.spec.runs,
      previous: runtime.status,
      pods: this.#caches.pods
        .list(namespace)
        .filter((pod) => pod.metadata?.labels?.[LABELS.runtime] === name)
        .map(podView),
      runsHoldingCapacity: demand.held,
      pendingRuns: demand.pending,
      selector: podLabelSelector(name),
      pool: runtime.spec.scaling === undefined ? undefined : (this.#options.pools.get(key) ?? previousPool(runtime)),
      rollout: workload.rollout,
      problems: workload.problems,
      isolation: runIsolation(this.#options.workload),
      now: rfc3339(this.#options.now()),
    });
    const nowMs = this.#options.now();
    const write = decideStatusWrite({ previous: runtime.status, next: status, lastWriteMs: this.#lastStatusWrite.get(key), nowMs });
    if (write.action === 'write') {
      this.#lastStatusWrite.set(key, nowMs);
      await writeStatus(this.#options.runtimes, runtime, status, this.#options.logger);
    }
    // Back at the certificate's renewal point (bounded), or when a deferred usage change is due.
    const wakeups = [workload.recheckAfterMs, write.action === 'later' ? write.afterMs : undefined].filter((ms) => ms !== undefined);
    return wakeups.length === 0 ? undefined : { requeueAfterMs: Math.min(...wakeups) };
  }

  async #ensureWorkload(runtime: Runtime): Promise<WorkloadState> {
    const problems = workloadProblems(runtime);
    if (problems.length > 0) return { problems, rollout: undefined, recheckAfterMs: undefined };
    // The TLS Secret first: the Pods mount it and cannot start without it.
    const tls = await this.#ensureTlsSecret(runtime);
    if (tls.refused !== undefined) return { problems: [tls.refused], rollout: undefined, recheckAfterMs: tls.recheckAfterMs };

    const desired = runtimeWorkload(runtime, this.#options.workload);
    const { namespace, name } = desired.deployment.metadata;
    const cachedDeployment = this.#caches.deployments.get(name, namespace);
    const deployment = await this.#ensure(
      runtime,
      cachedDeployment,
      specHashed(asClientDeployment(desired.deployment), SPEC_HASH_ANNOTATION),
    );
    const service = await this.#ensure(
      runtime,
      this.#caches.services.get(name, namespace),
      specHashed(asClientService(desired.service), SPEC_HASH_ANNOTATION, (_, current) =>
        // clusterIP(s) and IP families are immutable and allocated by the API server: keep them.
        asClientService({ ...desired.service, spec: { ...structuredClone(current.spec), ...desired.service.spec } }),
      ),
    );
    const disruptionBudget = await this.#ensure(
      runtime,
      this.#caches.disruptionBudgets.get(name, namespace),
      specHashed(asClientDisruptionBudget(desired.disruptionBudget), SPEC_HASH_ANNOTATION),
    );
    return {
      problems: [deployment, service, disruptionBudget].flatMap((result) => (result.outcome === 'refused' ? [result.message] : [])),
      // The rollout of the Deployment as cached, once it is there and ours (a changed template rolls it).
      rollout:
        cachedDeployment === undefined || deployment.outcome === 'refused'
          ? undefined
          : rolloutOf(cachedDeployment, desired.deployment.spec.replicas, deployment.outcome === 'unchanged'),
      recheckAfterMs: tls.recheckAfterMs,
    };
  }

  /**
   * Keeps `<runtime>-runtimed-tls`: created with a fresh certificate when missing, reissued when tlsSecretDecision
   * says so (renewal due, CA changed, broken contents), only its gateway CA rewritten when only that differs, left
   * alone otherwise, so that a resync never rewrites it.
   */
  async #ensureTlsSecret(runtime: Runtime): Promise<{ refused?: string; recheckAfterMs: number | undefined }> {
    const namespace = runtime.metadata.namespace ?? '';
    const name = runtimedTlsSecretName(runtime.metadata.name ?? '');
    const cached = this.#caches.secrets.get(name, namespace);
    const now = this.#options.now();
    // Decided once from the cached Secret, which is the current object ensureOwned compares and replaces.
    const decision = cached === undefined ? undefined : this.#tlsDecision(runtime, cached, now);
    const desired: DesiredObject<V1Secret> = {
      apiVersion: 'v1',
      kind: 'Secret',
      namespace,
      name,
      upToDate: () => decision?.action === 'keep',
      immutable: (current) =>
        current.type === 'kubernetes.io/tls'
          ? undefined
          : `Secret ${namespace}/${name} has type ${current.type ?? ''}, not kubernetes.io/tls; delete it to have it recreated`,
      build: async (current) =>
        asClientSecret(
          decision?.action === 'update-gateway-ca' && current !== undefined
            ? this.#sameCertificate(runtime, current)
            : await this.#freshCertificate(runtime, now),
        ),
    };
    const result = await this.#ensure(runtime, cached, desired);
    const log = { runtime: `${namespace}/${runtime.metadata.name ?? ''}` };
    switch (result.outcome) {
      case 'refused':
        return { refused: result.message, recheckAfterMs: undefined };
      case 'unchanged':
        return { recheckAfterMs: decision?.action === 'keep' ? decision.recheckAfterMs : undefined };
      case 'created':
        this.#options.logger.debug(log, 'issued the runtimed certificate');
        break;
      case 'replaced':
        this.#options.logger.debug(
          { ...log, reason: decision?.action === 'keep' ? undefined : decision?.reason },
          decision?.action === 'update-gateway-ca'
            ? 'rewrote the gateway CA of the runtimed TLS Secret'
            : 'reissued the runtimed certificate',
        );
        break;
      case 'exists':
      case 'fenced':
        break;
    }
    // Its watch event brings the written Secret back, and the decision sets the next recheck.
    return { recheckAfterMs: undefined };
  }

  #tlsDecision(runtime: Runtime, secret: ReadonlyDeep<V1Secret>, now: number): TlsSecretDecision {
    return tlsSecretDecision({
      data: decodeSecretData(secret.data),
      caPem: this.#options.internalCa.certPem,
      gatewayCaPem: this.#options.workload.gateway?.caPem,
      namespace: runtime.metadata.namespace ?? '',
      runtime: runtime.metadata.name ?? '',
      now,
    });
  }

  /** The Secret with its certificate and key as they are (the decision checked they are sound), the CAs as configured. */
  #sameCertificate(runtime: Runtime, current: ReadonlyDeep<V1Secret>): Secret {
    const data = decodeSecretData(current.data) ?? {};
    return runtimedTlsSecret(runtime, {
      caPem: this.#options.internalCa.certPem,
      certPem: data[TLS_SECRET_KEYS.cert] ?? '',
      keyPem: data[TLS_SECRET_KEYS.key] ?? '',
      gatewayCaPem: this.#options.workload.gateway?.caPem,
    });
  }

  async #freshCertificate(runtime: Runtime, now: number): Promise<Secret> {
    const ca = this.#options.internalCa;
    const issued = await issueWorkloadCertificate(ca, {
      namespace: runtime.metadata.namespace ?? '',
      runtime: runtime.metadata.name ?? '',
      now: new Date(now),
    });
    return runtimedTlsSecret(runtime, {
      caPem: ca.certPem,
      certPem: issued.certPem,
      keyPem: issued.keyPem,
      gatewayCaPem: this.#options.workload.gateway?.caPem,
    });
  }

  #ensure<T extends KubernetesObject>(
    runtime: Runtime,
    cached: ReadonlyDeep<T> | undefined,
    desired: DesiredObject<T>,
  ): Promise<EnsureOwnedResult> {
    const { objects: client, logger } = this.#options;
    return ensureOwned({ client, logger, owner: { kind: RUNTIME_KIND, uid: runtime.metadata.uid ?? '' }, cached, desired });
  }
}

/** Until the autoscaler has decided (a new leader's first passes), the status keeps what the last decision said. */
function previousPool(runtime: Runtime): PoolStatus | undefined {
  const desiredReplicas = runtime.status?.desiredReplicas;
  const condition = runtime.status?.conditions?.find((c) => c.type === CONDITION_TYPES.scaling);
  if (desiredReplicas === undefined || condition === undefined) return undefined;
  return {
    desiredReplicas,
    condition: { status: condition.status === 'True' ? 'True' : 'False', reason: condition.reason, message: condition.message },
  };
}

function rolloutOf(deployment: ReadonlyDeep<V1Deployment>, desiredReplicas: number, current: boolean): RolloutView {
  return {
    current,
    generation: deployment.metadata?.generation ?? 0,
    observedGeneration: deployment.status?.observedGeneration ?? 0,
    replicas: deployment.status?.replicas ?? 0,
    updatedReplicas: deployment.status?.updatedReplicas ?? 0,
    availableReplicas: deployment.status?.availableReplicas ?? 0,
    desiredReplicas,
  };
}

/**
 * The workload lib builds plain data with string timestamps (it may not import
 * client-node); the typed APIs serialise plain data field by field, which is all this
 * conversion claims.
 */
function asClientDeployment(object: Deployment): V1Deployment & IdentifiedObject {
  return object as unknown as V1Deployment & IdentifiedObject;
}

function asClientService(object: Service): V1Service & IdentifiedObject {
  return object as unknown as V1Service & IdentifiedObject;
}

function asClientDisruptionBudget(object: PodDisruptionBudget): V1PodDisruptionBudget & IdentifiedObject {
  return object as unknown as V1PodDisruptionBudget & IdentifiedObject;
}

function asClientSecret(object: Secret): V1Secret {
  return object as unknown as V1Secret;
}
