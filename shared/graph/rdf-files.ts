import type { Quad as RdfJsQuad } from '@rdfjs/types';
import { Parser as HtmlParser } from 'htmlparser2';
import { JsonLdParser } from 'jsonld-streaming-parser';
import { MicrodataRdfParser } from 'microdata-rdf-streaming-parser';
import { DataFactory, Parser, type Quad } from 'n3';
import { RdfaParser } from 'rdfa-streaming-parser';
import { ValidationError } from '../errors.js';

/**
 * Linked-data files to triples with maintained parsers: n3 for the Turtle family (Turtle,
 * N-Triples, N-Quads, TriG), jsonld-streaming-parser for JSON-LD, and for HTML pages the
 * embedded `<script type="application/ld+json">` blocks plus RDFa (rdfa-streaming-parser) and
 * microdata (microdata-rdf-streaming-parser). Remote JSON-LD contexts are never fetched (no
 * network at ingest or in Lambda): a document that needs one fails with a clear error.
 */

/** File extensions read as linked data, lower case, with the format each is parsed as. */
export const RDF_EXTENSIONS: Readonly<Record<string, RdfFormat>> = {
  '.ttl': 'turtle',
  '.nt': 'n-triples',
  '.nq': 'n-quads',
  '.trig': 'trig',
  '.jsonld': 'json-ld',
  '.html': 'html',
  '.htm': 'html',
};

/** A linked-data format this module parses. */
export type RdfFormat = 'turtle' | 'n-triples' | 'n-quads' | 'trig' | 'json-ld' | 'html';

const N3_FORMATS: Record<string, string> = {
  turtle: 'Turtle',
  'n-triples': 'N-Triples',
  'n-quads': 'N-Quads',
  trig: 'TriG',
};

/**
 * Parses one file's text into quads, all in the default graph (the source is the resource the
 * quads are stored under). `baseIri` resolves relative IRIs.
 * @throws ValidationError naming `name` and, where the parser reports it, the line
 */
export async function parseRdf(
  text: string,
  format: RdfFormat,
  name: string,
  baseIri: string,
): Promise<Quad[]> {
  try {
    const quads: RdfJsQuad[] =
      format === 'json-ld'
        ? await parseJsonLd(text, baseIri)
        : format === 'html'
          ? await parseHtml(text, baseIri)
          : new Parser({ format: N3_FORMATS[format], baseIRI: baseIri }).parse(text);
    // n3 terms throughout, in the default graph (the source is the resource the quads go under)
    return quads.map(
      (q) => DataFactory.fromQuad(DataFactory.quad(q.subject, q.predicate, q.object)) as unknown as Quad,
    );
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    const line = /line (\d+)/i.exec(message)?.[1];
    throw new ValidationError(`${name}${line ? `:${line}` : ''}: not valid ${format}: ${message}`, {
      cause: error,
      details: { file: name, ...(line ? { line: Number(line) } : {}) },
    });
  }
}

/** Refuses every remote context: ingest works offline. */
const offlineDocumentLoader = {
  load: async (url: string): Promise<never> => {
    throw new Error(`remote JSON-LD context ${url} is not fetched (offline); inline the context`);
  },
};

function parseJsonLd(text: string, baseIri: string): Promise<RdfJsQuad[]> {
  return new Promise((resolve, reject) => {
    const quads: RdfJsQuad[] = [];
    const parser = new JsonLdParser({
      baseIRI: baseIri,
      documentLoader: offlineDocumentLoader,
    });
    parser.on('data', (q: RdfJsQuad) => quads.push(q));
    parser.on('error', reject);
    parser.on('end', () => resolve(quads));
    parser.write(text);
    parser.end();
  });
}

/** Quads of an HTML page: its JSON-LD script blocks, RDFa and microdata. */
async function parseHtml(html: string, baseIri: string): Promise<RdfJsQuad[]> {
  const scripts: string[] = [];
  let inJsonLd = false;
  let buffer = '';
  const extractor = new HtmlParser({
    onopentag(tag, attributes) {
      if (tag === 'script' && (attributes.type ?? '').trim().toLowerCase() === 'application/ld+json') {
        inJsonLd = true;
        buffer = '';
      }
    },
    ontext(text) {
      if (inJsonLd) buffer += text;
    },
    onclosetag(tag) {
      if (tag === 'script' && inJsonLd) {
        inJsonLd = false;
        scripts.push(buffer);
      }
    },
  });
  extractor.write(html);
  extractor.end();
  const quads: RdfJsQuad[] = [];
  for (const [i, script] of scripts.entries()) {
    try {
      quads.push(...(await parseJsonLd(script, baseIri)));
    } catch (error) {
      throw new Error(`JSON-LD script block ${i + 1}: ${(error as Error).message}`);
    }
  }
  quads.push(
    ...(await streamed(
      new RdfaParser({
        baseIRI: baseIri,
        contentType: 'html',
        dataFactory: DataFactory,
      }) as unknown as NodeJS.ReadWriteStream,
      html,
    )),
  );
  quads.push(
    ...(await streamed(
      new MicrodataRdfParser({
        baseIRI: baseIri,
        dataFactory: DataFactory,
      }) as unknown as NodeJS.ReadWriteStream,
      html,
    )),
  );
  return quads;
}

/** Collects a streaming RDF/JS parser's quads (a Node `Transform` stream). */
function streamed(parser: NodeJS.ReadWriteStream, text: string): Promise<RdfJsQuad[]> {
  return new Promise((resolve, reject) => {
    const quads: RdfJsQuad[] = [];
    parser.on('data', (q: RdfJsQuad) => quads.push(q));
    parser.on('error', reject);
    parser.on('end', () => resolve(quads));
    parser.write(text);
    parser.end();
  });
}
