/// <reference lib="dom" />
/**
 * The web console in a real Chromium (Debian's `chromium`, driven by playwright-core) against
 * `serve` on 127.0.0.1 (issue 15, "Done when"): sign in with the bearer token, ask the quick-start
 * question, watch the tree grow to `done` (updates by conditional polling: no 200 repeats an ETag,
 * an unchanged tree comes back 304), open a citation, see the timeline, follow up from the
 * keyboard; another user neither lists nor reads the conversation. Each step that fails leaves a
 * screenshot in `test/.console-screenshots/` (gitignored). With `CLD_CONSOLE_SCREENSHOT=<path>`,
 * the quick-start state is also written there (how docs/console.png is made).
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe } from '../../cli/serve.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { chromiumPath } from '../helpers/chromium.js';
import { ANSWERED_PARTS, PARTIAL_QUESTION } from '../helpers/partial.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef0';
/** The README's quick-start question and documents. */
const QUESTION =
  '1. How do I send S3 object events to EventBridge? 2. How do I match only keys with a given prefix in an event rule?';
const DOCS = ['node_modules/aws-cdk-lib/aws-s3', 'node_modules/aws-cdk-lib/aws-events'];
const SHOTS = resolve('test/.console-screenshots');

let served: Served;
let dataDir: string;
let browser: Browser;

