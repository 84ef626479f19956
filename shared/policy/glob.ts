/**
 * Glob matching with the semantics of OPA's `glob.match(pattern, ["/"], value)`
 * (https://www.openpolicyagent.org/docs/latest/policy-reference/#glob): with `/` as the only
 * delimiter, `*` matches any run of non-delimiter characters (one path element or part of
 * one), `**` matches across delimiters (any depth), `?` one non-delimiter character,
 * `[abc]`/`[!abc]` a character class and `{a,b}` alternatives. Everything else is literal.
 *
 * These are the semantics of OPA's wasm runtime (what the functions' compiled policies run), which
 * translates a glob to an RE2 expression the same way. OPA's Go evaluator (`opa eval`, `opa test`,
 * the OPA server: package topdown, built on github.com/gobwas/glob) differs on a few shapes,
 * measured with OPA 0.61.0 over 150,000 random globs (the `topdown` rows of policies/cases.json):
 * - a literal, one `**`, a literal (`x**x`; `cld:a/**` followed by `/z`): gobwas tests "has the
 *   prefix and has the suffix", which lets them overlap, so `x**x` matches `x` and the second
 *   matches `cld:a/z` (here and in wasm, a `**` between two `/` still needs both `/`);
 * - three or more `*` in a row, and a lone `?` (which gobwas lets match the empty string);
 * - `**` inside `{...}` alternatives, on which gobwas can panic.
 * {@link divergentGlob} names these; rules.ts rejects a rule glob that has one, so no decision
 * depends on them (and the policies run most rule globs as compiled matchers, not glob.match).
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

/**
 * Why OPA's Go evaluator may match `pattern` differently from the wasm runtime and this module
 * (see the module comment), or undefined when it is not one of the known divergent shapes.
 */
export function divergentGlob(pattern: string): string | undefined {
  if (pattern.includes('***')) return 'three or more `*` in a row';
  if (pattern === '?') return 'a lone `?`';
  if (/\{[^}]*\*\*/.test(pattern)) return '`**` inside `{...}` alternatives';
  const split = /^([^*?[\]{}\\]+)\*\*([^*?[\]{}\\]+)$/.exec(pattern);
  if (split) return "a literal, `**`, a literal (OPA's Go evaluator lets the two overlap)";
  return undefined;
}
