import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { MAX_MESSAGE_CHARS } from '../shared/domain/limits.js';
import { messageTooLong } from '../shared/domain/plan.js';
import { ValidationError } from '../shared/errors.js';
import { UsageError } from './errors.js';

/**
 * The user's message for `ask`: the arguments joined by spaces, standard input (`-`), or a file
 * (`--file <path>`, `--file -` also reads standard input). Refused before anything is stored
 * when it is empty or longer than {@link MAX_MESSAGE_CHARS} characters; standard input and files
 * are read only up to just past the limit, so a gigabyte is refused as fast as 16 KB.
 * @throws UsageError for no message, or a message given two ways; ValidationError for a file
 *   that does not exist; LimitExceededError naming the limit for a message that is too long
 */
export async function readMessage(
  options: { positionals: readonly string[]; file: string | undefined },
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<string> {
  const { positionals, file } = options;
  if (file !== undefined && positionals.length > 0)
    throw new UsageError(
      'give the message as arguments, as - (standard input) or with --file, not two of them',
    );
  let text: string;
  if (file === '-' || (file === undefined && positionals.length === 1 && positionals[0] === '-'))
    text = await readBounded(stdin);
  else if (file !== undefined) {
    const found = await stat(file).catch(() => undefined);
    if (!found?.isFile()) throw new ValidationError(`message file does not exist: ${file}`);
    text = await readBounded(createReadStream(file));
  } else text = positionals.join(' ');
  text = text.trim();
  if (!text) throw new UsageError('ask needs a message');
  if (text.length > MAX_MESSAGE_CHARS) throw messageTooLong(text.length);
  return text;
}

/** Characters read from a stream or file at most: the limit plus room for whitespace around it. */
const READ_LIMIT = MAX_MESSAGE_CHARS * 2;

/**
 * Reads UTF-8 text from a stream and destroys it.
 * @throws LimitExceededError once more than {@link READ_LIMIT} characters came (the rest is left
 *   unread)
 */
async function readBounded(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  stream.setEncoding('utf8');
  try {
    for await (const chunk of stream) {
      text += chunk as string;
      if (text.length > READ_LIMIT) throw messageTooLong(READ_LIMIT, true);
    }
    return text;
  } finally {
    (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  }
}
