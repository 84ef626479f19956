# The decision table (policies/cases.json, loaded by `opa test policies/` as data.cases) run
# through each function's entry policy (data.cld.<function>.decision), with the rules of
# policies/rules.json (data.rules, data.functions) compiled by lib.index_rules exactly as
# compileRules() in shared/policy/rules.ts compiles them into the wasm bundles' data. The same
# table runs in vitest against the built-in evaluator and the wasm bundles (test/policy/).
package cld.cases_test

import rego.v1

import data.cld.lib

compiled := {fn: lib.index_rules(data.rules, granted) | some fn, granted in data.functions}

decide(c) := d if {
	idx := compiled
	inp := object.union(
		{"actor": c.actor, "action": c.action, "resources": c.resources},
		{k: v | some k in ["tool", "decision"]; v := c[k]},
	)
	d := data.cld[c.function].decision with input as inp with data.cld.index as idx with data.cld.approval as data.approval
}

cases_of(fn) := [c | some c in data.cases; c.function == fn]

# Cases whose decision or reason differs from the table, with what the policy said.
mismatches(fn) := {m |
	some c in cases_of(fn)
	d := decide(c)
	d != {"allow": c.allow, "reason": c.reason}
	m := {"id": c.id, "expected": {"allow": c.allow, "reason": c.reason}, "got": d}
}

# Cases the policy gave no decision for at all (must be none: the entry policies default to deny).
undecided(fn) := {c.id | some c in cases_of(fn); not decide(c)}

table_holds(fn) if {
	count(cases_of(fn)) > 0
	print(fn, "mismatches:", mismatches(fn), "undecided:", undecided(fn))
	count(mismatches(fn)) == 0
	count(undecided(fn)) == 0
}

test_plan_cases if table_holds("plan")

test_assistant_cases if table_holds("assistant")

test_tool_cases if table_holds("tool")

test_http_cases if table_holds("http")

test_slack_cases if table_holds("slack")

test_teams_cases if table_holds("teams")

test_reply_cases if table_holds("reply")

test_deadletter_cases if table_holds("deadletter")

test_local_cases if table_holds("local")

# Every case names a function that has rules and an entry policy.
test_every_case_names_a_function if {
	unknown := {c.id | some c in data.cases; not data.functions[c.function]}
	count(unknown) == 0
}

# OPA's glob.match agrees with the table's glob rows (data.globs). `match` is the answer of the
# compiled wasm policies and of shared/policy/glob.ts (what the functions run); `topdown`, where
# present, is the answer of OPA's Go evaluator (`opa eval`, `opa test`, the OPA server), which
# differs there (gobwas/glob; see the comment in shared/policy/glob.ts). This test runs on the Go
# evaluator, so it expects `topdown` where a row has one. test/policy/decision-table.test.ts runs
# the same rows through globMatch and through the compiled policies/dist/globs.wasm.
test_glob_semantics if {
	count(data.globs) > 0
	wrong := [g | some g in data.globs; glob.match(g.pattern, ["/"], g.value) != object.get(g, "topdown", g.match)]
	print("glob rows that differ:", wrong)
	count(wrong) == 0
}

# The rows where the Go evaluator differs are few and known: each one is a pattern no rule of
# policies/rules.json may have (rules.ts rejects it), so the functions' decisions never depend on it.
test_glob_divergences_are_marked if {
	divergent := [g | some g in data.globs; object.get(g, "topdown", g.match) != g.match]
	count(divergent) == 2
}

test_sweeper_cases if table_holds("sweeper")