beforeAll(async () => {
  // First, so that without a browser every test fails with the one line saying how to install it.
  const executablePath = chromiumPath();
  await mkdir(SHOTS, { recursive: true });
  dataDir = await mkdtemp(join(tmpdir(), 'cld-console-'));
  served = await startServe({
    port: 0,
    dataDir,
    env: { CLD_API_TOKENS: JSON.stringify({ [ALICE]: 'alice', [BOB]: 'bob' }) },
    core: parseEnv({ CLD_DATA_DIR: dataDir }),
    docs: DOCS,
  });
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Runs one step; on failure writes `<test>-<step>.png` and rethrows. */
async function step<T>(page: Page, name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const file = join(SHOTS, `${expect.getState().currentTestName?.replace(/\W+/g, '-')}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    throw new Error(`step "${name}" failed (screenshot ${file})`, { cause: error });
  }
}

async function signIn(context: BrowserContext, token: string): Promise<Page> {
  const page = await context.newPage();
  await step(page, 'sign-in', async () => {
    await page.goto(served.url);
    await page.getByLabel(/Bearer token/).fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('New question').waitFor();
  });
  return page;
}

describe('the console in Chromium against serve', () => {
  let aliceId = '';

  it('signs in, asks the quick-start question, shows the tree growing to done, a citation and the timeline', async () => {
    const context = await browser.newContext({
      viewport: { width: 1400, height: 1000 },
      colorScheme: 'light',
    });
    const page = await signIn(context, ALICE);
    const polls: { status: number; etag: string | null }[] = [];
    const urls: string[] = [];
    page.on('request', (request) => urls.push(request.url()));
    page.on('response', (response) => {
      if (/\/conversations\/[0-9a-f-]{36}$/.test(new URL(response.url()).pathname))
        polls.push({ status: response.status(), etag: response.headers().etag ?? null });
    });

    await step(page, 'ask', async () => {
      await page.getByLabel('New question').fill(QUESTION);
      await page.getByRole('button', { name: 'Send' }).first().click();
      await page.locator('article.conversation').waitFor();
    });
    aliceId = new URL(page.url()).hash.slice(1);
    expect(aliceId).toMatch(/^[0-9a-f-]{36}$/);

    await step(page, 'done', async () => {
      await page.locator('article.conversation > h2 [data-status="done"]').waitFor({ timeout: 30_000 });
    });
    const pollsWhenDone = polls.length;
    const tree = page.getByRole('list', { name: 'Task tree' }).first();
    await step(page, 'tree', async () => {
      expect(await tree.locator('li.task').count()).toBeGreaterThanOrEqual(3);
      expect(await tree.locator('li.task.done').count()).toBe(await tree.locator('li.task').count());
      await expect.poll(() => tree.locator('summary').first().textContent()).toMatch(/coordinator/);
      // The root task's details: evaluation criteria, verdict, the leaves' tool calls with results.
      await tree.locator('li.task').first().locator('summary').first().click();
      await tree.locator('li.task').nth(1).locator('summary').first().click();
      const leaf = tree.locator('li.task').nth(1);
      expect(await leaf.locator('.facts').first().textContent()).toMatch(/Evaluation criteria/);
      expect(await leaf.locator('.calls summary').first().textContent()).toMatch(
        /search\(\{"query":.*OK · [\d,]+ B/,
      );
      expect(await tree.locator('.verdicts').first().textContent()).toMatch(/verdict round 1: pass/);
    });
    await step(page, 'list', async () => {
      await expect
        .poll(() => page.locator('nav .row').first().textContent())
        .toMatch(/done.*How do I send S3 object events/);
    });

    await step(page, 'sources', async () => {
      // One list of sources per answer, from the view; the answer's own "Sources:" block is not shown.
      const answer = page.getByRole('region', { name: 'Answer' }).first();
      expect(await answer.getByRole('region', { name: 'Sources' }).count()).toBe(1);
      expect(await answer.locator('.content').textContent()).not.toMatch(/Sources:/);
      const titles = await answer
        .locator('a.citation')
        .evaluateAll((links) => links.map((a) => a.getAttribute('title')));
      expect(titles.length).toBeGreaterThanOrEqual(2);
      for (const title of titles)
        expect(title).toMatch(/^cld:doc\.Document\.[0-9a-f]{16}\/doc\.Chunk\.[0-9a-f]{16}$/);
    });

    await step(page, 'citation', async () => {
      const citation = page.locator('.answer .citation').first();
      await citation.focus();
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: 'Citation' });
      await dialog.locator('pre.chunk').waitFor();
      expect((await dialog.locator('pre.chunk').textContent())?.length).toBeGreaterThan(50);
      expect(await dialog.locator('.source').textContent()).toMatch(
        /Source: node_modules\/aws-cdk-lib\/aws-(s3|events)\/README\.md — chunk \d+ of \d+/,
      );
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
    });

    await step(page, 'timeline', async () => {
      const timeline = page.getByRole('figure', { name: 'Timeline' }).last();
      await timeline.waitFor();
      expect(await timeline.locator('figcaption').textContent()).toMatch(/^\d+ steps over [\d.]+ (ms|s)$/);
      const kinds = await timeline.locator('li.step').evaluateAll((items) => items.map((i) => i.className));
      expect(kinds.some((k) => k.includes('plan'))).toBe(true);
      expect(kinds.some((k) => k.includes('tool'))).toBe(true);
      expect(kinds.some((k) => k.includes('answer'))).toBe(true);
      expect(kinds.every((k) => k.includes(' ok'))).toBe(true);
    });

    await step(page, 'screenshot', async () => {
      await page.screenshot({ path: join(SHOTS, 'quick-start.png'), fullPage: true });
      if (process.env.CLD_CONSOLE_SCREENSHOT)
        await page.screenshot({ path: resolve(process.env.CLD_CONSOLE_SCREENSHOT), fullPage: true });
    });

    await step(page, 'conditional polling', async () => {
      // A finished conversation is not polled again (console/src/polling.ts): the last poll is
      // the 200 that showed it done, though the steps above took seconds.
      expect(polls.at(-1)?.status).toBe(200);
      expect(polls.length).toBe(pollsWhenDone);
      const fulls = polls.filter((p) => p.status === 200).map((p) => p.etag);
      expect(new Set(fulls).size).toBe(fulls.length); // no 200 repeats an ETag
      expect(polls.every((p) => p.status === 200 || p.status === 304)).toBe(true);
    });
    // The token never appears in a URL the page requested.
    expect(urls.some((url) => url.includes(ALICE))).toBe(false);
    await context.close();
  });

  it('sends a follow-up from the keyboard and shows its answer in the same conversation', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, ALICE);
    await step(page, 'follow-up', async () => {
      await page.goto(`${served.url}/#${aliceId}`);
      await page.locator('article.conversation > h2 [data-status="done"]').waitFor();
      await page.getByLabel('Follow-up').fill('How do I enable versioning on a bucket?');
      await page.getByLabel('Follow-up').press('Control+Enter');
      await expect.poll(() => page.locator('section.turn').count(), { timeout: 30_000 }).toBe(2);
      await page.locator('section.turn').nth(1).locator('section.answer').waitFor({ timeout: 30_000 });
      await page.locator('article.conversation > h2 [data-status="done"]').waitFor({ timeout: 30_000 });
    });
    await context.close();
  });

  it('shows another user neither the conversation in the list nor its contents', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, BOB);
    await step(page, 'other user', async () => {
      await page.locator('nav').getByText('No conversations yet.').waitFor();
      await page.goto(`${served.url}/#${aliceId}`);
      await expect.poll(() => page.locator('main .banner.failed').textContent()).toMatch(/404 NOT_FOUND/);
      expect(await page.locator('article.conversation').count()).toBe(0);
    });
    await context.close();
  });

  it('follows the dark scheme and keeps the token out of the page’s storage once signed out', async () => {
    const context = await browser.newContext({ colorScheme: 'dark' });
    const page = await signIn(context, ALICE);
    await step(page, 'dark scheme', async () => {
      const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      expect(background).toBe('rgb(15, 18, 22)');
      expect(await page.evaluate(() => sessionStorage.getItem('cld.token'))).toBe(ALICE);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel(/Bearer token/).waitFor();
      expect(await page.evaluate(() => sessionStorage.getItem('cld.token'))).toBeNull();
    });
    await context.close();
  });

  it('shows a 3-part question whose third part the corpus cannot answer as partial: parts 1–2, the part not answered and why', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await signIn(context, ALICE);
    await step(page, 'ask', async () => {
      await page.getByLabel('New question').fill(PARTIAL_QUESTION);
      await page.getByRole('button', { name: 'Send' }).first().click();
      await page.locator('article.conversation').waitFor();
    });
    await step(page, 'partial', async () => {
      await page.locator('article.conversation > h2 [data-status="partial"]').waitFor({ timeout: 60_000 });
      const answer = page.getByRole('region', { name: 'Answer' }).last();
      expect(await answer.getAttribute('class')).toBe('answer partial');
      expect(await answer.locator('h3').textContent()).toBe('Partial answer');
      const parts = await answer.locator('.content h4').allTextContents();
      expect(parts).toHaveLength(2);
      for (const [i, part] of ANSWERED_PARTS.entries()) expect(parts[i]).toMatch(part);
      const missing = answer.getByRole('status', { name: 'Not answered' });
      expect(await missing.locator('li').count()).toBe(1);
      expect(await missing.locator('li').textContent()).toMatch(
        /^How do I knead sourdough bread dough\? — cites no source/,
      );
      // Distinct from done and failed: the warning colour (amber), not the failure red.
      const border = await answer.evaluate((e) => getComputedStyle(e).borderLeftColor);
      const colour = (name: string) =>
        page.evaluate((variable) => {
          const probe = document.createElement('span');
          probe.style.color = `var(${variable})`;
          document.body.append(probe);
          const value = getComputedStyle(probe).color;
          probe.remove();
          return value;
        }, name);
      expect(border).toBe(await colour('--warn'));
      expect(border).not.toBe(await colour('--fail'));
    });
    await step(page, 'tree and timeline', async () => {
      const tree = page.getByRole('list', { name: 'Task tree' }).last();
      expect(await tree.locator('li.task.partial').count()).toBe(1);
      expect(await tree.locator('li.task.partial summary').first().textContent()).toMatch(
        /partial.*Answer 3 parts/,
      );
      const timeline = page.getByRole('figure', { name: 'Timeline' }).last();
      expect(await timeline.locator('li.step.answer.partial').count()).toBe(1);
    });
    await step(page, 'list', async () => {
      await expect
        .poll(() => page.locator('nav .row').first().textContent())
        .toMatch(/partial.*How do I send S3/);
    });
    await context.close();
  }, 120_000);
});

