/**
 * The trailing "Sources:" block of an answer's text: a `Sources:` line followed only by list items
 * (`- …`, `* …`) and blank lines up to the end. Only a block at the end counts, so a `Sources:`
 * line inside the answer (a YAML key in a code block, a heading in prose) never cuts the text
 * after it. No imports: the console's bundle uses it too (console/src/markdown.ts).
 */
export const TRAILING_SOURCES = /\n[ \t]*Sources:[ \t]*\n(?:[ \t]*[-*] [^\n]*(?:\n|$)|[ \t]*(?:\n|$))*$/;

/**
 * Where the trailing "Sources:" block of `text` starts, or -1 when it has none
 * ({@link TRAILING_SOURCES}).
 */
export function sourcesBlockAt(text: string): number {
  return text.search(TRAILING_SOURCES);
}
