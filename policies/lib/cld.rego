# cld access policy library: the Rego twin of the built-in evaluator (shared/policy/rules.ts).
# Both engines take the same input, make the same checks in the same order and give the same
# reasons; policies/cases.json is the decision table both must satisfy.
#
# input (shared/policy/port.ts):
#   {"actor": {"kind", "id", "conversation"?, "message"?, "task"?, "tool"?},
#    "action": "get" | "put" | "list" | "delete" | "execute",
#    "resources": [URN, ...], "tool"?: {"name", "approval"?}, "decision"?: {...}}
#   Any other shape is denied first, with a reason naming what is wrong (decision below).
# index: one function's rules by "<actor kind>:<action>", each list in policies/rules.json order:
#   {"<kind>:<action>": [{"id": rule id, "patterns": [{"base": "conversation" | "message" | "task" | null, "glob": glob, "matcher": matcher}]}]}
#   where matcher is the glob compiled to string tests (compile_glob below, compileGlob in rules.ts):
#     {"kind": "prefix", "prefix": p}                       the glob is a literal p followed by `**`
#     {"kind": "segments", "head": [s], "tail": [s], "deep": d}  `/`-separated segments, each a literal
#         or a literal followed by `*` (s = {"prefix": literal, "star": bool}), with at most one
#         whole-segment `**` between head and tail (d = true: it spans one or more segments)
#     {"kind": "glob"}                                       anything else: glob.match(glob, ["/"], value)
#   Built by compileRules() in shared/policy/rules.ts into data.cld.index[<function>] (the wasm
#   bundles' data), and by index_rules() below in the Rego tests. Indexing by kind and action
#   means a decision scans only the rules that can apply, never the whole rule list.
# result: {"allow": boolean, "reason": string}
#
# Speed (the wasm engine): OPA's wasm runtime clears its regex and glob caches at every evaluation
# (opa_eval resets the heap), so each regex.match compiles its RE2 program again (about 100 µs for
# the URN grammar) and each distinct glob.match pattern its translation (10-20 µs). The hot path
# therefore uses neither: URNs are checked with split/trim, rule globs run as the compiled matchers
# above, and the actor's placeholders are parsed once per decision.
#
# Deny by default. There is deliberately no `every` over the resources: `every` over an empty
# list is true, so an empty request would be allowed. Instead the resources' failures are
# collected in order and a decision is "allow" only when there are resources, none failed, and
# the last one names a matching rule.
package cld.lib

import rego.v1

# The URN grammar of shared/urn.ts (URN_PATTERN in shared/policy/rules.ts), without regex.match:
# `cld:` then `/`-joined elements `<namespace>.<Name>.<hash>`, namespace one of these, Name
# [A-Z][A-Za-z0-9]*, hash 16 of [0-9a-f].
namespaces := {"common", "plan", "tool", "doc"}

upper := "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

alphanumeric := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

hex := "0123456789abcdef"

# `<urn>.json` must fit S3's 1,024-byte keys; the grammar admits ASCII only, so characters = bytes.
max_urn_length := 1019

# An actor id made of these characters only is empty (BLANK_CHARACTERS in shared/policy/rules.ts):
# Unicode's White_Space characters and the zero-width ones that print as nothing.
blank := "\t\n\u000b\u000c\r \u0085\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff"