describe('approvals in the console (the search tool needs approval)', () => {
  let approving: Served;
  let approvingDir: string;

  beforeAll(async () => {
    approvingDir = await mkdtemp(join(tmpdir(), 'cld-console-approvals-'));
    approving = await startServe({
      port: 0,
      dataDir: approvingDir,
      env: { CLD_API_TOKENS: JSON.stringify({ [ALICE]: 'alice' }) },
      core: parseEnv({ CLD_DATA_DIR: approvingDir, CLD_TOOL_APPROVAL: JSON.stringify({ search: 'always' }) }),
      docs: DOCS,
    });
  }, 120_000);

  afterAll(async () => {
    await approving?.stop();
    if (approvingDir) await rm(approvingDir, { recursive: true, force: true });
  });

  it('shows a pending call with its tool, arguments and task; Approve runs it and the answer arrives', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    await step(page, 'sign-in', async () => {
      await page.goto(approving.url);
      await page.getByLabel(/Bearer token/).fill(ALICE);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('New question').fill('How do I enable versioning on a bucket?');
      await page.getByRole('button', { name: 'Send' }).first().click();
    });
    const panel = page.getByRole('region', { name: 'Approvals' });
    await step(page, 'pending', async () => {
      const pending = panel.locator('li.approval.pending').first();
      await pending.waitFor({ timeout: 30_000 });
      expect(await pending.textContent()).toMatch(
        /Task “.+” asks to run search\(\{"query":".*versioning.*"\}\)/,
      );
      expect(await panel.locator('h3').textContent()).toMatch(/waiting for you/);
      expect(await page.locator('article.conversation > h2 [data-status="done"]').count()).toBe(0);
    });
    await step(page, 'approve', async () => {
      // Every search call asks; approve each as it comes until the answer is there (a later
      // call's request can come many seconds after the first on a loaded machine).
      await expect
        .poll(
          async () => {
            if ((await page.locator('article.conversation > h2 [data-status="done"]').count()) > 0)
              return true;
            const button = panel
              .locator('li.approval.pending')
              .first()
              .getByRole('button', { name: 'Approve' });
            if ((await button.count()) > 0) await button.click();
            return false;
          },
          { timeout: 120_000, interval: 500 },
        )
        .toBe(true);
      expect(await panel.locator('li.approval.approved').first().textContent()).toMatch(
        /approved search\(.*\) for “.+” — by http:alice via http/,
      );
      expect(await panel.locator('li.approval.pending').count()).toBe(0);
      await page.locator('section.answer').waitFor();
    });
    await context.close();
  }, 240_000);
});

