import * as z from 'zod';

/**
 * The typed shape of a structural question beyond one entity's own facts (issue 21): hops from
 * the entity named to the one the question is about (`follow`), and a filter on that entity's
 * members (`where`). The `graph` tool takes both beside `describe` (shared/tools/graph.ts; the
 * model-facing JSON schema is shared/catalog/tools/graph.json), so the offline model and a real
 * model send the same arguments, validated by these schemas.
 */

/** A type as a filter names it: a simple or qualified name (`IGrantable`, `aws_iam.IGrantable`) or a primitive (`boolean`). */
const TypeName = z
  .string()
  .trim()
  .regex(/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$-]*)*$/, 'a type name such as IGrantable, Duration or boolean')
  .max(200);

/**
 * One hop: `base` (the direct base: `jsii:extends` of a class, or the single base of an interface)
 * or `property:<name>` (the type a property's value names, `jsii:references`, declared or
 * inherited property).
 */
export const HopSchema = z
  .string()
  .trim()
  .regex(/^(base|property:[A-Za-z_$][\w$]*)$/, 'a hop: "base" or "property:<name>"')
  .transform((text): Hop => (text === 'base' ? { kind: 'base' } : { kind: 'property', name: text.slice(9) }));
export type Hop = { kind: 'base' } | { kind: 'property'; name: string };

/** Most hops one question may follow. */
export const MAX_HOPS = 3;

/** Hops from the entity named to the entity described, in order. */
export const FollowSchema = z.array(HopSchema).min(1).max(MAX_HOPS);

/**
 * A filter on members (all given conditions must hold):
 * - `kind`: `property`, `method` or `enumMember`;
 * - `optional`: properties that may be omitted (`true`) or must be given (`false`, "required");
 * - `type`: properties whose value type names this type (`Duration` matches `Duration` and
 *   `Array<Duration>`; primitives case-insensitively);
 * - `takes`: methods with a parameter whose type names it; `returns`: methods whose return type does;
 * - `static`: static members only (`true`) or instance members only (`false`);
 * - `inherited`: inherited members only (`true`) or those the type declares itself (`false`).
 */
export const MemberFilterSchema = z
  .strictObject({
    kind: z.enum(['property', 'method', 'enumMember']).optional(),
    optional: z.boolean().optional(),
    type: TypeName.optional(),
    takes: TypeName.optional(),
    returns: TypeName.optional(),
    static: z.boolean().optional(),
    inherited: z.boolean().optional(),
  })
  .refine((filter) => Object.keys(filter).length > 0, 'give at least one condition');
export type MemberFilter = z.infer<typeof MemberFilterSchema>;

/** A member as `describe` lists it: compact predicate → value (`jsii:valueType`, `jsii:signature`, `inheritedFrom`, …). */
export type MemberFacts = Record<string, string>;

/** The kind of a described member: a property has a value type, a method a signature. */
export function memberKind(facts: MemberFacts): 'property' | 'method' | 'enumMember' {
  if (facts['jsii:valueType'] !== undefined) return 'property';
  if (facts['jsii:signature'] !== undefined) return 'method';
  return 'enumMember';
}

/**
 * The type names a rendered type mentions (`Array<IGrantable>` → `Array`, `IGrantable`;
 * `Map<string, Duration>` → `Map`, `string`, `Duration`; `string | number`).
 */
export function typeNamesIn(rendered: string): string[] {
  return rendered.match(/[A-Za-z_$][\w$]*/g) ?? [];
}

/** jsii's primitive types (spec `PrimitiveType`), matched case-insensitively ("Boolean" is `boolean`). */
const PRIMITIVE_TYPES = new Set(['any', 'boolean', 'date', 'json', 'number', 'string']);

/** True when `rendered` names `type`: its simple name exactly, a primitive in any case. */
export function namesType(rendered: string, type: string): boolean {
  const simple = type.slice(type.lastIndexOf('.') + 1);
  const primitive = PRIMITIVE_TYPES.has(simple.toLowerCase());
  return typeNamesIn(rendered).some((name) =>
    primitive ? name.toLowerCase() === simple.toLowerCase() : name === simple,
  );
}

