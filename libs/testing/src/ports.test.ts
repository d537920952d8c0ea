import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { EPHEMERAL_RANGE_FILE, LOOPBACK, freePorts, listenerPortRanges, parsePortRange, portAt, portFree } from './ports.ts';

test.each([
  ['32768\t60999\n', { first: 32768, last: 60999 }],
  ['1024 65535', { first: 1024, last: 65535 }],
  ['  49152   65535  \n', { first: 49152, last: 65535 }],
])('parses the ephemeral range %j', (text, range) => {
  expect(parsePortRange(text)).toEqual(range);
});

test.each(['', '32768', '60999 32768', '0 100', '1024 70000', 'a b'])('refuses %j as a range', (text) => {
  expect(() => parsePortRange(text)).toThrow(/not a port range/);
});

test.each([
  [
    'the Linux default',
    { first: 32768, last: 60999 },
    [
      { first: 1024, last: 32767 },
      { first: 61000, last: 65535 },
    ],
  ],
  ["IANA's, to the top", { first: 49152, last: 65535 }, [{ first: 1024, last: 49151 }]],
  ['from the bottom', { first: 1024, last: 40000 }, [{ first: 40001, last: 65535 }]],
  ['starting among the privileged ports', { first: 500, last: 30000 }, [{ first: 30001, last: 65535 }]],
  ['every unprivileged port', { first: 1024, last: 65535 }, []],
])('the listener ranges around %s', (_name, ephemeral, ranges) => {
  expect(listenerPortRanges(ephemeral)).toEqual(ranges);
});

test.each([
  [0, 1024],
  [9, 1033],
  [10, 2000],
  [14, 2004],
])('port %d of two ranges is %d', (index, port) => {
  expect(
    portAt(
      [
        { first: 1024, last: 1033 },
        { first: 2000, last: 2004 },
      ],
      index,
    ),
  ).toBe(port);
});

test('an index past the ranges is an error', () => {
  expect(() => portAt([{ first: 1024, last: 1033 }], 10)).toThrow(RangeError);
});

test("free ports are distinct, outside this machine's ephemeral range, bindable, and never handed out twice", async () => {
  const ephemeral = parsePortRange(readFileSync(EPHEMERAL_RANGE_FILE, 'utf8'));
  const first = await freePorts(20);
  const second = await freePorts(20);
  const all = [...first, ...second];
  expect(new Set(all).size).toBe(40);
  for (const port of all) {
    expect(port >= 1024 && (port < ephemeral.first || port > ephemeral.last)).toBe(true);
  }
  expect(await Promise.all(all.map(portFree))).toEqual(all.map(() => true));
});

test('a port that something listens on is not free', async () => {
  const [port = 0] = await freePorts(1);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, LOOPBACK, resolve));
  try {
    expect(await portFree(port)).toBe(false);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  expect(await portFree(port)).toBe(true);
});
