import { readFileSync } from 'node:fs';

/**
 * The `hidepid` option of the /proc a process sees: the last /proc mount in its
 * /proc/self/mountinfo (the one on top), `off` when the option is absent. Undefined when no
 * /proc is mounted at all.
 */
export function procHidepid(mountinfo: string): string | undefined {
  let hidepid: string | undefined;
  for (const line of mountinfo.split('\n')) {
    // "id parent major:minor root mountpoint options [optional...] - fstype source superoptions"
    const [mountFields, fsFields] = line.split(' - ');
    if (fsFields === undefined) continue;
    if (mountFields?.split(' ')[4] !== '/proc') continue;
    const [fstype, , superOptions = ''] = fsFields.split(' ');
    if (fstype !== 'proc') continue;
    hidepid = /(?:^|,)hidepid=([^,]+)/.exec(superOptions)?.[1] ?? 'off';
  }
  return hidepid;
}

/** Whether Runs of other uids are hidden from each other in this process's /proc (why not, when not). */
export function procHidesOtherUids(mountinfo: string = readFileSync('/proc/self/mountinfo', 'utf8')): string | undefined {
  const hidepid = procHidepid(mountinfo);
  if (hidepid === undefined) return 'no /proc is mounted';
  // 2 and 4 are the numeric names of invisible and ptraceable.
  if (['invisible', 'ptraceable', '2', '4'].includes(hidepid)) return undefined;
  return `/proc is mounted hidepid=${hidepid}: every Run would see the others' processes and command lines`;
}
