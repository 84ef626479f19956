import { createHash } from 'node:crypto';
import { GenerationalMemo } from './cache/memo.js';
import { InvalidUrnError } from './errors.js';

/**
 * URNs: `cld:<path>`, the path being the parent's path plus this resource's element,
 * joined by `/`; an element is `<namespace>.<Name>.<hash>` (DESIGN.md "URNs", seed
 * roadmap-v1 step 06).
 *
 * Storage keys ({@link keyOf}): `cld/<path>_<shape>.json`, where the shape is the Names of the
 * path's types joined by `-` (`Conversation-Message-Task-Message`), the last Name being `Output`
 * for a task's output Message ({@link shapeOf}). Keys consist only of letters, digits and
 * `-_./`, characters S3 never escapes in event notifications, so the key an `Object Created`
 * event carries is the stored key, URL-encoded or not. The shape lets EventBridge patterns match
 * exactly the resources a step acts on (shared/events/routing.ts). A subtree is listed by the
 * key prefix `cld/<path>/` ({@link keyPrefixOf}).
 */

/** The URN namespace (`urn_namespace` in the seeds). */
export const URN_NAMESPACE = 'cld';

/** Resource namespaces this system knows; anything else is rejected by the parser. */
export const KNOWN_NAMESPACES = ['common', 'plan', 'tool', 'doc'] as const;

/** S3 object keys are at most 1,024 bytes (UTF-8); the key of a URN ({@link keyOf}) must fit. */
export const MAX_KEY_BYTES = 1024;

/** Length of the hex hash in an element (64 bits of SHA-256). */
export const HASH_LENGTH = 16;

/** Suffix of the storage key of every resource. */
export const KEY_SUFFIX = '.json';

/** Prefix of the storage key of every resource (the URN's `cld:` with `/` for `:`). */
export const KEY_PREFIX = `${URN_NAMESPACE}/`;

/** Separates the URN path from the shape in a key; it never occurs in a URN path. */
export const SHAPE_SEPARATOR = '_';

/** Joins the type Names of a shape. */
export const SHAPE_JOINER = '-';

/** `meta.name` of a task's output Message (shared/domain/common.ts `NAMES.output`). */
export const OUTPUT_NAME = 'output';

/** The last Name of the shape of a task's output Message, instead of `Message`. */
export const OUTPUT_SHAPE = 'Output';

const ELEMENT = /^([a-z]+)\.([A-Z][A-Za-z0-9]*)\.([0-9a-f]{16})$/;

/** One path element of a URN. */
export interface UrnElement {
  /** `namespace.Name`, for example `plan.Task`. */
  type: string;
  namespace: string;
  name: string;
  hash: string;
}

/** A parsed URN: the original string plus its elements, root first (frozen: parses are shared). */
export interface ParsedUrn {
  readonly urn: string;
  readonly elements: readonly Readonly<UrnElement>[];
}

/**
 * Valid URNs parsed recently (per process; at most 2 × 10,000): a URN is parsed on every get,
 * put, key and policy check of its resource, and the parse of a string never changes. Failures
 * are not kept (they are rare and throw anyway).
 */
const parsedUrns = new GenerationalMemo<string, ParsedUrn>(10_000);

/** Shapes ({@link shapeOf}) and keys ({@link keyOf}) of recent URNs, URNs of recent keys ({@link urnOfKey}; `''`: not a resource key). */
const shapes = new GenerationalMemo<string, string>(10_000);
const keys = new GenerationalMemo<string, string>(10_000);
const urnsOfKeys = new GenerationalMemo<string, string>(10_000);

/**
 * Parses a URN strictly. The result is frozen and may be shared with other callers (valid
 * URNs are remembered, see `parsedUrns`).
 * @throws InvalidUrnError for a wrong scheme, unknown namespace, empty element, `..`,
 *   malformed element or a storage key over {@link MAX_KEY_BYTES} bytes.
 */
export function parseUrn(input: unknown): ParsedUrn {
  if (typeof input === 'string') {
    const known = parsedUrns.get(input);
    if (known) return known;
  }
  const parsed = parseUrnStrictly(input);
  parsedUrns.set(parsed.urn, parsed);
  return parsed;
}

function parseUrnStrictly(input: unknown): ParsedUrn {
  if (typeof input !== 'string') throw new InvalidUrnError(`URN must be a string, got ${typeof input}`);
  const prefix = `${URN_NAMESPACE}:`;
  if (!input.startsWith(prefix)) {
    throw new InvalidUrnError(`URN must start with "${prefix}": ${preview(input)}`);
  }
  // The key is longer than the URN plus separator and suffix: a cheap bound before parsing.
  const atLeast = Buffer.byteLength(input, 'utf8') + SHAPE_SEPARATOR.length + KEY_SUFFIX.length;
  if (atLeast > MAX_KEY_BYTES) throw tooLong(atLeast, 'at least ');
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
    return Object.freeze({ type: `${namespace}.${name}`, namespace, name, hash });
  });
  const parsed: ParsedUrn = Object.freeze({ urn: input, elements: Object.freeze(elements) });
  // `Output` is one byte shorter than `Message`: hash only when that byte decides.
  const plain = keyBytesOf(parsed, false);
  if (plain > MAX_KEY_BYTES && !(plain === MAX_KEY_BYTES + 1 && isTaskOutput(parsed)))
    throw tooLong(plain, '');
  return parsed;
}

