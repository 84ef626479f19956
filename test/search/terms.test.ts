import { describe, expect, it } from 'vitest';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { identifierParts, joinedTerms, processTerm, termsOf, tokenize } from '../../shared/search/terms.js';

describe('identifier parts', () => {
  it.each([
    ['eventBridgeEnabled', ['event', 'Bridge', 'Enabled']],
    ['BLOCK_ALL', ['BLOCK', 'ALL']],
    ['aws-s3', ['aws', 's3']],
    ['HTTPApi', ['HTTP', 'Api']],
    ['s3Bucket', ['s3', 'Bucket']],
    ['ec2', ['ec2']],
    ['ipv6Enabled', ['ipv6', 'Enabled']],
    ['bucket', ['bucket']],
  ])('splits %s into %j', (identifier, parts) => {
    expect(identifierParts(identifier)).toEqual(parts);
  });

  it('keeps an identifier whole and adds its parts after it', () => {
    expect(tokenize('set eventBridgeEnabled: true')).toEqual([
      'set',
      'eventBridgeEnabled',
      'event',
      'Bridge',
      'Enabled',
      'true',
    ]);
    expect(tokenize('plain words only')).toEqual(['plain', 'words', 'only']);
  });
});

describe('term processing', () => {
  it.each([
    ['encryption', 'encrypt'],
    ['versioned', 'versioning'],
    ['concurrency', 'concurrent'],
    ['notifications', 'notification'],
    ['daily', 'day'],
    ['hourly', 'hours'],
    ['weekly', 'week'],
    ['monthly', 'month'],
    ['yearly', 'years'],
    ['inbound', 'Ingress'],
    ['outbound', 'egress'],
  ])('gives %s and %s the same stem', (a, b) => {
    expect(processTerm(a)).toBe(processTerm(b));
    expect(processTerm(a)).not.toBeNull();
  });

  it('meets "every day" and "inbound" with the API names BackupPlanRule.daily and addIngressRule', () => {
    expect(termsOf('BackupPlanRule.daily()')).toEqual(expect.arrayContaining(termsOf('day')));
    expect(termsOf('addIngressRule')).toEqual(expect.arrayContaining(termsOf('inbound')));
  });

  it('drops stopwords and single letters but keeps digits and identifiers with digits', () => {
    expect(processTerm('How')).toBeNull();
    expect(processTerm('the')).toBeNull();
    expect(processTerm('a')).toBeNull();
    expect(processTerm('x')).toBeNull();
    expect(processTerm('7')).toBe('7');
    expect(processTerm('S3')).toBe('s3');
    expect(processTerm('ARM_64')).toBe('arm_64');
  });

  it('meets "EventBridge enabled", "event bridge enabled" and eventBridgeEnabled on shared terms', () => {
    const identifier = new Set(termsOf('eventBridgeEnabled'));
    for (const phrase of ['EventBridge enabled', 'event bridge enabled']) {
      const shared = termsOf(phrase).filter((term) => identifier.has(term));
      expect(shared).toEqual(expect.arrayContaining(['event', 'bridg', 'enabl']));
    }
    expect(termsOf('How do I do it?')).toEqual([]);
  });
});

