# The tool function (functions/tool): reads a call and its task as T's assistant; each tool reads with T's read scope (never more) and writes its result only directly under T.
# Rules: the "tool" entry of policies/rules.json "functions", compiled into data.cld.index.tool.
# Build: opa build -t wasm -e cld/tool/decision (npm run build:policies).
package cld.tool

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.tool)
