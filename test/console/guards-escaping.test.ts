/// <reference lib="dom" />
/**
 * The console's rendering of model output, in a real Chromium (issue 22 finding 10, issue 23): an
 * answer is Markdown rendered by `marked` and sanitised by DOMPurify (console/src/markdown.ts), so
 * emphasis, lists and code blocks render while markup an answer carries (an `<img onerror>`, a
 * `<script>`, a `javascript:` link, an `<svg onload>`…) neither runs nor stays a live element; the
 * question and error texts stay text; the answer's own "Sources:" block is dropped and the sources
 * are listed once, by label (`sources`) or URN (no label); times are written by
 * `Intl.DateTimeFormat` (no milliseconds), durations in ms/s.
 *
 * The built console (console/build.ts) is served by the browser's request interception with no
 * Content-Security-Policy, and the API's answers are a fixed view: so a script that ran would be
 * the sanitizer's failure alone (`serve` adds a CSP as a second line; console.test.ts drives the
 * real server).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../console/build.js';
import type { ConversationView, Schemas, TaskView } from '../../shared/client/index.js';
import { chromiumPath } from '../helpers/chromium.js';

const ORIGIN = 'http://console.test';
const ID = '0b9c3f52-5d0e-4a39-9b4f-3f0a2b1c4d5e';
const CONVERSATION = 'cld:common.Conversation.0000000000000001';
const LABELLED = 'cld:doc.Document.00000000000000a1/doc.Chunk.00000000000000b1';
const UNLABELLED = 'cld:doc.Document.00000000000000a2/doc.Chunk.00000000000000b2';
const LABEL = 'aws-ssm README › Lookups';

/** Model output that tries every way in, and the Markdown an answer really carries. */
const HOSTILE = [
  '**bold words** and *emphasis* with `inline code`',
  '',
  '- item one',
  '- item two',
  '',
  '1. first',
  '2. second',
  '',
  '```ts',
  'const less = 1 < 2 && "</pre><b>not bold</b>";',
  '```',
  '',
  '<img src=x onerror="window.__xss = (window.__xss || []).concat(\'img\')">',
  '',
  '<script>window.__xss = (window.__xss || []).concat("script")</script>',
  '',
  '[markdown link](javascript:window.__xss=(window.__xss||[]).concat("md-link")) and',
  '<a href="javascript:window.__xss=(window.__xss||[]).concat(\'a\')" id="raw-link">raw link</a>',
  '',
  '<svg onload="window.__xss = (window.__xss || []).concat(\'svg\')"><circle r="1"/></svg>',
  '',
  '<iframe srcdoc="<script>parent.__xss = [\'iframe\']</script>"></iframe>',
  '',
  '<div style="position:fixed;inset:0;background:url(/beacon)" class="banner" id="approvals">overlay</div>',
  '',
  '<details open ontoggle="window.__xss = (window.__xss || []).concat(\'toggle\')"><summary>s</summary>x</details>',
  '',
  'Sources:',
  `- ${LABEL} (${LABELLED})`,
  `- ${UNLABELLED}`,
].join('\n');

const usage = { modelCalls: 1, tokens: 1_234, toolCalls: 0 };

const task: TaskView = {
  urn: `${CONVERSATION}/plan.Task.0000000000000003`,
  title: 'Look up a parameter',
  status: 'done',
  assistant: 'researcher',
  score: 0.9,
  evaluation: 'names the call',
  depth: 0,
  round: 0,
  verdicts: [],
  calls: [],
  usage,
  times: {
    queuedAt: '2026-01-02T22:00:37.355Z',
    startedAt: '2026-01-02T22:00:38.001Z',
    finishedAt: '2026-01-02T22:00:39.665Z',
  },
  citations: [LABELLED],
  sources: [{ urn: LABELLED, label: LABEL }],
  subtasks: [],
};

const answer: Schemas['Answer'] = {
  urn: `${CONVERSATION}/common.Message.0000000000000004`,
  status: 'done',
  content: HOSTILE,
  citations: [LABELLED, UNLABELLED],
  sources: [{ urn: LABELLED, label: LABEL }],
};