describe('a failed conversation in the console (a tool-call budget of 0)', () => {
  let failing: Served;
  let failingDir: string;

  beforeAll(async () => {
    failingDir = await mkdtemp(join(tmpdir(), 'cld-console-failed-'));
    failing = await startServe({
      port: 0,
      dataDir: failingDir,
      env: { CLD_API_TOKENS: JSON.stringify({ [ALICE]: 'alice' }) },
      core: parseEnv({ CLD_DATA_DIR: failingDir, CLD_LIMITS: JSON.stringify({ conversationToolCalls: 0 }) }),
      docs: DOCS,
    });
  }, 120_000);

  afterAll(async () => {
    await failing?.stop();
    if (failingDir) await rm(failingDir, { recursive: true, force: true });
  });

  it('marks the conversation, the task, its timeline step and the list row failed, with the reason', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    await step(page, 'ask', async () => {
      await page.goto(failing.url);
      await page.getByLabel(/Bearer token/).fill(ALICE);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('New question').fill('How do I enable versioning on a bucket?');
      await page.getByRole('button', { name: 'Send' }).first().click();
    });
    await step(page, 'failed', async () => {
      await page.locator('article.conversation > h2 [data-status="failed"]').waitFor({ timeout: 30_000 });
      const task = page.locator('li.task.failed').first();
      // A failed task is open by default, its error in an alert.
      expect(await task.getByRole('alert').first().textContent()).toMatch(/BUDGET_EXCEEDED/);
      expect(await page.locator('section.answer.failed').getByRole('alert').textContent()).toMatch(/\w+: .+/);
      expect(await page.locator('figure.timeline li.step.failed').count()).toBeGreaterThan(0);
      await expect.poll(() => page.locator('nav .row').first().textContent()).toMatch(/failed/);
    });
    await page.screenshot({ path: join(SHOTS, 'failed.png'), fullPage: true });
    await context.close();
  });
});

