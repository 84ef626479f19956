import { DataFactory, type Quad, type Term } from 'n3';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import type { GraphIndex } from './graph-index.js';
import { type Hop, type MemberFilter, matchesFilter } from './structure.js';
import { compactIri, namespaceOf, PREFIXES, V } from './vocabulary.js';

/**
 * Graph queries over the graph index: basic graph patterns (a few triple patterns joined on
 * `?variables`, as a SPARQL basic graph pattern), `describe` of one entity, both bounded and
 * paginated. Shards are loaded lazily: a pattern whose subject or object is a known entity
 * loads that entity's shard, so a query touches only the modules it names.
 */

const { namedNode, literal, variable } = DataFactory;

/** Most intermediate solutions a query may build before it is refused as too broad. */
export const MAX_SOLUTIONS = 20_000;

/** Predicates whose triples are copied with a subject's cross-shard triples. */
const IDENTITY = new Set<string>([V.type.value, V.label.value]);

/** Most shards one query may load. */
export const MAX_SHARDS_PER_QUERY = 8;

/** Triples per direction `describe` returns at most (totals are reported). */
export const DESCRIBE_LIMIT = 60;

/** A parsed pattern term. */
export type PatternTerm = Term;

/**
 * Parses one term of a pattern: `?name` (variable), `<iri>`, a prefixed name (`jsii:Class`,
 * `rdfs:label`), a `cld:` URN, `"text"` with optional `@lang` or `^^datatype`, `true`/`false`, or
 * a number. A bare word that is none of these is read as a plain literal.
 * @throws ValidationError for a malformed term (unknown prefix, unterminated IRI or literal)
 */
export function parseTerm(text: string): PatternTerm {
  const t = text.trim();
  if (t.length === 0) throw new ValidationError('empty pattern term');
  if (t.startsWith('?')) {
    if (!/^\?[A-Za-z_][A-Za-z0-9_]*$/.test(t)) throw new ValidationError(`bad variable name: ${t}`);
    return variable(t.slice(1));
  }
  if (t.startsWith('<')) {
    if (!t.endsWith('>') || t.length < 3 || /[<>\s"{}|^`\\]/.test(t.slice(1, -1)))
      throw new ValidationError(`bad IRI: ${t.slice(0, 100)}`);
    return namedNode(t.slice(1, -1));
  }
  if (t.startsWith('"')) {
    const match = /^"((?:[^"\\]|\\.)*)"(?:@([A-Za-z]+(?:-[A-Za-z0-9]+)*)|\^\^(.+))?$/.exec(t);
    if (!match) throw new ValidationError(`bad literal: ${t.slice(0, 100)}`);
    const value = (match[1] as string).replace(/\\(.)/g, '$1');
    if (match[2]) return literal(value, match[2]);
    if (match[3]) {
      const datatype = parseTerm(match[3]);
      if (datatype.termType !== 'NamedNode') throw new ValidationError(`bad datatype: ${match[3]}`);
      return literal(value, datatype);
    }
    return literal(value);
  }
  if (t === 'true' || t === 'false') return literal(t, namedNode(`${PREFIXES.xsd}boolean`));
  if (t === 'a') return V.type;
  if (t.startsWith('cld:')) return namedNode(t);
  const prefixed = /^([A-Za-z][A-Za-z0-9_-]*):(.*)$/.exec(t);
  if (prefixed) {
    const namespace = namespaceOf(prefixed[1] as string);
    if (!namespace) {
      throw new ValidationError(
        `unknown prefix "${prefixed[1]}:" (known: ${Object.keys(PREFIXES).join(', ')}; or write <iri>)`,
      );
    }
    return namedNode(`${namespace}${prefixed[2]}`);
  }
  return literal(t);
}

/** A solution: variable name → term. */
export type Binding = Map<string, Term>;

