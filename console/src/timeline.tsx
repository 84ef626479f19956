import type { TimelineStep } from './api.js';
import { formatDuration as format } from './time.js';

/**
 * The steps of one message on a time axis (queued → started → finished, from the resources'
 * `createdAt`): a row per step, indented by depth; the light part of a bar is the wait between
 * queued and started, the solid part the run; an open step runs to now (striped); failed steps are
 * red and marked ✗, partial ones amber and marked ◑. Overlapping bars are steps that ran in parallel.
 */
export function Timeline(props: { steps: TimelineStep[] }) {
  const times = props.steps
    .flatMap((s) => [s.queuedAt, s.startedAt, s.finishedAt])
    .filter((t): t is string => !!t);
  if (times.length === 0) return <p class="muted">Nothing has run yet.</p>;
  const now = Date.now();
  const open = props.steps.some((s) => s.outcome === 'open');
  const start = Math.min(...times.map(Date.parse));
  const end = Math.max(...times.map(Date.parse), open ? now : 0);
  const span = Math.max(end - start, 1);
  const pct = (t: number) => `${(((t - start) / span) * 100).toFixed(2)}%`;
  const width = (a: number, b: number) => `${(Math.max((b - a) / span, 0.004) * 100).toFixed(2)}%`;
  return (
    <figure class="timeline" aria-label="Timeline">
      <figcaption>
        {props.steps.length} steps over {format(end - start)}
      </figcaption>
      <ol>
        {props.steps.map((step) => {
          const queued = step.queuedAt ? Date.parse(step.queuedAt) : start;
          const started = step.startedAt ? Date.parse(step.startedAt) : queued;
          const finished = step.finishedAt ? Date.parse(step.finishedAt) : now;
          const title = `${step.kind} ${step.label}: queued ${step.queuedAt ?? '?'}${step.startedAt ? `, started ${step.startedAt}` : ''}${step.finishedAt ? `, finished ${step.finishedAt} (${format(finished - queued)})` : ', not finished'}`;
          return (
            <li key={step.urn + step.kind} class={`step ${step.kind} ${step.outcome}`} title={title}>
              <span class="label" style={{ paddingLeft: `${step.depth * 0.8}em` }}>
                {step.outcome === 'failed' ? '✗ ' : step.outcome === 'partial' ? '◑ ' : ''}
                {step.kind === 'tool' ? `tool ${step.label}` : step.label}
              </span>
              <span class="track">
                {started > queued && (
                  <span class="wait" style={{ left: pct(queued), width: width(queued, started) }} />
                )}
                <span class="run" style={{ left: pct(started), width: width(started, finished) }} />
              </span>
              <span class="duration">{step.finishedAt ? format(finished - queued) : '…'}</span>
            </li>
          );
        })}
      </ol>
    </figure>
  );
}
