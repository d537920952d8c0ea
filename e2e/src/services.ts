// The control-plane services of a system, in-process, each as its own least-privilege ServiceAccount.
import { join } from 'node:path';
import type { ResourceRequirements } from '@kruntimes/api';
import { CONTROLLER_MANAGER_RULES, ControllerManager } from '@kruntimes/controller-manager-core';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { STALE_RECOVERY_RULES, StaleRecovery } from '@kruntimes/stale-recovery-core';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import type { RunIsolation } from '@kruntimes/runtime-workload';
import { testWorkloadConfig } from '@kruntimes/testing';
import type { NamespaceAccess } from '@kruntimes/testing';
import { fileLogger } from './logs.ts';
import type { RecordingLogger } from './logs.ts';

/** A component the system started and stops. */
export interface Stoppable {
  stop(): Promise<void>;
}

export interface Services {
  internalCa: CertificateAuthority;
  manager: ControllerManager;
  scheduler: Scheduler;
  staleRecovery: StaleRecovery | undefined;
  /** By component name; `.errors` holds what each logged at error level. */
  loggers: Record<string, RecordingLogger>;
}

export interface ServicesOptions {
  namespace: string;
  access: NamespaceAccess;
  /** Logs go to `<logDir>/<component>.log`. */
  logDir: string;
  staleRecovery: boolean;
  /** Each started service is pushed here at once, so that a later failure still stops it. */
  started: Stoppable[];
  /** The Runtime Pods' OTLP endpoint (the controller-manager's --runtime-otlp-endpoint). */
  otlpEndpoint?: string;
  /** The scheduler's --source-wait-seconds, in ms (default: the scheduler's). */
  sourceWaitMs?: number;
  /** How the Runtime Pods keep Runs apart (default: testWorkloadConfig's). */
  runIsolation?: RunIsolation;
  /** runtimed's container resources (the controller-manager's --runtimed-* flags). */
  runtimedResources?: ResourceRequirements;
}

/** The controller-manager keeps each Runtime's runtimed TLS Secret from this namespace's own internal CA. */
async function startControllerManager(
  options: ServicesOptions,
  logger: RecordingLogger,
): Promise<[ControllerManager, CertificateAuthority]> {
  const internalCa = await createCertificateAuthority({ commonName: `kruntimes internal CA ${options.namespace}` });
  const manager = new ControllerManager({
    kubeConfig: await options.access.serviceAccountKubeConfig('controller-manager', CONTROLLER_MANAGER_RULES),
    namespace: options.namespace,
    logger,
    internalCa,
    workload: testWorkloadConfig({
      terminationGracePeriodSeconds: 3,
      ...(options.otlpEndpoint === undefined ? {} : { otlpEndpoint: options.otlpEndpoint }),
      ...(options.runtimedResources === undefined ? {} : { runtimedResources: options.runtimedResources }),
      ...(options.runIsolation === undefined ? {} : { runIsolation: options.runIsolation }),
    }),
  });
  await manager.start();
  options.started.push(manager);
  return [manager, internalCa];
}

/** A scheduler like the system's first, started in place of one that was stopped (a new leader). */
export async function restartedScheduler(
  access: NamespaceAccess,
  namespace: string,
  loggers: Record<string, RecordingLogger>,
): Promise<Scheduler> {
  const logger = loggers.scheduler;
  if (logger === undefined) throw new Error('no scheduler logger');
  const scheduler = new Scheduler({ kubeConfig: await access.existingServiceAccountKubeConfig('scheduler'), namespace, logger });
  await scheduler.start();
  return scheduler;
}

/** A stale-recovery like the system's first, started in place of one that was stopped. */
export async function restartedStaleRecovery(
  access: NamespaceAccess,
  namespace: string,
  loggers: Record<string, RecordingLogger>,
): Promise<StaleRecovery> {
  const logger = loggers['stale-recovery'];
  if (logger === undefined) throw new Error('no stale-recovery logger');
  const recovery = new StaleRecovery({
    kubeConfig: await access.existingServiceAccountKubeConfig('stale-recovery'),
    namespace,
    logger,
  });
  await recovery.start();
  return recovery;
}

/** controller-manager, scheduler and (when asked) stale-recovery, started in that order. */
export async function startServices(options: ServicesOptions): Promise<Services> {
  const { namespace, access, started } = options;
  const logger = (name: string): RecordingLogger => fileLogger(join(options.logDir, `${name}.log`), name);
  const managerLogger = logger('controller-manager');
  const schedulerLogger = logger('scheduler');
  const loggers: Record<string, RecordingLogger> = { 'controller-manager': managerLogger, scheduler: schedulerLogger };
  const [manager, internalCa] = await startControllerManager(options, managerLogger);
  const scheduler = new Scheduler({
    kubeConfig: await access.serviceAccountKubeConfig('scheduler', SCHEDULER_RULES),
    namespace,
    logger: schedulerLogger,
    ...(options.sourceWaitMs === undefined ? {} : { sourceWaitMs: options.sourceWaitMs }),
  });
  await scheduler.start();
  started.push(scheduler);
  let staleRecovery: StaleRecovery | undefined;
  if (options.staleRecovery) {
    const recoveryLogger = logger('stale-recovery');
    loggers['stale-recovery'] = recoveryLogger;
    staleRecovery = new StaleRecovery({
      kubeConfig: await access.serviceAccountKubeConfig('stale-recovery', STALE_RECOVERY_RULES),
      namespace,
      logger: recoveryLogger,
    });
    await staleRecovery.start();
    started.push(staleRecovery);
  }
  return { internalCa, manager, scheduler, staleRecovery, loggers };
}
