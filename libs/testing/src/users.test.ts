import { DEFAULT_USERS, nodeUser, tokenAuthFile, withTokens } from './users.ts';

test('every user gets its own random token and the token file lists groups', () => {
  const users = withTokens(DEFAULT_USERS);
  expect(new Set(users.map((u) => u.token)).size).toBe(users.length);
  const file = tokenAuthFile(users);
  const admin = users.find((u) => u.name === 'admin');
  expect(file).toContain(`${admin?.token},admin,admin,"system:masters"\n`);
  expect(file).toMatch(/,alice,alice\n/);
});

test.each([
  [
    [
      { name: 'a', groups: [] },
      { name: 'a', groups: [] },
    ],
    /duplicate user a/,
  ],
  [[{ name: 'a,b', groups: [] }], /token file cannot hold/],
  [[{ name: 'a', groups: ['x"y'] }], /token file cannot hold/],
])('rejects users the token file cannot represent: %j', (specs, error) => {
  expect(() => withTokens(specs)).toThrow(error);
});

test('a node is a user in system:nodes, which the Node authorizer recognises', () => {
  expect(nodeUser('krt-node')).toEqual({ name: 'system:node:krt-node', groups: ['system:nodes'] });
});
