import { USAGE, parseCommandLine } from './args.ts';
import { artifactsCommand } from './commands/artifacts.ts';
import { cancelCommand } from './commands/cancel.ts';
import type { CliIo, CommandContext } from './commands/context.ts';
import { deleteCommand } from './commands/delete.ts';
import { devCommand } from './commands/dev.ts';
import { getCommand } from './commands/get.ts';
import { invokeCommand } from './commands/invoke.ts';
import { logsCommand } from './commands/logs.ts';
import { respondCommand } from './commands/respond.ts';
import { retryCommand } from './commands/retry.ts';
import { runLocalCommand } from './commands/run-local.ts';
import { runClusterCommand } from './commands/run.ts';
import { scheduleCommand } from './commands/schedule.ts';
import { syncCommand } from './commands/sync.ts';
import { waitCommand } from './commands/wait.ts';
import { CliError, EXIT, describeError, exitCodeFor } from './exit-codes.ts';
import type { ExitCode } from './exit-codes.ts';
import { RunApi, loadKubeConfig, resolveNamespace } from './kube.ts';
import { versionLine } from './version.ts';

/** Runs one krt command line; returns the exit code (errors are reported on stderr). */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  try {
    // Own argument parsing in tools/local-cluster (dev.ts), which it runs as a child process.
    if (argv[0] === 'dev') return await devCommand(argv.slice(1));
    const { command, global } = parseCommandLine(argv);
    if (command.name === 'help') {
      io.stdout.write(USAGE);
      return EXIT.ok;
    }
    if (command.name === 'version') {
      io.stdout.write(versionLine());
      return EXIT.ok;
    }
    // No cluster: the kubeconfig is read only to lock a ConfigMap source.
    if (command.name === 'run' && command.local) return await runLocalCommand(command, global, io);
    const kubeConfig = loadKubeConfig(global.kubeconfig);
    const ctx: CommandContext = {
      kubeConfig,
      runs: new RunApi(kubeConfig, resolveNamespace(kubeConfig, global.namespace)),
      io,
      now: Date.now,
    };
    switch (command.name) {
      case 'get':
        return await getCommand(ctx, command);
      case 'wait':
        return await waitCommand(ctx, command);
      case 'invoke':
        return await invokeCommand(ctx, command);
      case 'retry':
        return await retryCommand(ctx, command);
      case 'cancel':
        return await cancelCommand(ctx, command);
      case 'delete':
        return await deleteCommand(ctx, command);
      case 'respond':
        return await respondCommand(ctx, command);
      case 'schedule':
        return await scheduleCommand(ctx, command);
      case 'artifacts':
        return await artifactsCommand(ctx, command);
      case 'sync':
        return await syncCommand(ctx, command);
      case 'logs':
        return await logsCommand(ctx, command);
      case 'run':
        return await runClusterCommand(ctx, command);
    }
  } catch (error) {
    io.stderr.write(`error: ${describeError(error)}\n`);
    if (error instanceof CliError && error.exitCode === EXIT.usage && argv.length === 0) io.stderr.write(`\n${USAGE}`);
    return exitCodeFor(error);
  }
}
