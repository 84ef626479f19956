import { useMemo } from 'preact/hooks';
import { type Source, sourcesOf, type TaskView, type TurnView } from './api.js';
import { renderMarkdown } from './markdown.js';
import { between, formatDuration, formatTime } from './time.js';

/**
 * One user message and what the system did with it: status (stalled, partial and failed called out), what
 * it waits for, the plan, the task tree (per task: status, elected assistant, score and runner-up,
 * evaluation criteria, verdicts per round with corrective subtasks, tool calls with arguments and
 * results, usage, times) and the answer (Markdown rendered and sanitised, markdown.ts) with one
 * list of its sources.
 */

/** The parts a partial answer or task did not answer. */
type UnansweredPart = NonNullable<TaskView['unanswered']>[number];

/** A status badge: a word and a shape, so it does not rely on colour alone. */
export function Status(props: { status: string }) {
  const icon: Record<string, string> = {
    done: '✓',
    partial: '◑',
    failed: '✗',
    stalled: '⚠',
    running: '●',
    waiting: '◐',
    pending: '○',
  };
  return (
    <span class={`status ${props.status}`} data-status={props.status}>
      {icon[props.status] ?? '•'} {props.status}
    </span>
  );
}

export function Turn(props: { turn: TurnView; onCite: (urn: string) => void }) {
  const { turn } = props;
  return (
    <>
      <blockquote class="question">
        <Status status={turn.status} /> {turn.content}
      </blockquote>
      {turn.status === 'stalled' && (
        <p class="banner stalled" role="alert">
          Stalled: nothing new since {when(turn.lastProgress)}. Waiting for{' '}
          {turn.waitingFor?.join('; ') ?? 'the next step'}. The sweeper re-drives stalled work.
        </p>
      )}
      {turn.status !== 'stalled' && turn.waitingFor && turn.waitingFor.length > 0 && (
        <p class="muted">Waiting for {turn.waitingFor.join('; ')}.</p>
      )}
      {turn.plan && (
        <p class="muted">
          Plan: {turn.plan.tasks} root task(s), model {turn.plan.model}
          {turn.plan.error && <span class="banner failed"> {turn.plan.error.message}</span>}
        </p>
      )}
      <ul class="tree" aria-label="Task tree">
        {turn.tasks.map((task) => (
          <TaskNode key={task.urn} task={task} onCite={props.onCite} />
        ))}
      </ul>
      {turn.answer && (
        <section class={`answer ${turn.answer.status}`} aria-label="Answer" data-status={turn.answer.status}>
          <h3>{turn.answer.status === 'partial' ? 'Partial answer' : 'Answer'}</h3>
          {turn.answer.error && (
            <p class="banner failed" role="alert">
              {turn.answer.error.code}: {turn.answer.error.message}
            </p>
          )}
          {turn.answer.unanswered && <NotAnswered parts={turn.answer.unanswered} />}
          <Markdown text={turn.answer.content} />
          <Sources sources={sourcesOf(turn.answer)} onCite={props.onCite} />
        </section>
      )}
    </>
  );
}

