import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_FILE, esbuildOptions } from '../../infra/lib/bundling.js';
import * as source from '../../shared/errors.js';

/**
 * The function bundles are minified without esbuild's `keepNames` (infra/lib/bundling.ts), so a
 * class's own `name` is not kept in them. What depends on a name must state it: these build small
 * entries with the functions' esbuild options and check the names a caller sees.
 */

let work: string;

/** Bundles `contents` (an ES module, resolved from the project root) as function `plan` is bundled, and imports it. */
async function bundled(name: string, contents: string): Promise<Record<string, unknown>> {
  const dir = join(work, name);
  const { entryPoints: _entry, ...options } = esbuildOptions('plan', 'unused.ts', dir);
  await build({
    ...options,
    stdin: { contents, resolveDir: options.absWorkingDir as string, loader: 'ts', sourcefile: `${name}.ts` },
  });
  return (await import(pathToFileURL(join(dir, BUNDLE_FILE)).href)) as Record<string, unknown>;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'cld-bundle-names-'));
});

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('names in minified function bundles', () => {
  it('the bundles are built without keepNames, so a class name is not kept by itself', async () => {
    const module = await bundled('plain', 'export class SomeLongClassName {}');
    expect((module.SomeLongClassName as { name: string }).name).not.toBe('SomeLongClassName');
  });

  it('every error class of shared/errors.ts keeps its name, code and toJSON in a bundle', async () => {
    const module = await bundled('errors', "export * from './shared/errors.ts';");
    const classes = Object.entries(source).filter(
      ([, value]) => typeof value === 'function' && value.prototype instanceof Error,
    );
    expect(classes.length).toBeGreaterThan(15);
    for (const [exported, original] of classes) {
      const Bundled = module[exported] as new (...args: unknown[]) => source.CldError;
      const Original = original as new (...args: unknown[]) => source.CldError;
      const args = exported === 'CldError' ? ['CONFIG', 'boom'] : ['boom', { details: { a: 1 } }];
      const error = new Bundled(...args);
      const expected = new Original(...args);
      expect(error.name, exported).toBe(exported);
      expect(error).toBeInstanceOf(Error);
      expect(error.code).toBe(expected.code);
      expect(error.toJSON()).toEqual(expected.toJSON());
      expect(error.toJSON().name).toBe(exported);
      expect(String(error)).toBe(`${exported}: boom`);
    }
  });

  // BasePartialProcessor.processSync compares `this.constructor.name` with 'BatchProcessor'; the
  // dead-letter consumer (shared/runtime/dead-letter-consumer.ts) uses processPartialResponse,
  // which calls the asynchronous `process`, where no name is read.
  it('Powertools batch reports the failed record of an SQS batch through the bundled BatchProcessor', async () => {
    const module = await bundled(
      'batch',
      "export { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';",
    );
    const Bundled = module.BatchProcessor as typeof BatchProcessor;
    const process = module.processPartialResponse as typeof processPartialResponse;
    const record = (id: string) => ({
      messageId: id,
      receiptHandle: 'r',
      body: id,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '0',
        SenderId: 's',
        ApproximateFirstReceiveTimestamp: '0',
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:111122223333:q',
      awsRegion: 'eu-west-1',
    });
    const event = { Records: [record('ok'), record('bad')] };
    const handler = async (r: { body: string }) => {
      if (r.body === 'bad') throw new Error('bad record');
      return r.body;
    };
    const outcome = await process(event, handler, new Bundled((module.EventType as typeof EventType).SQS));
    expect(outcome).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
    // The same through the unbundled package: the bundle changes nothing.
    expect(await processPartialResponse(event, handler, new BatchProcessor(EventType.SQS))).toEqual(outcome);
  });
});
