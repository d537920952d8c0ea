import { X509Certificate } from 'node:crypto';
import { KruntimesError } from '@kruntimes/errors';

/** What runtimed accepts as KRT_GATEWAY_HOST (libs/runtimed-core config): `host` or `host:port`. */
const HOST_PORT = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(?::(\d{1,5}))?$/;

/**
 * `--gateway-host`: checked at start, because runtimed would refuse it in every Runtime Pod
 * (a crash loop far from the cause). Returns it unchanged.
 */
export function validateGatewayHost(host: string, source = '--gateway-host'): string {
  const match = HOST_PORT.exec(host);
  const port = match?.[2] === undefined ? undefined : Number(match[2]);
  if (match === null || (port !== undefined && (port < 1 || port > 65_535))) {
    throw new KruntimesError(
      'InvalidRequest',
      `${source} ${JSON.stringify(host)} is not HOST or HOST:PORT (lower-case DNS name or IPv4 address, port 1-65535)`,
      { terminal: true },
    );
  }
  return host;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

/**
 * `--gateway-ca-file`'s content: one or more PEM certificates and nothing else PEM-encoded,
 * since it is copied into every Runtime's Secret and published to clients as caBundle (a
 * private key pasted into the file must never go there). Returns it unchanged.
 */
export function validateGatewayCaPem(pem: string, source = '--gateway-ca-file'): string {
  const blocks = [...pem.matchAll(PEM_BLOCK)];
  const problem = (why: string): KruntimesError => new KruntimesError('InvalidRequest', `${source}: ${why}`, { terminal: true });
  if (blocks.length === 0) throw problem('no PEM certificate in it');
  for (const [index, block] of blocks.entries()) {
    if (block[1] !== 'CERTIFICATE')
      throw problem(`PEM block ${index + 1} is a ${block[1] ?? ''}, not a CERTIFICATE (only certificates may be published as caBundle)`);
    try {
      new X509Certificate(block[0]);
    } catch (error) {
      throw new KruntimesError('InvalidRequest', `${source}: PEM block ${index + 1} is not an X.509 certificate`, {
        terminal: true,
        cause: error,
      });
    }
  }
  return pem;
}
