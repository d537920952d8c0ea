import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { isRegistryHost, registryHostsIn } from './registry-hosts.js';

const workspaceRoot = join(import.meta.dirname, '..', '..', '..');
// Hosts are spelled in pieces here, so that this file names none of them.
const host = (...labels: string[]): string => labels.join('.');

describe('isRegistryHost', () => {
  it.each([
    host('deb', 'debian', 'org'),
    host('security', 'debian', 'org'),
    host('ftp', 'de', 'debian', 'org'),
    host('archive', 'ubuntu', 'com'),
    host('registry', 'npmjs', 'org'),
    host('registry', 'yarnpkg', 'com'),
    host('pypi', 'org'),
    host('files', 'pythonhosted', 'org'),
    host('proxy', 'golang', 'org'),
    host('sum', 'golang', 'org'),
    host('deb', 'nodesource', 'com'),
    host('packages', 'cloud', 'google', 'com'),
    host('dl-cdn', 'alpinelinux', 'org'),
    host('mirrors', 'kernel', 'org'),
    host('crates', 'io'),
  ])('%s is a package registry or mirror', (name) => {
    expect(isRegistryHost(name)).toBe(true);
  });

  it.each([
    host('github', 'com'),
    host('golang', 'org'),
    host('go', 'etcd', 'io'),
    host('registry', 'k8s', 'io'),
    host('rbac', 'authorization', 'k8s', 'io'),
    host('mirror', 'example'),
    host('deb', 'example', 'com'),
    host('proxy', 'internal'),
    'debian.sources',
    'deb.sh',
    'mirror.sh',
  ])('%s is not', (name) => {
    expect(isRegistryHost(name)).toBe(false);
  });

  it('finds hosts in URLs, sources lines and prose, with their lines', () => {
    const text = [
      `mirror=http://${host('deb', 'debian', 'org')}/debian`,
      `deb [signed-by=/k.gpg] https://${host('deb', 'nodesource', 'com')}/node_20.x nodistro main`,
      `RUN reaches ${host('deb', 'debian', 'org')} and the npm registry;`,
      'the file debian.sources and github.com/seaweedfs/seaweedfs',
    ].join('\n');
    expect(registryHostsIn(text)).toEqual([
      { line: 1, host: host('deb', 'debian', 'org') },
      { line: 2, host: host('deb', 'nodesource', 'com') },
      { line: 3, host: host('deb', 'debian', 'org') },
    ]);
  });
});

test("no tracked file names a package registry's or mirror's host", async () => {
  const { stdout } = await promisify(execFile)('git', ['ls-files', '-z'], { cwd: workspaceRoot, maxBuffer: 64 * 1024 * 1024 });
  const found: string[] = [];
  for (const file of stdout.split('\0').filter(Boolean)) {
    let content: Buffer;
    try {
      content = await readFile(join(workspaceRoot, file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // deleted, not yet committed
      throw error;
    }
    if (content.includes(0)) continue; // binary
    for (const { line, host: name } of registryHostsIn(content.toString('utf8'))) found.push(`${file}:${line}: ${name}`);
  }
  expect(found).toEqual([]);
});
