/**
 * Assistant election scores (shared/search/similarity.ts): the sparse scoring of a task against
 * the catalog gives exactly the cosine of the dense vectors, and the election ranks by it.
 */
import { describe, expect, it } from 'vitest';
import type { Embedder } from '../../shared/llm/port.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { Assistant } from '../../shared/resources/schemas.js';
import { cosine, electAssistant, HashingEmbedder } from '../../shared/search/similarity.js';

function assistant(name: string, purpose: string): Assistant {
  return { meta: withMeta({ type: 'common.Assistant', name, purpose }), tools: [] };
}

const blank = { instructions: '', applicability: '', evaluation: '' };

const catalog = [
  assistant('researcher', 'Find facts in documents and cite the sources of every claim.'),
  assistant('editor', 'Rewrite a draft answer for clarity, structure and tone.'),
  assistant('coordinator', 'Split a broad request into subtasks and combine their results.'),
];

describe('electAssistant', () => {
  it('scores each assistant with the cosine of the dense vectors, rounded to 4 decimals', async () => {
    const embedder = new HashingEmbedder();
    const task = { ...blank, purpose: 'Find the documents that cite the retention rules, with sources.' };
    const election = await electAssistant(embedder, task, catalog);
    const [taskVector] = await embedder.embed([`**Purpose:** ${task.purpose}`]);
    const expected = await Promise.all(
      catalog.map(async (a) => {
        const [vector] = await embedder.embed([`**Purpose:** ${a.meta.purpose}`]);
        return {
          name: a.meta.name,
          score: Math.round(cosine(taskVector ?? [], vector ?? []) * 10_000) / 10_000,
        };
      }),
    );
    expected.sort((a, b) => b.score - a.score);
    expect(election.name).toBe('researcher');
    expect(election.score).toBe(expected[0]?.score);
    expect(election.runnerUp?.score).toBe(expected[1]?.score);
  });

  it('gives exactly the dense cosine for dense, unfrozen vectors of another embedder', async () => {
    let seed = 3;
    const random = () => {
      seed = (seed * 16_807) % 2_147_483_647;
      return seed / 2_147_483_647 - 0.5;
    };
    const vectors = new Map<string, number[]>();
    const dense: Embedder = {
      name: 'dense',
      embed: async (texts) =>
        texts.map((text) => {
          let vector = vectors.get(text);
          if (!vector) {
            vector = Array.from({ length: 64 }, (_, i) => (i % 5 === 0 ? 0 : random()));
            vectors.set(text, vector);
          }
          return vector;
        }),
    };
    const election = await electAssistant(dense, { ...blank, purpose: 'anything' }, catalog);
    const query = vectors.get('**Purpose:** anything') ?? [];
    const byName = new Map(
      catalog.map((a) => [
        a.meta.name,
        Math.round(cosine(query, vectors.get(`**Purpose:** ${a.meta.purpose}`) ?? []) * 10_000) / 10_000,
      ]),
    );
    expect(election.score).toBe(byName.get(election.name));
    expect(election.runnerUp?.score).toBe(byName.get(election.runnerUp?.name ?? ''));
  });
});
