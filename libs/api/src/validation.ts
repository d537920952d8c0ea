import { BOUNDS } from './bounds.ts';

const encoder = new TextEncoder();

export function utf8ByteLength(value: string): number {
  return encoder.encode(value).byteLength;
}

/** `spec.timeout`: whole hours, minutes and seconds in that order, e.g. `90s`, `1h30m`. */
export const DURATION_PATTERN = '^(?:[0-9]{1,6}h)?(?:[0-9]{1,6}m)?(?:[0-9]{1,7}s)?$';
const durationRegExp = /^(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,7})s)?$/;

/** Parses a `spec.timeout` duration; undefined when it is not one (the CRD rejects those). */
export function parseDurationSeconds(value: string): number | undefined {
  const match = durationRegExp.exec(value);
  if (match === null || value === '') return undefined;
  const [, hours = '0', minutes = '0', seconds = '0'] = match;
  return Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds);
}

export const DNS1123_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const dns1123Label = new RegExp(DNS1123_LABEL_PATTERN);
export const DNS1123_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const dns1123Subdomain = new RegExp(DNS1123_SUBDOMAIN_PATTERN);
const uuidRegExp = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isDns1123Label(value: string): boolean {
  return value.length <= BOUNDS.dnsLabelBytes && dns1123Label.test(value);
}

export function isDns1123Subdomain(value: string): boolean {
  return value.length <= BOUNDS.dnsSubdomainBytes && dns1123Subdomain.test(value);
}

/** Kubernetes UIDs are lower-case RFC 4122 UUIDs. */
export function isUid(value: string): boolean {
  return uuidRegExp.test(value);
}

/** 1 to 128 bytes of visible ASCII (0x21-0x7e): safe in a header, a log line and a metric. */
export function isValidInvocationId(value: string): boolean {
  return value.length >= 1 && value.length <= BOUNDS.invocationIdBytes && /^[\x21-\x7e]+$/.test(value);
}

export const OUTPUT_KEY_PATTERN = '^[A-Za-z_][A-Za-z0-9_.-]*$';
const outputKey = new RegExp(OUTPUT_KEY_PATTERN);

export interface BoundViolation {
  field: string;
  message: string;
}

/** Checks task and invocation outputs against the shared key/count/value bounds. */
export function validateOutputs(outputs: Readonly<Record<string, string>>): BoundViolation[] {
  const violations: BoundViolation[] = [];
  const keys = Object.keys(outputs);
  if (keys.length > BOUNDS.outputCount) {
    violations.push({ field: 'outputs', message: `${keys.length} outputs, at most ${BOUNDS.outputCount} allowed` });
  }
  for (const key of keys) {
    if (key.length > BOUNDS.outputKeyBytes || !outputKey.test(key)) {
      violations.push({
        field: `outputs[${JSON.stringify(key.slice(0, BOUNDS.outputKeyBytes))}]`,
        message: `key must match ${OUTPUT_KEY_PATTERN} and be at most ${BOUNDS.outputKeyBytes} bytes`,
      });
      continue;
    }
    const value = outputs[key];
    if (typeof value !== 'string') {
      violations.push({ field: `outputs.${key}`, message: 'value must be a string' });
    } else if (utf8ByteLength(value) > BOUNDS.outputValueBytes) {
      violations.push({ field: `outputs.${key}`, message: `value exceeds ${BOUNDS.outputValueBytes} bytes` });
    }
  }
  return violations;
}

const TRUNCATION_MARK = '…[truncated]';

/**
 * Cuts a string to at most `maxBytes` of UTF-8, never inside a character, marking the
 * cut. Status messages and captured output are bounded this way instead of rejected.
 */
export function truncateUtf8(value: string, maxBytes: number): { value: string; truncated: boolean } {
  const bytes = encoder.encode(value);
  if (bytes.byteLength <= maxBytes) return { value, truncated: false };
  const markBytes = utf8ByteLength(TRUNCATION_MARK);
  let end = Math.max(0, maxBytes - markBytes);
  // Step back over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  const head = new TextDecoder().decode(bytes.subarray(0, end));
  return { value: maxBytes >= markBytes ? head + TRUNCATION_MARK : head, truncated: true };
}

/** A status message bounded to BOUNDS.messageBytes. */
export function boundedMessage(message: string): string {
  return truncateUtf8(message, BOUNDS.messageBytes).value;
}
