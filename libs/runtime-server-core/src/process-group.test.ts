import { spawn } from 'node:child_process';
import { groupHasLiveMembers, killGroupUntilGone, parseStat } from './process-group.ts';

describe('process groups', () => {
  it('parses /proc/PID/stat whatever the command name holds', () => {
    expect(parseStat('4242 (a) b (c) S 1 4240 4240 0 -1 4194560')).toEqual({ state: 'S', pgid: 4240 });
    expect(parseStat('17 (sleep) Z 1 9 9 0')).toEqual({ state: 'Z', pgid: 9 });
    expect(parseStat('garbage')).toBeUndefined();
  });

  it('kills a group until none of its members is alive, including what the leader left behind', async () => {
    const leader = spawn('sh', ['-c', 'sleep 300 & sleep 300 & wait'], { detached: true, stdio: 'ignore' });
    const pgid = leader.pid ?? 0;
    expect(pgid).toBeGreaterThan(1);
    expect(await groupHasLiveMembers(pgid)).toBe(true);
    expect(await killGroupUntilGone(pgid, 10_000)).toBe(true);
    expect(await groupHasLiveMembers(pgid)).toBe(false);
  });
});
