import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { sourcesBlockAt } from '../../shared/domain/sources-block.js';

/**
 * Model output as HTML (issue 23): Markdown rendered by `marked` (GitHub-flavoured: emphasis,
 * lists, tables, fenced code) and the HTML sanitised by DOMPurify before it reaches the page, so
 * an answer (model output, which may quote hostile documents) cannot run script, load a frame or
 * carry a `javascript:` link. Raw HTML in the text is passed to the sanitizer, never trusted; the
 * page's Content-Security-Policy (shared/channels/console-assets.ts) is a second line, not the
 * first. The trailing "Sources:" block of an answer is cut: the console lists the sources once,
 * from the view's `citations`/`sources` (tree.tsx).
 */

/** Text without its trailing "Sources:" block (the list the model or the combiner appended). */
export function withoutSourcesBlock(text: string): string {
  const index = sourcesBlockAt(text);
  return (index === -1 ? text : text.slice(0, index)).trimEnd();
}

/**
 * Headings inside an answer sit under the answer's own `<h3>`: `#`–`###` become `<h4>`, deeper
 * ones one level down (at most `<h6>`).
 */
const marked = new Marked({
  gfm: true,
  async: false,
  walkTokens: (token) => {
    if (token.type === 'heading') token.depth = Math.min(Math.max(token.depth + 1, 4), 6);
  },
});

/** Tags DOMPurify's defaults allow that model output has no business carrying (remote fetches, forms). */
const FORBID_TAGS = [
  'img',
  'picture',
  'source',
  'video',
  'audio',
  'style',
  'form',
  'input',
  'button',
  'textarea',
  'select',
];

/**
 * Attributes an answer may not carry: `style` (an overlay over the Approve/Deny buttons, a
 * `background:url(…)` beacon), `class` (the console's own banners and statuses), `id`/`name`
 * (clobbering the page's elements), `srcset`.
 */
const FORBID_ATTR = ['style', 'class', 'id', 'name', 'srcset'];

/** Opens links in a new tab without handing it this page (`rel="noopener noreferrer"`). */
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

/**
 * Markdown to sanitised HTML, for `dangerouslySetInnerHTML`.
 * @param text Markdown (an answer's content); its trailing "Sources:" block is dropped
 * @returns HTML with no script, event handler, frame, form, image, `style`/`class`/`id` attribute or
 *   `javascript:`/`data:` URL
 */
export function renderMarkdown(text: string): string {
  const html = marked.parse(withoutSourcesBlock(text), { async: false });
  return DOMPurify.sanitize(html, {
    FORBID_TAGS,
    FORBID_ATTR,
    SANITIZE_NAMED_PROPS: true,
    USE_PROFILES: { html: true },
  });
}