/** The parts a partial answer or task did not answer, each with why (a warning, not an error). */
function NotAnswered(props: { parts: UnansweredPart[] }) {
  return (
    <div class="banner partial" role="status" aria-label="Not answered">
      <strong>Not answered</strong>
      <ul>
        {props.parts.map((part) => (
          <li key={part.task}>
            <span class="title">{part.title}</span> — {part.reason}
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * The one list of what an answer or a task cites: each source's label (document › heading, or the
 * URN when the view names none) opens the cited resource (citation.tsx); the URN is its title.
 */
function Sources(props: { sources: Source[]; onCite: (urn: string) => void }) {
  if (props.sources.length === 0) return null;
  return (
    <section class="sources" aria-label="Sources">
      <h4>Sources</h4>
      <ol class="citations">
        {props.sources.map((source) => (
          <li key={source.urn}>
            <a
              class="citation"
              href={`#${encodeURIComponent(source.urn)}`}
              title={source.urn}
              data-urn={source.urn}
              onClick={(e) => {
                e.preventDefault();
                props.onCite(source.urn);
              }}
            >
              {source.label}
            </a>
          </li>
        ))}
      </ol>
    </section>
  );
}

function TaskNode(props: { task: TaskView; onCite: (urn: string) => void }) {
  const { task } = props;
  const open = task.status === 'failed' || task.status === 'partial' || task.status === 'running';
  return (
    <li class={`task ${task.status}`} data-task={task.title}>
      <details open={open}>
        <summary>
          <Status status={task.status} /> <span class="title">{task.title}</span>{' '}
          <span class="assistant">
            {task.assistant} <small>{task.score.toFixed(2)}</small>
            {task.runnerUp && (
              <small class="muted">
                {' '}
                (runner-up {task.runnerUp.name} {task.runnerUp.score.toFixed(2)})
              </small>
            )}
          </span>
          {task.round > 0 && <span class="tag">corrective, round {task.round}</span>}
        </summary>
        {task.error && (
          <p class="banner failed" role="alert">
            {task.error.code}: {task.error.message}
          </p>
        )}
        {task.unanswered && <NotAnswered parts={task.unanswered} />}
        <dl class="facts">
          {task.evaluation && (
            <>
              <dt>Evaluation criteria</dt>
              <dd>{task.evaluation}</dd>
            </>
          )}
          <dt>Used</dt>
          <dd>
            {task.usage.modelCalls} model call(s), {task.usage.tokens.toLocaleString()} tokens,{' '}
            {task.usage.toolCalls} tool call(s)
          </dd>
          <dt>Times</dt>
          <dd>
            queued {when(task.times.queuedAt)}, started {when(task.times.startedAt)}, finished{' '}
            {when(task.times.finishedAt)}
            {task.times.queuedAt && task.times.finishedAt && (
              <> ({formatDuration(between(task.times.queuedAt, task.times.finishedAt) ?? 0)})</>
            )}
          </dd>
        </dl>
        {task.calls.length > 0 && (
          <ul class="calls" aria-label="Tool calls">
            {task.calls.map((call) => (
              <li key={call.urn}>
                <details>
                  <summary>
                    <code>
                      {call.name}({JSON.stringify(call.input)})
                    </code>{' '}
                    {call.result ? (
                      <span class={`status ${call.result.status === 'OK' ? 'done' : 'failed'}`}>
                        {call.result.status} · {call.result.bytes.toLocaleString()} B
                        {call.result.ms !== undefined && <> · {formatDuration(call.result.ms)}</>}
                      </span>
                    ) : (
                      <Status status="running" />
                    )}
                  </summary>
                  <pre class="result">
                    {call.result
                      ? call.result.content + (call.result.truncated ? '\n…' : '')
                      : 'waiting for the result'}
                  </pre>
                </details>
              </li>
            ))}
          </ul>
        )}
        {task.verdicts.length > 0 && (
          <ul class="verdicts" aria-label="Verdicts">
            {task.verdicts.map((v) => (
              <li key={v.round} class={v.pass ? 'pass' : 'fail'}>
                <strong>
                  verdict round {v.round}: {v.pass ? 'pass' : 'fail'}
                </strong>{' '}
                — {v.reason}
                {v.corrective.length > 0 && <span> ({v.corrective.length} corrective subtask(s))</span>}
                {v.subtasks.some((s) => s.missing?.length) && (
                  <ul class="missing" aria-label="Missing">
                    {v.subtasks
                      .filter((s) => s.missing?.length)
                      .map((s) => (
                        <li key={s.urn}>missing: {s.missing?.join(', ')}</li>
                      ))}
                  </ul>
                )}
              </li>
            ))}
          </ul>
        )}
        <Sources sources={sourcesOf(task)} onCite={props.onCite} />
        {task.subtasks.length > 0 && (
          <ul class="tree">
            {task.subtasks.map((sub) => (
              <TaskNode key={sub.urn} task={sub} onCite={props.onCite} />
            ))}
          </ul>
        )}
      </details>
    </li>
  );
}

/** A time as the reader's locale shows it (time.ts: with the date when not today); `—` when absent. */
export function when(iso: string | undefined): string {
  return formatTime(iso);
}

/** An answer's Markdown, rendered and sanitised (markdown.ts), without its trailing "Sources:" block. */
export function Markdown(props: { text: string }) {
  const html = useMemo(() => renderMarkdown(props.text), [props.text]);
  return <div class="content" dangerouslySetInnerHTML={{ __html: html }} />;
}