# decision(inp, index) is the decision for input `inp` under one function's rule index.
#
# The input's types are checked first, so that no later test meets a value of a type it cannot
# handle: in Rego a builtin given the wrong type is an error, an error makes its expression
# undefined, and `not undefined` is true, so an unchecked type could turn a denial into "no
# objection" (issue 22, finding 1). The checks, in order (same reasons as RulesPolicy.evaluate):
# a string that is not well-formed Unicode anywhere in the input (OPA decodes a lone UTF-16
# surrogate as U+FFFD, so both count); an input that is not an object; no actor or a blank id;
# an actor field that is not a string; an action that is not a string; a `tool` that is not an
# object; no resources.
decision(inp, index) := deny("malformed input: a string is not well-formed Unicode") if {
	unicode_damaged(inp)
} else := deny("malformed input: not an object") if {
	not is_object(inp)
} else := deny("actor is empty") if {
	not actor_present(inp)
} else := deny(concat("", ["malformed input: actor.", bad[0], " is not a string"])) if {
	bad := [f | some f in actor_fields; not string_field(inp.actor, f)]
	count(bad) > 0
} else := deny("malformed input: action is not a string") if {
	not string_action(inp)
} else := deny("malformed input: tool is not an object") if {
	not tool_absent_or_object(inp)
} else := deny("request names no resources") if {
	not has_resources(inp)
} else := deny("no actor may delete resources") if {
	inp.action == "delete"
} else := approved(inp, verdict(inp, candidates(inp, index), placeholders(inp.actor)))

# Type tests of possibly missing fields live in their own rules: in `not is_string(inp.action)`
# OPA evaluates the reference `inp.action` outside the `not`, so a missing action would make the
# whole condition undefined (the check skipped) instead of true.
string_action(inp) if is_string(inp.action)

tool_absent_or_object(inp) if not has_key(inp, "tool")

tool_absent_or_object(inp) if is_object(inp.tool)

# The actor's fields that must be strings: `kind` always, the others when present (null counts
# as present, as JSON has it).
actor_fields := ["kind", "conversation", "message", "task", "tool"]

string_field(actor, "kind") if is_string(actor.kind)

string_field(actor, f) if {
	f != "kind"
	not has_key(actor, f)
}

string_field(actor, f) if {
	f != "kind"
	is_string(actor[f])
}

# True when object o has key k, whatever its value (false and null included).
has_key(o, k) if {
	_ = o[k]
}

# A string (value or object key) anywhere in x holds U+FFFD: the mark OPA's JSON decoding leaves
# for a lone UTF-16 surrogate (and for bytes that are not UTF-8). OpaWasmPolicy hands the wasm
# runtime the input with lone surrogates replaced the same way; RulesPolicy rejects both.
unicode_damaged(x) if {
	walk(x, [_, value])
	damaged_string(value)
}

unicode_damaged(x) if {
	walk(x, [_, value])
	is_object(value)
	some k, _ in value
	damaged_string(k)
}

damaged_string(s) if {
	is_string(s)
	contains(s, "�")
}

# An `execute` the rules allow is still denied for the reason approval_denial gives, if any
# (approvalDenial in shared/policy/rules.ts); other actions keep the rules' verdict. The allow
# needs execute_cleared to hold as well: should approval_denial ever be undefined where it
# should have given a reason, the result is the last denial below, never the rules' allow.
approved(inp, v) := v if {
	not v.allow
} else := v if {
	inp.action != "execute"
} else := deny(reason) if {
	reason := approval_denial(inp)
} else := v if {
	execute_cleared(inp)
} else := deny("execute is not cleared by the approval checks")

# An execute that passes every approval check, each tested positively (no `not` over a test that
# could be undefined for a reason other than being false).
execute_cleared(inp) if {
	execute_runs_own_tool(inp)
	approval_exempt(inp.tool)
}

execute_cleared(inp) if {
	execute_runs_own_tool(inp)
	approved_in_time(inp)
}

execute_runs_own_tool(inp) if {
	count(inp.resources) <= 2
	is_object(inp.tool)
	is_string(inp.tool.name)
	inp.actor.tool == inp.tool.name
}

# The tool needs no approval: its entry says "never", or says nothing and no glob of
# approval_always matches its name.
approval_exempt(tool) if tool.approval == "never"

approval_exempt(tool) if {
	not has_key(tool, "approval")
	not contains(tool.name, "/")
	count([g | some g in approval_always; glob.match(g, ["/"], tool.name)]) == 0
}

approved_in_time(inp) if {
	count(inp.resources) == 2
	startswith(inp.resources[1], concat("", [inp.resources[0], "/"]))
	is_object(inp.decision)
	inp.decision.outcome == "approve"
	same_user(inp.decision)
	in_time(inp.decision)
}

