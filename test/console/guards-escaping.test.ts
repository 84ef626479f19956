import { Fragment, h, type VNode } from 'preact';
import { describe, expect, it } from 'vitest';
import type { TurnView } from '../../shared/channels/conversations.js';

/**
 * HTML escaping of the console's answer rendering (issue 22, finding 10): an answer is model
 * output, so its text must reach the page as text, never as markup. The components are rendered
 * to HTML the way Preact puts them into the DOM — a string child becomes a text node (escaped
 * here), `dangerouslySetInnerHTML` is parsed as markup (inserted raw here) — by a small renderer
 * over the VNode tree; Chromium is not needed (test/console/console.test.ts drives the page).
 */

/**
 * The components under test, imported by a computed specifier: the root tsconfig (which checks
 * test/) has no JSX settings; console/tsconfig.json checks console/src itself.
 */
interface TreeModule {
  Markdownish: (props: { text: string }) => VNode;
  Turn: (props: { turn: TurnView; onCite: (urn: string) => void }) => VNode;
}
const TREE = '../../console/src/tree.js';
const { Markdownish, Turn } = (await import(/* @vite-ignore */ TREE)) as TreeModule;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const escapeText = (text: string) => text.replace(/[&<>"]/g, (c) => ESCAPES[c] as string);

/** HTML of a VNode tree as Preact's DOM rendering would produce it (no hooks needed). */
function html(node: unknown): string {
  if (node === null || node === undefined || typeof node === 'boolean') return '';
  if (typeof node === 'string' || typeof node === 'number') return escapeText(String(node));
  if (Array.isArray(node)) return node.map(html).join('');
  const vnode = node as VNode<Record<string, unknown>>;
  const { children, dangerouslySetInnerHTML, ...attributes } = vnode.props as Record<string, unknown>;
  if (vnode.type === Fragment) return html(children);
  if (typeof vnode.type === 'function') return html((vnode.type as (props: unknown) => unknown)(vnode.props));
  const attrs = Object.entries(attributes)
    .filter(([name, value]) => !name.startsWith('on') && value !== false && value != null && name !== 'key')
    .map(([name, value]) => ` ${name === 'className' ? 'class' : name}="${escapeText(String(value))}"`)
    .join('');
  const inner = dangerouslySetInnerHTML
    ? (dangerouslySetInnerHTML as { __html: string }).__html
    : html(children);
  return `<${vnode.type}${attrs}>${inner}</${vnode.type}>`;
}

/** Tags the rendered HTML contains. */
function tags(rendered: string): string[] {
  return [...rendered.matchAll(/<([a-z][a-z0-9]*)/g)].map((m) => m[1] as string);
}

const HOSTILE = [
  'Intro <img src=x onerror="alert(1)"> & more',
  '',
  '# Heading <script>alert(2)</script>',
  'Body under the heading <a href="javascript:alert(3)">link</a>',
  '',
  '```html',
  '</pre><iframe src="https://evil.example"></iframe>',
  '```',
  '',
  'Tail &lt;b&gt; already escaped',
].join('\n');

describe('the console renders an answer as text', () => {
  it('keeps markup in paragraphs, headings and code blocks as text', () => {
    const rendered = html(h(Markdownish, { text: HOSTILE }));
    expect(tags(rendered).sort()).toEqual(['div', 'h4', 'p', 'p', 'p', 'pre'].sort());
    expect(rendered).toContain('Intro &lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; more');
    expect(rendered).toContain('<h4>Heading &lt;script&gt;alert(2)&lt;/script&gt;</h4>');
    expect(rendered).toContain('&lt;a href=&quot;javascript:alert(3)&quot;&gt;link&lt;/a&gt;');
    expect(rendered).toContain(
      '<pre>&lt;/pre&gt;&lt;iframe src=&quot;https://evil.example&quot;&gt;&lt;/iframe&gt;</pre>',
    );
    expect(rendered).toContain('Tail &amp;lt;b&amp;gt; already escaped');
  });

  it('keeps markup in a turn’s question, answer and error as text', () => {
    const turn = {
      urn: 'cld:common.Conversation.0000000000000001/common.Message.0000000000000002',
      content: 'Why <b>bold</b>?',
      status: 'failed',
      tasks: [],
      answer: {
        urn: 'cld:common.Conversation.0000000000000001/common.Message.0000000000000003',
        content: 'Answer <svg onload=alert(4)>',
        citations: ['cld:doc.Document.0000000000000004/doc.Chunk.0000000000000005'],
        error: { code: 'FAILED', message: 'failed <img src=y onerror=alert(5)>' },
      },
      usage: { modelCalls: 0, tokens: 0, toolCalls: 0 },
      timeline: [],
    } as unknown as TurnView;
    const rendered = html(h(Turn, { turn, onCite: () => undefined }));
    expect(tags(rendered)).not.toContain('svg');
    expect(tags(rendered)).not.toContain('img');
    expect(tags(rendered)).not.toContain('b');
    expect(rendered).toContain('Answer &lt;svg onload=alert(4)&gt;');
    expect(rendered).toContain('failed &lt;img src=y onerror=alert(5)&gt;');
    expect(rendered).toContain('Why &lt;b&gt;bold&lt;/b&gt;?');
  });
});
