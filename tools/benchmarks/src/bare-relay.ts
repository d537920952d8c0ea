/**
 * A bare relay process for gateway-bench's two-hop floor: the invoke path's process structure
 * and protocols, with none of its checks, logs or metrics. Started by the bench as a child
 * process; prints `listening <port>` once it serves.
 *   https: HTTPS keep-alive server -> FunctionRuntime.InvokeFunction over TLS (as the gateway calls runtimed)
 *   grpc:  FunctionRuntime server over TLS -> the Runtime Server's InvokeFunction, plaintext (as runtimed calls it)
 * Its configuration comes as JSON in KRT_BENCH_RELAY (certificates in PEM, the upstream, and
 * for `grpc` the Runtime Server registration of each Run UID).
 */
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { durationFromMillis, runtimeServerV1, runtimedV1 } from '@kruntimes/proto';
import { ServerCredentials } from '@grpc/grpc-js';
import { ChannelCredentials, createChannel, createClient, createServer } from 'nice-grpc';
import { relayHandler } from './relay-handler.ts';

interface RelayConfig {
  mode: 'https' | 'grpc';
  certPem: string;
  keyPem: string;
  /** https: the grpc relay's CA; grpc: unused. */
  upstreamCaPem?: string;
  upstream: string;
  /** grpc: Run UID -> the Runtime Server's registration ID. */
  registrations?: Record<string, string>;
}

const config = JSON.parse(process.env.KRT_BENCH_RELAY ?? '{}') as RelayConfig;

if (config.mode === 'https') {
  const channel = createChannel(config.upstream, ChannelCredentials.createSsl(Buffer.from(config.upstreamCaPem ?? '')), {
    'grpc.ssl_target_name_override': 'localhost',
    'grpc.default_authority': 'localhost',
  });
  const upstream = createClient(runtimedV1.FunctionRuntimeDefinition, channel);
  const server = createHttpsServer(
    { cert: config.certPem, key: config.keyPem },
    relayHandler((request) =>
      upstream.invokeFunction({
        namespace: '',
        runtime: '',
        runUid: request.target,
        invocationId: request.invocationId,
        payload: request.payload,
        timeout: durationFromMillis(10_000),
        peerHop: undefined,
      }),
    ),
  );
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${String((server.address() as AddressInfo).port)}\n`);
  });
} else {
  const channel = createChannel(config.upstream);
  const upstream = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
  const registrations = config.registrations ?? {};
  const server = createServer();
  server.add(runtimedV1.FunctionRuntimeDefinition, {
    async invokeFunction(request) {
      const answer = await upstream.invokeFunction({
        registrationId: registrations[request.runUid] ?? '',
        invocationId: request.invocationId,
        payload: request.payload,
        timeout: request.timeout,
      });
      return {
        invocationId: answer.invocationId,
        result: answer.result,
        outputs: answer.outputs,
        stdout: answer.stdout,
        stderr: answer.stderr,
        attempt: 1,
      };
    },
  });
  const port = await server.listen(
    '127.0.0.1:0',
    ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(config.certPem), private_key: Buffer.from(config.keyPem) }]),
  );
  process.stdout.write(`listening ${String(port)}\n`);
}
