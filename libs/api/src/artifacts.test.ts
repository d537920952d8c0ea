import { artifactNamespacePrefix, artifactObjectKey, isArtifactId, parseArtifactObjectKey } from './artifacts.ts';

describe('artifact object keys', () => {
  it.each([
    [undefined, 'team-a/uid-1/2/report.csv'],
    ['', 'team-a/uid-1/2/report.csv'],
    ['krt/prod', 'krt/prod/team-a/uid-1/2/report.csv'],
  ])('with store prefix %p: %s', (prefix, key) => {
    expect(artifactObjectKey(prefix, 'team-a', 'uid-1', 2, 'report.csv')).toBe(key);
    expect(parseArtifactObjectKey(artifactNamespacePrefix(prefix, 'team-a'), key)).toEqual({
      runUid: 'uid-1',
      attempt: 2,
      artifactId: 'report.csv',
    });
  });

  it.each([
    ['another namespace', 'team-b/uid-1/2/report.csv'],
    ['too few segments', 'team-a/uid-1/report.csv'],
    ['too many segments', 'team-a/uid-1/2/x/report.csv'],
    ['attempt 0', 'team-a/uid-1/0/report.csv'],
    ['a non-numeric attempt', 'team-a/uid-1/two/report.csv'],
    ['a bad artifact ID', 'team-a/uid-1/2/Report'],
    ['an empty Run UID', 'team-a//2/report.csv'],
  ])('is not an artifact key: %s', (_name, key) => {
    expect(parseArtifactObjectKey('team-a/', key)).toBeUndefined();
  });

  it.each([
    ['report.csv', true],
    ['a', true],
    ['model_v2.bin', true],
    ['-x', false],
    ['x.', false],
    ['Upper', false],
    ['a/b', false],
    ['x'.repeat(64), false],
  ])('artifact ID %p valid: %p', (id, valid) => {
    expect(isArtifactId(id)).toBe(valid);
  });
});
