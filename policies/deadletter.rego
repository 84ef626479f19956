# The dead-letter function (functions/dead-letter): fails the task a dead-lettered event was for. As the plan actor it reads the conversation and writes only a failed Plan under the user Message and the final answer; as the assistant actor on a task it reads the conversation and writes only the task's failed output directly under it.
# Rules: the "deadletter" entry of policies/rules.json "functions", compiled into data.cld.index.deadletter.
# Build: opa build -t wasm -e cld/deadletter/decision (npm run build:policies).
package cld.deadletter

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.deadletter)
