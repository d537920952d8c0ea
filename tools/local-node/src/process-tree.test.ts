import { descendantGroups } from './process-group.ts';

describe('descendantGroups: what a container kill must reach besides its own group', () => {
  // 100 leads the container; 101 is in its group; 200 and 300 are tasks in groups of their own; 400 is not the container's.
  const table = [
    { pid: 100, ppid: 1, pgrp: 100 },
    { pid: 101, ppid: 100, pgrp: 100 },
    { pid: 200, ppid: 100, pgrp: 200 },
    { pid: 201, ppid: 200, pgrp: 200 },
    { pid: 300, ppid: 101, pgrp: 300 },
    { pid: 301, ppid: 300, pgrp: 301 },
    { pid: 400, ppid: 1, pgrp: 400 },
  ];

  it.each<[string, number, number[]]>([
    ['the groups of every descendant, not the leader own', 100, [200, 300, 301]],
    ['a process without children', 400, []],
    ['a pid that is gone', 999, []],
  ])('%s', (_name, leader, groups) => {
    expect(descendantGroups(leader, table).sort((a, b) => a - b)).toEqual(groups);
  });
});
