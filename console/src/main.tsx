import './style.css';
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  type Api,
  ApiError,
  type ConversationList,
  type ConversationSummary,
  type ConversationView,
  createApi,
} from './api.js';
import { Approvals } from './approvals.js';
import {
  authorizationUrl,
  type ConsoleAuth,
  completeSignIn,
  forgetToken,
  keepToken,
  storedToken,
} from './auth.js';
import { CitationDialog } from './citation.js';
import { afterPoll, nextPollDelayMs, type PollState, resetAfterAction } from './polling.js';
import { formatTime } from './time.js';
import { Timeline } from './timeline.js';
import { Status, Turn } from './tree.js';

/**
 * The web console (issue 15): sign in, list one's conversations, ask and follow up, and watch a
 * conversation's task tree, answer, citations and timeline update by conditional polling.
 */

function App() {
  const [auth, setAuth] = useState<ConsoleAuth | undefined>();
  const [token, setToken] = useState<string | undefined>(storedToken());
  const [problem, setProblem] = useState<string | undefined>();
  useEffect(() => {
    fetch('/console/config.json', { cache: 'no-store' })
      .then((r) => r.json() as Promise<ConsoleAuth>)
      .then(async (config) => {
        setAuth(config);
        if (config.kind === 'oidc') {
          const signedIn = await completeSignIn(config);
          if (signedIn) setToken(signedIn);
        }
      })
      .catch((error: unknown) => setProblem(error instanceof Error ? error.message : String(error)));
  }, []);
  const signOut = useCallback(() => {
    forgetToken();
    setToken(undefined);
  }, []);
  if (!token)
    return (
      <SignIn
        auth={auth}
        problem={problem}
        onToken={(t) => {
          keepToken(t);
          setToken(t);
        }}
      />
    );
  return <Console api={createApi(token, signOut)} signOut={signOut} />;
}

function SignIn(props: {
  auth: ConsoleAuth | undefined;
  problem: string | undefined;
  onToken: (t: string) => void;
}) {
  const [value, setValue] = useState('');
  return (
    <main class="signin">
      <h1>cld console</h1>
      {props.problem && <p class="banner failed">{props.problem}</p>}
      {props.auth?.kind === 'oidc' ? (
        <button
          type="button"
          onClick={async () => {
            window.location.assign(
              await authorizationUrl(props.auth as Extract<ConsoleAuth, { kind: 'oidc' }>),
            );
          }}
        >
          Sign in
        </button>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (value.trim()) props.onToken(value.trim());
          }}
        >
          <label for="token">
            Bearer token (as <code>npm start -- serve</code> prints it)
          </label>
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="off"
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Sign in</button>
        </form>
      )}
    </main>
  );
}

