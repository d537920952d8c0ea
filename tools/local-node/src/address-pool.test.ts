import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AddressPool } from './address-pool.ts';
import { AddressPoolExhaustedError } from './errors.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'address-pool-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

test('allocates round-robin, so a released address is not handed out next', () => {
  const pool = new AddressPool(dir, { start: 2 });
  const a = pool.allocate();
  pool.release(a);
  const b = pool.allocate();
  expect([a, b]).toEqual(['127.0.0.2', '127.0.0.3']);
});

test('wraps around from .254 to .2 and skips held addresses', () => {
  const pool = new AddressPool(dir, { start: 253 });
  expect([pool.allocate(), pool.allocate(), pool.allocate()]).toEqual(['127.0.0.253', '127.0.0.254', '127.0.0.2']);
});

test('two pools on one host never share an address', () => {
  const first = new AddressPool(dir, { start: 10 });
  const second = new AddressPool(dir, { start: 10 });
  expect(first.allocate()).toBe('127.0.0.10');
  expect(second.allocate()).toBe('127.0.0.11');
});

test('takes over an address whose owner process is dead', () => {
  // PID 2^22 + 1 is above Linux's pid_max limit, so no such process exists.
  writeFileSync(join(dir, '127.0.0.20'), String(4_194_305));
  const pool = new AddressPool(dir, { start: 20 });
  expect(pool.allocate()).toBe('127.0.0.20');
});

test('reports exhaustion with a typed error', () => {
  const pool = new AddressPool(dir, { start: 2 });
  for (let i = 2; i <= 254; i++) pool.allocate();
  expect(() => pool.allocate()).toThrow(AddressPoolExhaustedError);
  pool.releaseAll();
  expect(pool.held.size).toBe(0);
});
