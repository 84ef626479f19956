import { gunzipSync } from 'node:zlib';
import { DataFactory, type Quad, type Quad_Object } from 'n3';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { booleanLiteral, memberIri, typeIri, V } from './vocabulary.js';

/**
 * A jsii assembly (the published jsii spec, `.jsii` or the `.jsii.gz` it redirects to) mapped to
 * triples with the vocabulary of ./vocabulary.ts. Only the parts read here are validated; the
 * rest of the assembly is ignored.
 */

const { literal, quad } = DataFactory;

/** A jsii type reference: primitive, fqn, collection or union (jsii spec `TypeReference`). */
type TypeRef =
  | { primitive: string }
  | { fqn: string }
  | { collection: { kind: string; elementtype: TypeRef } }
  | { union: { types: TypeRef[] } };

const TypeRefSchema: z.ZodType<TypeRef> = z.lazy(() =>
  z.union([
    z.looseObject({ primitive: z.string() }),
    z.looseObject({ fqn: z.string() }),
    z.looseObject({ collection: z.looseObject({ kind: z.string(), elementtype: TypeRefSchema }) }),
    z.looseObject({ union: z.looseObject({ types: z.array(TypeRefSchema) }) }),
    // intersections and other future shapes: kept as an opaque `any`
    z.looseObject({}).transform(() => ({ primitive: 'any' })),
  ]),
) as z.ZodType<TypeRef>;

const DocsSchema = z
  .looseObject({ summary: z.string().optional(), default: z.string().optional() })
  .optional();

const PropertySchema = z.looseObject({
  name: z.string().min(1),
  type: TypeRefSchema,
  optional: z.boolean().optional(),
  static: z.boolean().optional(),
  abstract: z.boolean().optional(),
  docs: DocsSchema,
});

const ParameterSchema = z.looseObject({
  name: z.string(),
  type: TypeRefSchema,
  optional: z.boolean().optional(),
  variadic: z.boolean().optional(),
});

const MethodSchema = z.looseObject({
  name: z.string().min(1),
  parameters: z.array(ParameterSchema).optional(),
  returns: z.looseObject({ type: TypeRefSchema }).optional(),
  static: z.boolean().optional(),
  abstract: z.boolean().optional(),
  docs: DocsSchema,
});

const TypeSchema = z.looseObject({
  fqn: z.string().min(1),
  name: z.string().min(1),
  kind: z.enum(['class', 'interface', 'enum']),
  namespace: z.string().optional(),
  datatype: z.boolean().optional(),
  abstract: z.boolean().optional(),
  base: z.string().optional(),
  interfaces: z.array(z.string()).optional(),
  properties: z.array(PropertySchema).optional(),
  methods: z.array(MethodSchema).optional(),
  members: z.array(z.looseObject({ name: z.string(), docs: DocsSchema })).optional(),
  docs: DocsSchema,
});
/** One type of a jsii assembly, as validated here (the fields the graph and the glossary read). */
export type JsiiType = z.infer<typeof TypeSchema>;

const AssemblySchema = z.looseObject({
  schema: z.literal('jsii/0.10.0'),
  name: z.string().min(1),
  version: z.string(),
  types: z.record(z.string(), z.unknown()),
});

/** What {@link assemblyToShards} produces. */
export interface AssemblyGraph {
  /** Assembly name and version (`aws-cdk-lib`, `2.276.0`). */
  name: string;
  version: string;
  /**
   * Quads per shard. A shard is a submodule (`aws_s3`; `core` for types without a namespace);
   * it holds every triple whose subject belongs to it, plus every triple whose object is a type
   * of it (so a query with a bound object loads only the object's module).
   */
  shards: Map<string, Quad[]>;
  /** Every type: its simple name, fully qualified name and shard. */
  directory: { label: string; fqn: string; shard: string }[];
  /** Distinct triples (before the per-object copies). */
  triples: number;
}

/**
 * Reads a jsii assembly file's content: a `.jsii` JSON, a `jsii/file-redirect` pointing at a
 * gzipped file (resolved with `readRedirect`), or the gzipped assembly itself. A redirect names a
 * file beside the assembly (`.jsii.gz`, as jsii writes it): a path that leaves the package (`..`,
 * an absolute path) is refused before anything is read.
 * @throws ValidationError when the content is not a jsii assembly, or a redirect leaves its folder
 */
