/**
 * The environment for the Go toolchain the tests and benches run (`go build`, `go test`):
 * the machine's toolchain only (GOTOOLCHAIN=local: nothing downloaded behind our back), and
 * Go's own settings (module proxy, caches) and proxies passed on, nothing else.
 */
export function goEnvironment(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', GOTOOLCHAIN: 'local' };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && /^(GO[A-Z0-9_]*|XDG_CACHE_HOME|HTTPS?_PROXY|NO_PROXY)$/i.test(name) && name !== 'GOTOOLCHAIN') {
      env[name] = value;
    }
  }
  return env;
}
