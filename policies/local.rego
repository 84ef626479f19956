# The embedded default (npm start, CLI): every step runs in one process, so it grants every rule, including the operator's (ingest, show).
# Rules: the "local" entry of policies/rules.json "functions", compiled into data.cld.index.local.
# Build: opa build -t wasm -e cld/local/decision (npm run build:policies).
package cld.local

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.local)
