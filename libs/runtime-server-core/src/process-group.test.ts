import { spawn } from 'node:child_process';
import { groupHasLiveMembers, killGroup, killGroupUntilGone, parseStat, terminateGroup } from './process-group.ts';

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

  // The leader exits at SIGTERM; what it left ignores SIGTERM and outlives it unless killed.
  const stubbornGroup = (): ReturnType<typeof spawn> =>
    spawn('sh', ['-c', "(trap '' TERM; sleep 300) & (trap '' TERM; sleep 300) & trap 'exit 0' TERM; wait"], {
      detached: true,
      stdio: 'ignore',
    });

  it('terminateGroup returns only once no member is alive, not when the leader exited', async () => {
    const leader = stubbornGroup();
    const pgid = leader.pid ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 200)); // the traps are set
    expect(await terminateGroup(leader, 5_000)).toBe(true);
    expect(await groupHasLiveMembers(pgid)).toBe(false);
  });

  it('killGroup returns only once no member is alive', async () => {
    const leader = stubbornGroup();
    const pgid = leader.pid ?? 0;
    expect(await killGroup(leader)).toBe(true);
    expect(await groupHasLiveMembers(pgid)).toBe(false);
  });
});
