import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { answerForTerminal } from '../../cli/answer.js';
import { assistantActor, combineOutputs, withoutSources } from '../../shared/domain/common.js';
import { keepAnswered } from '../../shared/domain/outcome.js';
import { labelCitations, sourcesOf } from '../../shared/domain/sources.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Chunk, Document, Message } from '../../shared/resources/schemas.js';
import { sourceLabel } from '../../shared/search/source-label.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn, keyOf } from '../../shared/urn.js';
import { message, NOW, task } from './builders.js';

/**
 * Citations read as document › heading (issue 21 item 4): the label of each cited source, where
 * it is computed (a leaf output, from the tool results the task saw, else from the stored Chunk and
 * Document) and how the "Sources:" block of a combined answer lists it.
 */

const SSM = withMeta({ type: 'doc.Document', name: 'node_modules/aws-cdk-lib/aws-ssm/README.md' }, NOW).id;
const S3 = withMeta({ type: 'doc.Document', name: 'node_modules/aws-cdk-lib/aws-s3/README.md' }, NOW).id;
const LOOKUPS = childUrn(SSM, 'doc.Chunk', '3');
const VERSIONING = childUrn(S3, 'doc.Chunk', '7');
const EVENTS = childUrn(S3, 'doc.Chunk', '9');

function output(parent: string, content: string, sources: { urn: string; label: string }[]): Message {
  return {
    ...message(parent, 'output', content, 'assistant'),
    citations: sources.map((s) => s.urn),
    sources,
  };
}

describe('sourceLabel', () => {
  it.each([
    [
      { source: 'node_modules/aws-cdk-lib/aws-ssm/README.md', title: 'AWS SSM > Lookups' },
      'aws-ssm README › Lookups',
    ],
    [{ source: 'docs/guide.markdown', title: 'Guide › Setup › Install' }, 'docs guide › Install'],
    [{ source: 'README.md' }, 'README'],
    [{ title: '## Lookups' }, 'Lookups'],
    [{ source: 'aws-iam/README.md', title: 'IAM > Read/Write access' }, 'aws-iam README › Read/Write access'],
    [{ title: 'Types > Map<K, V> props' }, 'Map<K, V> props'],
    [{}, undefined],
  ])('labels %j as %s', (hit, label) => {
    expect(sourceLabel(hit)).toBe(label);
  });
});

describe('combineOutputs', () => {
  const root = message(childUrn(undefined, 'common.Conversation', 'c'), 'm', 'Two parts?').meta.id;
  const ssm = output(task(root, 'a').meta.id, 'Use `valueFromLookup`.\n\nSources:\n- cld:whatever', [
    { urn: LOOKUPS, label: 'aws-ssm README › Lookups' },
  ]);
  const s3 = output(task(root, 'b').meta.id, 'Set `versioned: true`.\n\nSources:\n- a model-written line', [
    { urn: VERSIONING, label: 'aws-s3 README › Versioning' },
    { urn: LOOKUPS, label: 'aws-ssm README › Lookups' },
  ]);

  it('lists each source of a multi-part answer once by its label, after the parts', () => {
    const combined = combineOutputs([
      { title: 'Look up a parameter', output: ssm },
      { title: 'Version a bucket', output: s3 },
    ]);

    expect(combined.content).toBe(
      [
        '### Look up a parameter\nUse `valueFromLookup`.',
        '### Version a bucket\nSet `versioned: true`.',
        'Sources:\n- aws-ssm README › Lookups\n- aws-s3 README › Versioning',
      ].join('\n\n'),
    );
    expect(combined.citations).toEqual([LOOKUPS, VERSIONING]);
    expect(combined.sources).toEqual([
      { urn: LOOKUPS, label: 'aws-ssm README › Lookups' },
      { urn: VERSIONING, label: 'aws-s3 README › Versioning' },
    ]);
    // The eval scores each part's section without the block.
    expect(withoutSources(combined.content)).not.toMatch(/Sources:|README/);
  });

  it('replaces the Sources block of a single output by the labelled one', () => {
    const combined = combineOutputs([{ title: 'Look up a parameter', output: ssm }]);
    expect(combined.content).toBe('Use `valueFromLookup`.\n\nSources:\n- aws-ssm README › Lookups');
  });

  it('keeps the labelled block after the "Not answered" section of a partial answer', () => {
    const kept = keepAnswered(
      [{ title: 'Version a bucket', output: s3 }],
      [{ task: task(root, 'c').meta.id, title: 'Third part', reason: 'cites no source' }],
    );
    expect(kept.content).toMatch(
      /^### Version a bucket\n[\s\S]*\n\nNot answered:[\s\S]*\n\nSources:\n- aws-s3 README › Versioning\n- aws-ssm README › Lookups$/,
    );
    expect(kept.sources.map((s) => s.urn)).toEqual(kept.citations);
  });

  it('labels a citation of a Message written before labels with its URN', () => {
    const old: Message = { ...message(root, 'old', 'Text.', 'assistant'), citations: [EVENTS] };
    expect(sourcesOf(old)).toEqual([{ urn: EVENTS, label: EVENTS }]);
    expect(combineOutputs([{ title: 'x', output: old }]).content).toBe(`Text.\n\nSources:\n- ${EVENTS}`);
  });
});

