import { describe, expect, it } from 'vitest';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { folderOf, NameOwners } from '../../shared/search/owners.js';
import type { IndexedItem } from '../../shared/search/port.js';

const S3 = 'lib/aws-s3/README.md';
const EVENTS = 'lib/aws-events/README.md';
const TARGETS = 'lib/aws-scheduler-targets/README.md';

const S3_CODE = "import * as s3 from 'lib/aws-s3';\n\nnew s3.Bucket(this, 'B', { versioned: true });";
const EVENTS_CODE =
  "import * as events from 'lib/aws-events';\n\nnew events.EventBus(this, 'Bus', { kmsKey });";

describe('NameOwners', () => {
  it('gives the folder that owns the names a question spells, best first at 1', () => {
    const owners = new NameOwners();
    owners.add(S3_CODE, S3);
    owners.add(EVENTS_CODE, EVENTS);
    expect(owners.prior('How do I create a custom event bus?')).toEqual(new Map([['lib/aws-events', 1]]));
    expect(owners.prior('How do I create a versioned bucket?')).toEqual(new Map([['lib/aws-s3', 1]]));
    expect(owners.prior('How do I rotate a password?').size).toBe(0);
  });

  it('resolves an alias used in another document through its import, and shares a name between its owners', () => {
    const owners = new NameOwners();
    owners.add(S3_CODE, S3);
    owners.add(EVENTS_CODE, EVENTS);
    // The targets README imports nothing itself, but uses both names; they stay owned by their modules.
    owners.add('const bus = new events.EventBus(this, "B");\nconst b = new s3.Bucket(this, "X");', TARGETS);
    const prior = owners.prior('Which bucket and which event bus?');
    expect(prior.get('lib/aws-events')).toBe(1);
    expect(prior.get('lib/aws-s3')).toBe(0.5);
    expect(prior.has('lib/aws-scheduler-targets')).toBe(false);
  });

  it('ignores aliases whose import names no ingested folder', () => {
    const owners = new NameOwners();
    owners.add("import * as cdk from 'elsewhere/core';\nnew cdk.Stack(app, 'S');", S3);
    expect(owners.prior('How do I create a stack?').size).toBe(0);
  });

  it('folderOf is the path without its file name', () => {
    expect(folderOf('a/b/README.md')).toBe('a/b');
    expect(folderOf('README.md')).toBeUndefined();
  });
});

describe('MiniSearchIndex module prior', () => {
  const items: IndexedItem[] = [
    {
      urn: 'cld:d1/doc.Chunk.targets',
      type: 'doc.Chunk',
      // Matches the query's words better than the other chunk: without the prior it would rank first.
      title: 'Scheduler targets > Put events on a custom bus',
      text: 'Create a target that sends events to a custom event bus.',
      source: TARGETS,
    },
    {
      urn: 'cld:d2/doc.Chunk.bus',
      type: 'doc.Chunk',
      title: 'EventBridge > Customer managed key',
      text: `To encrypt the events of a bus with your key:\n\n\`\`\`ts\n${EVENTS_CODE}\n\`\`\``,
      source: EVENTS,
    },
    {
      urn: 'cld:d3/doc.Chunk.other',
      type: 'doc.Chunk',
      title: 'Other',
      text: 'Unrelated text about queues and topics.',
      source: 'lib/aws-sqs/README.md',
    },
  ];

  it('ranks a chunk of the module owning the name the query spells first, also after save and load', async () => {
    const index = new MiniSearchIndex();
    index.add(items);
    const query = 'How do I create a custom event bus?';
    expect((await index.search(query))[0]?.urn).toBe('cld:d2/doc.Chunk.bus');
    const loaded = MiniSearchIndex.load(JSON.stringify(index));
    expect((await loaded.search(query))[0]?.urn).toBe('cld:d2/doc.Chunk.bus');
  });
});