export function parseAssembly(
  content: Buffer,
  readRedirect?: (file: string) => Buffer,
): z.infer<typeof AssemblySchema> {
  let json: unknown;
  try {
    const text =
      content[0] === 0x1f && content[1] === 0x8b
        ? gunzipSync(content).toString('utf8')
        : content.toString('utf8');
    json = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`not a jsii assembly: ${(error as Error).message}`, { cause: error });
  }
  const redirect = z
    .looseObject({ schema: z.literal('jsii/file-redirect'), filename: z.string() })
    .safeParse(json);
  if (redirect.success) {
    if (!readRedirect) throw new ValidationError('jsii file redirect without a way to read its target');
    const target = redirect.data.filename;
    if (target === '' || /^([/\\]|[A-Za-z]:)/.test(target) || target.split(/[/\\]/).includes('..'))
      throw new ValidationError(
        `jsii file redirect must name a file beside the assembly, got ${JSON.stringify(target.slice(0, 200))}`,
      );
    return parseAssembly(readRedirect(target));
  }
  const parsed = AssemblySchema.safeParse(json);
  if (!parsed.success) throw new ValidationError(`not a jsii assembly: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The shard of a type: the first segment of its namespace, or `core`. */
export function shardOf(type: { namespace?: string | undefined }): string {
  return type.namespace ? (type.namespace.split('.')[0] as string) : 'core';
}

/**
 * The assembly's types that pass validation, by fully qualified name, and how many did not (a
 * type whose entry is malformed, or filed under another name than its `fqn`, is skipped).
 */
export function assemblyTypes(assembly: z.infer<typeof AssemblySchema>): {
  types: Map<string, JsiiType>;
  skipped: number;
} {
  const types = new Map<string, JsiiType>();
  let skipped = 0;
  for (const [fqn, raw] of Object.entries(assembly.types)) {
    const parsed = TypeSchema.safeParse(raw);
    if (parsed.success && parsed.data.fqn === fqn) types.set(fqn, parsed.data);
    else skipped++;
  }
  return { types, skipped };
}

/**
 * L1 CloudFormation types (`Cfn*` and their nested `*Property` structs, whose namespace is the
 * class: `aws_s3.CfnBucket`, or `CfnStack` for core's): summaries left out.
 */
export function isL1(type: JsiiType): boolean {
  return (
    type.name.startsWith('Cfn') ||
    (type.namespace?.split('.').some((part) => part.startsWith('Cfn')) ?? false)
  );
}

/** `boolean`, `IBucket`, `Array<string>`, `Map<string, Duration>`, `string | number`. */
export function renderTypeRef(ref: TypeRef): string {
  if ('primitive' in ref) return ref.primitive;
  if ('fqn' in ref) return ref.fqn.slice(ref.fqn.lastIndexOf('.') + 1);
  if ('collection' in ref) {
    const element = renderTypeRef(ref.collection.elementtype);
    return ref.collection.kind === 'map' ? `Map<string, ${element}>` : `Array<${element}>`;
  }
  return ref.union.types.map(renderTypeRef).join(' | ');
}

function referencedFqns(ref: TypeRef, into: Set<string>): Set<string> {
  if ('fqn' in ref) into.add(ref.fqn);
  else if ('collection' in ref) referencedFqns(ref.collection.elementtype, into);
  else if ('union' in ref) for (const t of ref.union.types) referencedFqns(t, into);
  return into;
}

/**
 * Maps a parsed assembly to shards of quads (vocabulary in ./vocabulary.ts). Inferred
 * `jsii:conformsTo` triples are the transitive closure of bases and interfaces within the
 * assembly. A type that fails validation is skipped and counted in `skipped`.
 */
export function assemblyToShards(
  assembly: z.infer<typeof AssemblySchema>,
): AssemblyGraph & { skipped: number } {
  const { types, skipped } = assemblyTypes(assembly);
  const shards = new Map<string, Quad[]>();
  const directory: AssemblyGraph['directory'] = [];
  let triples = 0;
  const add = (shard: string, q: Quad): void => {
    let list = shards.get(shard);
    if (!list) {
      list = [];
      shards.set(shard, list);
    }
    list.push(q);
  };
  /** `rdf:type` and `rdfs:label` of each subject: copied with its cross-shard triples. */
  const identity = new Map<string, Quad[]>();
  const copied = new Set<string>();
  /**
   * Adds a triple to the subject's shard. When the object is a type of another shard, the triple
   * is copied there too, with the subject's `rdf:type` and `rdfs:label`, so a query bound on the
   * object can filter and name its subjects without loading their shards.
   */
  const emit = (
    shard: string,
    s: Quad['subject'],
    p: Quad['predicate'],
    o: Quad_Object,
    objectFqn?: string,
  ): void => {
    const q = quad(s, p, o);
    triples++;
    add(shard, q);
    if (p.equals(V.type) || p.equals(V.label)) {
      const list = identity.get(s.value) ?? [];
      list.push(q);
      identity.set(s.value, list);
    }
    const other = objectFqn ? types.get(objectFqn) : undefined;
    if (!other || shardOf(other) === shard) return;
    const target = shardOf(other);
    add(target, q);
    const key = `${target}\u0000${s.value}`;
    if (copied.has(key)) return;
    copied.add(key);
    for (const known of identity.get(s.value) ?? []) add(target, known);
  };
  const conforms = conformance(types);
  for (const type of types.values()) {
    const shard = shardOf(type);
    const s = typeIri(type.fqn);
    const l1 = isL1(type);
    directory.push({ label: type.name, fqn: type.fqn, shard });
    const kind =
      type.kind === 'class'
        ? V.Class
        : type.kind === 'enum'
          ? V.Enum
          : type.datatype
            ? V.Struct
            : V.Interface;
    emit(shard, s, V.type, kind);
    emit(shard, s, V.label, literal(type.name));
    emit(shard, s, V.fqn, literal(type.fqn));
    emit(shard, s, V.module, literal(shard));
    if (type.docs?.summary && !l1) emit(shard, s, V.comment, literal(type.docs.summary));
    if (type.abstract) emit(shard, s, V.abstract, booleanLiteral(true));
    if (type.kind === 'class') {
      if (type.base) emit(shard, s, V.extends, typeIri(type.base), type.base);
      for (const i of type.interfaces ?? []) emit(shard, s, V.implements, typeIri(i), i);
    } else {
      for (const i of type.interfaces ?? []) emit(shard, s, V.extends, typeIri(i), i);
    }
    for (const i of conforms.get(type.fqn) ?? []) emit(shard, s, V.conformsTo, typeIri(i), i);
    for (const property of type.properties ?? []) {
      const m = memberIri(type.fqn, property.name);
      emit(shard, s, V.property, m);
      emit(shard, m, V.type, V.Property);
      emit(shard, m, V.label, literal(property.name));
      emit(shard, m, V.valueType, literal(renderTypeRef(property.type)));
      emit(shard, m, V.optional, booleanLiteral(property.optional === true));
      if (property.static) emit(shard, m, V.static, booleanLiteral(true));
      if (property.docs?.default !== undefined) emit(shard, m, V.default, literal(property.docs.default));
      if (property.docs?.summary && !l1) emit(shard, m, V.comment, literal(property.docs.summary));
      for (const fqn of referencedFqns(property.type, new Set()))
        emit(shard, m, V.references, typeIri(fqn), fqn);
    }
    for (const method of type.methods ?? []) {
      const m = memberIri(type.fqn, `${method.name}()`);
      emit(shard, s, V.method, m);
      emit(shard, m, V.type, V.Method);
      emit(shard, m, V.label, literal(method.name));
      emit(shard, m, V.signature, literal(signature(method)));
      if (method.static) emit(shard, m, V.static, booleanLiteral(true));
      if (method.docs?.summary && !l1) emit(shard, m, V.comment, literal(method.docs.summary));
      const refs = new Set<string>();
      for (const p of method.parameters ?? []) referencedFqns(p.type, refs);
      if (method.returns) referencedFqns(method.returns.type, refs);
      for (const fqn of refs) emit(shard, m, V.references, typeIri(fqn), fqn);
    }
    for (const member of type.members ?? []) {
      const m = memberIri(type.fqn, member.name);
      emit(shard, s, V.member, m);
      emit(shard, m, V.type, V.EnumMember);
      emit(shard, m, V.label, literal(member.name));
      if (member.docs?.summary && !l1) emit(shard, m, V.comment, literal(member.docs.summary));
    }
  }
  return { name: assembly.name, version: assembly.version, shards, directory, triples, skipped };
}

function signature(method: z.infer<typeof MethodSchema>): string {
  const params = (method.parameters ?? [])
    .map((p) => `${p.variadic ? '...' : ''}${p.name}${p.optional ? '?' : ''}: ${renderTypeRef(p.type)}`)
    .join(', ');
  return `${method.name}(${params})${method.returns ? `: ${renderTypeRef(method.returns.type)}` : ''}`;
}

/**
 * Every interface each type satisfies: its own interfaces, their bases, and (for classes)
 * everything its base classes satisfy; only fqns of this assembly are followed.
 */
function conformance(types: ReadonlyMap<string, JsiiType>): Map<string, Set<string>> {
  const memo = new Map<string, Set<string>>();
  const visit = (fqn: string, path: Set<string>): Set<string> => {
    const known = memo.get(fqn);
    if (known) return known;
    const result = new Set<string>();
    const type = types.get(fqn);
    if (!type || path.has(fqn)) return result;
    path.add(fqn);
    for (const i of type.interfaces ?? []) {
      result.add(i);
      for (const j of visit(i, path)) result.add(j);
    }
    if (type.kind === 'class' && type.base) for (const j of visit(type.base, path)) result.add(j);
    path.delete(fqn);
    memo.set(fqn, result);
    return result;
  };
  for (const fqn of types.keys()) visit(fqn, new Set());
  return memo;
}
