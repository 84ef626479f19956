# Unit tests of the library's building blocks; the decision table is in policies/cases_test.rego.
package cld.lib_test

import rego.v1

import data.cld.lib

c := "cld:common.Conversation.c000000000000001"

t := "cld:common.Conversation.c000000000000001/common.Message.a000000000000001/plan.Task.d000000000000001"

index := {"assistant:put": [{"id": "own-task", "patterns": [{"base": "task", "glob": "/**", "matcher": {"kind": "prefix", "prefix": "/"}}]}]}

test_valid_urns if {
	lib.valid_urn(c)
	lib.valid_urn(t)
	lib.valid_urn("cld:doc.Document.0d0c000000000001/doc.Chunk.0c00000000000001")
}

test_malformed_urns if {
	not lib.valid_urn("conversations/c")
	not lib.valid_urn(concat("", [c, "/../common.Conversation.c000000000000002"]))
	not lib.valid_urn(concat("", [c, "//common.Message.a000000000000001"]))
	not lib.valid_urn(concat("", [t, "/"]))
	not lib.valid_urn(concat("", [c, "/**"]))
	not lib.valid_urn(concat("", [c, "0/common.Message.a000000000000001"]))
	not lib.valid_urn("cld:unknown.Thing.c000000000000001")
	not lib.valid_urn("cld:common.Conversation.C000000000000001")
	not lib.valid_urn(42)
	not lib.valid_urn(null)
}

test_an_empty_resource_list_is_denied if {
	# `every r in [] { ... }` would be true: the library must not allow on it.
	d := lib.decision({"actor": {"kind": "assistant", "id": "a", "task": t}, "action": "put", "resources": []}, index)
	d == {"allow": false, "reason": "request names no resources"}
}

test_missing_resources_are_denied if {
	d := lib.decision({"actor": {"kind": "assistant", "id": "a", "task": t}, "action": "put"}, index)
	d == {"allow": false, "reason": "request names no resources"}
}

test_a_missing_actor_is_denied if {
	d := lib.decision({"action": "put", "resources": [concat("", [t, "/common.Message.e000000000000001"])]}, index)
	d == {"allow": false, "reason": "actor is empty"}
}

test_a_missing_placeholder_never_matches if {
	r := concat("", [t, "/common.Message.e000000000000001"])
	d := lib.decision({"actor": {"kind": "assistant", "id": "a"}, "action": "put", "resources": [r]}, index)
	d == {"allow": false, "reason": concat("", ["no rule allows assistant a to put ", r])}
}

test_a_placeholder_of_the_wrong_shape_never_matches if {
	# task = the conversation: "{task}/**" must not become "everything in the conversation".
	r := concat("", [t, "/common.Message.e000000000000001"])
	d := lib.decision({"actor": {"kind": "assistant", "id": "a", "task": c}, "action": "put", "resources": [r]}, index)
	d.allow == false
}

test_the_placeholder_is_a_path_boundary if {
	r := concat("", [t, "/common.Message.e000000000000001"])
	lib.decision({"actor": {"kind": "assistant", "id": "a", "conversation": c, "task": t}, "action": "put", "resources": [r]}, index) == {"allow": true, "reason": "allowed by own-task"}
	lib.decision({"actor": {"kind": "assistant", "id": "a", "conversation": c, "task": t}, "action": "put", "resources": [t]}, index).allow == false
}

test_a_task_outside_the_actors_conversation_never_matches if {
	# The actor claims conversation c2 but a task of c: "{task}/**" must not reach into c.
	c2 := "cld:common.Conversation.c000000000000002"
	r := concat("", [t, "/common.Message.e000000000000001"])
	lib.decision({"actor": {"kind": "assistant", "id": "a", "conversation": c2, "task": t}, "action": "put", "resources": [r]}, index).allow == false
	lib.decision({"actor": {"kind": "assistant", "id": "a", "task": t}, "action": "put", "resources": [r]}, index).allow == false
	lib.decision({"actor": {"kind": "assistant", "id": "a", "conversation": "cld:common.Conversation.c00000000000000", "task": t}, "action": "put", "resources": [r]}, index).allow == false
	lib.placeholders({"conversation": c, "task": t}) == {"conversation": c, "task": t}
	lib.placeholders({"conversation": c2, "task": t}) == {"conversation": c2}
}

