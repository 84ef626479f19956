/**
 * The CLI as a reader uses it (issue 11, item 7), run as a subprocess as the `cld` bin runs
 * (`node <bin> ...`, the bin built from this tree's source once per run) over one data directory: reading a citation,
 * piped output, follow-up questions and concurrent asks on one conversation, messages from
 * standard input and files, the message length limit on both sides, a 1 MB message, Ctrl-C,
 * a question with no Latin-alphabet words, and an OpenAI-compatible model over HTTP.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_MESSAGE_CHARS } from '../../shared/domain/limits.js';
import type { Chunk } from '../../shared/resources/schemas.js';
import { keyOf } from '../../shared/urn.js';
import {
  type ChatRequestBody,
  completion,
  type OpenAIStub,
  startOpenAIStub,
} from '../helpers/openai-stub.js';
import { PARTIAL_QUESTION, partialAnswerProblems } from '../helpers/partial.js';
import { cliBin } from '../helpers/run-cache.js';
import { DOCS } from './local-run.js';

/** The `cld` bin built from this tree's source, once per run (test/helpers/run-cache.ts). */
const CLI = await cliBin();

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Wall time one CLI run may take on a loaded machine, in ms. Under tsx a run cost 5–6 s of CPU
 * before any output and took 19–22 s wall at load 16 on 2 cores (`help` 19.4 s, `ask` 19.1 s,
 * `show` 21.0 s); the built bin costs less (an `ask` 3.0 s of CPU against 4.6 s), 60 s leaves
 * room for load 30. A test's timeout is this times the CLI runs it makes one after another.
 */
const CLI_RUN_MS = 60_000;
vi.setConfig({ testTimeout: CLI_RUN_MS, hookTimeout: CLI_RUN_MS });

/**
 * Variables of this process that would change the model or the data directory of the CLI, or how
 * it says it was run (`npm start`, `npx`: cli/ask.ts `invocation`).
 */
const CONFIG = /^(CLD_|AWS_|npm_lifecycle_event$|npm_command$)/;

/**
 * Runs the CLI with `args`; `stdin` is written to its standard input (closed either way);
 * `onStdout` sees the output so far and may act on the child (send a signal).
 */
function cli(
  args: string[],
  options: {
    dataDir: string;
    env?: Record<string, string>;
    stdin?: string;
    onStdout?: (stdout: string, child: ReturnType<typeof spawn>) => void;
  },
): Promise<CliResult> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !CONFIG.test(key)));
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...env, CLD_DATA_DIR: options.dataDir, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    options.onStdout?.(stdout, child);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdin.on('error', () => undefined); // the CLI may stop reading early (a refused message)
  child.stdin.end(options.stdin ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), 2 * CLI_RUN_MS);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr: withoutNpmNoise(stderr) });
    });
  });
}

/** npm's own warnings some environments print; not the CLI's output. */
function withoutNpmNoise(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => !line.startsWith('npm warn'))
    .join('\n');
}

const SOURCE = /^- (?:.* \()?(cld:doc\.Document\.[0-9a-f]{16}\/doc\.Chunk\.[0-9a-f]{16})\)?$/gm;
/** A source line of an answer the CLI prints: `- aws-s3 README › <heading> (<chunk URN>)`. */
const LABELLED_SOURCE =
  /^- aws-(?:s3|events) README › [^\n]+ \(cld:doc\.Document\.[0-9a-f]{16}\/doc\.Chunk\.[0-9a-f]{16}\)$/;
const Q_EVENTS = 'How do I send S3 object events to EventBridge?';
const Q_PREFIX = 'How do I match only keys with a given prefix in an event rule?';

let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-cli-reader-'));
  const ingested = await cli(['ingest', ...DOCS], { dataDir });
  expect(ingested.code).toBe(0);
});