/** What a query returns. */
export interface QueryResult {
  /** Solutions, variables → compact terms (`type:aws-cdk-lib.aws_s3.Bucket`, `"text"`). */
  bindings: Record<string, string>[];
  /** Solutions in all (before pagination). */
  total: number;
  offset: number;
  /** Offset of the next page, when there is one. */
  next?: number;
  /** The `doc.Graph` resources read, and chunks linked (`jsii:mentionedIn`) to bound entities. */
  sources: string[];
}

/**
 * Evaluates a basic graph pattern. Patterns are taken most selective first (joined variables,
 * then constants); for each solution so far the next pattern is matched against the loaded
 * shards, loading the shards of the entities it names first. A pattern with neither subject nor
 * object bound matches within the shards loaded so far.
 * @throws ValidationError when a pattern is malformed, nothing in it selects a shard (give a
 *   `module` or bind a subject or object), or the query is too broad (over
 *   {@link MAX_SOLUTIONS} intermediate solutions or {@link MAX_SHARDS_PER_QUERY} shards)
 */
export async function queryPatterns(
  graph: GraphIndex,
  actor: Actor,
  patterns: readonly (readonly [string, string, string])[],
  options: { module?: string | undefined; limit: number; offset: number },
): Promise<QueryResult> {
  const parsed = patterns.map((p, i) => {
    try {
      return p.map(parseTerm) as [Term, Term, Term];
    } catch (error) {
      throw new ValidationError(`pattern ${i + 1}: ${(error as Error).message}`, { cause: error });
    }
  });
  const session = new QuerySession(graph, actor);
  for (const key of graph.unshardedKeys()) await session.ensure(key);
  if (options.module) {
    const keys = graph.shardsNamed(options.module);
    if (keys.length === 0) throw new NotFoundError(`no graph module named "${options.module}"`);
    for (const key of keys) await session.ensure(key);
  }
  for (const [s, , o] of parsed) for (const term of [s, o]) await session.ensureFor(term);
  await session.ensureForLabels(parsed);
  if (session.loadedCount() === 0) {
    throw new ValidationError(
      'the patterns name no known entity: bind a subject or object to an entity (e.g. type:aws-cdk-lib.aws_s3.BucketProps) or a label, or give "module"',
    );
  }
  let solutions: Binding[] = [new Map()];
  const remaining = [...parsed];
  while (remaining.length > 0) {
    remaining.sort((a, b) => selectivity(b, solutions[0]) - selectivity(a, solutions[0]));
    const pattern = remaining.shift() as [Term, Term, Term];
    const next: Binding[] = [];
    for (const binding of solutions) {
      const [s, p, o] = pattern.map((term) => substitute(term, binding)) as [Term, Term, Term];
      // a subject's rdf:type and rdfs:label travel with its cross-shard triples (jsii.ts)
      const known = IDENTITY.has(p.value) && session.match(s, p, null).length > 0;
      if (!known) await session.ensureFor(s);
      await session.ensureFor(o);
      for (const quad of session.match(s, p, o)) {
        const extended = extend(binding, pattern, quad);
        if (extended) next.push(extended);
        if (next.length > MAX_SOLUTIONS) {
          throw new ValidationError(`query too broad: over ${MAX_SOLUTIONS} solutions; bind more terms`);
        }
      }
    }
    solutions = dedupe(next);
    if (solutions.length === 0) break;
  }
  const page = solutions.slice(options.offset, options.offset + options.limit);
  const bindings = page.map((b) => Object.fromEntries([...b].map(([k, v]) => [k, formatTerm(v)])));
  const chunks = new Set<string>();
  for (const binding of page)
    for (const term of binding.values()) for (const c of session.mentions(term)) chunks.add(c);
  for (const [s, , o] of parsed)
    for (const term of [s, o]) for (const c of session.mentions(term)) chunks.add(c);
  const result: QueryResult = {
    bindings,
    total: solutions.length,
    offset: options.offset,
    sources: [...session.usedUrns(), ...[...chunks].slice(0, 10)],
  };
  if (options.offset + options.limit < solutions.length) result.next = options.offset + options.limit;
  return result;
}

