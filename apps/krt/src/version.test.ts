import { readFileSync } from 'node:fs';
import { KRT_VERSION, versionLine } from './version.ts';

test("krt's version is its package's, and the line names what runs it", () => {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  expect(KRT_VERSION).toBe(version);
  expect(versionLine()).toBe(`krt ${version} (Node.js ${process.version}, ${process.platform}-${process.arch})\n`);
});