describe('the chunk index with stems and identifier parts', () => {
  const idx = new MiniSearchIndex();
  idx.add([
    {
      urn: 'cld:d/doc.Chunk.s3',
      type: 'doc.Chunk',
      title: 'Amazon S3 > EventBridge notifications',
      text: "const bucket = new s3.Bucket(this, 'B', { eventBridgeEnabled: true });",
      source: 'node_modules/aws-cdk-lib/aws-s3/README.md',
    },
    {
      urn: 'cld:d/doc.Chunk.kms',
      type: 'doc.Chunk',
      title: 'AWS KMS > Keys',
      text: 'Keys encrypt data. Set enableKeyRotation to rotate them every year.',
      source: 'node_modules/aws-cdk-lib/aws-kms/README.md',
    },
    {
      urn: 'cld:d/doc.Chunk.sqs',
      type: 'doc.Chunk',
      title: 'Amazon SQS > Queues',
      text: 'A queue holds messages until a consumer deletes them.',
      source: 'node_modules/aws-cdk-lib/aws-sqs/README.md',
    },
  ]);

  it.each([
    ['event bridge enabled', 'cld:d/doc.Chunk.s3'],
    ['eventBridgeEnabled', 'cld:d/doc.Chunk.s3'],
    ['encryption', 'cld:d/doc.Chunk.kms'],
    ['key rotation', 'cld:d/doc.Chunk.kms'],
    ['sqs', 'cld:d/doc.Chunk.sqs'],
  ])('ranks the right chunk first for "%s"', async (query, urn) => {
    expect((await idx.search(query))[0]?.urn).toBe(urn);
  });

  it('returns the source path with a hit and finds nothing for stopwords alone', async () => {
    expect((await idx.search('encryption'))[0]?.source).toBe('node_modules/aws-cdk-lib/aws-kms/README.md');
    expect(await idx.search('how do I')).toEqual([]);
  });

  it('treats an index serialised with other term processing as empty', () => {
    const current = JSON.parse(JSON.stringify(idx)) as Record<string, unknown>;
    expect(MiniSearchIndex.isCurrent(current)).toBe(true);
    expect(MiniSearchIndex.isCurrent({ ...current, cldTerms: undefined })).toBe(false);
    expect(MiniSearchIndex.isCurrent({ ...current, cldTerms: 1 })).toBe(false);
  });
});

describe('compounds of adjacent query words', () => {
  it('joins adjacent content words as an API name would, raw and stemmed, never with a stopword', () => {
    expect(joinedTerms('How do I add a security group to an event bus?')).toEqual([
      'securitygroup',
      'eventbus',
      'eventbu',
    ]);
    expect(joinedTerms('an S3 Bucket Key')).toEqual(['s3bucket', 'bucketkey', 'bucketkei']);
    expect(joinedTerms('bucket. key, eventBridgeEnabled')).toEqual([]);
  });

  it('ranks the chunk spelling the API (SecurityGroup) above a denser one using the words apart', async () => {
    const idx = new MiniSearchIndex();
    const chunk = (name: string, text: string) => ({
      urn: `cld:doc.Document.ec2/doc.Chunk.${name}`,
      type: 'doc.Chunk',
      text,
      source: 'ec2.md',
    });
    idx.add([
      chunk('apart', 'A security group is a group of security rules.'),
      chunk(
        'api',
        "Connections are opened through the instance's security groups:\n\n```ts\nconst sg = new ec2.SecurityGroup(this, 'SG', { vpc, allowAllOutbound: false });\n```",
      ),
      chunk('other', 'A VPC holds subnets.'),
    ]);
    const hits = await idx.search('How do I create a security group?');
    expect(hits[0]?.urn).toBe('cld:doc.Document.ec2/doc.Chunk.api');
  });
});

describe('the document prior', () => {
  it('ranks the chunk of the document the whole query is about above an equal chunk of a neighbour', async () => {
    const idx = new MiniSearchIndex();
    const chunk = (doc: string, name: string, text: string) => ({
      urn: `cld:doc.Document.${doc}/doc.Chunk.${name}`,
      type: 'doc.Chunk',
      text,
      source: `${doc}.md`,
    });
    idx.add([
      chunk('neighbour', 'n1', 'Grant read access to the queue.'),
      chunk('asked', 'a1', 'Grant read access to the queue.'),
      chunk('asked', 'a2', 'Queue encryption and queue policies.'),
      chunk('asked', 'a3', 'A queue holds messages.'),
    ]);
    const hits = await idx.search('grant read access queue');
    expect(hits[0]?.urn).toBe('cld:doc.Document.asked/doc.Chunk.a1');
    expect(hits[1]?.urn).toBe('cld:doc.Document.neighbour/doc.Chunk.n1');
  });
});