/** What `describe` returns. */
export interface DescribeResult {
  entity: string;
  /** `[predicate, object]` pairs, bounded by {@link DESCRIBE_LIMIT}. */
  outgoing: [string, string][];
  /** `[subject, predicate]` pairs pointing at the entity, bounded likewise. */
  incoming: [string, string][];
  totals: { outgoing: number; incoming: number };
  /**
   * Members (properties, methods, enum members) of a type, each with its own triples: those it
   * declares and those it inherits along `jsii:extends` (base classes; base interfaces of an
   * interface or struct), nearest declaration first. An inherited member has `inheritedFrom`,
   * the base that declares it.
   */
  members?: Record<string, Record<string, string>>;
  /**
   * Bases whose members are not listed: their shard is not loaded yet and is larger than
   * {@link DescribeOptions.inheritShardBytes} (`aws-cdk-lib.Resource` in the 15 MB `core` shard),
   * or reading it would pass {@link MAX_SHARDS_PER_QUERY}. Describe one to see its members.
   */
  basesNotRead?: string[];
  /**
   * The hops followed to reach `entity` (options `follow`), in order: each step's entity, the
   * predicate followed, where it led, and the sources that hold that step's triple (its
   * `doc.Graph` shard first, then chunks naming the entity), so each hop can be cited.
   */
  path?: PathStep[];
  /** The member filter applied (option `where`): members matched of those described. */
  filter?: { where: MemberFilter; matched: number; of: number };
  /** The entity is only named by triples (as an object), never described: it is in another assembly. */
  notInGraph?: true;
  sources: string[];
}

/** One hop of a {@link DescribeResult.path}. */
export interface PathStep {
  /** The entity the hop starts from. */
  entity: string;
  /** `jsii:extends`, or `jsii:property` for a property hop (the property is `member`). */
  via: string;
  /** For a property hop: the property followed (`type:…/encryption`) and its value type as written. */
  member?: string;
  valueType?: string;
  /** The entity it leads to. */
  to: string;
  /** The `doc.Graph` resources holding the hop's triple, then chunks naming `entity` (at most 3). */
  sources: string[];
}

/**
 * Largest shard (bytes of N-Quads) `describe` loads by default just to list inherited members:
 * a few hundred ms to parse at most, so one question stays within the 1 s goal.
 */
export const INHERIT_SHARD_BYTES = 2 * 1024 * 1024;

/** Options of {@link describeEntity}. */
export interface DescribeOptions {
  /** Largest shard loaded only for a base's inherited members (default {@link INHERIT_SHARD_BYTES}). */
  inheritShardBytes?: number;
  /** Hops from the entity named to the entity described (shared/graph/structure.ts). */
  follow?: readonly Hop[] | undefined;
  /** Keep only the members that meet this filter (shared/graph/structure.ts). */
  where?: MemberFilter | undefined;
}

/**
 * Describes one entity: its triples in both directions (bounded), and for a jsii type its
 * members — declared and inherited — with their label, value type, optionality, default and
 * summary. `entity` is an IRI, a prefixed name, a fully qualified name or a simple name
 * (`BucketProps`). With `follow`, the hops are taken first (the base class; the type of a
 * property) and the entity they lead to is described, each hop recorded in `path` with the
 * sources that hold it; with `where`, only the members that meet the filter are listed.
 * @throws NotFoundError for an unknown entity, a hop that leads nowhere (no base; no such
 *   property); ValidationError when a simple name is ambiguous (the candidates are listed) or a
 *   hop is (several bases; a property whose type names several types or none)
 */