# The policy's default for tools whose catalog entry sets no `approval` (rules.json approval.always).
default approval_always := []

approval_always := data.cld.approval.always

# A call of `tool` needs the user's approval: its entry has an `approval` other than "never" (any
# value, null included: fail safe), or has none and its name matches a glob of approval_always.
# The globs are matched with "/" as the only delimiter, as glob.ts does: `glob.match(g, [], x)`
# would default to ".", so a `*` would not cross a "." in a tool name.
approval_required(tool) if {
	has_key(tool, "approval")
	tool.approval != "never"
}

approval_required(tool) if {
	not has_key(tool, "approval")
	some g in approval_always
	glob.match(g, ["/"], tool.name)
}

# A name with the delimiter in it, which a `*` would not cross, needs approval whatever the globs
# say (catalog and registry names never have one: [A-Za-z0-9_-]).
approval_required(tool) if {
	not has_key(tool, "approval")
	contains(tool.name, "/")
}

# Same checks, order and reasons as approvalDenial (shared/policy/rules.ts); undefined = allowed.
approval_denial(inp) := "execute names a call and at most one decision" if {
	count(inp.resources) > 2
} else := "execute names no tool" if {
	not is_string(object.get(object.get(inp, "tool", {}), "name", null))
} else := concat("", ["actor ", inp.actor.id, " does not run tool ", inp.tool.name]) if {
	object.get(inp.actor, "tool", null) != inp.tool.name
} else := approval_needed(inp) if {
	approval_required(inp.tool)
}

approval_needed(inp) := concat("", ["tool ", inp.tool.name, " needs the approval of the conversation's user for each call"]) if {
	count(inp.resources) < 2
} else := concat("", [inp.resources[1], " is not a decision on ", inp.resources[0]]) if {
	not startswith(inp.resources[1], concat("", [inp.resources[0], "/"]))
} else := concat("", ["no facts of decision ", inp.resources[1]]) if {
	not is_object(object.get(inp, "decision", null))
} else := concat("", ["the conversation's user denied ", inp.resources[0]]) if {
	object.get(inp.decision, "outcome", null) != "approve"
} else := concat("", ["decision by ", text(object.get(inp.decision, "by", null)), ", not by the conversation's user ", text(object.get(inp.decision, "user", null))]) if {
	not same_user(inp.decision)
} else := concat("", ["decision at ", text(object.get(inp.decision, "decidedAt", null)), " or expiry ", text(object.get(inp.decision, "expiresAt", null)), " is not an RFC 3339 UTC time"]) if {
	not utc_times(inp.decision)
} else := concat("", ["decision at ", text(object.get(inp.decision, "decidedAt", null)), ", after the request expired at ", text(object.get(inp.decision, "expiresAt", null))]) if {
	not in_time(inp.decision)
}

same_user(d) if {
	is_string(d.by)
	is_string(d.user)
	d.by == d.user
}

utc_times(d) if {
	utc_time(d.decidedAt)
	utc_time(d.expiresAt)
}

# Compared as instants: both times are RFC 3339 in UTC (utc_time), and instant() writes each as
# 28 ASCII digits and separators whose string order is their time order.
in_time(d) if {
	utc_times(d)
	instant(d.decidedAt) <= instant(d.expiresAt)
}

# RFC 3339 date-time in UTC as Date.toISOString() writes it, the fraction optional and 1-9 digits:
# `YYYY-MM-DDTHH:MM:SS[.fffffffff]Z`, upper-case `T` and `Z`, a real calendar day, hours 00-23,
# minutes and seconds 00-59 (no leap second). Same as isUtcTime in shared/policy/rules.ts. No
# regex.match (the wasm runtime recompiles it at each evaluation) and no to_number.
utc_time(s) if {
	is_string(s)
	count(s) == 20
	date_time(s)
	substring(s, 19, 1) == "Z"
}

utc_time(s) if {
	is_string(s)
	count(s) >= 22
	count(s) <= 30
	date_time(s)
	substring(s, 19, 1) == "."
	endswith(s, "Z")
	digits(substring(s, 20, count(s) - 21))
}

