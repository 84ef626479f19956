# Test-only entrypoints (not shipped with any function): the library's building blocks compiled to
# wasm as the functions' bundles compile them, so vitest can run the decision table's glob and URN
# rows on OPA's wasm runtime (test/policy/decision-table.test.ts, policies/dist/probe.wasm).
package cld.probe

import rego.v1

import data.cld.lib

# input {"pattern", "value"}: glob.match as the wasm runtime answers it, and the pattern's compiled
# matcher (compileGlob in shared/policy/rules.ts, which the caller passes as input.matcher) as the
# policies run it.
glob_row := {
	"builtin": glob.match(input.pattern, ["/"], input.value),
	"compiled": matched,
}

default matched := false

matched if lib.glob_matches({"glob": input.pattern, "matcher": input.matcher}, input.value)

# input {"value"}: whether the value is a URN by the policies' grammar.
default urn_row := false

urn_row if lib.valid_urn(input.value)