export async function describeEntity(
  graph: GraphIndex,
  actor: Actor,
  entity: string,
  options: DescribeOptions = {},
): Promise<DescribeResult> {
  const session = new QuerySession(graph, actor);
  for (const key of graph.unshardedKeys()) await session.ensure(key);
  let subject = await resolveEntity(session, graph, entity);
  const maxShardBytes = options.inheritShardBytes ?? INHERIT_SHARD_BYTES;
  const path: PathStep[] = [];
  for (const hop of options.follow ?? []) {
    const step = await followHop(session, subject, hop, maxShardBytes);
    path.push(step.record);
    subject = step.next;
  }
  const pathSources = path.flatMap((step) => step.sources);
  let result: DescribeResult;
  try {
    result = await describeTerm(session, subject, maxShardBytes);
  } catch (error) {
    if (!(error instanceof NotFoundError) || path.length === 0) throw error;
    result = {
      entity: formatTerm(subject),
      outgoing: [],
      incoming: [],
      totals: { outgoing: 0, incoming: 0 },
      notInGraph: true,
      sources: [],
    };
  }
  if (path.length > 0) {
    result.path = path;
    result.sources = [...new Set([...pathSources, ...result.sources])];
  }
  if (options.where) applyFilter(result, options.where);
  return result;
}

/** Resolves what `describe` names to a term: a simple or qualified name through the directory, else a pattern term. */
async function resolveEntity(session: QuerySession, graph: GraphIndex, entity: string): Promise<Term> {
  let subject: Term;
  if (/^[A-Za-z_$][\w$]*(\.[\w$-]+)*$/.test(entity) && !entity.includes(':')) {
    const matches = await graph.resolveName(entity);
    if (matches.length === 0) {
      subject = await findByLabel(session, entity);
    } else if (matches.length > 1) {
      const preferred = matches.filter((m) => !/\.Cfn|\.Cfn[A-Z]/.test(m.iri));
      if (preferred.length !== 1) {
        throw new ValidationError(
          `"${entity}" names ${matches.length} entities: ${matches
            .slice(0, 8)
            .map((m) => compactIri(m.iri))
            .join(', ')}; give the module (e.g. aws_s3.${entity})`,
        );
      }
      subject = namedNode((preferred[0] as { iri: string }).iri);
    } else subject = namedNode((matches[0] as { iri: string }).iri);
  } else {
    subject = parseTerm(entity);
  }
  if (subject.termType !== 'NamedNode' && subject.termType !== 'BlankNode')
    throw new ValidationError(`describe needs an entity, not ${subject.termType}`);
  return subject;
}

/** Keeps the members of `result` that meet `where`, and records how many did. */
function applyFilter(result: DescribeResult, where: MemberFilter): void {
  const all = Object.entries(result.members ?? {});
  const kept = all.filter(([, facts]) => matchesFilter(facts, where));
  result.members = Object.fromEntries(kept);
  result.filter = { where, matched: kept.length, of: all.length };
}

/**
 * Takes one hop from `subject`: to its single base (`jsii:extends`), or to the type a property
 * (declared or inherited) names (`jsii:references`).
 */
async function followHop(
  session: QuerySession,
  subject: Term,
  hop: Hop,
  maxShardBytes: number,
): Promise<{ next: Term; record: PathStep }> {
  await session.ensureFor(subject);
  const from = formatTerm(subject);
  const chunks = (term: Term) => session.mentions(term).slice(0, 3);
  if (hop.kind === 'base') {
    const bases = session.match(subject, V.extends, null).map((q) => q.object);
    if (bases.length === 0) throw new NotFoundError(`${from} has no base in the graph`);
    if (bases.length > 1)
      throw new ValidationError(
        `${from} has ${bases.length} bases (${bases.map(formatTerm).join(', ')}): describe one of them`,
      );
    const base = bases[0] as Term;
    return {
      next: base,
      record: {
        entity: from,
        via: 'jsii:extends',
        to: formatTerm(base),
        sources: [...session.sourcesOf(subject, V.extends, base), ...chunks(subject)],
      },
    };
  }
  const member = await findProperty(session, subject, hop.name, maxShardBytes);
  if (!member) throw new NotFoundError(`${from} has no property "${hop.name}" in the graph`);
  const valueType = session.match(member, V.valueType, null)[0]?.object.value ?? '';
  const targets = session.match(member, V.references, null).map((q) => q.object);
  if (targets.length !== 1)
    throw new ValidationError(
      `property "${hop.name}" of ${from} is of type ${valueType || 'unknown'}, which names ${targets.length === 0 ? 'no type of the graph' : `${targets.length} types (${targets.map(formatTerm).join(', ')})`}: describe ${from} instead`,
    );
  const target = targets[0] as Term;
  return {
    next: target,
    record: {
      entity: from,
      via: 'jsii:property',
      member: formatTerm(member),
      valueType,
      to: formatTerm(target),
      sources: [...session.sourcesOf(member, V.references, target), ...chunks(subject)],
    },
  };
}