date_time(s) if {
	substring(s, 4, 1) == "-"
	substring(s, 7, 1) == "-"
	substring(s, 10, 1) == "T"
	substring(s, 13, 1) == ":"
	substring(s, 16, 1) == ":"
	digits(substring(s, 0, 4))
	digits(substring(s, 5, 2))
	digits(substring(s, 8, 2))
	digits(substring(s, 11, 2))
	digits(substring(s, 14, 2))
	digits(substring(s, 17, 2))
	calendar_day(substring(s, 0, 4), substring(s, 5, 2), substring(s, 8, 2))
	substring(s, 11, 2) <= "23"
	substring(s, 14, 2) <= "59"
	substring(s, 17, 2) <= "59"
}

# Two-digit strings compare as their numbers.
month_days := {"01": "31", "02": "28", "03": "31", "04": "30", "05": "31", "06": "30", "07": "31", "08": "31", "09": "30", "10": "31", "11": "30", "12": "31"}

calendar_day(_, month, day) if {
	day >= "01"
	day <= month_days[month]
}

calendar_day(year, "02", "29") if leap_year(year)

multiples_of_4 := {"00", "04", "08", "12", "16", "20", "24", "28", "32", "36", "40", "44", "48", "52", "56", "60", "64", "68", "72", "76", "80", "84", "88", "92", "96"}

leap_year(year) if {
	substring(year, 2, 2) != "00"
	multiples_of_4[substring(year, 2, 2)]
}

leap_year(year) if {
	substring(year, 2, 2) == "00"
	multiples_of_4[substring(year, 0, 2)]
}

digits(x) if {
	count(x) > 0
	trim(x, "0123456789") == ""
}

# A utc_time as `YYYY-MM-DDTHH:MM:SS` and its fraction padded to 9 digits.
instant(s) := concat("", [substring(s, 0, 19), "000000000"]) if {
	count(s) == 20
} else := concat("", [substring(s, 0, 19), fraction, substring("000000000", 0, 9 - count(fraction))]) if {
	fraction := substring(s, 20, count(s) - 21)
}

# A string as it is; anything else as JavaScript's template literal prints undefined.
text(x) := x if {
	is_string(x)
} else := "undefined"

deny(reason) := {"allow": false, "reason": reason}

# Each resource's outcome in order: the first denial is the decision, else the rule that allowed
# the last resource.
verdict(inp, rules, bases) := conclusion(inp, [outcome(inp, rules, bases, r) | some r in inp.resources])

# An allow needs an outcome for every resource (an outcome that were undefined would otherwise
# drop out of the list and leave the others to allow).
conclusion(inp, outcomes) := deny(denials[0]) if {
	denials := [o.deny | some o in outcomes; o.deny]
	count(denials) > 0
} else := {"allow": true, "reason": concat("", ["allowed by ", outcomes[count(outcomes) - 1].allow])} if {
	count(outcomes) == count(inp.resources)
} else := deny("a resource got no outcome")

actor_present(inp) if {
	is_object(inp.actor)
	is_string(inp.actor.id)
	trim(inp.actor.id, blank) != ""
}

has_resources(inp) if {
	is_array(inp.resources)
	count(inp.resources) > 0
}

# The rules that can apply: one index lookup by actor kind and action.
candidates(inp, index) := object.get(index, concat(":", [inp.actor.kind, inp.action]), [])

# {"deny": reason} when resource r is denied, else {"allow": rule id}.
outcome(inp, rules, bases, r) := {"deny": concat("", ["malformed URN: ", preview(r)])} if {
	not valid_urn(r)
} else := {"allow": rule_id} if {
	rule_id := first_rule(rules, bases, r)
} else := {"deny": concat("", ["no rule allows ", inp.actor.kind, " ", inp.actor.id, " to ", inp.action, " ", r])}

# The id of the first rule (in document order) with a pattern matching r.
first_rule(rules, bases, r) := ids[0] if {
	ids := [rule.id | some rule in rules; rule_matches(rule, bases, r)]
	count(ids) > 0
}