test_an_id_of_unicode_blanks_is_empty if {
	every id in [" ", "\t\r\n", "\u00a0", "\u2003", "\u3000\u200b", "\ufeff \u2028"] {
		not lib.actor_present({"actor": {"kind": "user", "id": id}})
	}
}

test_an_id_with_a_visible_character_is_present if {
	every id in ["a", "\u00a0a\u2003", "é"] {
		lib.actor_present({"actor": {"kind": "user", "id": id}})
	}
}

test_index_rules_keeps_document_order_and_grants if {
	rules := [
		{"id": "a", "actor": "user", "actions": ["get", "list"], "resources": ["{conversation}"]},
		{"id": "b", "actor": "user", "actions": ["get"], "resources": ["cld:doc.Document.*", "{conversation}/**"]},
		{"id": "c", "actor": "user", "actions": ["get"], "resources": ["cld:**"]},
	]
	exact := {"kind": "segments", "head": [{"prefix": "", "star": false}], "tail": [], "deep": false}
	lib.index_rules(rules, ["a", "b"]) == {
		"user:get": [
			{"id": "a", "patterns": [{"base": "conversation", "glob": "", "matcher": exact}]},
			{"id": "b", "patterns": [
				{"base": null, "glob": "cld:doc.Document.*", "matcher": {"kind": "segments", "head": [{"prefix": "cld:doc.Document.", "star": true}], "tail": [], "deep": false}},
				{"base": "conversation", "glob": "/**", "matcher": {"kind": "prefix", "prefix": "/"}},
			]},
		],
		"user:list": [{"id": "a", "patterns": [{"base": "conversation", "glob": "", "matcher": exact}]}],
	}
}

test_compile_glob if {
	lib.compile_glob("cld:**") == {"kind": "prefix", "prefix": "cld:"}
	lib.compile_glob("/plan.Task.*/**/plan.Task.*") == {
		"kind": "segments",
		"head": [{"prefix": "", "star": false}, {"prefix": "plan.Task.", "star": true}],
		"tail": [{"prefix": "plan.Task.", "star": true}],
		"deep": true,
	}
	lib.compile_glob("cld:doc.Document.*/**") == {"kind": "segments", "head": [{"prefix": "cld:doc.Document.", "star": true}], "tail": [], "deep": true}
	lib.compile_glob("cld:common.{Assistant,Tool}.*") == {"kind": "glob"}
	lib.compile_glob("a/**/b/**") == {"kind": "glob"}
	lib.compile_glob("a?c") == {"kind": "glob"}
	lib.compile_glob("a**b") == {"kind": "glob"}
}

test_preview_cuts_at_120_characters if {
	long := concat("", [c, "................................................................................................................................"])
	count(long) > 120
	count(lib.preview(long)) == 120
	lib.preview("short") == "short"
	lib.preview(42) == "not a string (number)"
}

test_a_missing_action_is_denied if {
	d := lib.decision({"actor": {"kind": "assistant", "id": "a", "task": t}, "resources": [t]}, index)
	d == {"allow": false, "reason": "malformed input: action is not a string"}
}

test_type_confused_fields_are_denied_first if {
	actor := {"kind": "tool", "id": "tool:x", "tool": "x"}
	lib.decision({"actor": actor, "action": "execute", "resources": [t], "tool": "x"}, index).reason == "malformed input: tool is not an object"
	lib.decision({"actor": actor, "action": ["execute"], "resources": [t]}, index).reason == "malformed input: action is not a string"
	lib.decision({"actor": object.union(actor, {"kind": ["tool"]}), "action": "get", "resources": [t]}, index).reason == "malformed input: actor.kind is not a string"
	lib.decision([], index).reason == "malformed input: not an object"
	lib.decision({"actor": object.union(actor, {"id": "\ufffd"}), "action": "get", "resources": [t]}, index).reason == "malformed input: a string is not well-formed Unicode"
}

test_utc_times_compare_as_instants if {
	lib.utc_time("2026-01-01T00:00:00Z")
	lib.utc_time("2028-02-29T23:59:59.123456789Z")
	not lib.utc_time("2026-02-29T00:00:00Z")
	not lib.utc_time("2026-01-01T00:00:00+01:00")
	not lib.utc_time("2026-01-01T00:00:00.1234567890Z")
	not lib.utc_time("２026-01-01T00:00:00Z")
	lib.instant("2026-01-01T00:00:00Z") == lib.instant("2026-01-01T00:00:00.000Z")
	lib.instant("2026-01-01T00:00:00.5Z") > lib.instant("2026-01-01T00:00:00Z")
}
