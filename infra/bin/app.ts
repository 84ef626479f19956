import { createCldApp } from '../lib/app.js';

/**
 * The CDK app `cdk.json` runs (`npx tsx infra/bin/app.ts`). Config (stage, model id, limits,
 * allowed origins, JWT issuer and audiences, API throttling, existing channel secrets, reserved
 * concurrency, retries, log retention) is resolved once here from CDK context; see
 * infra/lib/config.ts. The stack is environment-agnostic, so synth needs no
 * credentials and no network.
 */
const { app } = createCldApp();
app.synth();
