/**
 * Kubernetes' `$(VAR)` expansion for command, args and env values: `$(NAME)` is replaced
 * by the variable's value when it is defined and left as is otherwise; `$$` escapes `$`.
 * Same rules as k8s.io/kubernetes/third_party/forked/golang/expansion.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input.charAt(i);
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input.charAt(i + 1);
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        // No closing paren: the rest is literal.
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = lookup(name);
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}
