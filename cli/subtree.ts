import { join } from 'node:path';
import { SYSTEM_ACTOR } from '../shared/policy/port.js';
import { builtinPolicy } from '../shared/policy/select.js';
import { ResourceIndex } from '../shared/resources/resource-index.js';
import type { AnyResource } from '../shared/resources/schemas.js';
import { FilesystemStorage } from '../shared/storage/filesystem.js';
import { parseUrn } from '../shared/urn.js';

/**
 * The embedded default's resources under `dataDir` (`<dataDir>/resources`, the built-in policy),
 * for commands that only read (`show`, `approvals list`): no bus, handlers, search index or
 * catalog is loaded, so they start in a fraction of `ask`'s time (issue 23, item 5).
 */
export function readOnlyResources(dataDir: string): ResourceIndex {
  return new ResourceIndex(new FilesystemStorage(join(dataDir, 'resources')), builtinPolicy());
}

/** The resource at `urn` (when stored) and everything under it, read as the operator. */
export async function subtreeOf(resources: ResourceIndex, urn: string): Promise<AnyResource[]> {
  const self = await resources
    .find(SYSTEM_ACTOR, parseUrn(urn).elements.at(-1)?.type as never, urn)
    .catch(() => undefined);
  const below = await resources.list(SYSTEM_ACTOR, urn);
  return self ? [self as AnyResource, ...below] : below;
}
