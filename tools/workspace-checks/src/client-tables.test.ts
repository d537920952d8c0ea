import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES, isErrorCode } from '@kruntimes/errors';
import { TERMINAL_PHASES } from '@kruntimes/run-state';

// The Go and Python clients (clients/go, clients/python) cannot import the TypeScript
// tables, so they hold their own copies of the terminal phases and the error codes. These
// tests read those copies from the sources and compare them with @kruntimes/run-state
// (which decides what is terminal over @kruntimes/api's phases) and @kruntimes/errors.
const clients = join(import.meta.dirname, '..', '..', '..', 'clients');
const read = (path: string): string => readFileSync(join(clients, path), 'utf8');

/** The one match of `pattern` in `source` (its first group), or a failure that names what changed shape. */
function only(source: string, pattern: RegExp, what: string): string {
  const found = pattern.exec(source)?.[1];
  if (found === undefined) throw new Error(`${what} not found: the test reads it with ${String(pattern)}`);
  return found;
}

const quoted = (text: string): string[] => [...text.matchAll(/"([^"]*)"/g)].map((match) => match[1] ?? '');

/** Go: `var terminalPhases = map[string]bool{"Succeeded": true, ...}`. */
function goTerminalPhases(): string[] {
  const table = only(read('go/sandbox.go'), /var terminalPhases = map\[string\]bool\{([^}]*)\}/, 'terminalPhases in clients/go/sandbox.go');
  return quoted(table);
}

/** Python: `_TERMINAL_PHASES = ("Succeeded", ...)`. */
function pythonTerminalPhases(): string[] {
  const table = only(read('python/src/kruntimes/sandbox.py'), /^_TERMINAL_PHASES = \(([^)]*)\)/m, '_TERMINAL_PHASES in sandbox.py');
  return quoted(table);
}

/** Go: the `Code... = "..."` constants of the block of the invoke contract's codes (the first const block of errors.go). */
function goContractCodes(): Map<string, string> {
  const block = only(
    read('go/errors.go'),
    /\/\/ Stable error codes of the invoke contract[^\n]*\nconst \(([^)]*)\)/,
    'the code block of errors.go',
  );
  return new Map([...block.matchAll(/^\s*(Code\w+)\s*=\s*"(\w+)"/gm)].map((match) => [match[1] ?? '', match[2] ?? '']));
}

/** Python: `_BY_CODE = { "Unauthenticated": Unauthenticated, ... }`, code to the class raised for it. */
function pythonCodeClasses(): Map<string, string> {
  const table = only(read('python/src/kruntimes/errors.py'), /^_BY_CODE = \{([^}]*)\}/m, '_BY_CODE in errors.py');
  return new Map([...table.matchAll(/"(\w+)":\s*(\w+)/g)].map((match) => [match[1] ?? '', match[2] ?? '']));
}

/** Codes only a client has: no answer at all from the gateway (a transport failure). */
const CLIENT_ONLY_CODES = new Set(['Transport']);

describe('the clients against the TypeScript tables', () => {
  it.each([
    ['Go', goTerminalPhases],
    ['Python', pythonTerminalPhases],
  ])("the %s client's terminal phases are run-state's", (_client, phases) => {
    expect([...phases()].sort()).toEqual([...TERMINAL_PHASES].sort());
  });

  it("every error code of the Go client is one of @kruntimes/errors (or the client's own Transport)", () => {
    const codes = goContractCodes();
    expect(codes.size).toBeGreaterThan(5);
    const unknown = [...codes].filter(([, code]) => !isErrorCode(code) && !CLIENT_ONLY_CODES.has(code));
    expect(unknown).toEqual([]);
  });

  it('every Go code constant is named after its code', () => {
    const misnamed = [...goContractCodes()].filter(([name, code]) => name.toLowerCase() !== `code${code.toLowerCase()}`);
    expect(misnamed).toEqual([]);
  });

  it("the Python client's codes are of @kruntimes/errors, each raised as the class of a code with the same HTTP status", () => {
    const classes = pythonCodeClasses();
    expect(classes.size).toBeGreaterThan(5);
    const mismatched = [...classes].filter(
      ([code, kind]) => !isErrorCode(code) || !isErrorCode(kind) || ERROR_CODES[code].http !== ERROR_CODES[kind].http,
    );
    expect(mismatched).toEqual([]);
  });
});