function Console(props: { api: Api; signOut: () => void }) {
  const { api } = props;
  const [list, setList] = useState<ConversationList | undefined>();
  const [selected, setSelected] = useState<string | undefined>(
    () => window.location.hash.slice(1) || undefined,
  );
  const [error, setError] = useState<string | undefined>();
  const refresh = useCallback(() => {
    api.list().then(setList, (e: unknown) => setError(describe(e)));
  }, [api]);
  useEffect(refresh, []);
  useEffect(() => {
    // Back, forward and edited addresses pick the conversation named by the fragment.
    const follow = () => setSelected(window.location.hash.slice(1) || undefined);
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, []);
  const select = (id: string) => {
    setSelected(id);
    history.replaceState(null, '', `#${id}`);
  };
  return (
    <div class="layout">
      <header>
        <h1>cld console</h1>
        <button type="button" class="link" onClick={props.signOut}>
          Sign out
        </button>
      </header>
      <nav aria-label="Conversations">
        <Ask
          label="New question"
          onSend={async (message) => {
            const accepted = await api.ask(message);
            select(accepted.id);
            refresh();
          }}
        />
        <h2>
          Conversations{' '}
          <button type="button" class="link" onClick={refresh} aria-label="Refresh the list">
            ↻
          </button>
        </h2>
        {error && <p class="banner failed">{error}</p>}
        <ul class="conversations">
          {list?.conversations.map((c) => (
            <ConversationRow key={c.id} row={c} current={c.id === selected} onSelect={() => select(c.id)} />
          ))}
          {list && list.conversations.length === 0 && <li class="muted">No conversations yet.</li>}
        </ul>
      </nav>
      <main>
        {selected ? (
          <Conversation key={selected} api={api} id={selected} onChange={refresh} />
        ) : (
          <p class="muted">Ask a question, or pick a conversation.</p>
        )}
      </main>
    </div>
  );
}

function ConversationRow(props: { row: ConversationSummary; current: boolean; onSelect: () => void }) {
  const { row } = props;
  return (
    <li>
      <button
        type="button"
        class={`row${props.current ? ' current' : ''}`}
        aria-current={props.current ? 'true' : undefined}
        onClick={props.onSelect}
      >
        <Status status={row.status} />
        <span class="title">{row.title}</span>
        <time dateTime={row.createdAt}>{formatTime(row.createdAt)}</time>
      </button>
    </li>
  );
}

/** A message form: a text area and a send button; Ctrl/Cmd+Enter sends. */
function Ask(props: { label: string; onSend: (message: string) => Promise<void> }) {
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const send = async () => {
    if (!value.trim() || busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await props.onSend(value.trim());
      setValue('');
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  const id = `ask-${props.label.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <form
      class="ask"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label for={id}>{props.label}</label>
      <textarea
        id={id}
        rows={3}
        maxLength={16_000}
        value={value}
        onInput={(e) => setValue((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            void send();
          }
        }}
      />
      <button type="submit" disabled={busy || !value.trim()}>
        {busy ? 'Sending…' : 'Send'}
      </button>
      {error && <p class="banner failed">{error}</p>}
    </form>
  );
}

/**
 * One conversation, polled with `If-None-Match` on the backing-off schedule of polling.ts until
 * it finishes; a follow-up or a decision polls again at once.
 */
function Conversation(props: { api: Api; id: string; onChange: () => void }) {
  const { api, id } = props;
  const [view, setView] = useState<ConversationView | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [citation, setCitation] = useState<string | undefined>();
  const etag = useRef<string | undefined>(undefined);
  const schedule = useRef<PollState>({ status: undefined, unchanged: 0, failures: 0 });
  const poll = useRef<() => void>(() => undefined);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const tick = async () => {
      clearTimeout(timer);
      try {
        const result = await api.view(id, etag.current);
        if (!result.unchanged) {
          etag.current = result.etag;
          if (schedule.current.status !== result.view.status) props.onChange();
          schedule.current = afterPoll(schedule.current, { kind: 'changed', status: result.view.status });
          setView(result.view);
        } else schedule.current = afterPoll(schedule.current, { kind: 'unchanged' });
        setError(undefined);
      } catch (e) {
        schedule.current = afterPoll(schedule.current, { kind: 'failed' });
        setError(describe(e));
      }
      if (stopped) return;
      const delay = nextPollDelayMs(schedule.current);
      if (delay !== undefined) timer = setTimeout(tick, delay);
    };
    // The user acted (a follow-up, a decision): poll now, and start the schedule over, with the
    // status unknown so that polling goes on until the view shows what the action started.
    poll.current = () => {
      schedule.current = resetAfterAction();
      void tick();
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [api, id]);
  if (!view) return error ? <p class="banner failed">{error}</p> : <p class="muted">Loading…</p>;
  return (
    <article class="conversation" aria-busy={view.status === 'running' || view.status === 'pending'}>
      <h2>
        <Status status={view.status} /> Conversation <code>{view.id}</code>
      </h2>
      {error && <p class="banner failed">Updates failed: {error}</p>}
      <Approvals
        approvals={view.approvals}
        onDecide={async (approval, decision, reason) => {
          await api.decide(id, approval, decision, reason);
          poll.current();
        }}
      />
      <Budget budget={view.budget} />
      {view.messages.map((turn, i) => (
        <section key={turn.urn} class="turn" aria-label={`Message ${i + 1}`}>
          <Turn turn={turn} onCite={setCitation} />
          <details class="timeline-box" open={i === view.messages.length - 1}>
            <summary>Timeline</summary>
            <Timeline steps={turn.timeline} />
          </details>
        </section>
      ))}
      <Ask
        label="Follow-up"
        onSend={async (message) => {
          await api.followUp(id, message);
          poll.current();
        }}
      />
      {citation && <CitationDialog api={api} urn={citation} onClose={() => setCitation(undefined)} />}
    </article>
  );
}

function Budget(props: { budget: ConversationView['budget'] }) {
  const { used, limits } = props.budget;
  const item = (label: string, a: number, b: number) => (
    <li>
      {label}: <strong>{a.toLocaleString()}</strong>
      {b > 0 && <> / {b.toLocaleString()}</>}
      {b > 0 && <meter min={0} max={b} value={a} aria-label={`${label} used`} />}
    </li>
  );
  return (
    <ul class="budget" aria-label="Budgets used">
      {item('tokens', used.tokens, limits.tokens)}
      {item('model calls', used.modelCalls, limits.modelCalls)}
      {item('tool calls', used.toolCalls, limits.toolCalls)}
    </ul>
  );
}

function describe(error: unknown): string {
  if (error instanceof ApiError) return `${error.status} ${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

const root = document.getElementById('app');
if (root) render(<App />, root);
