// A warm execution environment of one function bundle, as Lambda keeps one between invocations:
// a plain `node` process (no tsx, no loaders) that `import()`s the ESM bundle once and then calls
// `handler(event, context)` for each event its parent sends over the IPC channel, one at a time.
// Usage: fork(bundle-worker.mjs, [<path of index.mjs>], { env }) ; send { id, event } ;
// receives { id, ok: true, result } or { id, ok: false, error: { name, code, message } };
// first sends { ready: true } once the bundle is imported.
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const [bundle] = process.argv.slice(2);
const name = process.env.CLD_FUNCTION ?? 'cld';
const { handler } = await import(pathToFileURL(bundle).href);

function context() {
  return {
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
}

process.on('message', async ({ id, event }) => {
  let outcome;
  try {
    outcome = { ok: true, result: await handler(event, context()) };
  } catch (error) {
    outcome = {
      ok: false,
      error: { name: error?.name, code: error?.code, message: String(error?.message ?? error) },
    };
  }
  process.send({ id, ...outcome });
});
process.send({ ready: true });
