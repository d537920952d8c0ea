import { BOUNDS } from '@kruntimes/api';
import type { DeclaredArtifact } from '@kruntimes/api';
import { checkManifest, summarizeProblems } from './artifact-manifest.ts';
import type { ManifestEntryInput } from './artifact-manifest.ts';

const declared: DeclaredArtifact[] = [
  { id: 'report.csv', maxBytes: 1000, mediaType: 'text/csv' },
  { id: 'plot.png', maxBytes: 10, mediaType: 'image/png', optional: true },
];
const sha = 'b'.repeat(64);
const report: ManifestEntryInput = { artifactId: 'report.csv', sha256: sha, size: 12, mediaType: 'text/csv' };

describe('checkManifest', () => {
  it.each<[string, ManifestEntryInput[], [string, string][]]>([
    ['the required one, no optional one', [report], []],
    ['both', [report, { artifactId: 'plot.png', sha256: sha, size: 10, mediaType: 'image/png' }], []],
    ['an empty media type (the declared one)', [{ ...report, mediaType: '' }], []],
    ['a required one missing', [], [['ArtifactMissing', 'report.csv is declared (required) but not in the manifest']]],
    [
      'an undeclared one',
      [report, { ...report, artifactId: 'extra.txt' }],
      [['ArtifactInvalid', '"extra.txt" is in the manifest but not declared']],
    ],
    ['one twice', [report, report], [['ArtifactInvalid', 'report.csv is in the manifest twice']]],
    ['over its maxBytes', [{ ...report, size: 1001 }], [['ArtifactInvalid', '1001 bytes is over its maxBytes 1000']]],
    [
      'another media type',
      [{ ...report, mediaType: 'text/plain' }],
      [['ArtifactInvalid', 'media type text/plain, the declaration text/csv']],
    ],
    ['a bad digest', [{ ...report, sha256: 'XYZ' }], [['ArtifactInvalid', 'not 64 lowercase hex digits']]],
    ['a negative size', [{ ...report, size: -3 }], [['ArtifactInvalid', 'size -3 is not a byte count']]],
    [
      'an invalid one and a missing one: invalid first',
      [{ ...report, artifactId: 'plot.png', size: 11, mediaType: 'image/png' }],
      [
        ['ArtifactInvalid', 'plot.png: 11 bytes is over its maxBytes 10'],
        ['ArtifactMissing', 'report.csv is declared (required)'],
      ],
    ],
  ])('%s', (_what, manifest, expected) => {
    const { problems, expected: entries } = checkManifest(declared, manifest);
    expect(problems).toHaveLength(expected.length);
    expected.forEach(([reason, message], index) => {
      expect(problems[index]?.reason).toBe(reason);
      expect(problems[index]?.message).toContain(message);
    });
    if (expected.length === 0) expect(entries.map((e) => e.id)).toEqual(manifest.map((m) => m.artifactId));
    else expect(entries).toEqual([]);
  });

  it('refuses a manifest over the bound without looking further', () => {
    const many = Array.from({ length: BOUNDS.artifactCount + 1 }, () => report);
    expect(checkManifest(declared, many).problems).toEqual([
      {
        reason: 'ArtifactInvalid',
        message: `the manifest lists ${BOUNDS.artifactCount + 1} artifacts, at most ${BOUNDS.artifactCount} are allowed`,
      },
    ]);
  });

  it('returns the entries to verify with the media type resolved', () => {
    expect(checkManifest(declared, [{ ...report, mediaType: '' }]).expected).toEqual([
      { id: 'report.csv', sha256Hex: sha, size: 12, mediaType: 'text/csv', maxBytes: 1000 },
    ]);
  });
});

describe('summarizeProblems', () => {
  it.each([
    [[], undefined],
    [[{ reason: 'ArtifactMissing', message: 'a' }], { reason: 'ArtifactMissing', message: 'a' }],
    [
      [
        { reason: 'ArtifactInvalid', message: 'a' },
        { reason: 'ArtifactMissing', message: 'b' },
      ],
      { reason: 'ArtifactInvalid', message: 'a; b' },
    ],
  ] as const)('%j', (problems, expected) => {
    expect(summarizeProblems(problems)).toEqual(expected);
  });
});
