# The Slack channel: same grants as the HTTP channel (user actor scoped to its conversation).
# Rules: the "slack" entry of policies/rules.json "functions", compiled into data.cld.index.slack.
# Build: opa build -t wasm -e cld/slack/decision (npm run build:policies).
package cld.slack

import rego.v1

import data.cld.lib

# Deny by default: without data or input the decision still says no, and why.
default decision := {"allow": false, "reason": "no decision: policy data or input missing"}

decision := lib.decision(input, data.cld.index.slack)
