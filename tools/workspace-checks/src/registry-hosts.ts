// The project names no package registry's or package mirror's host: each machine's own
// configuration says where packages come from (npm's, apt's, Go's), so that the tools work
// behind any mirror or proxy. These are the words that make a host name one of them,
// generic on purpose: no host is named here, and a new mirror of a known kind is caught.

/** A label anywhere in the host names a packaging ecosystem or a distribution's archive. */
const ecosystemLabels = new Set([
  'alpinelinux',
  'archlinux',
  'centos',
  'cpan',
  'crates',
  'debian',
  'fedoraproject',
  'maven',
  'nodesource',
  'npmjs',
  'nuget',
  'packagist',
  'pypi',
  'pythonhosted',
  'rockylinux',
  'rubygems',
  'ubuntu',
  'yarnpkg',
]);

/** A first label that names the service (with at least two labels after it): `<this>.<site>.<tld>`. */
const serviceFirstLabels = new Set([
  'apt',
  'archive',
  'deb',
  'dl',
  'dl-cdn',
  'download',
  'downloads',
  'ftp',
  'mirror',
  'mirrors',
  'packages',
  'pkg',
  'pkgs',
  'proxy',
  'rpm',
  'snapshot',
  'sum',
  'yum',
]);

/** Names that are never a real host (RFC 2606, RFC 6761): examples in docs and tests. */
function isReserved(labels: string[]): boolean {
  const last = labels.at(-1);
  return ['example', 'test', 'invalid', 'localhost', 'local', 'internal'].includes(last ?? '') || labels.at(-2) === 'example';
}

// A generic top-level domain or a country's two letters: `debian.sources` is a file name.
const topLevel = /^(?:com|org|net|io|dev|app|cloud|edu|gov|info|[a-z]{2})$/;
const hostPattern = /(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}(?![\w-]|\.\w)/gi;

export function isRegistryHost(host: string): boolean {
  const labels = host.toLowerCase().split('.');
  if (labels.length < 2 || !topLevel.test(labels.at(-1) ?? '') || isReserved(labels)) return false;
  if (labels.slice(0, -1).some((label) => ecosystemLabels.has(label))) return true;
  return labels.length >= 3 && serviceFirstLabels.has(labels[0] ?? '');
}

/** The registry hosts a text names, with their 1-based line numbers. */
export function registryHostsIn(text: string): { line: number; host: string }[] {
  const found: { line: number; host: string }[] = [];
  text.split('\n').forEach((content, index) => {
    for (const [host] of content.matchAll(hostPattern)) {
      if (isRegistryHost(host)) found.push({ line: index + 1, host });
    }
  });
  return found;
}
