import { describe, expect, it } from 'vitest';
import { approvalStatus } from '../../shared/domain/approval.js';
import type { ApprovalRequest } from '../../shared/resources/schemas.js';

/**
 * Approval times are RFC 3339 UTC strings that the schema accepts with or without fractional
 * seconds; `…:00Z` sorts after `…:00.500Z` as a string although it is the earlier instant, so the
 * domain compares instants (a string compare kept a request `pending` half a second past expiry).
 */
describe('approvalStatus compares instants, not strings', () => {
  const request = { expiresAt: '2026-01-01T00:00:00Z' } as ApprovalRequest;

  it('is expired half a second after an expiry written without fractional seconds', () => {
    expect(approvalStatus(request, undefined, new Date('2026-01-01T00:00:00.500Z'))).toBe('expired');
  });

  it('is pending at the expiry instant itself and before it', () => {
    expect(approvalStatus(request, undefined, new Date('2026-01-01T00:00:00.000Z'))).toBe('pending');
    expect(approvalStatus(request, undefined, new Date('2025-12-31T23:59:59.999Z'))).toBe('pending');
  });
});
