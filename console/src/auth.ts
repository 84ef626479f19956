/**
 * Sign-in of the console (issue 15). Two ways, chosen by the server's `/console/config.json`:
 * - `token`: the bearer token `serve` prints, typed into a password field;
 * - `oidc`: OAuth 2.0 authorization code with PKCE (RFC 7636, `S256`) against the issuer the HTTP
 *   API's JWT authorizer trusts (for Cognito, its hosted UI), as a public client.
 * The token is kept in `sessionStorage` (this tab, until it closes) and sent only in the
 * `Authorization` header: never in a URL, never logged. The authorization *code* arrives in the
 * redirect's query (that is the protocol); it is exchanged once and removed from the address bar.
 */

import type { ConsoleAuth } from '../../shared/channels/console-assets.js';

/** How to sign in: `/console/config.json`, the server's parsed `CLD_CONSOLE_AUTH` (shared/channels/console-assets.ts). */
export type { ConsoleAuth };

const TOKEN = 'cld.token';
const PKCE = 'cld.pkce';

/** The stored token, if signed in. */
export function storedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN) ?? undefined;
}

/** Keeps the token for this tab. */
export function keepToken(token: string): void {
  sessionStorage.setItem(TOKEN, token);
}

/** Forgets the token (sign out, or a 401). */
export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN);
}

/** base64url without padding (RFC 4648 §5). */
export function base64url(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** A PKCE code verifier: 32 random bytes, base64url (43 characters, RFC 7636 §4.1). */
export function codeVerifier(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The `S256` code challenge of a verifier: base64url(SHA-256(ASCII(verifier))) (RFC 7636 §4.2). */
export async function codeChallenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** The console's own URL without query or fragment: the redirect URI registered with the issuer. */
export function redirectUri(location: Location = window.location): string {
  return `${location.origin}${location.pathname}`;
}

/**
 * Starts the authorization code flow: keeps a fresh verifier and state for this tab and returns
 * the authorization URL to navigate to.
 */
export async function authorizationUrl(auth: Extract<ConsoleAuth, { kind: 'oidc' }>): Promise<string> {
  const verifier = codeVerifier();
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state }));
  const url = new URL(auth.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: auth.clientId,
    redirect_uri: redirectUri(),
    scope: auth.scopes.join(' '),
    state,
    code_challenge: await codeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  return url.toString();
}

/**
 * Finishes the flow when the page was opened by the issuer's redirect (`?code=&state=`): checks the
 * state, exchanges the code with the verifier at the token endpoint, keeps the ID token (the
 * access token when there is none) and removes the code from the address bar.
 * @returns the token, or undefined when this is not a redirect
 * @throws Error when the state does not match, the issuer reported an error, or the exchange failed
 */
export async function completeSignIn(
  auth: Extract<ConsoleAuth, { kind: 'oidc' }>,
): Promise<string | undefined> {
  const query = new URLSearchParams(window.location.search);
  const code = query.get('code');
  const error = query.get('error');
  if (!code && !error) return undefined;
  history.replaceState(null, '', redirectUri());
  const kept = JSON.parse(sessionStorage.getItem(PKCE) ?? '{}') as { verifier?: string; state?: string };
  sessionStorage.removeItem(PKCE);
  if (error) throw new Error(`sign-in failed: ${error}`);
  if (!kept.verifier || !kept.state || kept.state !== query.get('state'))
    throw new Error('sign-in failed: the state does not match this tab');
  const response = await fetch(auth.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: auth.clientId,
      code: code as string,
      redirect_uri: redirectUri(),
      code_verifier: kept.verifier,
    }),
  });
  if (!response.ok) throw new Error(`sign-in failed: the token endpoint answered ${response.status}`);
  const tokens = (await response.json()) as { id_token?: string; access_token?: string };
  const token = tokens.id_token ?? tokens.access_token;
  if (!token) throw new Error('sign-in failed: no token in the token response');
  keepToken(token);
  return token;
}
