import type { KubeConfig } from '@kubernetes/client-node';
import type { Manager, ManagerLogger } from './manager.ts';
import { loadKubeConfig } from './pooled-kube-config.ts';
import { serviceLogLevel } from './service-flags.ts';
import type { ServiceConfig, ServiceFlagValues } from './service-flags.ts';

export interface ServiceMain<Flags extends ServiceFlagValues, Config extends ServiceConfig, Logger extends ManagerLogger> {
  /** The service's name in its fatal log line. */
  name: string;
  /** Throws on an unknown flag: before a logger exists, so parseArgs's message ends the process. */
  parseFlags: (argv: readonly string[]) => Flags;
  /** Checked before leader election: a configuration error is reported at once, not on taking the Lease. */
  config: (flags: Flags, env: NodeJS.ProcessEnv) => Config | Promise<Config>;
  logger: (level: string) => Logger & { fatal(object: object, message: string): void };
  process: (options: { config: Config; kubeConfig: KubeConfig; logger: Logger }) => Manager;
}

/**
 * The main of a leader-elected service: its flags, its logger at serviceLogLevel, its checked
 * config, its process run until SIGTERM or SIGINT; exits with the Manager's code, or 1 after
 * logging why it could not start.
 */
export async function runServiceMain<Flags extends ServiceFlagValues, Config extends ServiceConfig, Logger extends ManagerLogger>(
  service: ServiceMain<Flags, Config, Logger>,
): Promise<void> {
  const flags = service.parseFlags(process.argv.slice(2));
  const logger = service.logger(serviceLogLevel(flags, process.env));
  try {
    const config = await service.config(flags, process.env);
    const kubeConfig = loadKubeConfig(config.kubeconfig);
    process.exit(await service.process({ config, kubeConfig, logger }).runUntilSignalled());
  } catch (error) {
    logger.fatal({ err: error }, `${service.name} failed`);
    process.exitCode = 1;
  }
}
