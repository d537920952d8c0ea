import { procHidepid, procHidesOtherUids } from './proc-visibility.ts';

const HOST_PROC = '22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw';
const HIDDEN_PROC = '68 49 0:40 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw,hidepid=invisible,gid=0';
const OTHER = '30 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw';
const SYS_BIND = '70 68 0:40 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw,hidepid=invisible';

describe('procHidepid', () => {
  it.each([
    ['no /proc', [OTHER], undefined],
    ['a /proc without the option', [OTHER, HOST_PROC], 'off'],
    ['a hidden /proc mounted over the host one', [OTHER, HOST_PROC, HIDDEN_PROC], 'invisible'],
    ['the top mount wins', [HIDDEN_PROC, HOST_PROC], 'off'],
    ['mounts below /proc are not /proc', [HOST_PROC, SYS_BIND], 'off'],
    ['a numeric value', ['1 0 0:5 / /proc rw - proc proc rw,hidepid=2'], '2'],
    ['a non-proc filesystem on /proc', ['1 0 0:5 / /proc rw - tmpfs tmpfs rw,hidepid=2'], undefined],
    ['a malformed line', ['garbage', HIDDEN_PROC], 'invisible'],
  ])('%s', (_case, lines, expected) => {
    expect(procHidepid(lines.join('\n'))).toBe(expected);
  });
});

describe('procHidesOtherUids', () => {
  it.each([
    ['invisible', HIDDEN_PROC, undefined],
    ['ptraceable', '1 0 0:5 / /proc rw - proc proc rw,hidepid=ptraceable', undefined],
    ['4', '1 0 0:5 / /proc rw - proc proc rw,hidepid=4', undefined],
    ['noaccess still lists pids', '1 0 0:5 / /proc rw - proc proc rw,hidepid=noaccess', 'hidepid=noaccess'],
    ['off', HOST_PROC, 'hidepid=off'],
    ['no /proc', OTHER, 'no /proc is mounted'],
  ])('%s', (_case, mountinfo, expected) => {
    const why = procHidesOtherUids(mountinfo);
    if (expected === undefined) expect(why).toBeUndefined();
    else expect(why).toContain(expected);
  });
});