/**
 * The property labelled `name` of `subject`, declared or inherited (breadth-first along
 * `jsii:extends`, a base read only when its shard is small enough), or undefined.
 */
async function findProperty(
  session: QuerySession,
  subject: Term,
  name: string,
  maxShardBytes: number,
): Promise<Term | undefined> {
  const seen = new Set<string>();
  const queue: Term[] = [subject];
  while (queue.length > 0 && seen.size <= MAX_BASES) {
    const type = queue.shift() as Term;
    if (type.termType !== 'NamedNode' || seen.has(type.value)) continue;
    seen.add(type.value);
    if (type !== subject && !(await session.ensureSmall(type, maxShardBytes).catch(() => false))) continue;
    for (const q of session.match(type, V.property, null))
      if (session.match(q.object, V.label, literal(name)).length > 0) return q.object;
    for (const q of session.match(type, V.extends, null)) queue.push(q.object);
  }
  return undefined;
}

/** The `describe` result of one resolved entity (no path, no filter). */
async function describeTerm(
  session: QuerySession,
  subject: Term,
  maxShardBytes: number,
): Promise<DescribeResult> {
  await session.ensureFor(subject);
  const outgoingQuads = session.match(subject, null, null);
  const incomingQuads = session.match(null, null, subject);
  if (outgoingQuads.length === 0 && incomingQuads.length === 0)
    throw new NotFoundError(`no entity ${formatTerm(subject)} in the graph`);
  const memberPredicates = new Set<string>([V.property.value, V.method.value, V.member.value]);
  const members: Record<string, Record<string, string>> = {};
  for (const q of outgoingQuads) {
    if (!memberPredicates.has(q.predicate.value)) continue;
    const facts = memberFacts(session, q.object);
    members[facts['rdfs:label'] ?? formatTerm(q.object)] = facts;
  }
  const basesNotRead = await addInheritedMembers(session, subject, members, memberPredicates, maxShardBytes);
  const result: DescribeResult = {
    entity: formatTerm(subject),
    outgoing: outgoingQuads
      .filter((q) => !memberPredicates.has(q.predicate.value))
      .slice(0, DESCRIBE_LIMIT)
      .map((q) => [compactIri(q.predicate.value), formatTerm(q.object)]),
    incoming: incomingQuads
      .slice(0, DESCRIBE_LIMIT)
      .map((q) => [formatTerm(q.subject), compactIri(q.predicate.value)]),
    totals: { outgoing: outgoingQuads.length, incoming: incomingQuads.length },
    sources: [...session.usedUrns(), ...citedChunks(session, subject, outgoingQuads, memberPredicates)],
  };
  if (Object.keys(members).length > 0) result.members = members;
  if (basesNotRead.length > 0) result.basesNotRead = basesNotRead;
  if (outgoingQuads.length === 0) result.notInGraph = true;
  return result;
}

/** Most bases `describe` walks for inherited members. */
const MAX_BASES = 24;

