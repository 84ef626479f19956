// Invokes a function bundle's handler once, in a plain `node` process (no tsx, no loaders), the way
// the Lambda Node.js runtime does: `import()` the ESM bundle, call `handler(event, context)`.
// Usage: node invoke-bundle.mjs <path of index.mjs> <path of the event JSON>
// Prints one last line `RESULT <json>`: { ok: true, result } or { ok: false, error: { name, code, message } }.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [bundle, eventFile] = process.argv.slice(2);
const event = JSON.parse(readFileSync(eventFile, 'utf8'));
const name = process.env.CLD_FUNCTION ?? 'cld';
const context = {
  callbackWaitsForEmptyEventLoop: true,
  functionName: name,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:eu-west-1:111122223333:function:${name}`,
  memoryLimitInMB: '1024',
  awsRequestId: randomUUID(),
  logGroupName: `/aws/lambda/${name}`,
  logStreamName: 'test',
  getRemainingTimeInMillis: () => 60_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

let outcome;
try {
  const { handler } = await import(pathToFileURL(bundle).href);
  outcome = { ok: true, result: await handler(event, context) };
} catch (error) {
  outcome = {
    ok: false,
    error: { name: error?.name, code: error?.code, message: String(error?.message ?? error) },
  };
}
process.stdout.write(`\nRESULT ${JSON.stringify(outcome)}\n`);
