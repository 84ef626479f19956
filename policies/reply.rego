# The reply function: reads the final answer as the user actor {kind: user, id: function:reply, conversation} of its event; read-only.
# Rules: the "reply" entry of policies/rules.json "functions", compiled into data.cld.index.reply.
# Build: opa build -t wasm -e cld/reply/decision (npm run build:policies).
package cld.reply

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.reply)
