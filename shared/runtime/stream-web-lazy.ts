import { createRequire } from 'node:module';

/**
 * What the function bundles have instead of `node:stream/web`: infra/lib/bundling.ts aliases the
 * module to this one. Each export is Node's own class (the same constructor, prototype and
 * statics, `instanceof` answering as for the class itself), reached through a proxy that loads
 * `node:stream/web` at the class's first use instead of at import. `@middy/core` imports
 * `ReadableStream` statically for its response-streaming path only (`instanceof` on a handler's
 * body when `streamifyResponse` is set, which no function sets), and loading Node's web streams
 * cost 3–13 ms of every step function's cold import (issue 25 cold starts; the AWS SDK's first
 * load needs them too, so where it loads they move to the first invocation). Outside a bundle
 * (dev, tests, the CLI) everything gets the real module.
 */

type StreamWeb = typeof import('node:stream/web');

let loaded: StreamWeb | undefined;

function streamWeb(): StreamWeb {
  loaded ??= createRequire(import.meta.url)('node:stream/web') as StreamWeb;
  return loaded;
}

/** `name` of `node:stream/web`, loaded when the returned proxy is first used. */
function lazy<K extends keyof StreamWeb>(name: K): StreamWeb[K] {
  const real = () => streamWeb()[name] as unknown as abstract new (...args: unknown[]) => object;
  const proxy: StreamWeb[K] = new Proxy(function lazyStreamClass() {} as unknown as StreamWeb[K], {
    get: (_, key) => Reflect.get(real(), key),
    has: (_, key) => Reflect.has(real(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
    construct: (_, args, newTarget) =>
      Reflect.construct(real() as never, args, newTarget === proxy ? real() : newTarget),
    apply: (_, self, args) => Reflect.apply(real() as never, self, args),
  });
  return proxy;
}

/** Node's `node:stream/web` classes, each loaded at its first use. */
export const ReadableStream = lazy('ReadableStream');
export const ReadableStreamDefaultReader = lazy('ReadableStreamDefaultReader');
export const ReadableStreamBYOBReader = lazy('ReadableStreamBYOBReader');
export const ReadableStreamBYOBRequest = lazy('ReadableStreamBYOBRequest');
export const ReadableByteStreamController = lazy('ReadableByteStreamController');
export const ReadableStreamDefaultController = lazy('ReadableStreamDefaultController');
export const TransformStream = lazy('TransformStream');
export const TransformStreamDefaultController = lazy('TransformStreamDefaultController');
export const WritableStream = lazy('WritableStream');
export const WritableStreamDefaultWriter = lazy('WritableStreamDefaultWriter');
export const WritableStreamDefaultController = lazy('WritableStreamDefaultController');
export const ByteLengthQueuingStrategy = lazy('ByteLengthQueuingStrategy');
export const CountQueuingStrategy = lazy('CountQueuingStrategy');
export const TextEncoderStream = lazy('TextEncoderStream');
export const TextDecoderStream = lazy('TextDecoderStream');
export const CompressionStream = lazy('CompressionStream');
export const DecompressionStream = lazy('DecompressionStream');

/** The module's default export, as Node's (`import streamWeb from 'node:stream/web'`). */
export default {
  ReadableStream,
  ReadableStreamDefaultReader,
  ReadableStreamBYOBReader,
  ReadableStreamBYOBRequest,
  ReadableByteStreamController,
  ReadableStreamDefaultController,
  TransformStream,
  TransformStreamDefaultController,
  WritableStream,
  WritableStreamDefaultWriter,
  WritableStreamDefaultController,
  ByteLengthQueuingStrategy,
  CountQueuingStrategy,
  TextEncoderStream,
  TextDecoderStream,
  CompressionStream,
  DecompressionStream,
};
