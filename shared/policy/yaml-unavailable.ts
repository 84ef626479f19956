/**
 * What the function bundles have instead of the `yaml` package: infra/lib/bundling.ts aliases
 * `yaml` to this module. `@open-policy-agent/opa-wasm` requires `yaml` only for the Rego builtins
 * `yaml.marshal`, `yaml.unmarshal` and `yaml.is_valid` (src/builtins/yaml.js), ≈ 87 KB of every
 * bundle; cld's policies call none of them (test/policy/yaml-builtins.test.ts checks the compiled
 * policies' builtin lists). A policy that did would fail its evaluation with
 * {@link YamlBuiltinsUnavailableError} in a function, instead of silently deciding. Outside a
 * bundle (dev, tests, the CLI) opa-wasm gets the real `yaml`.
 */

/** Thrown when a policy evaluated in a function bundle calls a `yaml.*` Rego builtin. */
export class YamlBuiltinsUnavailableError extends Error {
  constructor() {
    super(
      'the yaml.* Rego builtins are not in the function bundles (infra/lib/bundling.ts aliases the yaml package away); a policy must not call them',
    );
    this.name = 'YamlBuiltinsUnavailableError';
  }
}

/** Stands in for `yaml.parse`. @throws YamlBuiltinsUnavailableError always */
export function parse(): never {
  throw new YamlBuiltinsUnavailableError();
}

/** Stands in for `yaml.stringify`. @throws YamlBuiltinsUnavailableError always */
export function stringify(): never {
  throw new YamlBuiltinsUnavailableError();
}
