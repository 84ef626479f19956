import { gunzipSync } from 'node:zlib';
import { ValidationError } from '../errors.js';

/**
 * Reads one file out of an OPA bundle (`opa build` writes a gzipped tar, POSIX ustar as Go's
 * `archive/tar` writes it; the compiled policy is `/policy.wasm`). Only what bundles use is
 * supported: regular files, ustar name prefixes, GNU long names (`L`) and PAX `path` records
 * (`x`); other entries are skipped.
 */

const BLOCK = 512;

/**
 * The content of the file at `path` in a `.tar.gz` archive, or undefined when it has none.
 * Paths compare without a leading `/` or `./` (`/policy.wasm` = `policy.wasm`).
 * @throws ValidationError when the archive is not gzip or a header is corrupt (bad checksum,
 *   size beyond the archive)
 */
export function readTarGzEntry(archive: Uint8Array, path: string): Buffer | undefined {
  let tar: Buffer;
  try {
    tar = gunzipSync(archive);
  } catch (error) {
    throw new ValidationError('policy bundle is not a gzip archive', { cause: error });
  }
  const wanted = normalise(path);
  let offset = 0;
  let longName: string | undefined;
  while (offset + BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) return undefined; // end of archive
    verifyChecksum(header, offset);
    const size = octal(header.subarray(124, 136), offset);
    const type = String.fromCharCode(header[156] ?? 0);
    const start = offset + BLOCK;
    const end = start + size;
    if (end > tar.length)
      throw new ValidationError(`policy bundle entry at byte ${offset} runs past the archive`);
    const data = tar.subarray(start, end);
    offset = start + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'L') {
      longName = cString(data);
      continue;
    }
    if (type === 'x') {
      longName = paxPath(data) ?? longName;
      continue;
    }
    const name = longName ?? headerName(header);
    longName = undefined;
    if ((type === '0' || type === '\0') && normalise(name) === wanted) return Buffer.from(data);
  }
  return undefined;
}

function headerName(header: Buffer): string {
  const name = cString(header.subarray(0, 100));
  const ustar = header.subarray(257, 262).toString('latin1') === 'ustar';
  const prefix = ustar ? cString(header.subarray(345, 500)) : '';
  return prefix ? `${prefix}/${name}` : name;
}

function cString(bytes: Buffer): string {
  const nul = bytes.indexOf(0);
  return bytes.subarray(0, nul === -1 ? bytes.length : nul).toString('utf8');
}

function octal(field: Buffer, offset: number): number {
  const text = cString(field).trim();
  if (!/^[0-7]*$/.test(text))
    throw new ValidationError(`policy bundle header at byte ${offset} has a bad size`);
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function verifyChecksum(header: Buffer, offset: number): void {
  const stored = octal(header.subarray(148, 156), offset);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (header[i] as number);
  if (sum !== stored) throw new ValidationError(`policy bundle header at byte ${offset} has a bad checksum`);
}

/** The `path` record of a PAX extended header (`<length> path=<value>\n` records). */
function paxPath(data: Buffer): string | undefined {
  for (const record of data.toString('utf8').split('\n')) {
    const match = /^\d+ path=(.*)$/.exec(record);
    if (match) return match[1];
  }
  return undefined;
}

function normalise(path: string): string {
  return path.replace(/^(\.\/|\/)+/, '');
}