const VIEW: ConversationView = {
  id: ID,
  urn: CONVERSATION,
  channel: 'http',
  status: 'failed',
  messages: [
    {
      urn: `${CONVERSATION}/common.Message.0000000000000002`,
      content: 'Why <b>bold</b>? <img src=q onerror="window.__xss = [\'question\']">',
      status: 'done',
      tasks: [task],
      answer,
      usage,
      timeline: [],
    },
    {
      urn: `${CONVERSATION}/common.Message.0000000000000005`,
      content: 'And then?',
      status: 'failed',
      tasks: [],
      answer: {
        urn: `${CONVERSATION}/common.Message.0000000000000006`,
        status: 'failed',
        content: '',
        citations: [],
        sources: [],
        error: { code: 'FAILED', message: 'failed <img src=y onerror="window.__xss = [\'error\']">' },
      },
      usage,
      timeline: [],
    },
  ],
  approvals: [],
  budget: { used: usage, limits: { modelCalls: 0, tokens: 0, toolCalls: 0 } },
};

const CHUNK = {
  meta: {
    id: LABELLED,
    name: 'b1',
    type: 'doc.Chunk',
    hash: 'h',
    parent: 'cld:doc.Document.00000000000000a1',
  },
  heading: 'Lookups',
  index: 0,
  text: 'Use ssm.StringParameter.valueFromLookup to read a parameter at synthesis time.',
};

let browser: Browser;
let built: Awaited<ReturnType<typeof buildConsole>>;

beforeAll(async () => {
  const executablePath = chromiumPath();
  built = await buildConsole(await mkdtemp(join(tmpdir(), 'cld-console-escaping-')));
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (built) await rm(built.dir, { recursive: true, force: true });
});

/** A page of the built console whose API answers with {@link VIEW}, signed in and showing it. */
async function openView(): Promise<Page> {
  const context = await browser.newContext({ locale: 'en-US', timezoneId: 'UTC' });
  await context.route(`${ORIGIN}/**`, async (route) => {
    const url = new URL(route.request().url());
    const json = (body: unknown) =>
      route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
    if (url.pathname === '/') return route.fulfill({ path: join(built.dir, 'index.html') });
    if (url.pathname === '/console/config.json') return json({ kind: 'token' });
    if (url.pathname.startsWith('/console/'))
      return route.fulfill({
        contentType: url.pathname.endsWith('.css') ? 'text/css' : 'text/javascript',
        body: await readFile(join(built.dir, url.pathname.slice('/console/'.length))),
      });
    if (url.pathname === '/conversations') return json({ conversations: [] });
    if (url.pathname === `/conversations/${ID}`) return json(VIEW);
    if (url.pathname === `/resources/${encodeURIComponent(LABELLED)}`) return json(CHUNK);
    return route.fulfill({ status: 404, contentType: 'application/json', body: '{"code":"NOT_FOUND"}' });
  });
  const page = await context.newPage();
  await page.goto(`${ORIGIN}/#${ID}`);
  await page.getByLabel(/Bearer token/).fill('token-0123456789abcdef');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('region', { name: 'Answer' }).first().waitFor();
  return page;
}

