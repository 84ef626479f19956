import { LruCache } from '../cache/lru.js';
import { PolicyDeniedError, ValidationError } from '../errors.js';
import type { Action, Actor, Decision, Policy, PolicyInput } from '../policy/port.js';
import type { StorageInterface } from '../storage/port.js';
import { keyOf, keyPrefixOf, parseUrn, urnOfKey } from '../urn.js';
import { assertMetaConsistent } from './meta.js';
import { type AnyResource, parseResource, type ResourceOf, type ResourceType } from './schemas.js';

/** Result of {@link ResourceIndex.put}. */
export interface PutOutcome<R> {
  /** True when this put created the resource; false when it existed (the stored one is returned). */
  created: boolean;
  /** The resource as stored: on `created: false`, the earlier writer's content, not the argument. */
  resource: R;
}

/** Options for {@link ResourceIndex.list}. */
export interface ListOptions {
  /** Only resources whose last element has this type. */
  type?: ResourceType;
  /** Only direct children of the prefix URN (default: the whole subtree). */
  childrenOnly?: boolean;
}

/** Bounds of the {@link ResourceIndex} read cache. */
export interface ResourceCacheOptions {
  /**
   * At most this many resources (default 10,000; 0 turns the cache off; at most 10,000,000). The
   * cache's arrays are allocated for this many up front: about 23 bytes each.
   */
  maxEntries?: number;
  /** At most this many bytes of stored JSON (default 32 MiB). */
  maxBytes?: number;
}

/** Default bounds of the read cache: 10,000 resources, 32 MiB of their JSON. */
export const DEFAULT_RESOURCE_CACHE: Required<ResourceCacheOptions> = {
  maxEntries: 10_000,
  maxBytes: 32 * 1024 * 1024,
};

/**
 * The Resource index (seed roadmap-v1 step 06 `ResourceIndex`): typed, policy-gated access to
 * resources in storage. Every get, list and put is decided by the `Policy` for the actor first;
 * stored JSON is parsed with the type's schema on the way out and validated on the way in.
 *
 * Resources are create-only and never change once written, so what this index read or wrote is
 * kept, parsed and validated, in a bounded LRU cache (per instance: per process locally, per
 * warm container in Lambda, where the Deps are composed once) and not read again; "not found"
 * is never cached. The cache holds resources, never decisions: the policy is asked on every
 * call, hit or miss. Cached resources are deeply frozen, since every caller shares them.
 */
export class ResourceIndex {
  private readonly cache: LruCache<string, AnyResource> | undefined;

  constructor(
    private readonly storage: StorageInterface,
    private readonly policy: Policy,
    cache: ResourceCacheOptions = {},
  ) {
    const bounds = { ...DEFAULT_RESOURCE_CACHE, ...cache };
    this.cache = bounds.maxEntries > 0 ? new LruCache(bounds.maxEntries, bounds.maxBytes) : undefined;
  }

  /** Hits, misses and evictions of the read cache (benchmarks, tests). */
  get cacheStats(): Readonly<{ hits: number; misses: number; evictions: number }> {
    return this.cache?.stats ?? { hits: 0, misses: 0, evictions: 0 };
  }

  /**
   * Gets one resource.
   * @throws PolicyDeniedError, NotFoundError, InvalidUrnError, ValidationError (stored JSON malformed)
   */
  async get(actor: Actor, urn: string): Promise<AnyResource> {
    parseUrn(urn);
    this.authorize(actor, 'get', [urn]);
    const cached = this.cache?.get(urn);
    if (cached) return cached;
    return this.remember(urn, await this.storage.get(keyOf(urn)));
  }

  /** Gets one resource of a known type. @throws as {@link get}, and ValidationError for another type. */
  async getAs<T extends ResourceType>(actor: Actor, type: T, urn: string): Promise<ResourceOf<T>> {
    return this.ofType(await this.get(actor, urn), type);
  }

  /** `resource` as a `type`. @throws ValidationError when it is of another type */
  private ofType<T extends ResourceType>(resource: AnyResource, type: T): ResourceOf<T> {
    // It was parsed with its own type's schema when read: only the type is left to check.
    if (resource.meta.type !== type)
      throw new ValidationError(`expected ${type}, got ${resource.meta.type} (${resource.meta.id})`);
    return resource as ResourceOf<T>;
  }

  /**
   * Gets a resource of a type, or undefined when it does not exist. A missing resource is an
   * expected answer here (a lookup of an output not written yet), so it is asked with the
   * storage's `getMany`, which reports it as absent: no NotFoundError (and its stack trace) is
   * built for it.
   * @throws as {@link getAs}, except NotFoundError
   */
  async find<T extends ResourceType>(actor: Actor, type: T, urn: string): Promise<ResourceOf<T> | undefined> {
    parseUrn(urn);
    this.authorize(actor, 'get', [urn]);
    let resource = this.cache?.get(urn);
    if (!resource) {
      const key = keyOf(urn);
      const data = (await this.storage.getMany([key])).get(key);
      if (data === undefined) return undefined;
      resource = this.remember(urn, data);
    }
    return this.ofType(resource, type);
  }