function tooLong(bytes: number, qualifier: string): InvalidUrnError {
  return new InvalidUrnError(
    `URN too long: its key would be ${qualifier}${bytes} bytes (S3 allows ${MAX_KEY_BYTES})`,
  );
}

/** Bytes of the key of a parsed URN, with the plain shape or the output shape. */
function keyBytesOf(parsed: ParsedUrn, output: boolean): number {
  const names = parsed.elements.reduce((sum, element) => sum + element.name.length, 0);
  const shape = names + (parsed.elements.length - 1) * SHAPE_JOINER.length;
  const last = parsed.elements[parsed.elements.length - 1] as UrnElement;
  return (
    KEY_PREFIX.length +
    (parsed.urn.length - URN_NAMESPACE.length - 1) +
    SHAPE_SEPARATOR.length +
    shape -
    (output ? last.name.length - OUTPUT_SHAPE.length : 0) +
    KEY_SUFFIX.length
  );
}

/**
 * True when the URN is a task's output Message: a `common.Message` directly under a `plan.Task`
 * whose hash is the one of the name {@link OUTPUT_NAME} (so it is decided from the URN alone).
 */
function isTaskOutput(parsed: ParsedUrn): boolean {
  const { elements, urn } = parsed;
  const last = elements[elements.length - 1] as UrnElement;
  const parent = elements[elements.length - 2];
  if (last.type !== 'common.Message' || parent?.type !== 'plan.Task') return false;
  return last.hash === generateHash(urn.slice(0, urn.lastIndexOf('/')), last.type, OUTPUT_NAME);
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
  const input = `${parent ?? ''}\u0000${type}\u0000${name}`;
  const known = childUrns.get(input);
  if (known !== undefined) return known;
  const element = `${type}.${generateHash(parent, type, name)}`;
  const urn = parent ? `${parent}/${element}` : `${URN_NAMESPACE}:${element}`;
  parseUrn(urn);
  childUrns.set(input, urn);
  return urn;
}

/**
 * URNs of recent children ({@link childUrn}) by parent, type and name: a resource's URN is
 * computed when it is built, again when it is put (its meta is checked against its URN) and
 * whenever a step looks for it by name, each time a SHA-256.
 */
const childUrns = new GenerationalMemo<string, string>(10_000);

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

/**
 * The shape of a URN: the Names of its types, root first, joined by `-`; the last is `Output`
 * instead of `Message` for a task's output Message. For example
 * `Conversation-Message-Task-Task-Output`. Type Names are unique across namespaces
 * (test/unit/urn.test.ts), so the shape names the type path.
 * @throws InvalidUrnError
 */
export function shapeOf(urn: string): string {
  const known = shapes.get(urn);
  if (known !== undefined) return known;
  const parsed = parseUrn(urn);
  const names = parsed.elements.map((element) => element.name);
  if (isTaskOutput(parsed)) names[names.length - 1] = OUTPUT_SHAPE;
  const shape = names.join(SHAPE_JOINER);
  shapes.set(urn, shape);
  return shape;
}

/**
 * Storage key of a resource: `cld/<path>_<shape>.json` (the URN with `/` for `:`, then
 * `_`, {@link shapeOf}, `.json`), e.g. `cld:common.Conversation.1f…/common.Message.2e…` →
 * `cld/common.Conversation.1f…/common.Message.2e…_Conversation-Message.json`. Only letters,
 * digits and `-_./`. One key per URN and one URN per key ({@link urnOfKey}).
 * @throws InvalidUrnError
 */
export function keyOf(urn: string): string {
  const known = keys.get(urn);
  if (known !== undefined) return known;
  const shape = shapeOf(urn);
  const key = `${KEY_PREFIX}${urn.slice(URN_NAMESPACE.length + 1)}${SHAPE_SEPARATOR}${shape}${KEY_SUFFIX}`;
  keys.set(urn, key);
  return key;
}

/**
 * The key prefix of a URN's subtree, `cld/<path>/`: listing it returns the keys of every
 * resource under the URN (not of the URN itself), and of nothing else.
 * @throws InvalidUrnError
 */
export function keyPrefixOf(urn: string): string {
  parseUrn(urn);
  return `${KEY_PREFIX}${urn.slice(URN_NAMESPACE.length + 1)}/`;
}

/**
 * URN stored under `key`, or undefined when the key is not a resource key (not
 * `cld/<path>_<shape>.json` with a valid URN path and the shape of that URN).
 * Never throws: keys come from listings and events and are validated by the caller.
 */
export function urnOfKey(key: string): string | undefined {
  let urn = urnsOfKeys.get(key);
  if (urn === undefined) {
    urn = urnOfKeyStrictly(key) ?? '';
    urnsOfKeys.set(key, urn);
  }
  return urn === '' ? undefined : urn;
}

function urnOfKeyStrictly(key: string): string | undefined {
  if (!key.startsWith(KEY_PREFIX) || !key.endsWith(KEY_SUFFIX)) return undefined;
  const body = key.slice(KEY_PREFIX.length, -KEY_SUFFIX.length);
  const separator = body.indexOf(SHAPE_SEPARATOR);
  if (separator === -1) return undefined;
  const urn = `${URN_NAMESPACE}:${body.slice(0, separator)}`;
  try {
    return shapeOf(urn) === body.slice(separator + 1) ? urn : undefined;
  } catch {
    return undefined;
  }
}

/** True when `urn` is `ancestor` or lies under it (path-boundary aware: c1 is not under c10). */
export function isWithin(urn: string, ancestor: string): boolean {
  return urn === ancestor || urn.startsWith(`${ancestor}/`);
}

function preview(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