rule_matches(rule, bases, r) if {
	some p in rule.patterns
	pattern_matches(p, bases, r)
}

# A pattern without placeholder: its glob (compiled matcher) on the whole URN.
pattern_matches(p, _, r) if {
	p.base == null
	glob_matches(p, r)
}

# A pattern that is exactly a placeholder: the actor's URN itself.
pattern_matches(p, bases, r) if {
	p.glob == ""
	r == bases[p.base]
}

# A placeholder followed by a glob. A placeholder value is a URN, which holds no glob
# metacharacter, so it is matched as a literal prefix and the glob on the rest. The prefix test
# is what keeps an actor in its own conversation: the rest is cut by length, not by the prefix.
pattern_matches(p, bases, r) if {
	p.glob != ""
	base := bases[p.base]
	startswith(r, base)
	glob_matches(p, substring(r, count(base), -1))
}

# The pattern's glob on value v: its compiled matcher when it has one, else OPA's glob.match
# with "/" as the only delimiter (the semantics of shared/policy/glob.ts).
glob_matches(p, v) if {
	p.matcher.kind == "prefix"
	startswith(v, p.matcher.prefix)
}

glob_matches(p, v) if {
	p.matcher.kind == "segments"
	segments_match(p.matcher, split(v, "/"))
}

glob_matches(p, v) if {
	p.matcher.kind == "glob"
	glob.match(p.glob, ["/"], v)
}

# Without `**`: one value segment per pattern segment. With it: the head, one or more segments
# (`**` as OPA's wasm runtime and glob.ts match it: `a/**/z` needs a segment between a and z),
# then the tail.
segments_match(m, segments) if {
	not m.deep
	count(segments) == count(m.head)
	count([i | some i, s in m.head; not segment_matches(s, segments[i])]) == 0
}

segments_match(m, segments) if {
	m.deep
	offset := count(segments) - count(m.tail)
	offset > count(m.head)
	count([i | some i, s in m.head; not segment_matches(s, segments[i])]) == 0
	count([i | some i, s in m.tail; not segment_matches(s, segments[offset + i])]) == 0
}

segment_matches(s, v) if {
	s.star
	startswith(v, s.prefix)
}

segment_matches(s, v) if {
	not s.star
	v == s.prefix
}

# The element types of URN x ("<namespace>.<Name>" per element); undefined when x is not a URN.
urn_types(x) := types if {
	is_string(x)
	count(x) <= max_urn_length
	startswith(x, "cld:")
	elements := split(substring(x, 4, -1), "/")
	types := [t | some e in elements; t := element_type(e)]
	count(types) == count(elements)
}

element_type(e) := concat(".", [parts[0], parts[1]]) if {
	parts := split(e, ".")
	count(parts) == 3
	namespaces[parts[0]]
	count(parts[1]) > 0
	trim(substring(parts[1], 0, 1), upper) == ""
	trim(parts[1], alphanumeric) == ""
	count(parts[2]) == 16
	trim(parts[2], hex) == ""
}

valid_urn(x) if urn_types(x)

# The actor's placeholders that apply, by name (PLACEHOLDER_PATTERNS in shared/policy/rules.ts):
# `conversation` a root Conversation; `message` a Message directly under it; `task` a Task at any
# depth under such a Message. A missing or differently shaped field, or a `message` or `task` not
# under the actor's own `conversation`, is left out, so patterns it leads match nothing (an actor
# claims one conversation: {kind: assistant, conversation: C, task: <a task of C2>} gets no
# `{task}` and writes nowhere).
placeholders(actor) := {name: value |
	some name in ["conversation", "message", "task"]
	value := actor[name]
	placeholder_applies(actor, name, value)
}

# Checked with a few string tests rather than urn_types (the hot path): the shapes are fixed.
placeholder_applies(_, "conversation", value) if conversation_urn(value)

placeholder_applies(actor, "message", value) if message_urn(actor, value)

