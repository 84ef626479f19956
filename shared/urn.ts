import { createHash } from 'node:crypto';
import { InvalidUrnError } from './errors.js';

/**
 * URNs: `cld:<path>`, the path being the parent's path plus this resource's element,
 * joined by `/`; an element is `<namespace>.<Name>.<hash>` (DESIGN.md "URNs", seed
 * roadmap-v1 step 06). Objects are stored under `<urn>.json`, so a URN prefix lists a subtree.
 */

/** The URN namespace (`urn_namespace` in the seeds). */
export const URN_NAMESPACE = 'cld';

/** Resource namespaces this system knows; anything else is rejected by the parser. */
export const KNOWN_NAMESPACES = ['common', 'plan', 'tool', 'doc'] as const;

/** S3 object keys are at most 1,024 bytes (UTF-8); `<urn>.json` must fit. */
export const MAX_KEY_BYTES = 1024;

/** Length of the hex hash in an element (64 bits of SHA-256). */
export const HASH_LENGTH = 16;

/** Suffix of the storage key of every resource. */
export const KEY_SUFFIX = '.json';

const ELEMENT = /^([a-z]+)\.([A-Z][A-Za-z0-9]*)\.([0-9a-f]{16})$/;

/** One path element of a URN. */
export interface UrnElement {
  /** `namespace.Name`, for example `plan.Task`. */
  type: string;
  namespace: string;
  name: string;
  hash: string;
}

/** A parsed URN: the original string plus its elements, root first. */
export interface ParsedUrn {
  urn: string;
  elements: UrnElement[];
}

/**
 * Parses a URN strictly.
 * @throws InvalidUrnError for a wrong scheme, unknown namespace, empty element, `..`,
 *   malformed element or a storage key over {@link MAX_KEY_BYTES} bytes.
 */
export function parseUrn(input: unknown): ParsedUrn {
  if (typeof input !== 'string') throw new InvalidUrnError(`URN must be a string, got ${typeof input}`);
  const prefix = `${URN_NAMESPACE}:`;
  if (!input.startsWith(prefix)) {
    throw new InvalidUrnError(`URN must start with "${prefix}": ${preview(input)}`);
  }
  const keyBytes = Buffer.byteLength(input, 'utf8') + KEY_SUFFIX.length;
  if (keyBytes > MAX_KEY_BYTES) {
    throw new InvalidUrnError(
      `URN too long: its key would be ${keyBytes} bytes (S3 allows ${MAX_KEY_BYTES})`,
    );
  }
  const path = input.slice(prefix.length);
  if (path.length === 0) throw new InvalidUrnError('URN has an empty path');
  const parts = path.split('/');
  const elements = parts.map((part, index) => {
    if (part.length === 0)
      throw new InvalidUrnError(`URN has an empty element at position ${index}: ${preview(input)}`);
    if (part === '..' || part === '.')
      throw new InvalidUrnError(`URN contains a "${part}" element: ${preview(input)}`);
    const match = ELEMENT.exec(part);
    if (!match) {
      throw new InvalidUrnError(
        `URN element "${preview(part)}" is not "<namespace>.<Name>.<${HASH_LENGTH} hex>" in ${preview(input)}`,
      );
    }
    const [, namespace, name, hash] = match as unknown as [string, string, string, string];
    if (!(KNOWN_NAMESPACES as readonly string[]).includes(namespace)) {
      throw new InvalidUrnError(`URN element "${part}" has unknown namespace "${namespace}"`);
    }
    return { type: `${namespace}.${name}`, namespace, name, hash };
  });
  return { urn: input, elements };
}

/** True when `input` parses as a URN. */
export function isUrn(input: unknown): input is string {
  try {
    parseUrn(input);
    return true;
  } catch {
    return false;
  }
}

/**
 * Deterministic hash over parent + type + name (seed step 06): the same logical resource
 * always gets the same URN. Returns {@link HASH_LENGTH} lowercase hex characters.
 */
export function generateHash(parent: string | undefined, type: string, name: string): string {
  return createHash('sha256')
    .update(`${parent ?? ''}\u0000${type}\u0000${name}`)
    .digest('hex')
    .slice(0, HASH_LENGTH);
}

/**
 * Builds the URN of a resource of `type` named `name` under `parent` (or at the root).
 * @throws InvalidUrnError when the result is not a valid URN (unknown type, too deep).
 */
export function childUrn(parent: string | undefined, type: string, name: string): string {
  const element = `${type}.${generateHash(parent, type, name)}`;
  const urn = parent ? `${parent}/${element}` : `${URN_NAMESPACE}:${element}`;
  parseUrn(urn);
  return urn;
}

/** Parent URN, or undefined for a root resource. */
export function parentOf(urn: string): string | undefined {
  const slash = urn.lastIndexOf('/');
  return slash === -1 ? undefined : urn.slice(0, slash);
}

/** `namespace.Name` of the last element. @throws InvalidUrnError */
export function typeOf(urn: string): string {
  const { elements } = parseUrn(urn);
  return (elements[elements.length - 1] as UrnElement).type;
}

/** The URN prefix of the root resource (the conversation for conversation-scoped resources). */
export function rootOf(urn: string): string {
  const slash = urn.indexOf('/');
  return slash === -1 ? urn : urn.slice(0, slash);
}

/** Ancestors of a URN, root first, excluding the URN itself. */
export function ancestorsOf(urn: string): string[] {
  const parts = urn.split('/');
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** Storage key of a resource: `<urn>.json`. */
export function keyOf(urn: string): string {
  return `${urn}${KEY_SUFFIX}`;
}

/**
 * URN stored under `key`, or undefined when the key is not a resource key.
 * Never throws: keys come from listings and events and are validated by the caller.
 */
export function urnOfKey(key: string): string | undefined {
  if (!key.endsWith(KEY_SUFFIX)) return undefined;
  const urn = key.slice(0, -KEY_SUFFIX.length);
  return isUrn(urn) ? urn : undefined;
}

/** True when `urn` is `ancestor` or lies under it (path-boundary aware: c1 is not under c10). */
export function isWithin(urn: string, ancestor: string): boolean {
  return urn === ancestor || urn.startsWith(`${ancestor}/`);
}

function preview(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
