import { request } from 'node:https';

export interface ProbeResult {
  status: number;
  body: string;
}

/**
 * One GET against the API server with its own CA; used only while the control plane is
 * coming up, before there is any point in building a client.
 */
export async function httpsGet(url: string, options: { caPem: string; token?: string; timeoutMs: number }): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ca: options.caPem,
        headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` },
        timeout: options.timeoutMs,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
