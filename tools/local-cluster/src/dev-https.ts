import { request } from 'node:https';

/** The HTTP status of a GET, or undefined when nothing answers (yet). */
export async function httpsStatus(url: string, caPem: string, timeoutMs = 2_000): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'GET', ca: caPem, timeout: timeoutMs }, (response) => {
      response.resume();
      resolve(response.statusCode);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      resolve(undefined);
    });
    req.end();
  });
}
