import { KruntimesError } from '@kruntimes/errors';
import { ResultManifest, declarationProblems, parseArtifactClaim } from './artifact-claims.ts';
import type { DeclaredOutput } from './artifact-claims.ts';

const DECLARED: DeclaredOutput[] = [
  { id: 'report.csv', maxBytes: 1000, mediaType: 'text/csv', optional: false },
  { id: 'model', maxBytes: 0, mediaType: 'application/octet-stream', optional: true },
];
const SHA = 'a'.repeat(64);

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof KruntimesError) return error.code;
    throw error;
  }
  return 'ok';
}

describe('parseArtifactClaim', () => {
  it.each<[string, unknown, string]>([
    ['a declared artifact without a media type', { artifactId: 'report.csv', size: 10, sha256: SHA }, 'ok'],
    ['the declared media type', { artifactId: 'report.csv', size: 1000, sha256: SHA, mediaType: 'text/csv' }, 'ok'],
    ['an empty artifact within maxBytes 0', { artifactId: 'model', size: 0, sha256: SHA }, 'ok'],
    ['not an object', [1], 'InvalidRequest'],
    ['null', null, 'InvalidRequest'],
    ['an unknown field', { artifactId: 'report.csv', size: 1, sha256: SHA, url: 'x' }, 'InvalidRequest'],
    ['no artifact ID', { size: 1, sha256: SHA }, 'InvalidRequest'],
    ['an invalid artifact ID', { artifactId: '../x', size: 1, sha256: SHA }, 'InvalidRequest'],
    ['an undeclared artifact', { artifactId: 'other', size: 1, sha256: SHA }, 'ArtifactNotDeclared'],
    ['a negative size', { artifactId: 'report.csv', size: -1, sha256: SHA }, 'InvalidRequest'],
    ['a fractional size', { artifactId: 'report.csv', size: 1.5, sha256: SHA }, 'InvalidRequest'],
    ['a size as a string', { artifactId: 'report.csv', size: '1', sha256: SHA }, 'InvalidRequest'],
    ['over maxBytes', { artifactId: 'report.csv', size: 1001, sha256: SHA }, 'ArtifactTooLarge'],
    ['over maxBytes 0', { artifactId: 'model', size: 1, sha256: SHA }, 'ArtifactTooLarge'],
    ['an upper-case digest', { artifactId: 'report.csv', size: 1, sha256: SHA.toUpperCase() }, 'InvalidRequest'],
    ['a short digest', { artifactId: 'report.csv', size: 1, sha256: 'abc' }, 'InvalidRequest'],
    ['a prefixed digest', { artifactId: 'report.csv', size: 1, sha256: `sha256:${SHA}` }, 'InvalidRequest'],
    ['another media type', { artifactId: 'report.csv', size: 1, sha256: SHA, mediaType: 'text/plain' }, 'ArtifactNotDeclared'],
    ['a media type that is not a string', { artifactId: 'report.csv', size: 1, sha256: SHA, mediaType: 3 }, 'InvalidRequest'],
  ])('%s: %s', (_name, body, expected) => {
    expect(codeOf(() => parseArtifactClaim(body, DECLARED))).toBe(expected);
  });

  it('fills in the declared media type', () => {
    expect(parseArtifactClaim({ artifactId: 'report.csv', size: 3, sha256: SHA }, DECLARED)).toEqual({
      artifactId: 'report.csv',
      size: 3,
      sha256: SHA,
      mediaType: 'text/csv',
    });
  });
});

describe('declarationProblems', () => {
  it.each<[string, DeclaredOutput[], number]>([
    ['a valid declaration', DECLARED, 0],
    ['nothing declared', [], 1],
    ['a duplicate', [DECLARED[0]!, DECLARED[0]!], 1],
    ['an invalid ID', [{ id: 'A B', maxBytes: 1, mediaType: 'text/csv', optional: false }], 1],
    ['a negative maxBytes', [{ id: 'a', maxBytes: -1, mediaType: 'text/csv', optional: false }], 1],
    ['an empty media type', [{ id: 'a', maxBytes: 1, mediaType: '', optional: false }], 1],
    ['too many', Array.from({ length: 17 }, (_, i) => ({ id: `a${String(i)}`, maxBytes: 1, mediaType: 'text/csv', optional: false })), 1],
  ])('%s', (_name, declared, count) => {
    expect(declarationProblems(declared)).toHaveLength(count);
  });
});

describe('ResultManifest', () => {
  const claim = (artifactId: string, size: number) => ({ artifactId, size, sha256: SHA, mediaType: 'text/csv' });

  it.each<[string, [string, number][], [string, number][]]>([
    ['empty', [], []],
    ['one entry', [['a', 1]], [['a', 1]]],
    [
      'recording order',
      [
        ['a', 1],
        ['b', 2],
      ],
      [
        ['a', 1],
        ['b', 2],
      ],
    ],
    [
      'the last record of an ID wins and comes last',
      [
        ['a', 1],
        ['b', 2],
        ['a', 3],
      ],
      [
        ['b', 2],
        ['a', 3],
      ],
    ],
  ])('%s', (_name, records, expected) => {
    const manifest = new ResultManifest(2);
    for (const [id, size] of records) manifest.record(claim(id, size));
    expect(manifest.entries().map((e) => [e.artifactId, e.size])).toEqual(expected);
  });

  it('refuses a new ID over its limit, but still replaces a recorded one', () => {
    const manifest = new ResultManifest(1);
    manifest.record(claim('a', 1));
    expect(
      codeOf(() => {
        manifest.record(claim('b', 1));
      }),
    ).toBe('InvalidRequest');
    manifest.record(claim('a', 2));
    expect(manifest.entries()).toEqual([claim('a', 2)]);
  });
});
