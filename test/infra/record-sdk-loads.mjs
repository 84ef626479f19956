// `node --import` hook of test/infra/sdk-load.test.ts: records every resolution of an AWS SDK
// module (`@aws-sdk/*`, `@smithy/*`) in `globalThis.__cldSdkLoads`, as `import <specifier>` (the
// ES module loader, through a module resolve hook) or `require <specifier>` (CommonJS resolution).
import Module, { register } from 'node:module';

globalThis.__cldSdkLoads = [];
const SDK = /^@(aws-sdk|smithy)\//;
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (SDK.test(request)) globalThis.__cldSdkLoads.push(`require ${request}`);
  return resolveFilename.call(this, request, ...rest);
};
const { port1, port2 } = new MessageChannel();
port1.on('message', (specifier) => globalThis.__cldSdkLoads.push(`import ${specifier}`));
port1.unref();
const hook = [
  'let port;',
  'export function initialize(data) { port = data.port; }',
  'export async function resolve(specifier, context, next) {',
  '  if (/^@(aws-sdk|smithy)\\//.test(specifier)) port.postMessage(specifier);',
  '  return next(specifier, context);',
  '}',
].join('\n');
register(`data:text/javascript,${encodeURIComponent(hook)}`, {
  data: { port: port2 },
  transferList: [port2],
});
