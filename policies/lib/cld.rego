# cld access policy library: the Rego twin of the built-in evaluator (shared/policy/rules.ts).
# Both engines take the same input, make the same checks in the same order and give the same
# reasons; policies/cases.json is the decision table both must satisfy.
#
# input (shared/policy/port.ts):
#   {"actor": {"kind", "id", "conversation"?, "message"?, "task"?, "tool"?},
#    "action": "get" | "put" | "list" | "delete",
#    "resources": [URN, ...]}
# index: one function's rules by "<actor kind>:<action>", each list in policies/rules.json order:
#   {"<kind>:<action>": [{"id": rule id, "patterns": [{"base": "conversation" | "message" | "task" | null, "glob": glob}]}]}
#   Built by compileRules() in shared/policy/rules.ts into data.cld.index[<function>] (the wasm
#   bundles' data), and by index_rules() below in the Rego tests. Indexing by kind and action
#   means a decision scans only the rules that can apply, never the whole rule list.
# result: {"allow": boolean, "reason": string}
#
# Deny by default. There is deliberately no `every` over the resources: `every` over an empty
# list is true, so an empty request would be allowed. Instead the resources' failures are
# collected in order and a decision is "allow" only when there are resources, none failed, and
# the last one names a matching rule.
package cld.lib

import rego.v1

# The URN grammar of shared/urn.ts (URN_PATTERN in shared/policy/rules.ts).
urn_pattern := `^cld:(common|plan|tool|doc)\.[A-Z][A-Za-z0-9]*\.[0-9a-f]{16}(/(common|plan|tool|doc)\.[A-Z][A-Za-z0-9]*\.[0-9a-f]{16})*$`

# `<urn>.json` must fit S3's 1,024-byte keys; the grammar admits ASCII only, so characters = bytes.
max_urn_length := 1019

# What an actor field must be for a pattern led by its placeholder to apply (PLACEHOLDER_PATTERNS
# in shared/policy/rules.ts): a missing or differently shaped field makes the pattern match nothing.
# A `message` or `task` must also lie under the actor's `conversation` (placeholder below).
placeholder_patterns := {
	"conversation": `^cld:common\.Conversation\.[0-9a-f]{16}$`,
	"message": `^cld:common\.Conversation\.[0-9a-f]{16}/common\.Message\.[0-9a-f]{16}$`,
	"task": `^cld:common\.Conversation\.[0-9a-f]{16}/common\.Message\.[0-9a-f]{16}(/plan\.Task\.[0-9a-f]{16})+$`,
}

# An actor id made of these characters only is empty (BLANK_CHARACTERS in shared/policy/rules.ts):
# Unicode's White_Space characters and the zero-width ones that print as nothing.
blank := "\t\n\u000b\u000c\r \u0085\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff"

# decision(inp, index) is the decision for input `inp` under one function's rule index.
decision(inp, index) := deny("actor is empty") if {
	not actor_present(inp)
} else := deny("request names no resources") if {
	not has_resources(inp)
} else := deny("no actor may delete resources") if {
	inp.action == "delete"
} else := deny(reasons[0]) if {
	rules := candidates(inp, index)
	reasons := [reason | some r in inp.resources; reason := failure(inp, rules, r)]
	count(reasons) > 0
} else := {"allow": true, "reason": concat("", ["allowed by ", rule_id])} if {
	rule_id := first_rule(candidates(inp, index), inp.actor, inp.resources[count(inp.resources) - 1])
}

deny(reason) := {"allow": false, "reason": reason}

actor_present(inp) if {
	is_string(inp.actor.id)
	trim(inp.actor.id, blank) != ""
}

has_resources(inp) if {
	is_array(inp.resources)
	count(inp.resources) > 0
}

# The rules that can apply: one index lookup by actor kind and action.
candidates(inp, index) := object.get(index, concat(":", [inp.actor.kind, inp.action]), [])

# Why resource r is denied; undefined when it is allowed.
failure(inp, rules, r) := concat("", ["malformed URN: ", preview(r)]) if {
	not valid_urn(r)
} else := concat("", ["no rule allows ", inp.actor.kind, " ", inp.actor.id, " to ", inp.action, " ", r]) if {
	not first_rule(rules, inp.actor, r)
}

# The id of the first rule (in document order) with a pattern matching r.
first_rule(rules, actor, r) := ids[0] if {
	ids := [rule.id | some rule in rules; rule_matches(rule, actor, r)]
	count(ids) > 0
}

rule_matches(rule, actor, r) if {
	some p in rule.patterns
	pattern_matches(p, actor, r)
}

# A pattern without placeholder: OPA glob with "/" as the only delimiter.
pattern_matches(p, _, r) if {
	p.base == null
	glob.match(p.glob, ["/"], r)
}

# A pattern that is exactly a placeholder: the actor's URN itself.
pattern_matches(p, actor, r) if {
	base := placeholder(actor, p.base)
	p.glob == ""
	r == base
}

# A placeholder followed by a glob. A placeholder value is a URN, which holds no glob
# metacharacter, so it is matched as a literal prefix and the glob on the rest (this also keeps
# OPA's glob cache to the rules' few globs instead of one per actor).
pattern_matches(p, actor, r) if {
	base := placeholder(actor, p.base)
	p.glob != ""
	startswith(r, base)
	glob.match(p.glob, ["/"], trim_prefix(r, base))
}

# The value of the actor's placeholder `name`, when it applies: the field has its shape and, for
# `message` and `task`, lies under the actor's `conversation` (an actor claims one conversation;
# {kind: assistant, conversation: C, task: <a task of C2>} gets no `{task}` and writes nowhere).
placeholder(actor, "conversation") := base if {
	base := actor.conversation
	valid_placeholder("conversation", base)
}

placeholder(actor, name) := base if {
	name != "conversation"
	base := actor[name]
	valid_placeholder(name, base)
	valid_placeholder("conversation", actor.conversation)
	startswith(base, concat("", [actor.conversation, "/"]))
}

valid_urn(x) if {
	is_string(x)
	count(x) <= max_urn_length
	regex.match(urn_pattern, x)
}

valid_placeholder(name, x) if {
	is_string(x)
	count(x) <= max_urn_length
	regex.match(placeholder_patterns[name], x)
}

# The first 120 characters of a string, or of a non-string's JSON (for reasons).
preview(x) := x if {
	is_string(x)
	count(x) <= 120
} else := substring(x, 0, 120) if {
	is_string(x)
} else := s if {
	s := json.marshal(x)
	count(s) <= 120
} else := substring(json.marshal(x), 0, 120)

# index_rules(rules, granted) is the index of the rules (policies/rules.json "rules") whose id is
# in `granted` (its "functions" entry for one function): indexRules() of shared/policy/rules.ts.
index_rules(rules, granted) := {key: entries |
	some rule in rules
	rule.id in granted
	some action in rule.actions
	key := concat(":", [rule.actor, action])
	entries := [compile_rule(other) |
		some other in rules
		other.id in granted
		other.actor == rule.actor
		action in other.actions
	]
}

compile_rule(rule) := {"id": rule.id, "patterns": [compile_pattern(p) | some p in rule.resources]}

compile_pattern(p) := {"base": name, "glob": trim_prefix(p, concat("", ["{", name, "}"]))} if {
	some name in ["conversation", "message", "task"]
	startswith(p, concat("", ["{", name, "}"]))
} else := {"base": null, "glob": p}
