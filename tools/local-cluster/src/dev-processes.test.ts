import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { listeningSocketsOf, recordedSockets, stillListening } from './dev-processes.ts';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      resolve(server);
    });
  });
}

const close = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.close(() => {
      resolve();
    });
  });

describe('recordedSockets', () => {
  it.each([
    ['no sockets', {}, []],
    ['without inodes (a state written before they were recorded)', { listening: ['127.0.0.1:80'] }, [{ host: '127.0.0.1', port: 80 }]],
    [
      'with inodes, in the same order',
      { listening: ['127.0.0.1:80', '[00000000000000000000000001000000]:81'], listeningInodes: ['11', '12'] },
      [
        { host: '127.0.0.1', port: 80, inode: '11' },
        { host: '[00000000000000000000000001000000]', port: 81, inode: '12' },
      ],
    ],
    ['an empty inode: the port only', { listening: ['127.0.0.1:80'], listeningInodes: [''] }, [{ host: '127.0.0.1', port: 80 }]],
    [
      'an entry that is no socket is left out',
      { listening: ['nowhere', '127.0.0.1:80'], listeningInodes: ['1', '2'] },
      [{ host: '127.0.0.1', port: 80, inode: '2' }],
    ],
  ])('%s', (_name, state, expected) => {
    expect(recordedSockets(state)).toEqual(expected);
  });
});

describe('stillListening', () => {
  it("knows the socket by its inode: a port taken again by another socket is not the environment's", async () => {
    const first = await listen(0);
    const [socket] = (await listeningSocketsOf([process.pid])).filter((s) => s.port === (first.address() as { port: number }).port);
    if (socket?.inode === undefined) throw new Error('the test server socket was not found in /proc');
    expect(await stillListening([socket])).toEqual([socket]);
    await close(first);
    expect(await stillListening([socket])).toEqual([]);
    // The same port, another socket (what a parallel process on a busy host may do at once).
    const second = await listen(socket.port);
    try {
      expect(await stillListening([socket])).toEqual([]);
      const { inode: _inode, ...portOnly } = socket;
      expect(await stillListening([portOnly])).toEqual([portOnly]);
    } finally {
      await close(second);
    }
  });
});