describe('help, as a new user asks for it', () => {
  it("prints a command's own usage for --help and -h, the version for --version, and a near miss's name", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cld-help-'));

    const help = await cli(['ask', '--help'], { dataDir });
    const short = await cli(['approvals', '-h'], { dataDir });
    const version = await cli(['--version'], { dataDir });
    const typo = await cli(['aks', 'hi'], { dataDir });
    const message = await cli(['help', 'show'], { dataDir });

    expect(help.code).toBe(0);
    expect(help.stdout).toContain('cld ask [--docs <dir>]');
    expect(help.stdout).not.toContain('cld ingest');
    expect(help.stdout).toContain('exit codes:');
    expect(short.code).toBe(0);
    expect(short.stdout).toContain('cld approvals approve|deny');
    expect(short.stdout).not.toContain('cld ask');
    const { version: expected } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe(expected);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown command "aks" (did you mean "ask"?)');
    expect(message.stdout).toContain('cld show <urn>');
    expect(message.stdout).not.toContain('cld serve');
    // Help for a command that does not exist is the unknown-command error, however it is asked.
    for (const args of [
      ['nonsense', '--help'],
      ['help', 'nonsense'],
    ]) {
      const unknown = await cli(args, { dataDir });
      expect(unknown.code, args.join(' ')).toBe(2);
      expect(unknown.stderr, args.join(' ')).toContain('unknown command "nonsense"');
    }
  });
});

