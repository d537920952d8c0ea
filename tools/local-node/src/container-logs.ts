// The kubelet's container log format and its query, as pure functions: the agent writes
// each container start's output as CRI log lines (what containerd writes under
// /var/log/pods), and the log endpoint selects and renders them as the kubelet does.

/** One CRI log line: `<RFC 3339 time with nanoseconds> <stdout|stderr> <F|P> <content>`. */
export interface CriRecord {
  /** Nanoseconds since the epoch: JS dates stop at milliseconds, CRI times do not. */
  timeNs: bigint;
  stream: LogStream;
  /** A partial line (`P`): the writer split a long line; the next record continues it. */
  partial: boolean;
  /** Without its newline. */
  content: string;
}

export type LogStream = 'stdout' | 'stderr';

/** containerd splits lines longer than this into partial records; so does the agent. */
export const MAX_RECORD_BYTES = 16 * 1024;

/** The kubelet's output time format: RFC 3339 with exactly nine fraction digits. */
export function formatTimeNs(timeNs: bigint): string {
  const ms = Number(timeNs / 1_000_000n);
  const fraction = (timeNs % 1_000_000_000n).toString().padStart(9, '0');
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction}Z`;
}

/** Parses an RFC 3339 time with up to nine fraction digits and a zone; undefined if it is not one. */
export function parseTimeNs(text: string): bigint | undefined {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (match === null) return undefined;
  const [, seconds = '', fraction = '', zone = 'Z'] = match;
  const ms = Date.parse(`${seconds}${zone}`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt(fraction.padEnd(9, '0'));
}

export function formatCriLine(record: CriRecord): string {
  return `${formatTimeNs(record.timeNs)} ${record.stream} ${record.partial ? 'P' : 'F'} ${record.content}\n`;
}

/** One line of a CRI log file (without its newline); undefined for a line that is not one. */
export function parseCriLine(line: string): CriRecord | undefined {
  const first = line.indexOf(' ');
  const second = line.indexOf(' ', first + 1);
  if (first < 0 || second < 0) return undefined;
  const time = line.slice(0, first);
  const stream = line.slice(first + 1, second);
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  const timeNs = parseTimeNs(time);
  if (timeNs === undefined) return undefined;
  // The tag field is optional in old CRI logs: a line without one is a full line.
  const rest = line.slice(second + 1);
  const tagged = /^[FP]( |$)/.test(rest);
  return { timeNs, stream, partial: tagged && rest.startsWith('P'), content: tagged ? rest.slice(2) : rest };
}

/**
 * Splits a stream's bytes into records' contents: complete lines, and partial ones where a
 * line outgrows MAX_RECORD_BYTES. Returns the bytes still waiting for their newline; at the
 * end of the stream the caller passes `end` and the rest becomes a full line.
 */
export function splitRecords(
  pending: Buffer,
  chunk: Buffer,
  end = false,
  max = MAX_RECORD_BYTES,
): { records: { content: Buffer; partial: boolean }[]; pending: Buffer } {
  let data = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
  const records: { content: Buffer; partial: boolean }[] = [];
  for (;;) {
    const newline = data.indexOf(10);
    if (newline >= 0 && newline <= max) {
      records.push({ content: data.subarray(0, newline), partial: false });
      data = data.subarray(newline + 1);
    } else if (data.length > max) {
      // Never cut a UTF-8 sequence: back up to the start of the character at the cut.
      let cut = max;
      while (cut > 0 && ((data[cut] ?? 0) & 0xc0) === 0x80) cut -= 1;
      if (cut === 0) cut = max;
      records.push({ content: data.subarray(0, cut), partial: true });
      data = data.subarray(cut);
    } else break;
  }
  if (end && data.length > 0) {
    records.push({ content: data, partial: false });
    data = Buffer.alloc(0);
  }
  return { records, pending: Buffer.from(data) };
}

/** The kubelet's PodLogOptions, as the endpoint's query gives them. */
export interface LogQuery {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  /** Records older than this are skipped (from sinceSeconds or sinceTime). */
  sinceNs?: bigint;
  limitBytes?: number;
  /** Which streams; `All` by default. */
  stream: 'All' | 'Stdout' | 'Stderr';
}

/**
 * The query of `GET /containerLogs/...` as the kubelet reads it (v1 PodLogOptions, plus its
 * legacy `tail`), or the kubelet's message for a bad one. `nowNs` anchors sinceSeconds.
 */
export function parseLogQuery(params: URLSearchParams, nowNs: bigint): LogQuery | { error: string } {
  const flag = (name: string): boolean | undefined => {
    const value = params.get(name);
    if (value === null) return false;
    // Go's strconv.ParseBool; an empty value is how a bare `?follow` arrives.
    if (['', '1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
    if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
    return undefined;
  };
  const integer = (name: string): number | null | undefined => {
    const value = params.get(name);
    if (value === null) return null;
    return /^-?\d+$/.test(value) ? Number.parseInt(value, 10) : undefined;
  };
  const follow = flag('follow');
  const previous = flag('previous');
  const timestamps = flag('timestamps');
  const tail = params.get('tail');
  const tailLines = tail !== null && params.get('tailLines') === null ? (tail === 'all' ? null : integer('tail')) : integer('tailLines');
  const sinceSeconds = integer('sinceSeconds');
  const limitBytes = integer('limitBytes');
  const sinceTimeText = params.get('sinceTime');
  const sinceTime = sinceTimeText === null ? null : parseTimeNs(sinceTimeText);
  const stream = params.get('stream') ?? 'All';
  if (
    follow === undefined ||
    previous === undefined ||
    timestamps === undefined ||
    tailLines === undefined ||
    sinceSeconds === undefined ||
    limitBytes === undefined ||
    sinceTime === undefined ||
    (stream !== 'All' && stream !== 'Stdout' && stream !== 'Stderr')
  )
    return { error: '{"message": "Unable to decode query."}' };
  // ValidatePodLogOptions.
  if (
    (tailLines !== null && tailLines < 0) ||
    (sinceSeconds !== null && sinceSeconds < 1) ||
    (limitBytes !== null && limitBytes < 1) ||
    (sinceSeconds !== null && sinceTime !== null)
  )
    return { error: '{"message": "Invalid request."}' };
  const sinceNs = sinceTime ?? (sinceSeconds === null ? undefined : nowNs - BigInt(sinceSeconds) * 1_000_000_000n);
  return {
    follow,
    previous,
    timestamps,
    stream,
    ...(tailLines === null ? {} : { tailLines }),
    ...(sinceNs === undefined ? {} : { sinceNs }),
    ...(limitBytes === null ? {} : { limitBytes }),
  };
}

/** Whether a record passes the query's stream and time filters (not tail: that needs them all). */
export function recordWanted(record: CriRecord, query: Pick<LogQuery, 'sinceNs' | 'stream'>): boolean {
  if (query.stream === 'Stdout' && record.stream !== 'stdout') return false;
  if (query.stream === 'Stderr' && record.stream !== 'stderr') return false;
  return query.sinceNs === undefined || record.timeNs >= query.sinceNs;
}

/**
 * The records of a log file's text that the query selects, in order: tail counts the
 * file's records (as the kubelet counts lines), then the stream and time filters apply.
 * A last line without its newline is still being written: it is not read (a follower
 * reads it once complete).
 */
export function selectRecords(text: string, query: Pick<LogQuery, 'tailLines' | 'sinceNs' | 'stream'>): CriRecord[] {
  const end = text.lastIndexOf('\n');
  const lines = end < 0 ? [] : text.slice(0, end).split('\n');
  const tailed = query.tailLines === undefined ? lines : query.tailLines === 0 ? [] : lines.slice(-query.tailLines);
  return tailed.flatMap((line) => {
    const record = parseCriLine(line);
    return record !== undefined && recordWanted(record, query) ? [record] : [];
  });
}

/** A record as the endpoint writes it: its content, its newline unless partial, the time first with `timestamps`. */
export function renderRecord(record: CriRecord, timestamps: boolean): string {
  return `${timestamps ? `${formatTimeNs(record.timeNs)} ` : ''}${record.content}${record.partial ? '' : '\n'}`;
}

/** What is left of `limitBytes` after writing `bytes`; the kubelet cuts mid-line at the limit. */
export function cutToLimit(text: Buffer, remaining: number | undefined): Buffer {
  return remaining === undefined || text.length <= remaining ? text : text.subarray(0, remaining);
}

/** The container state the log endpoint looks at, as the kubelet's container status has it. */
export interface ContainerLogState {
  state: 'waiting' | 'running' | 'terminated';
  waitingReason?: string;
  /** The start whose state this is (running or terminated). */
  instance?: number;
  /** The start that lastState.terminated describes. */
  lastTerminatedInstance?: number;
}

/**
 * Which start's log a request reads, or the kubelet's message (400) when there is none:
 * validateContainerLogStatus of pkg/kubelet/kubelet_pods.go, case by case.
 */
export function chooseLogInstance(
  container: string,
  pod: string,
  status: ContainerLogState,
  previous: boolean,
): { instance: number } | { error: string } {
  const { instance, lastTerminatedInstance } = status;
  if (previous) {
    return lastTerminatedInstance === undefined
      ? { error: `previous terminated container "${container}" in pod "${pod}" not found` }
      : { instance: lastTerminatedInstance };
  }
  if ((status.state === 'running' || status.state === 'terminated') && instance !== undefined) return { instance };
  // Between a crash and its restart the last terminated start is what there is to read.
  if (lastTerminatedInstance !== undefined) return { instance: lastTerminatedInstance };
  if (status.state === 'waiting') {
    const reason = status.waitingReason ?? '';
    if (reason === 'ErrImagePull') return { error: `container "${container}" in pod "${pod}" is waiting to start: image can't be pulled` };
    return { error: `container "${container}" in pod "${pod}" is waiting to start: ${reason}` };
  }
  return { error: `container "${container}" in pod "${pod}" is waiting to start - no logs yet` };
}
