import { identifierParts, processTerm, termsOf } from './terms.js';

/**
 * Which module a question is about, from the documentation's own code (issue 11): code examples
 * import modules under an alias (`import * as s3 from 'aws-cdk-lib/aws-s3'`) and then use the
 * names those modules define (`new s3.Bucket(…)`, `iam.PolicyStatement`, `lambda.Function`).
 * Collected over every indexed chunk, this says which document folder *owns* each API name; a
 * question whose words spell a name ("a custom event bus" → `EventBus`, "a policy statement" →
 * `PolicyStatement`, "run a function" → `Function`) is then likely about the folder that owns it,
 * even when it never names the module. Nothing here is specific to one corpus: aliases are
 * resolved to folders by the last path segment of the import (`aws-s3` ↔ a folder `…/aws-s3/`).
 */

/** `import * as alias from '…/segment'` and `import { … } as` forms are not needed: the namespace form is what docs use. */
const NAMESPACE_IMPORT = /\bimport\s+\*\s+as\s+([A-Za-z_$][\w$]*)\s+from\s+['"]([^'"\n]+)['"]/g;
/** A qualified use of an exported name: `alias.Name` (the name starts with a capital letter). */
const QUALIFIED_NAME = /(?<![\w$.])([a-z_$][\w$]*)\.([A-Z][A-Za-z0-9]*)\b/g;

/** {@link NameOwners.toResolved}: per owned name, its index terms and its owners with their shares. */
export type ResolvedOwners = [terms: string[], owners: [folder: string, share: number][]][];

/** A name and the share of its uses per owning folder. */
interface Owned {
  /** Index terms of the name's parts (`PolicyStatement` → `polici`, `statement`). */
  terms: string[];
  /** Folder and share of the name's qualified uses that resolve to it (0–1), each folder once. */
  owners: Iterable<readonly [string, number]>;
}

/**
 * Ownership of API names by document folders, built incrementally from chunk texts
 * ({@link add}) and queried per question ({@link prior}).
 */
export class NameOwners {
  /** alias → import path segment → count. */
  private readonly aliases = new Map<string, Map<string, number>>();
  /** `alias.Name` → count. */
  private readonly uses = new Map<string, number>();
  /** Last segment of a document folder → the folders with it. */
  private readonly folders = new Map<string, Set<string>>();
  private resolved: Owned[] | undefined;

  /** Counts the imports and qualified names of one chunk of the document at `source` (its path). */
  add(text: string, source: string | undefined): void {
    const folder = source ? folderOf(source) : undefined;
    if (folder) {
      const segment = folder.slice(folder.lastIndexOf('/') + 1);
      const set = this.folders.get(segment) ?? new Set<string>();
      set.add(folder);
      this.folders.set(segment, set);
    }
    if (!text.includes('.')) return;
    for (const match of text.matchAll(NAMESPACE_IMPORT)) {
      const alias = match[1] as string;
      const path = (match[2] as string).replace(/\/+$/, '');
      const segment = path.slice(path.lastIndexOf('/') + 1);
      const counts = this.aliases.get(alias) ?? new Map<string, number>();
      counts.set(segment, (counts.get(segment) ?? 0) + 1);
      this.aliases.set(alias, counts);
    }
    for (const match of text.matchAll(QUALIFIED_NAME)) {
      const key = `${match[1]}.${match[2]}`;
      this.uses.set(key, (this.uses.get(key) ?? 0) + 1);
    }
    this.resolved = undefined;
  }

  /**
   * The folders the question is likely about, each with a weight in (0, 1] (1 for the best):
   * for every owned name all of whose parts are among the question's terms, its owners gain
   * share × number of parts (a two-word name such as `EventBus` says more than `Function`); a
   * folder keeps its best. Empty when no name matches.
   */
  prior(question: string): Map<string, number> {
    const terms = new Set(termsOf(question));
    const weights = new Map<string, number>();
    for (const { terms: parts, owners } of this.names()) {
      if (!parts.every((part) => terms.has(part))) continue;
      for (const [folder, share] of owners) {
        const weight = share * parts.length;
        if (weight > (weights.get(folder) ?? 0)) weights.set(folder, weight);
      }
    }
    const best = Math.max(0, ...weights.values());
    if (best > 0) for (const [folder, weight] of weights) weights.set(folder, weight / best);
    return weights;
  }

  /**
   * The resolved ownership as plain JSON (`[name terms, [folder, share][]][]`), all that
   * {@link prior} reads: what the sharded index stores so a cold start need not re-read every
   * chunk text (shared/search/shard-pack.ts).
   */
  toResolved(): ResolvedOwners {
    return this.names().map(({ terms, owners }) => [
      terms,
      Array.from(owners, ([folder, share]) => [folder, share]),
    ]);
  }

  /** Ownership from {@link toResolved}'s output; answers {@link prior} exactly as the original. Read-only: {@link add} starts over from the counts, which it does not have. */
  static fromResolved(resolved: ResolvedOwners): NameOwners {
    const owners = new NameOwners();
    // As read (a cold search's core holds ≈ 1,000 names): no Map or copy per name.
    owners.resolved = resolved.map(([terms, shares]) => ({ terms, owners: shares }));
    return owners;
  }

  /** Names with their owners: each `alias.Name` use resolved through the alias's most imported folder. */
  private names(): Owned[] {
    if (this.resolved) return this.resolved;
    const folderOfAlias = new Map<string, Set<string>>();
    for (const [alias, segments] of this.aliases) {
      const known = [...segments].filter(([segment]) => this.folders.has(segment));
      known.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
      const top = known[0];
      if (top) folderOfAlias.set(alias, this.folders.get(top[0]) as Set<string>);
    }
    const counts = new Map<string, Map<string, number>>();
    for (const [key, count] of this.uses) {
      const dot = key.indexOf('.');
      const folders = folderOfAlias.get(key.slice(0, dot));
      if (!folders) continue;
      const name = key.slice(dot + 1);
      const owners = counts.get(name) ?? new Map<string, number>();
      for (const folder of folders) owners.set(folder, (owners.get(folder) ?? 0) + count);
      counts.set(name, owners);
    }
    const resolved: Owned[] = [];
    for (const [name, owners] of counts) {
      const terms = identifierParts(name)
        .map((part) => processTerm(part))
        .filter((term): term is string => term !== null);
      if (terms.length === 0) continue;
      const total = [...owners.values()].reduce((sum, count) => sum + count, 0);
      resolved.push({
        terms,
        owners: new Map([...owners].map(([folder, count]) => [folder, count / total])),
      });
    }
    this.resolved = resolved;
    return resolved;
  }
}

/** The folder of a document path (`a/b/README.md` → `a/b`), or undefined for a top-level file. */
export function folderOf(source: string): string | undefined {
  const slash = source.lastIndexOf('/');
  return slash > 0 ? source.slice(0, slash) : undefined;
}
