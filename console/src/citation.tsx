import { useEffect, useRef, useState } from 'preact/hooks';
import type { Chunk, Document } from '../../shared/resources/schemas.js';
import type { Api } from './api.js';

/**
 * A citation opened: the chunk's heading, position and text, and its source document's path,
 * read through `GET /resources/{urn}` (the policy gate lets any caller read the shared corpora).
 * A modal `<dialog>`: Escape or the button closes it and focus returns to the page.
 */
export function CitationDialog(props: { api: Api; urn: string; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [chunk, setChunk] = useState<Chunk | undefined>();
  const [source, setSource] = useState<Document | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    dialog.current?.showModal();
    // `GET /resources/{urn}` documents any resource (its `meta` and the type's fields); a
    // citation names a `doc.Chunk`, whose parent is its `doc.Document` (shared/resources/schemas.ts).
    props.api
      .resource(props.urn)
      .then(async (body) => {
        const c = body as unknown as Chunk;
        setChunk(c);
        if (c.meta.parent) setSource((await props.api.resource(c.meta.parent)) as unknown as Document);
      })
      .catch((e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  }, [props.urn]);
  return (
    <dialog ref={dialog} class="citation-dialog" aria-label="Citation" onClose={props.onClose}>
      <header>
        <h3>{chunk?.heading ?? 'Citation'}</h3>
        <button type="button" onClick={() => dialog.current?.close()} aria-label="Close">
          ✕
        </button>
      </header>
      <p class="muted">
        <code>{props.urn}</code>
      </p>
      {error && <p class="banner failed">{error}</p>}
      {source && (
        <p class="source">
          Source: <code>{source.path}</code>
          {chunk && (
            <>
              {' '}
              — chunk {chunk.index + 1} of {source.chunks}
            </>
          )}
        </p>
      )}
      {chunk ? <pre class="chunk">{chunk.text}</pre> : !error && <p class="muted">Loading…</p>}
    </dialog>
  );
}