/**
 * Parameter types and return type of a signature as the graph writes it
 * (`grantRead(identity: IGrantable, objectsKeyPattern?: any): Grant`, shared/graph/jsii.ts).
 */
export function signatureTypes(signature: string): { parameters: string[]; returns: string | undefined } {
  const open = signature.indexOf('(');
  let depth = 0;
  let close = -1;
  for (let i = open; i < signature.length && open !== -1; i++) {
    const c = signature[i];
    if (c === '(' || c === '<') depth++;
    else if (c === ')' || c === '>') depth--;
    if (depth === 0) {
      close = i;
      break;
    }
  }
  if (open === -1 || close === -1) return { parameters: [], returns: undefined };
  const parameters: string[] = [];
  let start = open + 1;
  depth = 0;
  for (let i = open + 1; i <= close; i++) {
    const c = signature[i];
    if (c === '<') depth++;
    else if (c === '>') depth--;
    else if ((c === ',' && depth === 0) || i === close) {
      const parameter = signature.slice(start, i);
      const colon = parameter.indexOf(':');
      if (colon !== -1) parameters.push(parameter.slice(colon + 1).trim());
      start = i + 1;
    }
  }
  const rest = signature.slice(close + 1).trim();
  return { parameters, returns: rest.startsWith(':') ? rest.slice(1).trim() : undefined };
}

/** True when a described member meets every condition of `filter`. */
export function matchesFilter(facts: MemberFacts, filter: MemberFilter): boolean {
  const kind = memberKind(facts);
  if (filter.kind !== undefined && kind !== filter.kind) return false;
  if (
    filter.optional !== undefined &&
    (kind !== 'property' || (facts['jsii:optional'] === 'true') !== filter.optional)
  )
    return false;
  if (
    filter.type !== undefined &&
    (kind !== 'property' || !namesType(facts['jsii:valueType'] ?? '', filter.type))
  )
    return false;
  if (filter.static !== undefined && (facts['jsii:static'] === 'true') !== filter.static) return false;
  if (filter.inherited !== undefined && (facts.inheritedFrom !== undefined) !== filter.inherited)
    return false;
  if (filter.takes !== undefined || filter.returns !== undefined) {
    if (kind !== 'method') return false;
    const { parameters, returns } = signatureTypes(facts['jsii:signature'] ?? '');
    if (filter.takes !== undefined && !parameters.some((p) => namesType(p, filter.takes as string)))
      return false;
    if (filter.returns !== undefined && (returns === undefined || !namesType(returns, filter.returns)))
      return false;
  }
  return true;
}

/**
 * The filter in words, for answers: `required properties`, `methods taking IGrantable`, …;
 * with `count` 1 the noun is singular (`1 required property`).
 */
export function describeFilter(filter: MemberFilter, count = 2): string {
  const adjectives = [
    filter.static === true ? 'static' : filter.static === false ? 'instance' : '',
    filter.optional === true ? 'optional' : filter.optional === false ? 'required' : '',
  ].filter(Boolean);
  const kind =
    filter.kind === 'enumMember'
      ? 'enum members'
      : filter.kind === 'method' || filter.takes || filter.returns
        ? 'methods'
        : filter.kind === 'property' || filter.optional !== undefined || filter.type
          ? 'properties'
          : 'members';
  const tails = [
    filter.type ? `of type ${filter.type}` : '',
    filter.takes ? `taking ${filter.takes}` : '',
    filter.returns ? `returning ${filter.returns}` : '',
    filter.inherited === false ? 'declared on the type itself' : filter.inherited === true ? 'inherited' : '',
  ].filter(Boolean);
  const noun = count !== 1 ? kind : kind.replace(/ies$/, 'y').replace(/s$/, '');
  return [...adjectives, noun, ...tails].join(' ');
}