/** A member's triples as `compact predicate → value` (literals as their text), without `rdf:type`. */
function memberFacts(session: QuerySession, member: Term): Record<string, string> {
  const facts: Record<string, string> = {};
  for (const m of session.match(member, null, null)) {
    if (m.predicate.equals(V.type)) continue;
    facts[compactIri(m.predicate.value)] =
      m.object.termType === 'Literal' ? m.object.value : formatTerm(m.object);
  }
  return facts;
}

/**
 * Adds to `members` what `subject` inherits: breadth-first along `jsii:extends` (nearest base
 * first, each base once, at most {@link MAX_BASES}); a member already present (declared lower
 * down) is kept. A base in a shard not loaded yet is read only when that shard is at most
 * `maxShardBytes` and within the query's shard limit; returns the bases left unread.
 */
async function addInheritedMembers(
  session: QuerySession,
  subject: Term,
  members: Record<string, Record<string, string>>,
  memberPredicates: ReadonlySet<string>,
  maxShardBytes: number,
): Promise<string[]> {
  const notRead: string[] = [];
  const seen = new Set<string>([subject.value]);
  const queue = session.match(subject, V.extends, null).map((q) => q.object);
  while (queue.length > 0 && seen.size <= MAX_BASES) {
    const base = queue.shift() as Term;
    if (base.termType !== 'NamedNode' || seen.has(base.value)) continue;
    seen.add(base.value);
    try {
      if (!(await session.ensureSmall(base, maxShardBytes))) {
        notRead.push(formatTerm(base));
        continue;
      }
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      notRead.push(formatTerm(base));
      continue;
    }
    for (const q of session.match(base, null, null)) {
      if (q.predicate.equals(V.extends)) queue.push(q.object);
      if (!memberPredicates.has(q.predicate.value)) continue;
      const facts = memberFacts(session, q.object);
      const label = facts['rdfs:label'] ?? formatTerm(q.object);
      if (!(label in members)) members[label] = { ...facts, inheritedFrom: formatTerm(base) };
    }
  }
  return notRead;
}