  /**
   * Gets several resources; missing ones are absent from the result (order of `urns` kept).
   * @throws PolicyDeniedError when any URN is denied (all-or-nothing, as the policy decides)
   */
  async getMany(actor: Actor, urns: readonly string[]): Promise<AnyResource[]> {
    if (urns.length === 0) return [];
    for (const urn of urns) parseUrn(urn);
    this.authorize(actor, 'get', urns);
    const known = new Map<string, AnyResource>();
    const missing: string[] = [];
    for (const urn of urns) {
      const cached = this.cache?.get(urn);
      if (cached) known.set(urn, cached);
      else missing.push(urn);
    }
    if (missing.length > 0) {
      const found = await this.storage.getMany(missing.map(keyOf));
      for (const urn of missing) {
        const data = found.get(keyOf(urn));
        if (data) known.set(urn, this.remember(urn, data));
      }
    }
    const result: AnyResource[] = [];
    for (const urn of urns) {
      const resource = known.get(urn);
      if (resource) result.push(resource);
    }
    return result;
  }

  /**
   * Lists resources under `urn` (its subtree, not itself), sorted by key.
   * @throws PolicyDeniedError when the actor may not list that subtree
   */
  async list(actor: Actor, urn: string, options: ListOptions = {}): Promise<AnyResource[]> {
    const urns = await this.listUrns(actor, urn, options);
    return this.getMany(actor, urns);
  }

  /** URNs under `urn` (not itself), filtered as {@link list}. @throws PolicyDeniedError */
  async listUrns(actor: Actor, urn: string, options: ListOptions = {}): Promise<string[]> {
    parseUrn(urn);
    this.authorize(actor, 'list', [urn]);
    // Direct children: a delimited listing (S3 `Delimiter: '/'`), which reads only their folder.
    const keys = await this.storage.findByPrefix(
      keyPrefixOf(urn),
      options.childrenOnly ? { delimiter: '/' } : {},
    );
    const urns: string[] = [];
    for (const key of keys) {
      const child = urnOfKey(key);
      if (child === undefined) continue;
      if (options.childrenOnly && child.indexOf('/', urn.length + 1) !== -1) continue;
      if (options.type && !child.slice(child.lastIndexOf('/') + 1).startsWith(`${options.type}.`)) continue;
      urns.push(child);
    }
    return urns;
  }

  /**
   * Creates a resource (create-only). Validates it against its type's schema and its meta
   * against its URN, asks the policy, then writes its key (`keyOf`: `cld/<path>_<shape>.json`). When the resource already
   * exists nothing is written and the stored resource is returned: callers continue with what
   * the first writer stored, which makes retried and duplicated handlers converge.
   * @throws ValidationError, PolicyDeniedError
   */
  async put<R extends AnyResource>(actor: Actor, resource: R): Promise<PutOutcome<R>> {
    const parsed = parseResource(resource) as R;
    assertMetaConsistent(parsed.meta);
    this.authorize(actor, 'put', [parsed.meta.id]);
    const json = JSON.stringify(parsed);
    const { created } = await this.storage.put(keyOf(parsed.meta.id), json);
    if (created) {
      this.cache?.set(parsed.meta.id, deepFreeze(parsed), Buffer.byteLength(json));
      return { created, resource: parsed };
    }
    const stored =
      this.cache?.get(parsed.meta.id) ??
      this.remember(parsed.meta.id, await this.storage.get(keyOf(parsed.meta.id)));
    if (stored.meta.type !== parsed.meta.type) {
      throw new ValidationError(`stored ${parsed.meta.id} has type ${stored.meta.type}`);
    }
    return { created, resource: stored as R };
  }

  /** Decodes stored bytes and keeps the resource in the cache. @throws as decode */
  private remember(urn: string, data: Buffer): AnyResource {
    const resource = decode(urn, data);
    if (!this.cache) return resource;
    this.cache.set(urn, deepFreeze(resource), data.length);
    return resource;
  }

  /**
   * The policy's decision on `input` as it is, for the actions that are not a storage access
   * (`execute`: shared/domain/tool.ts asks before it runs a call). Never throws.
   */
  decide(input: PolicyInput): Decision {
    return this.policy.evaluate(input);
  }

  /**
   * Asks the policy. @throws PolicyDeniedError with the policy's reason in `details.reason`
   */
  authorize(actor: Actor, action: Action, resources: readonly string[]): void {
    const decision = this.policy.evaluate({ actor, action, resources });
    if (!decision.allow) {
      throw new PolicyDeniedError(`policy denied ${action}: ${decision.reason}`, {
        details: { reason: decision.reason, actor: actor.id, kind: actor.kind, action },
      });
    }
  }
}

/** Freezes an object and everything reachable from it (plain JSON data); returns it. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function decode(urn: string, data: Buffer): AnyResource {
  let json: unknown;
  try {
    json = JSON.parse(data.toString('utf8'));
  } catch (error) {
    throw new ValidationError(`stored ${urn} is not JSON`, { cause: error });
  }
  const resource = parseResource(json);
  if (resource.meta.id !== urn) throw new ValidationError(`stored ${urn} claims id ${resource.meta.id}`);
  // The id alone does not bind type, parent and name: a Task stored under a Message URN would pass.
  assertMetaConsistent(resource.meta);
  return resource;
}
