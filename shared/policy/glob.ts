/**
 * Glob matching with the semantics of OPA's `glob.match(pattern, ["/"], value)`
 * (https://www.openpolicyagent.org/docs/latest/policy-reference/#glob): with `/` as the only
 * delimiter, `*` matches any run of non-delimiter characters (one path element or part of
 * one), `**` matches across delimiters (any depth), `?` one non-delimiter character,
 * `[abc]`/`[!abc]` a character class and `{a,b}` alternatives. Everything else is literal.
 */

const cache = new Map<string, RegExp>();

/** Compiles a glob to an anchored RegExp (cached). */
export function globToRegExp(pattern: string): RegExp {
  let compiled = cache.get(pattern);
  if (compiled) return compiled;
  let source = '';
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i] as string;
    if (char === '*') {
      if (pattern[i + 1] === '*') {
        source += '.*';
        i++;
      } else {
        source += '[^/]*';
      }
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end === -1) {
        source += '\\[';
      } else {
        let body = pattern.slice(i + 1, end);
        const negate = body.startsWith('!');
        if (negate) body = body.slice(1);
        source += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
        i = end;
      }
    } else if (char === '{') {
      source += '(?:';
      depth++;
    } else if (char === '}' && depth > 0) {
      source += ')';
      depth--;
    } else if (char === ',' && depth > 0) {
      source += '|';
    } else if (char === '\\' && i + 1 < pattern.length) {
      source += escapeLiteral(pattern[i + 1] as string);
      i++;
    } else {
      source += escapeLiteral(char);
    }
  }
  compiled = new RegExp(`^${source}$`, 'u');
  if (cache.size > 10_000) cache.clear();
  cache.set(pattern, compiled);
  return compiled;
}

/** True when `value` matches `pattern` (OPA `glob.match` with `["/"]` delimiters). */
export function globMatch(pattern: string, value: string): boolean {
  return globToRegExp(pattern).test(value);
}

function escapeLiteral(char: string): string {
  return char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
