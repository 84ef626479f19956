import { ValidationError } from '../errors.js';
import { childUrn, parseUrn } from '../urn.js';
import type { ResourceMeta, ResourceType } from './schemas.js';

/** The four description fields (seed roadmap-v2 "Resource Metadata Enhancement"). */
export interface Description {
  purpose?: string;
  instructions?: string;
  applicability?: string;
  evaluation?: string;
}

/** What `withMeta()` needs to identify a resource. */
export interface MetaInput extends Description {
  type: ResourceType;
  name: string;
  parent?: string | undefined;
  tokens?: number;
  score?: number;
  /** Content version (catalog definitions): part of the identity, see {@link identityName}. */
  version?: string | undefined;
}

/**
 * The name a resource's hash is computed over: its name, or `<name>@<version>` when it has a
 * content version (catalog Assistants and Tools), so each version of a definition has its own URN.
 */
export function identityName(name: string, version: string | undefined): string {
  return version === undefined ? name : `${name}@${version}`;
}

/**
 * Builds complete resource `meta` (seed step 06 `withMeta()`): the hash is deterministic over
 * parent + type + name (+ content version, {@link identityName}), so the same logical resource
 * always gets the same URN.
 * `createdAt` is set from `now` (ISO 8601).
 * @throws InvalidUrnError when the parent is malformed or the URN would be too long.
 */
export function withMeta(input: MetaInput, now: Date = new Date()): ResourceMeta {
  if (input.parent !== undefined) parseUrn(input.parent);
  const id = childUrn(input.parent, input.type, identityName(input.name, input.version));
  const hash = id.slice(id.lastIndexOf('.') + 1);
  return {
    id,
    name: input.name,
    type: input.type,
    ...(input.parent !== undefined ? { parent: input.parent } : {}),
    hash,
    ...(input.version !== undefined ? { version: input.version } : {}),
    purpose: input.purpose ?? '',
    instructions: input.instructions ?? '',
    applicability: input.applicability ?? '',
    evaluation: input.evaluation ?? '',
    ...(input.tokens !== undefined ? { tokens: input.tokens } : {}),
    ...(input.score !== undefined ? { score: input.score } : {}),
    createdAt: now.toISOString(),
  };
}

/**
 * Compiles the four description fields into the structured text used for similarity search
 * (seed step 06 `toDescription()`): `**Purpose:** ...` sections joined by blank lines,
 * empty fields left out.
 */
export function toDescription(meta: Description): string {
  const sections: string[] = [];
  if (meta.purpose) sections.push(`**Purpose:** ${meta.purpose}`);
  if (meta.instructions) sections.push(`**Instructions:** ${meta.instructions}`);
  if (meta.applicability) sections.push(`**Applicability:** ${meta.applicability}`);
  if (meta.evaluation) sections.push(`**Evaluation:** ${meta.evaluation}`);
  return sections.join('\n\n');
}

/**
 * Checks that a resource's meta is consistent with its URN (type, parent, hash).
 * @throws ValidationError when stored JSON claims an identity its URN does not have.
 */
export function assertMetaConsistent(meta: ResourceMeta): void {
  const expected = childUrn(meta.parent, meta.type, identityName(meta.name, meta.version));
  if (expected !== meta.id || !expected.endsWith(`.${meta.hash}`)) {
    throw new ValidationError(`meta of ${meta.id} does not match its URN (expected ${expected})`);
  }
}
