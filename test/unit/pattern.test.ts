import { describe, expect, it } from 'vitest';
import { type EventPattern, matchesPattern } from '../../shared/events/pattern.js';

type Case = [label: string, pattern: EventPattern, event: unknown, expected: boolean];

function expectMatch(pattern: EventPattern, event: unknown, expected: boolean): void {
  expect(matchesPattern(pattern, event)).toBe(expected);
}

describe('matchesPattern (EventBridge event patterns)', () => {
  describe('exact values', () => {
    it.each<Case>([
      ['matches an equal string', { source: ['aws.s3'] }, { source: 'aws.s3' }, true],
      ['does not match a longer string', { source: ['aws.s3'] }, { source: 'aws.s3x' }, false],
      ['is case-sensitive', { source: ['aws.s3'] }, { source: 'AWS.S3' }, false],
      ['does not match a missing field', { source: ['aws.s3'] }, { other: 'aws.s3' }, false],
      ['matches any of several values (OR)', { source: ['aws.ec2', 'aws.s3'] }, { source: 'aws.s3' }, true],
      ['matches a number', { size: [5] }, { size: 5 }, true],
      ['does not match a number against its string', { size: [5] }, { size: '5' }, false],
      ['matches a boolean', { ok: [true] }, { ok: true }, true],
      ['does not match a boolean against its string', { ok: [true] }, { ok: 'true' }, false],
      ['matches null against a null value', { x: [null] }, { x: null }, true],
      ['does not match null against a missing field', { x: [null] }, {}, false],
      ['requires every field (AND)', { a: ['1'], b: ['2'] }, { a: '1', b: '3' }, false],
      ['matches when every field matches', { a: ['1'], b: ['2'] }, { a: '1', b: '2', c: 'ignored' }, true],
      ['ignores event fields the pattern does not name', { a: ['1'] }, { a: '1', b: { deep: true } }, true],
      ['does not match a non-object event', { a: ['1'] }, 'a', false],
    ])('%s', (_label, pattern, event, expected) => expectMatch(pattern, event, expected));
  });

  describe('prefix and suffix', () => {
    it.each<Case>([
      ['prefix matches the start', { key: [{ prefix: 'cld:' }] }, { key: 'cld:x' }, true],
      ['prefix does not match the middle', { key: [{ prefix: 'cld:' }] }, { key: 'x/cld:y' }, false],
      ['prefix matches the whole value', { key: [{ prefix: 'cld:' }] }, { key: 'cld:' }, true],
      ['prefix does not match a number', { n: [{ prefix: '1' }] }, { n: 12 }, false],
      ['suffix matches the end', { key: [{ suffix: '.json' }] }, { key: 'cld:x.json' }, true],
      ['suffix does not match elsewhere', { key: [{ suffix: '.json' }] }, { key: 'cld:x.json.tmp' }, false],
      ['suffix is case-sensitive', { key: [{ suffix: '.json' }] }, { key: 'cld:x.JSON' }, false],
    ])('%s', (_label, pattern, event, expected) => expectMatch(pattern, event, expected));
  });

  describe('wildcard', () => {
    it.each<Case>([
      [
        '* spans "/"',
        { key: [{ wildcard: 'cld:common.Conversation.*/plan.Task.*.json' }] },
        { key: 'cld:common.Conversation.a/common.Message.b/plan.Task.c.json' },
        true,
      ],
      [
        'the literal parts must all appear in order',
        { key: [{ wildcard: 'cld:common.Conversation.*/plan.Task.*.json' }] },
        { key: 'cld:common.Conversation.a/common.Message.b.json' },
        false,
      ],
      ['* matches the empty string', { key: [{ wildcard: 'a*b' }] }, { key: 'ab' }, true],
      ['is anchored at the start', { key: [{ wildcard: 'a*' }] }, { key: 'ba' }, false],
      ['is anchored at the end', { key: [{ wildcard: '*a' }] }, { key: 'ab' }, false],
      ['treats "." literally', { key: [{ wildcard: 'a.b*' }] }, { key: 'aXb' }, false],
      ['treats "+" literally', { key: [{ wildcard: 'a+*' }] }, { key: 'aa' }, false],
      ['matches a literal "+"', { key: [{ wildcard: 'a+*' }] }, { key: 'a+b' }, true],
      ['treats "?" literally', { key: [{ wildcard: 'a?' }] }, { key: 'ab' }, false],
      ['spans newlines', { key: [{ wildcard: 'a*b' }] }, { key: 'a\nb' }, true],
      ['does not match a number', { n: [{ wildcard: '1*' }] }, { n: 12 }, false],
    ])('%s', (_label, pattern, event, expected) => expectMatch(pattern, event, expected));
  });

  describe('anything-but', () => {
    it.each<Case>([
      ['matches another string', { state: [{ 'anything-but': 'deleted' }] }, { state: 'created' }, true],
      [
        'does not match the excluded string',
        { state: [{ 'anything-but': 'deleted' }] },
        { state: 'deleted' },
        false,
      ],
      ['matches a value outside the list', { state: [{ 'anything-but': ['a', 'b'] }] }, { state: 'c' }, true],
      [
        'does not match a value in the list',
        { state: [{ 'anything-but': ['a', 'b'] }] },
        { state: 'b' },
        false,
      ],
      ['matches another number', { n: [{ 'anything-but': [1, 2] }] }, { n: 3 }, true],
      ['does not match an excluded number', { n: [{ 'anything-but': [1, 2] }] }, { n: 2 }, false],
      ['does not match a missing field', { state: [{ 'anything-but': 'deleted' }] }, {}, false],
      [
        'with a prefix matches a value without it',
        { key: [{ 'anything-but': { prefix: 'tmp/' } }] },
        { key: 'data/a' },
        true,
      ],
      [
        'with a prefix does not match a value with it',
        { key: [{ 'anything-but': { prefix: 'tmp/' } }] },
        { key: 'tmp/a' },
        false,
      ],
      [
        'with a prefix does not match a missing field',
        { key: [{ 'anything-but': { prefix: 'tmp/' } }] },
        {},
        false,
      ],
    ])('%s', (_label, pattern, event, expected) => expectMatch(pattern, event, expected));
  });

  describe('exists', () => {
    it.each<Case>([
      ['true matches a present field', { reason: [{ exists: true }] }, { reason: 'PutObject' }, true],
      ['true does not match a missing field', { reason: [{ exists: true }] }, {}, false],
      ['false matches a missing field', { reason: [{ exists: false }] }, {}, true],
      [
        'false does not match a present field',
        { reason: [{ exists: false }] },
        { reason: 'PutObject' },
        false,
      ],
      [
        'false matches under a missing parent object',
        { detail: { reason: [{ exists: false }] } },
        { source: 'aws.s3' },
        true,
      ],
      ['true matches an empty string', { reason: [{ exists: true }] }, { reason: '' }, true],
    ])('%s', (_label, pattern, event, expected) => expectMatch(pattern, event, expected));
  });

  describe('equals-ignore-case', () => {
    it.each<Case>([
      [
        'matches another casing',
        { t: [{ 'equals-ignore-case': 'Object Created' }] },
        { t: 'OBJECT created' },
        true,
      ],
      [
        'does not match a longer value',
        { t: [{ 'equals-ignore-case': 'Object Created' }] },
        { t: 'Object Created!' },
        false,
      ],
      ['does not match a number', { t: [{ 'equals-ignore-case': '1' }] }, { t: 1 }, false],
    ])('%s', (_label, pattern, event, expected) => expectMatch(pattern, event, expected));
  });

  describe('nested objects', () => {
    const pattern: EventPattern = {
      detail: { bucket: { name: ['resources'] }, object: { key: [{ suffix: '.json' }] } },
    };

    it.each<[string, unknown, boolean]>([
      [
        'matches when every nested field matches',
        { detail: { bucket: { name: 'resources' }, object: { key: 'a.json' } } },
        true,
      ],
      [
        'does not match when one nested field differs',
        { detail: { bucket: { name: 'other' }, object: { key: 'a.json' } } },
        false,
      ],
      ['does not match when a nested object is missing', { detail: { object: { key: 'a.json' } } }, false],
      ['does not match when the parent is a string', { detail: 'resources' }, false],
      ['does not match when the parent is missing', {}, false],
      [
        'does not match the same field at the wrong depth',
        { detail: { name: 'resources', key: 'a.json' } },
        false,
      ],
    ])('%s', (_label, event, expected) => expectMatch(pattern, event, expected));
  });

  describe('array values in the event', () => {
    it.each<Case>([
      ['matches when any element matches', { resources: ['arn:b'] }, { resources: ['arn:a', 'arn:b'] }, true],
      [
        'does not match when no element matches',
        { resources: ['arn:c'] },
        { resources: ['arn:a', 'arn:b'] },
        false,
      ],
      [
        'applies operators to each element',
        { resources: [{ prefix: 'arn:aws:s3' }] },
        { resources: ['x', 'arn:aws:s3:::b'] },
        true,
      ],
      ['does not match an empty array', { resources: ['arn:a'] }, { resources: [] }, false],
      ['exists matches an array field', { resources: [{ exists: true }] }, { resources: ['arn:a'] }, true],
    ])('%s', (_label, pattern, event, expected) => expectMatch(pattern, event, expected));
  });
});