describe('labelCitations', () => {
  let dir: string;
  let resources: ResourceIndex;
  const leaf = task(message(childUrn(undefined, 'common.Conversation', 'c'), 'm', 'q').meta.id, 't');
  const actor = assistantActor(leaf.meta.id);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cld-sources-'));
    const storage = new FilesystemStorage(dir);
    resources = new ResourceIndex(storage, builtinPolicy('assistant'));
    const document: Document = {
      meta: withMeta({ type: 'doc.Document', name: 'node_modules/aws-cdk-lib/aws-s3/README.md' }, NOW),
      path: 'node_modules/aws-cdk-lib/aws-s3/README.md',
      contentHash: '0'.repeat(64),
      bytes: 100,
      chunks: 10,
    };
    const chunk: Chunk = {
      meta: withMeta({ type: 'doc.Chunk', name: '9', parent: S3 }, NOW),
      text: 'Bucket notifications.',
      index: 9,
      heading: 'Amazon S3 Construct Library > EventBridge notifications',
    };
    for (const r of [document, chunk]) await storage.put(keyOf(r.meta.id), JSON.stringify(r));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('labels from the search hits the task saw, and reads the chunk and document a read result named', async () => {
    const search = JSON.stringify({
      results: [
        {
          urn: LOOKUPS,
          title: 'AWS Systems Manager Construct Library > Lookups',
          source: 'node_modules/aws-cdk-lib/aws-ssm/README.md',
          text: '…',
          score: 1,
        },
      ],
    });
    // `read` gives a chunk's URN and Document, not the Document's path: read from the store.
    const read = JSON.stringify({ urn: EVENTS, text: 'Bucket notifications.', document: S3 });
    const sources = await labelCitations(
      resources,
      actor,
      [LOOKUPS, EVENTS, VERSIONING],
      [{ content: search }, { content: read }, { content: 'not JSON' }],
    );
    expect(sources).toEqual([
      { urn: LOOKUPS, label: 'aws-ssm README › Lookups' },
      { urn: EVENTS, label: 'aws-s3 README › EventBridge notifications' },
      // Its Document is stored, the chunk is not: the document alone.
      { urn: VERSIONING, label: 'aws-s3 README' },
    ]);
  });

  it('labels a linked-data Graph shard by its Document, without reading the shard', async () => {
    const shard = childUrn(S3, 'doc.Graph', 'graph-aws_s3');
    expect(await labelCitations(resources, actor, [shard], [])).toEqual([
      { urn: shard, label: 'aws-s3 README › API graph' },
    ]);
  });

  it('labels a citation that is no document part with its URN, reading nothing', async () => {
    const urn = leaf.meta.id;
    expect(await labelCitations(resources, actor, [urn], [])).toEqual([{ urn, label: urn }]);
  });
});

describe('answerForTerminal', () => {
  it('shows the label and the URN to open with cld show', () => {
    const answer = output(
      'cld:common.Conversation.0123456789abcdef',
      'Text.\n\nSources:\n- aws-ssm README › Lookups',
      [{ urn: LOOKUPS, label: 'aws-ssm README › Lookups' }],
    );
    expect(answerForTerminal(answer)).toBe(`Text.\n\nSources:\n- aws-ssm README › Lookups (${LOOKUPS})`);
  });
});

describe('the trailing "Sources:" block only', () => {
  it('keeps a "Sources:" line inside the answer (a YAML key in a code block) and what follows it', () => {
    const yaml =
      'Configure the pipeline:\n\n```yaml\nPipeline:\n  Sources:\n    - repo\n  Steps: [build]\n```\n\nThen deploy.';
    expect(withoutSources(yaml)).toBe(yaml);
    expect(withoutSources(`${yaml}\n\nSources:\n- aws-s3 README › Lookups\n- cld:doc.Document.1`)).toBe(yaml);
  });
});
