# The sweeper function (functions/sweeper): re-drives stalled conversations. As the plan actor it reads a conversation's subtree and writes only the answer of a message it gives up on, directly under the conversation.
# Rules: the "sweeper" entry of policies/rules.json "functions", compiled into data.cld.index.sweeper.
# Build: opa build -t wasm -e cld/sweeper/decision (npm run build:policies).
package cld.sweeper

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.sweeper)