/** Chunks that name the entity or its members, the most often named first (at most 10). */
function citedChunks(
  session: QuerySession,
  subject: Term,
  outgoing: readonly Quad[],
  members: ReadonlySet<string>,
): string[] {
  const counts = new Map<string, number>();
  const terms = [subject, ...outgoing.filter((q) => members.has(q.predicate.value)).map((q) => q.object)];
  for (const term of terms)
    for (const chunk of session.mentions(term)) counts.set(chunk, (counts.get(chunk) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(([chunk]) => chunk);
}

async function findByLabel(session: QuerySession, label: string): Promise<Term> {
  const found = session.match(null, V.label, literal(label));
  const first = found[0];
  if (!first) throw new NotFoundError(`no entity named "${label}" in the graph`);
  return first.subject;
}

/** Compact text of a term: prefixed name or `<iri>`, `"literal"` (with `@lang`), `_:blank`. */
export function formatTerm(term: Term): string {
  if (term.termType === 'NamedNode') return compactIri(term.value);
  if (term.termType === 'BlankNode') return `_:${term.value}`;
  if (term.termType === 'Literal') {
    if (term.language) return `${JSON.stringify(term.value)}@${term.language}`;
    const datatype = term.datatype.value;
    if (datatype === `${PREFIXES.xsd}boolean`) return term.value;
    if (datatype === `${PREFIXES.xsd}string`) return JSON.stringify(term.value);
    return `${JSON.stringify(term.value)}^^${compactIri(datatype)}`;
  }
  return `?${term.value}`;
}

class QuerySession {
  private readonly loaded = new Map<string, { urn: string; store: import('n3').Store }>();

  constructor(
    private readonly graph: GraphIndex,
    private readonly actor: Actor,
  ) {}

  loadedCount(): number {
    return this.loaded.size;
  }

  usedUrns(): string[] {
    return [...new Set([...this.loaded.values()].map((s) => s.urn))];
  }

  async ensure(key: string): Promise<void> {
    if (this.loaded.has(key)) return;
    if (this.loaded.size >= MAX_SHARDS_PER_QUERY + this.graph.unshardedKeys().length) {
      throw new ValidationError(`query too broad: it needs more than ${MAX_SHARDS_PER_QUERY} graph shards`);
    }
    this.loaded.set(key, await this.graph.load(this.actor, key));
  }

  async ensureFor(term: Term): Promise<void> {
    if (term.termType !== 'NamedNode') return;
    for (const key of await this.graph.shardsFor(term.value)) await this.ensure(key);
  }

  /**
   * Loads the shards holding `term` unless one not loaded yet is larger than `maxBytes`.
   * @returns whether every shard of `term` is loaded now
   * @throws ValidationError when loading would pass the query's shard limit
   */
  async ensureSmall(term: Term, maxBytes: number): Promise<boolean> {
    if (term.termType !== 'NamedNode') return false;
    const keys = await this.graph.shardsFor(term.value);
    if (keys.some((key) => !this.loaded.has(key) && this.graph.shardBytes(key) > maxBytes)) return false;
    for (const key of keys) await this.ensure(key);
    return true;
  }

  /** Literal objects of `rdfs:label` patterns name entities: load their shards. */
  async ensureForLabels(patterns: readonly [Term, Term, Term][]): Promise<void> {
    for (const [, p, o] of patterns) {
      if (!p.equals(V.label) || o.termType !== 'Literal') continue;
      for (const match of await this.graph.resolveName(o.value)) await this.ensure(match.shard);
    }
  }

  match(s: Term | null, p: Term | null, o: Term | null): Quad[] {
    const seen = new Set<string>();
    const out: Quad[] = [];
    const norm = (t: Term | null) => (t && t.termType !== 'Variable' ? t : null);
    for (const { store } of this.loaded.values()) {
      for (const q of store.getQuads(norm(s), norm(p), norm(o), null)) {
        const id = `${q.subject.value}\u0000${q.predicate.value}\u0000${q.object.termType}${q.object.value}`;
        if (seen.has(id)) continue;
        seen.add(id);
        out.push(q);
      }
    }
    return out;
  }

  /** URNs of the loaded shards that hold a triple matching the pattern. */
  sourcesOf(s: Term | null, p: Term | null, o: Term | null): string[] {
    const urns: string[] = [];
    for (const { urn, store } of this.loaded.values())
      if (store.countQuads(s, p, o, null) > 0 && !urns.includes(urn)) urns.push(urn);
    return urns;
  }

  mentions(term: Term): string[] {
    if (term.termType !== 'NamedNode') return [];
    return this.match(term, V.mentionedIn, null).map((q) => q.object.value);
  }
}

/**
 * How selective a pattern is now: a variable bound by earlier patterns counts most (the join
 * follows the data), then a constant subject, then a constant object, then the predicate.
 */
function selectivity(pattern: readonly Term[], binding: Binding | undefined): number {
  const weights = [2, 0.5, 1];
  return pattern.reduce((score, term, i) => {
    if (term.termType === 'Variable') return score + (binding?.has(term.value) ? 3 : 0);
    return score + (weights[i] as number);
  }, 0);
}

function substitute(term: Term, binding: Binding): Term {
  return term.termType === 'Variable' ? (binding.get(term.value) ?? term) : term;
}

function extend(binding: Binding, pattern: readonly Term[], quad: Quad): Binding | undefined {
  const values = [quad.subject, quad.predicate, quad.object];
  const next = new Map(binding);
  for (let i = 0; i < 3; i++) {
    const term = pattern[i] as Term;
    if (term.termType !== 'Variable') continue;
    const bound = next.get(term.value);
    const value = values[i] as Term;
    if (bound && !bound.equals(value)) return undefined;
    next.set(term.value, value);
  }
  return next;
}

function dedupe(solutions: Binding[]): Binding[] {
  const seen = new Set<string>();
  return solutions.filter((b) => {
    const id = [...b].map(([k, v]) => `${k}=${v.termType}:${v.value}`).join('\u0000');
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}