placeholder_applies(actor, "task", value) if {
	message_urn(actor, substring(value, 0, count(actor.conversation) + 32))
	tasks := split(substring(value, count(actor.conversation) + 32, -1), "/plan.Task.")
	count(tasks) > 1
	tasks[0] == ""
	count([h | some h in array.slice(tasks, 1, count(tasks)); not hash(h)]) == 0
}

# `<actor.conversation>/common.Message.<hash>`
message_urn(actor, value) if {
	conversation_urn(actor.conversation)
	startswith(value, concat("", [actor.conversation, "/common.Message."]))
	count(value) == count(actor.conversation) + 32
	hash(substring(value, count(value) - 16, -1))
}

# `cld:common.Conversation.<hash>`
conversation_urn(value) if {
	is_string(value)
	count(value) == 40
	startswith(value, "cld:common.Conversation.")
	hash(substring(value, 24, -1))
}

hash(h) if {
	count(h) == 16
	trim(h, hex) == ""
}

# The first 120 characters of a string; for anything else, its type (JSON renderings of numbers
# and key orders differ between engines, a type name does not).
preview(x) := x if {
	is_string(x)
	count(x) <= 120
} else := substring(x, 0, 120) if {
	is_string(x)
} else := concat("", ["not a string (", type_name(x), ")"])

# index_rules(rules, granted) is the index of the rules (policies/rules.json "rules") whose id is
# in `granted` (its "functions" entry for one function): indexRules() of shared/policy/rules.ts.
# Each granted rule is compiled once (compiling it again for every key it lands under made the
# Rego tests' index the slowest part of `opa test`).
index_rules(rules, granted) := {key: [e.rule | some e in entries; key in e.keys] |
	some e in entries
	some key in e.keys
} if {
	entries := [{"keys": {concat(":", [rule.actor, a]) | some a in rule.actions}, "rule": compile_rule(rule)} |
		some rule in rules
		rule.id in granted
	]
}

compile_rule(rule) := {"id": rule.id, "patterns": [compile_pattern(p) | some p in rule.resources]}

compile_pattern(p) := {"base": name, "glob": g, "matcher": compile_glob(g)} if {
	some name in ["conversation", "message", "task"]
	startswith(p, concat("", ["{", name, "}"]))
	g := trim_prefix(p, concat("", ["{", name, "}"]))
} else := {"base": null, "glob": p, "matcher": compile_glob(p)}

# The matcher of a glob (compileGlob in shared/policy/rules.ts; the layout is in the header).
compile_glob(g) := {"kind": "prefix", "prefix": p} if {
	endswith(g, "**")
	p := substring(g, 0, count(g) - 2)
	literal(p)
} else := {"kind": "segments", "head": compile_segments(segments), "tail": [], "deep": false} if {
	segments := split(g, "/")
	count([s | some s in segments; not simple_segment(s)]) == 0
} else := {"kind": "segments", "head": compile_segments(head), "tail": compile_segments(tail), "deep": true} if {
	segments := split(g, "/")
	deep := [i | some i, s in segments; s == "**"]
	count(deep) == 1
	head := array.slice(segments, 0, deep[0])
	tail := array.slice(segments, deep[0] + 1, count(segments))
	count([s | some s in array.concat(head, tail); not simple_segment(s)]) == 0
} else := {"kind": "glob"}

compile_segments(segments) := [compile_segment(s) | some s in segments]

compile_segment(s) := {"prefix": substring(s, 0, count(s) - 1), "star": true} if {
	endswith(s, "*")
} else := {"prefix": s, "star": false}

simple_segment(s) if literal(s)

simple_segment(s) if {
	endswith(s, "*")
	literal(substring(s, 0, count(s) - 1))
}

# No glob metacharacter (nor `,`, which glob.ts reads as one inside braces).
literal(s) if {
	not contains(s, "*")
	not contains(s, "?")
	not contains(s, "[")
	not contains(s, "]")
	not contains(s, "{")
	not contains(s, "}")
	not contains(s, "\\")
	not contains(s, ",")
}
