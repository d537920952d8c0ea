import { isSea } from 'node:sea';
import packageJson from '../package.json' with { type: 'json' };

/** krt's version: the package's, built into the bundle (one executable file, or the npm package). */
export const KRT_VERSION: string = packageJson.version;

/** `krt version`: the version and what runs it, one line. */
export function versionLine(): string {
  const build = isSea() ? 'single executable' : `Node.js ${process.version}`;
  return `krt ${KRT_VERSION} (${build}, ${process.platform}-${process.arch})\n`;
}
