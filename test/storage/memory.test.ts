/**
 * The benchmarks' scratch in-memory storage (test/bench/memory-storage.ts) keeps the storage
 * contract, delimited listings included, so `npm run bench:scale` measures the same behaviour on
 * it as on the filesystem.
 */
import { MemoryStorage } from '../bench/memory-storage.js';
import { storageContract } from './contract.js';

storageContract('MemoryStorage (benchmarks)', async () => ({
  storage: new MemoryStorage(),
  cleanup: async () => undefined,
}));