describe('the console renders model output as sanitised Markdown (Chromium)', () => {
  it('renders bold, emphasis, lists and code blocks, and runs and keeps none of the markup an answer carries', async () => {
    const page = await openView();
    const content = page.getByRole('region', { name: 'Answer' }).first().locator('.content');

    expect(await content.locator('strong').textContent()).toBe('bold words');
    expect(await content.locator('em').textContent()).toBe('emphasis');
    expect(await content.locator('p > code').textContent()).toBe('inline code');
    expect(await content.locator('ul > li').allTextContents()).toEqual(['item one', 'item two']);
    expect(await content.locator('ol > li').allTextContents()).toEqual(['first', 'second']);
    expect(await content.locator('pre > code').textContent()).toBe(
      'const less = 1 < 2 && "</pre><b>not bold</b>";\n',
    );
    // None of the hostile elements or attributes reached the page...
    expect(await content.locator('form, input, button, style').count()).toBe(0);
    for (const tag of ['img', 'script', 'svg', 'iframe', 'b'])
      expect(await page.locator(`article.conversation ${tag}`).count(), tag).toBe(0);
    const handlers = await page
      .locator('article.conversation *')
      .evaluateAll((elements) =>
        elements.flatMap((e) => e.getAttributeNames().filter((name) => name.startsWith('on'))),
      );
    expect(handlers).toEqual([]);
    // No styling or naming of its own: an overlay over the buttons, a beacon, the page's classes or ids.
    const styled = await content
      .locator('*')
      .evaluateAll((elements) =>
        elements.flatMap((e) =>
          e.getAttributeNames().filter((name) => ['style', 'class', 'id', 'name'].includes(name)),
        ),
      );
    expect(styled).toEqual([]);
    expect(await content.textContent()).toContain('overlay');
    const hrefs = await content.locator('a').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
    expect(hrefs.some((href) => /^\s*javascript:/i.test(href ?? ''))).toBe(false);
    // ...clicking what is left of the links runs nothing, and nothing ran on the way.
    for (const link of await content.locator('a').all()) await link.click();
    // (let queued tasks run: an `onerror`, an `ontoggle`, a navigation to a `javascript:` URL)
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0))));
    expect(await page.evaluate(() => (window as { __xss?: string[] }).__xss)).toBeUndefined();
    await page.context().close();
  });

  it('keeps markup in the question and an error as text', async () => {
    const page = await openView();
    const question = page.locator('blockquote.question').first();
    expect(await question.textContent()).toContain(
      'Why <b>bold</b>? <img src=q onerror="window.__xss = [\'question\']">',
    );
    const error = page.locator('section.answer.failed').getByRole('alert');
    expect(await error.textContent()).toBe('FAILED: failed <img src=y onerror="window.__xss = [\'error\']">');
    expect(await page.evaluate(() => (window as { __xss?: string[] }).__xss)).toBeUndefined();
    await page.context().close();
  });

  it('lists the sources once, by label or else by URN, without the answer’s own "Sources:" block; a label opens the cited chunk', async () => {
    const page = await openView();
    const answerRegion = page.getByRole('region', { name: 'Answer' }).first();
    expect(await answerRegion.locator('.content').textContent()).not.toMatch(/Sources:|aws-ssm README/);
    const lists = answerRegion.getByRole('region', { name: 'Sources' });
    expect(await lists.count()).toBe(1);
    const links = lists.locator('a.citation');
    expect(await links.allTextContents()).toEqual([LABEL, UNLABELLED]);
    expect(await links.first().getAttribute('title')).toBe(LABELLED);
    // The task lists its own source, labelled, in its details.
    await page.locator('li.task summary').first().click();
    const taskSources = page.locator('li.task').getByRole('region', { name: 'Sources' });
    expect(await taskSources.locator('a.citation').allTextContents()).toEqual([LABEL]);

    await links.first().click();
    const dialog = page.getByRole('dialog', { name: 'Citation' });
    await dialog.locator('pre.chunk').waitFor();
    expect(await dialog.locator('h3').textContent()).toBe('Lookups');
    expect(await dialog.locator('pre.chunk').textContent()).toBe(CHUNK.text);
    await page.context().close();
  });

  it('writes times with Intl.DateTimeFormat (the date for another day, no milliseconds) and durations in s', async () => {
    const page = await openView();
    const facts = page.locator('li.task .facts').first();
    expect(await facts.locator('dd').last().textContent()).toBe(
      'queued Jan 2, 2026, 10:00:37 PM, started Jan 2, 2026, 10:00:38 PM, finished Jan 2, 2026, 10:00:39 PM (2.31 s)',
    );
    await page.context().close();
  });
});
