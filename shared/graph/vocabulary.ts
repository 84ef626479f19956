import { DataFactory, type NamedNode } from 'n3';

/**
 * The Graph tool's vocabulary (seed roadmap-v2 step 16: Linked Data beside the Resources).
 *
 * A small vocabulary of our own for API structure (`jsii:`), reusing `rdf:type`,
 * `rdfs:label` and `rdfs:comment` where they fit. Entities of a jsii assembly are IRIs under
 * `type:` (`urn:cld:jsii:type:`) followed by the type's fully qualified name; a member is the
 * type's IRI, `/`, and the member's name (`type:aws-cdk-lib.aws_s3.BucketProps/versioned`).
 * Chunks and graph resources are linked by their `cld:` URN, which is an absolute IRI.
 *
 * | predicate | subject → object | meaning |
 * |---|---|---|
 * | `rdf:type` | type → `jsii:Class` / `jsii:Interface` / `jsii:Struct` / `jsii:Enum`; member → `jsii:Property` / `jsii:Method` / `jsii:EnumMember` | kind |
 * | `rdfs:label` | any → string | simple name (`BucketProps`, `versioned`) |
 * | `rdfs:comment` | any → string | the doc summary |
 * | `jsii:fqn` | type → string | fully qualified name |
 * | `jsii:module` | type → string | submodule (`aws_s3`; `core` for the root) |
 * | `jsii:extends` | class → class, interface → interface | direct base |
 * | `jsii:implements` | class → interface | interface listed on the class |
 * | `jsii:conformsTo` | class/interface → interface | every interface it satisfies, through bases (inferred) |
 * | `jsii:property` / `jsii:method` / `jsii:member` | type → member | members declared on the type |
 * | `jsii:valueType` | property → string | the type as written (`boolean`, `IBucket`, `Array<string>`) |
 * | `jsii:references` | property/method → type | a type the member's signature names |
 * | `jsii:optional` | property → boolean | may be omitted |
 * | `jsii:default` | property → string | the `@default` doc |
 * | `jsii:signature` | method → string | `name(param: Type, …): Returns` |
 * | `jsii:static` / `jsii:abstract` | member/type → boolean | modifiers |
 * | `jsii:mentionedIn` | entity → chunk URN | a documentation chunk of the same module names it |
 */

/** Prefixes the graph tool reads and writes (prefixed names `jsii:Class`, `rdfs:label`, ...). */
export const PREFIXES = {
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
  owl: 'http://www.w3.org/2002/07/owl#',
  schema: 'http://schema.org/',
  foaf: 'http://xmlns.com/foaf/0.1/',
  dcterms: 'http://purl.org/dc/terms/',
  jsii: 'urn:cld:jsii:',
  type: 'urn:cld:jsii:type:',
} as const satisfies Record<string, string>;

/** Namespace of a prefix, or undefined when it is not one of {@link PREFIXES}. */
export function namespaceOf(prefix: string): string | undefined {
  return (PREFIXES as Record<string, string | undefined>)[prefix];
}

const { namedNode } = DataFactory;

/** IRIs of the vocabulary. */
export const V = {
  type: namedNode(`${PREFIXES.rdf}type`),
  label: namedNode(`${PREFIXES.rdfs}label`),
  comment: namedNode(`${PREFIXES.rdfs}comment`),
  Class: namedNode('urn:cld:jsii:Class'),
  Interface: namedNode('urn:cld:jsii:Interface'),
  Struct: namedNode('urn:cld:jsii:Struct'),
  Enum: namedNode('urn:cld:jsii:Enum'),
  Property: namedNode('urn:cld:jsii:Property'),
  Method: namedNode('urn:cld:jsii:Method'),
  EnumMember: namedNode('urn:cld:jsii:EnumMember'),
  fqn: namedNode('urn:cld:jsii:fqn'),
  module: namedNode('urn:cld:jsii:module'),
  extends: namedNode('urn:cld:jsii:extends'),
  implements: namedNode('urn:cld:jsii:implements'),
  conformsTo: namedNode('urn:cld:jsii:conformsTo'),
  property: namedNode('urn:cld:jsii:property'),
  method: namedNode('urn:cld:jsii:method'),
  member: namedNode('urn:cld:jsii:member'),
  valueType: namedNode('urn:cld:jsii:valueType'),
  references: namedNode('urn:cld:jsii:references'),
  optional: namedNode('urn:cld:jsii:optional'),
  default: namedNode('urn:cld:jsii:default'),
  signature: namedNode('urn:cld:jsii:signature'),
  static: namedNode('urn:cld:jsii:static'),
  abstract: namedNode('urn:cld:jsii:abstract'),
  mentionedIn: namedNode('urn:cld:jsii:mentionedIn'),
} as const;

/** IRI of a jsii type by fully qualified name. */
export function typeIri(fqn: string): NamedNode {
  return namedNode(`${PREFIXES.type}${fqn}`);
}

/** IRI of a member (property, method, enum member) of a jsii type. */
export function memberIri(fqn: string, member: string): NamedNode {
  return namedNode(`${PREFIXES.type}${fqn}/${member}`);
}

/** Writes an IRI as a prefixed name when a prefix covers it (`jsii:Class`), else as `<iri>`. */
export function compactIri(iri: string): string {
  let best: [string, string] | undefined;
  for (const [prefix, namespace] of Object.entries(PREFIXES)) {
    if (iri.startsWith(namespace) && (!best || namespace.length > (best[1] as string).length))
      best = [prefix, namespace];
  }
  if (best && iri.length > best[1].length) return `${best[0]}:${iri.slice(best[1].length)}`;
  return iri.startsWith('cld:') ? iri : `<${iri}>`;
}

/** An `xsd:boolean` literal. */
export function booleanLiteral(value: boolean) {
  return DataFactory.literal(String(value), namedNode(`${PREFIXES.xsd}boolean`));
}