describe('ask and show, piped', () => {
  let asked: CliResult;
  beforeAll(async () => {
    asked = await cli(['ask', Q_EVENTS], { dataDir });
  });

  it('prints each source once and no second copy of the tree', () => {
    expect(asked.code).toBe(0);
    const sources = [...asked.stdout.matchAll(SOURCE)].map((m) => m[1] as string);
    expect(sources.length).toBeGreaterThan(0);
    for (const urn of sources) expect(asked.stdout.split(urn).length - 1).toBe(1);
    expect(asked.stdout).not.toContain('citations:');
    expect(asked.stdout.match(/^conversation cld:/gm)).toHaveLength(1);
  });

  it('prints the progress lines in causal order, each once', () => {
    const lines = asked.stdout.split('\n');
    const at = (pattern: RegExp) => {
      const found = lines.filter((line) => pattern.test(line));
      expect(found, String(pattern)).toHaveLength(1);
      return lines.findIndex((line) => pattern.test(line));
    };
    const order = [
      at(/^conversation cld:/),
      at(/^ {2}user: "/),
      at(/^ {4}task How do I send S3/),
      at(/^ {6}tool search\(/),
      at(/^ {6}result OK/),
      at(/^ {6}output: \d+ citation/),
      at(/^ {2}answer: \d+ citation/),
    ];
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it('show <chunk> prints the source file, heading and the stored text of a cited chunk', async () => {
    const urn = [...asked.stdout.matchAll(SOURCE)][0]?.[1] as string;
    const shown = await cli(['show', urn], { dataDir });
    expect(shown.code).toBe(0);
    const stored = JSON.parse(await readFile(join(dataDir, 'resources', keyOf(urn)), 'utf8')) as Chunk;
    expect(shown.stdout).toMatch(
      new RegExp(
        `^source: node_modules/aws-cdk-lib/aws-(s3|events)/README\\.md \\(chunk ${stored.index + 1} of \\d+\\)$`,
        'm',
      ),
    );
    expect(shown.stdout).toContain(`urn: ${urn}`);
    expect(shown.stdout).toContain(stored.text.trim());
    expect(shown.stdout).not.toContain('doc.Chunk chunk-');
  });

  it('show <document> lists its chunks with their headings', async () => {
    const urn = ([...asked.stdout.matchAll(SOURCE)][0]?.[1] as string).split('/')[0] as string;
    const shown = await cli(['show', urn], { dataDir });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      /^document node_modules\/aws-cdk-lib\/aws-(s3|events)\/README\.md — \d+ chunk\(s\)/m,
    );
    expect(shown.stdout).toMatch(
      /^├─ chunk 1 .+ — cld:doc\.Document\.[0-9a-f]{16}\/doc\.Chunk\.[0-9a-f]{16}$/m,
    );
  });
});

describe('a partial answer (issue 21)', () => {
  it('prints parts 1–2 and the part not answered, and exits 4, for a question whose third part the corpus cannot answer', async () => {
    const asked = await cli(['ask', '--conversation', 'partial', '--new', PARTIAL_QUESTION], { dataDir });

    expect(asked.code).toBe(4);
    expect(asked.stderr).toMatch(
      /^cld: partial answer: not answered: How do I knead sourdough bread dough\?$/m,
    );
    expect(asked.stdout).toMatch(
      /^ {2}answer PARTIAL \(not answered: How do I knead sourdough bread dough\?\): \d+ citation/m,
    );
    const answer = asked.stdout.slice(
      asked.stdout.indexOf('\n### '),
      asked.stdout.indexOf('\nconversation: '),
    );
    expect(partialAnswerProblems(answer.trim())).toEqual([]);
    // Each source of the combined answer reads as document › heading, with the URN to open (issue 21 item 4).
    const sources = answer
      .slice(answer.indexOf('\nSources:\n') + '\nSources:\n'.length)
      .trim()
      .split('\n');
    expect(sources.length).toBeGreaterThanOrEqual(2);
    for (const line of sources) expect(line).toMatch(LABELLED_SOURCE);
    const urn = /^conversation: (cld:common\.Conversation\.[0-9a-f]{16})/m.exec(asked.stdout)?.[1] as string;
    const shown = await cli(['show', urn], { dataDir });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^status: partial$/m);
    expect(shown.stdout).toMatch(/◑ partial Answer 3 parts/);
    expect(shown.stdout).toContain(`Sources:\n${sources.join('\n')}`);
  }, 180_000); // two CLI processes (each bounded at 90 s) on a loaded 2-core machine
});

describe('ask --conversation', () => {
  it(
    'adds a follow-up question as the next message and answers it, not the first one again',
    async () => {
      const first = await cli(['ask', '--conversation', 'follow-up', '--new', Q_EVENTS], { dataDir });
      expect(first.code).toBe(0);
      const urn = /^conversation: (cld:common\.Conversation\.[0-9a-f]{16}) \(message-1\)$/m.exec(
        first.stdout,
      )?.[1];
      expect(urn).toBeDefined();
      // The handle the CLI prints to continue with: the conversation's URN (issue 23).
      expect(first.stdout).toContain(`continue with: cld ask --conversation ${urn} "…"`);
      const second = await cli(['ask', '--conversation', urn as string, Q_PREFIX], { dataDir });
      expect(second.code).toBe(0);
      expect(second.stdout).toContain(`conversation: ${urn} (message-2)`);
      expect(second.stdout).toContain(`user: "${Q_PREFIX}"`);
      expect(second.stdout).not.toContain(`user: "${Q_EVENTS}"`);
      expect(second.stdout).toMatch(/Match\.(prefix|wildcard)/);
      const shown = await cli(['show', urn as string], { dataDir });
      expect(shown.stdout).toContain(`user: "${Q_EVENTS}"`);
      expect(shown.stdout).toContain(`user: "${Q_PREFIX}"`);
      expect(shown.stdout.match(/^└─ answer|^├─ answer/gm)).toHaveLength(2);
    },
    3 * CLI_RUN_MS,
  );

  it(
    'answers two concurrent asks on one conversation, each its own question',
    async () => {
      const [a, b] = await Promise.all([
        cli(['ask', '--conversation', 'concurrent', '--new', Q_EVENTS], { dataDir }),
        cli(['ask', '--conversation', 'concurrent', '--new', Q_PREFIX], { dataDir }),
      ]);
      expect([a.code, b.code]).toEqual([0, 0]);
      const names = [a, b].map((r) => /\((message-\d+)\)$/m.exec(r.stdout)?.[1]);
      expect(names.sort()).toEqual(['message-1', 'message-2']);
      expect(a.stdout).toContain(`user: "${Q_EVENTS}"`);
      expect(b.stdout).toContain(`user: "${Q_PREFIX}"`);
      for (const result of [a, b]) expect([...result.stdout.matchAll(SOURCE)].length).toBeGreaterThan(0);
    },
    2 * CLI_RUN_MS,
  ); // two runs at once: twice the CPU
});

describe('where the message comes from, and how long it may be', () => {
  it('reads the message from standard input with -', async () => {
    const asked = await cli(['ask', '-'], { dataDir, stdin: `${Q_PREFIX}\n` });
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain(`user: "${Q_PREFIX}"`);
  });

  it('reads the message from a file with --file', async () => {
    const file = join(dataDir, 'question.txt');
    await writeFile(file, `\n${Q_EVENTS}\n`);
    const asked = await cli(['ask', '--file', file], { dataDir });
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain(`user: "${Q_EVENTS}"`);
  });

  it(`plans and answers a message of exactly ${MAX_MESSAGE_CHARS} characters`, async () => {
    const file = join(dataDir, 'at-limit.txt');
    await writeFile(file, longMessage(MAX_MESSAGE_CHARS));
    const asked = await cli(['ask', '--file', file], { dataDir });
    expect(asked.stderr).toBe('');
    expect(asked.code).toBe(0);
    expect(asked.stdout).toMatch(/^ {4}plan: 1 root task\(s\)/m);
    expect([...asked.stdout.matchAll(SOURCE)].length).toBeGreaterThan(0);
  });

  it(`refuses a message of ${MAX_MESSAGE_CHARS + 1} characters up front, naming the limit`, async () => {
    const file = join(dataDir, 'over-limit.txt');
    await writeFile(file, longMessage(MAX_MESSAGE_CHARS + 1));
    const asked = await cli(['ask', '--file', file], { dataDir });
    expect(asked.code).toBe(1);
    expect(asked.stderr).toBe(
      'cld: the message is 16,001 characters; the limit is 16,000 (MAX_MESSAGE_CHARS): shorten it or send it in parts\n',
    );
    expect(asked.stdout).not.toContain('conversation');
  });

  // How soon after a plain start it refuses (within 2 s) is measured by `npm run bench:cli`, not
  // here (issue 23: no wall-clock assertion in a test). That it read only past the limit shows in
  // the message: "more than 32,000 characters" of the 1 MB.
  it('refuses a 1 MB message without "?" from standard input, having read only past the limit', async () => {
    const asked = await cli(['ask', '-'], { dataDir, stdin: 'bucket events rule '.repeat(55_189) });
    expect(asked.code).toBe(1);
    expect(asked.stderr).toMatch(/^cld: the message is more than 32,000 characters; the limit is 16,000/);
    expect(asked.stdout).not.toContain('conversation');
  });

  it.each([
    [['ask', '--file', 'q.txt', 'and words'], 2, /not two of them/],
    [['ask', '--file', 'no/such/file.txt'], 2, /^cld: message file does not exist: no\/such\/file\.txt$/m],
    [['ask', '-'], 2, /^cld: ask needs a message$/m],
    [['ask', '--frobnicate', 'q?'], 2, /^cld: Unknown option '--frobnicate'/m],
  ])('fails %j with exit code %i and one clear line', async (args, code, message) => {
    const result = await cli(args as string[], { dataDir, stdin: '  \n' });
    expect(result.code).toBe(code);
    expect(result.stderr).toMatch(message);
  });

  it('says "Nothing matched" for a question without Latin-alphabet words', async () => {
    const asked = await cli(['ask', '如何将存储桶事件发送到事件总线？'], { dataDir });
    expect(asked.code).toBe(0);
    expect(asked.stdout).toMatch(/^Nothing matched: /m);
    expect(asked.stdout).not.toMatch(SOURCE);
    expect(asked.stdout).not.toContain('mentions: .');
  });
});

/** A message of exactly `chars` characters without "?": words of the ingested documents. */
function longMessage(chars: number): string {
  const words =
    'bucket events rule notification prefix encryption versioning topic queue the to of and'.split(' ');
  let text = '';
  for (let i = 0; text.length < chars; i = (i * 7 + 3) % words.length) text += `${words[i]} `;
  return `${text.slice(0, chars - 1)}x`;
}

describe('an OpenAI-compatible model over HTTP (CLD_MODEL_PROVIDER=openai)', () => {
  let stub: OpenAIStub;
  let env: Record<string, string>;
  beforeAll(async () => {
    stub = await startOpenAIStub();
    env = {
      CLD_MODEL_PROVIDER: 'openai',
      CLD_OPENAI_BASE_URL: stub.baseUrl,
      CLD_MODEL_ID: 'stub-model',
      CLD_OPENAI_TIMEOUT_MS: '60000',
    };
  });
  afterAll(async () => {
    await stub.stop();
  });

  /** A scripted model: plans one task, searches once, then answers citing the first hit. */
  function scriptedModel(searchArguments: string) {
    return (body: ChatRequestBody) => {
      const tools = (body.tools ?? []).map((t) => t.function.name);
      const last = body.messages.at(-1);
      if (tools.includes('create_plan'))
        return completion({
          toolCalls: [
            {
              name: 'create_plan',
              arguments: JSON.stringify({
                tasks: [
                  {
                    title: 'S3 events to EventBridge',
                    purpose: `Answer the question: ${Q_EVENTS}`,
                    instructions: 'Search the S3 documentation and answer with citations.',
                    applicability: 'A single question answerable from the ingested documentation.',
                    evaluation: 'Cites a chunk.',
                  },
                ],
              }),
            },
          ],
        });
      if (last?.role === 'tool') {
        // Hits reach the model with short citation ids (`[1] heading — path`), mapped back to
        // their URNs when the answer is stored (shared/context/render-results.ts).
        const id = /^\[\d{1,4}\]/m.exec(last.content ?? '')?.[0];
        return completion({ content: `Set eventBridgeEnabled: true on the bucket. Source: ${id}` });
      }
      return completion({ toolCalls: [{ id: 'call_1', name: 'search', arguments: searchArguments }] });
    };
  }

  it('plans, calls the search tool and answers through /v1/chat/completions', async () => {
    stub.respond = scriptedModel('{"query":"S3 EventBridge notifications"}');
    const asked = await cli(['ask', Q_EVENTS], { dataDir, env });
    expect(asked.stderr).toBe('');
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain('model: openai:stub-model');
    expect(asked.stdout).toContain('tool search({"query":"S3 EventBridge notifications"})');
    expect(asked.stdout).toMatch(/Set eventBridgeEnabled: true on the bucket\. Source: cld:doc\.Document\./);
    expect(asked.stdout).toMatch(/^ {2}answer: 1 citation/m);
    const bodies = stub.requests.map((r) => r.body as ChatRequestBody);
    expect(bodies.every((b) => b.model === 'stub-model')).toBe(true);
    const toolTurn = bodies.find((b) => b.messages.at(-1)?.role === 'tool');
    expect(toolTurn?.messages.at(-1)?.tool_call_id).toBe('call_1');
    expect(toolTurn?.messages.at(-2)?.tool_calls).toEqual([
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'search', arguments: '{"query":"S3 EventBridge notifications"}' },
      },
    ]);
  });

  it(
    'fails the task with a clear error when the model sends malformed tool-call JSON, keeping the run',
    async () => {
      stub.respond = scriptedModel('{"query": "S3 EventBridge');
      const asked = await cli(['ask', '--conversation', 'malformed', '--new', Q_EVENTS], { dataDir, env });
      expect(asked.code).toBe(1);
      expect(asked.stderr).toMatch(
        /^cld: the request failed: OpenAI-compatible model stub-model called tool "search" \(call call_1\) with malformed arguments: they are not JSON .*; the arguments began: \{"query": "S3 EventBridge$/m,
      );
      expect(asked.stdout).toMatch(
        /^ {6}output FAILED: OpenAI-compatible model stub-model called tool "search"/m,
      );
      expect(asked.stdout).toMatch(/^Not completed: S3 events to EventBridge: OpenAI-compatible model/m);
      const urn = /^conversation: (cld:common\.Conversation\.[0-9a-f]{16})/m.exec(
        asked.stdout,
      )?.[1] as string;
      const shown = await cli(['show', urn], { dataDir });
      expect(shown.stdout).toMatch(/plan: 1 root task\(s\), model openai:stub-model/);
      expect(shown.stdout).toMatch(/✗ failed S3 events to EventBridge/);
    },
    2 * CLI_RUN_MS,
  );

  // The model never answers, so exit code 130 (not a timeout's 1, not the helper's SIGKILL) shows
  // the CLI stopped at the signal rather than waiting; how soon (within 2 s) is measured by
  // `npm run bench:cli` (issue 23: no wall-clock assertion in a test).
  it('stops at Ctrl-C (SIGINT) while the model is still answering, exit code 130', async () => {
    stub.respond = () => ({ hang: true });
    let signalled = false;
    const asked = await cli(['ask', Q_EVENTS], {
      dataDir,
      env,
      onStdout: (stdout, child) => {
        if (!signalled && stdout.includes('user: "')) {
          signalled = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(signalled).toBe(true);
    expect(asked.signal).toBeNull();
    expect(asked.code).toBe(130);
    expect(asked.stderr).toMatch(
      /^cld: interrupted; what was stored so far stays under cld:common\.Conversation\./,
    );
  });
});
