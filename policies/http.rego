# The HTTP API channel: a caller (user actor, conversation set only after checking it started it) reads that conversation and creates only the Conversation and Messages directly under it; it may also get (never list) shared document corpora by URN, to open citations.
# Rules: the "http" entry of policies/rules.json "functions", compiled into data.cld.index.http.
# Build: opa build -t wasm -e cld/http/decision (npm run build:policies).
package cld.http

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.http)
