/** Size of each pathological input, in characters (UTF-16 code units): 256 Ki. */
export const PATHOLOGICAL_SIZE = 256 * 1024;

/**
 * The inputs that made the old text splitters quadratic (issue 11, item 7): no `?`, one endless
 * word, runs of newlines or spaces, unspaced CJK text, and sentences before one question (what a
 * sentence segmenter took seconds over); each about {@link PATHOLOGICAL_SIZE} long.
 * Shared by test/unit/linear-text.test.ts (what the splitters return) and
 * test/bench/linear-text.ts (how long they take).
 */
export const PATHOLOGICAL_TEXTS: [name: string, text: string][] = [
  ['prose without a question mark', 'the bucket sends events to the bus '.repeat(PATHOLOGICAL_SIZE / 35)],
  ['one endless word', 'a'.repeat(PATHOLOGICAL_SIZE)],
  ['newlines only', '\n'.repeat(PATHOLOGICAL_SIZE)],
  ['spaces only', ' '.repeat(PATHOLOGICAL_SIZE)],
  ['question marks only', '?'.repeat(PATHOLOGICAL_SIZE)],
  ['dash-newline pairs', '-\n'.repeat(PATHOLOGICAL_SIZE / 2)],
  ['unspaced CJK text', '事件'.repeat(PATHOLOGICAL_SIZE / 2)],
  [
    'statements before one question',
    `${'We use x. '.repeat(PATHOLOGICAL_SIZE / 10 - 3)}How do I create a queue?`,
  ],
];
