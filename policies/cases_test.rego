# The decision table (policies/cases.json, loaded by `opa test policies/` as data.cases) run
# through each function's entry policy (data.cld.<function>.decision), with the rules of
# policies/rules.json (data.rules, data.functions) compiled by lib.index_rules exactly as
# compileRules() in shared/policy/rules.ts compiles them into the wasm bundles' data. The same
# table runs in vitest against the built-in evaluator and the wasm bundles (test/policy/).
package cld.cases_test

import rego.v1

import data.cld.lib

# A case's input: its `input` when it has one (an input that is not an object), else an object of
# the input fields it has (inputOf in test/policy/table.ts).
case_input(c) := c.input if {
	lib.has_key(c, "input")
} else := {k: v | some k in ["actor", "action", "resources", "tool", "decision"]; v := c[k]}

# idx: the index of the case's function only (index_of), all its entry policy reads.
decide(c, idx) := d if {
	inp := case_input(c)
	d := data.cld[c.function].decision with input as inp with data.cld.index as idx with data.cld.approval as data.approval
}

index_of(fn) := {fn: lib.index_rules(data.rules, data.functions[fn])}

cases_of(fn) := [c | some c in data.cases; c.function == fn]

# The table holds for a function's share k (0-7) of its cases (the i-th case of the function
# when i % 8 == k): every case gets a decision (none undecided: the entry policies default to
# deny), and it is the case's decision and reason. Each case is decided once, and the cases are
# split in eight tests per function because `opa test -v` traces every step: one test per
# function overran OPA's 5 s per-test limit on a loaded machine.
chunks := 8

table_holds(fn, k) if {
	count(cases_of(fn)) > 0
	cases := [c | some i, c in cases_of(fn); i % chunks == k]
	idx := index_of(fn)
	results := {c.id: decide(c, idx) | some c in cases}
	mismatches := {m |
		some c in cases
		d := results[c.id]
		d != {"allow": c.allow, "reason": c.reason}
		m := {"id": c.id, "expected": {"allow": c.allow, "reason": c.reason}, "got": d}
	}
	undecided := {c.id | some c in cases; not results[c.id]}
	print(fn, k, "mismatches:", mismatches, "undecided:", undecided)
	count(mismatches) == 0
	count(undecided) == 0
}

test_plan_cases_0 if table_holds("plan", 0)

test_plan_cases_1 if table_holds("plan", 1)

test_plan_cases_2 if table_holds("plan", 2)

test_plan_cases_3 if table_holds("plan", 3)

test_plan_cases_4 if table_holds("plan", 4)

test_plan_cases_5 if table_holds("plan", 5)

test_plan_cases_6 if table_holds("plan", 6)

test_plan_cases_7 if table_holds("plan", 7)

test_assistant_cases_0 if table_holds("assistant", 0)

test_assistant_cases_1 if table_holds("assistant", 1)

test_assistant_cases_2 if table_holds("assistant", 2)

test_assistant_cases_3 if table_holds("assistant", 3)

test_assistant_cases_4 if table_holds("assistant", 4)

test_assistant_cases_5 if table_holds("assistant", 5)

test_assistant_cases_6 if table_holds("assistant", 6)

test_assistant_cases_7 if table_holds("assistant", 7)

test_tool_cases_0 if table_holds("tool", 0)

test_tool_cases_1 if table_holds("tool", 1)

test_tool_cases_2 if table_holds("tool", 2)

test_tool_cases_3 if table_holds("tool", 3)

test_tool_cases_4 if table_holds("tool", 4)

test_tool_cases_5 if table_holds("tool", 5)

test_tool_cases_6 if table_holds("tool", 6)

test_tool_cases_7 if table_holds("tool", 7)

test_http_cases_0 if table_holds("http", 0)

test_http_cases_1 if table_holds("http", 1)

test_http_cases_2 if table_holds("http", 2)

test_http_cases_3 if table_holds("http", 3)

test_http_cases_4 if table_holds("http", 4)

test_http_cases_5 if table_holds("http", 5)

test_http_cases_6 if table_holds("http", 6)

test_http_cases_7 if table_holds("http", 7)

test_slack_cases_0 if table_holds("slack", 0)

test_slack_cases_1 if table_holds("slack", 1)

test_slack_cases_2 if table_holds("slack", 2)

test_slack_cases_3 if table_holds("slack", 3)

test_slack_cases_4 if table_holds("slack", 4)

test_slack_cases_5 if table_holds("slack", 5)

test_slack_cases_6 if table_holds("slack", 6)

test_slack_cases_7 if table_holds("slack", 7)

test_teams_cases_0 if table_holds("teams", 0)

test_teams_cases_1 if table_holds("teams", 1)

test_teams_cases_2 if table_holds("teams", 2)

test_teams_cases_3 if table_holds("teams", 3)

test_teams_cases_4 if table_holds("teams", 4)

test_teams_cases_5 if table_holds("teams", 5)

test_teams_cases_6 if table_holds("teams", 6)

test_teams_cases_7 if table_holds("teams", 7)

test_reply_cases_0 if table_holds("reply", 0)

test_reply_cases_1 if table_holds("reply", 1)

test_reply_cases_2 if table_holds("reply", 2)

test_reply_cases_3 if table_holds("reply", 3)

test_reply_cases_4 if table_holds("reply", 4)

test_reply_cases_5 if table_holds("reply", 5)

test_reply_cases_6 if table_holds("reply", 6)

test_reply_cases_7 if table_holds("reply", 7)

test_deadletter_cases_0 if table_holds("deadletter", 0)

test_deadletter_cases_1 if table_holds("deadletter", 1)

test_deadletter_cases_2 if table_holds("deadletter", 2)

test_deadletter_cases_3 if table_holds("deadletter", 3)

test_deadletter_cases_4 if table_holds("deadletter", 4)

test_deadletter_cases_5 if table_holds("deadletter", 5)

test_deadletter_cases_6 if table_holds("deadletter", 6)

test_deadletter_cases_7 if table_holds("deadletter", 7)

test_sweeper_cases_0 if table_holds("sweeper", 0)

test_sweeper_cases_1 if table_holds("sweeper", 1)

test_sweeper_cases_2 if table_holds("sweeper", 2)

test_sweeper_cases_3 if table_holds("sweeper", 3)

test_sweeper_cases_4 if table_holds("sweeper", 4)

test_sweeper_cases_5 if table_holds("sweeper", 5)

test_sweeper_cases_6 if table_holds("sweeper", 6)

test_sweeper_cases_7 if table_holds("sweeper", 7)

test_local_cases_0 if table_holds("local", 0)

test_local_cases_1 if table_holds("local", 1)

test_local_cases_2 if table_holds("local", 2)

test_local_cases_3 if table_holds("local", 3)

test_local_cases_4 if table_holds("local", 4)

test_local_cases_5 if table_holds("local", 5)

test_local_cases_6 if table_holds("local", 6)

test_local_cases_7 if table_holds("local", 7)

# Every function of rules.json has its eight table tests above.
test_every_function_has_table_tests if {
	count({fn | some fn, _ in data.functions} - {"plan", "assistant", "tool", "http", "slack", "teams", "reply", "deadletter", "sweeper", "local"}) == 0
}

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
