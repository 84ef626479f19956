# The plan function (functions/plan): reads the conversation it plans and the catalog; creates the Plan and Tasks only under the user Message it plans, and the final answer directly under the conversation.
# Rules: the "plan" entry of policies/rules.json "functions", compiled into data.cld.index.plan.
# Build: opa build -t wasm -e cld/plan/decision (npm run build:policies).
package cld.plan

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.plan)
