import { useState } from 'preact/hooks';
import type { ApprovalView } from './api.js';
import { Status, when } from './tree.js';

/**
 * The conversation's approval requests (shared/domain/approval.ts): pending ones first, each with
 * the tool, its arguments and the task that asks, an optional reason and Approve / Deny buttons
 * (`POST /conversations/{id}/approvals/{approvalId}`); decided and expired ones below, with who
 * decided and when.
 */
export function Approvals(props: {
  approvals: ApprovalView[];
  onDecide: (approval: string, decision: 'approve' | 'deny', reason?: string) => Promise<void>;
}) {
  if (props.approvals.length === 0) return null;
  const pending = props.approvals.filter((a) => a.status === 'pending');
  const others = props.approvals.filter((a) => a.status !== 'pending');
  return (
    <section class="approvals" aria-label="Approvals">
      <h3>
        Approvals{' '}
        {pending.length > 0 && (
          <span class="status stalled" role="status">
            ⚠ {pending.length} waiting for you
          </span>
        )}
      </h3>
      <ul>
        {pending.map((a) => (
          <Pending key={a.id} approval={a} onDecide={props.onDecide} />
        ))}
        {others.map((a) => (
          <li key={a.id} class={`approval ${a.status}`} data-approval={a.id}>
            <Status status={a.status === 'approved' ? 'done' : 'failed'} /> <strong>{a.status}</strong>{' '}
            <code>
              {a.tool}({JSON.stringify(a.input)})
            </code>{' '}
            for “{a.task}”
            {a.decision && (
              <span class="muted">
                {' '}
                — by {a.decision.by} via {a.decision.channel} at {when(a.decision.decidedAt)}
                {a.decision.reason && <>: {a.decision.reason}</>}
              </span>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Pending(props: {
  approval: ApprovalView;
  onDecide: (approval: string, decision: 'approve' | 'deny', reason?: string) => Promise<void>;
}) {
  const { approval: a } = props;
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const decide = async (decision: 'approve' | 'deny') => {
    setBusy(true);
    setError(undefined);
    try {
      await props.onDecide(a.id, decision, reason.trim() || undefined);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
      setBusy(false);
    }
  };
  const id = `reason-${a.id}`;
  return (
    <li class="approval pending" data-approval={a.id}>
      <p>
        Task “{a.task}” asks to run{' '}
        <code>
          {a.tool}({JSON.stringify(a.input)})
        </code>
        . Requested {when(a.requestedAt)}, expires {when(a.expiresAt)}.
      </p>
      <label for={id}>Reason (optional)</label>
      <input id={id} value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      <div class="buttons">
        <button type="button" disabled={busy} onClick={() => void decide('approve')}>
          Approve
        </button>
        <button type="button" class="deny" disabled={busy} onClick={() => void decide('deny')}>
          Deny
        </button>
      </div>
      {error && <p class="banner failed">{error}</p>}
    </li>
  );
}
