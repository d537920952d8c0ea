// runtime-gateway: wiring only (logic in @kruntimes/gateway-core). Flags, their defaults and
// checks: parseGatewayFlags and gatewayConfig in libs/gateway-core/src/config.ts; what starts
// and stops, and tracing: startGatewayProcess in libs/gateway-core/src/process.ts.
import { UsageError, gatewayLogDestination, parseGatewayFlags, startGatewayProcess } from '@kruntimes/gateway-core';
import type { GatewayFlags } from '@kruntimes/gateway-core';
import { stopOnSignals } from '@kruntimes/host';
import { pino } from 'pino';

/** The flags, or a usage error on stderr and exit 2 (no stack trace: the user mistyped a flag). */
function flagsOrUsage(): GatewayFlags {
  try {
    return parseGatewayFlags(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`runtime-gateway: ${error.message}\n`);
    process.exit(2);
  }
}

const flags = flagsOrUsage();
const log = gatewayLogDestination();
const logger = pino(
  {
    name: 'runtime-gateway',
    level: flags['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
    // The gateway never logs headers; this is the belt to that rule's braces.
    redact: ['authorization', '*.authorization', 'headers', '*.headers', 'token', '*.token'],
  },
  log.destination,
);

const gateway = await startGatewayProcess(flags, logger);
if (gateway === undefined) process.exitCode = 1;
else void stopOnSignals(logger, (signal) => gateway.stop(signal)).then(log.end);
