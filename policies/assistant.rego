# The assistant function (functions/assistant): on task T of conversation C it reads C's subtree, shared corpora and the catalog, and creates resources only under T.
# Rules: the "assistant" entry of policies/rules.json "functions", compiled into data.cld.index.assistant.
# Build: opa build -t wasm -e cld/assistant/decision (npm run build:policies).
package cld.assistant

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.assistant)