describe('OIDC sign-in (authorization code + PKCE), the issuer played by the browser’s request interception', () => {
  const ISSUER = 'https://id.example.test';
  let oidc: Served;
  let oidcDir: string;

  beforeAll(async () => {
    oidcDir = await mkdtemp(join(tmpdir(), 'cld-console-oidc-'));
    oidc = await startServe({
      port: 0,
      dataDir: oidcDir,
      env: {
        CLD_API_TOKENS: JSON.stringify({ [ALICE]: 'alice' }),
        CLD_CONSOLE_AUTH: JSON.stringify({
          kind: 'oidc',
          authorizationEndpoint: `${ISSUER}/oauth2/authorize`,
          tokenEndpoint: `${ISSUER}/oauth2/token`,
          clientId: 'console-client',
          scopes: ['openid', 'email'],
        }),
      },
      core: parseEnv({ CLD_DATA_DIR: oidcDir }),
    });
  }, 120_000);

  afterAll(async () => {
    await oidc?.stop();
    if (oidcDir) await rm(oidcDir, { recursive: true, force: true });
  });

  it('sends the S256 challenge, exchanges the code with its verifier, and calls the API with the token', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    let authorize: URL | undefined;
    let exchange: URLSearchParams | undefined;
    await context.route(`${ISSUER}/oauth2/authorize*`, async (route) => {
      authorize = new URL(route.request().url());
      const back = new URL(authorize.searchParams.get('redirect_uri') as string);
      back.search = new URLSearchParams({
        code: 'the-code',
        state: authorize.searchParams.get('state') ?? '',
      }).toString();
      await route.fulfill({ status: 302, headers: { location: back.toString() } });
    });
    await context.route(`${ISSUER}/oauth2/token`, async (route) => {
      exchange = new URLSearchParams(route.request().postData() ?? '');
      await route.fulfill({
        status: 200,
        headers: { 'content-type': 'application/json', 'access-control-allow-origin': oidc.url },
        body: JSON.stringify({ id_token: ALICE, access_token: 'unused', token_type: 'Bearer' }),
      });
    });
    await step(page, 'oidc', async () => {
      await page.goto(oidc.url);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('New question').waitFor();
    });

    expect(Object.fromEntries(authorize?.searchParams ?? [])).toMatchObject({
      response_type: 'code',
      client_id: 'console-client',
      redirect_uri: `${oidc.url}/`,
      scope: 'openid email',
      code_challenge_method: 'S256',
    });
    expect(Object.fromEntries(exchange ?? [])).toMatchObject({
      grant_type: 'authorization_code',
      client_id: 'console-client',
      code: 'the-code',
      redirect_uri: `${oidc.url}/`,
    });
    // The verifier sent to the token endpoint is the one the challenge was made from.
    const verifier = exchange?.get('code_verifier') ?? '';
    expect(verifier).toMatch(/^[A-Za-z0-9\-._~]{43,128}$/);
    expect(createHash('sha256').update(verifier).digest('base64url')).toBe(
      authorize?.searchParams.get('code_challenge'),
    );
    // The code left the address bar; the token is in no URL, and the API accepted it.
    expect(page.url()).toBe(`${oidc.url}/`);
    await page.locator('nav').getByText('No conversations yet.').waitFor();
    await context.close();
  });
});
