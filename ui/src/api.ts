/**
 * The console's only way to the server: GET of a JSON document with the bearer token, which is
 * entered once and kept in sessionStorage (gone when the tab closes; never in localStorage, never
 * in a URL). A 401 forgets the token and calls the handler the app set, which shows the login
 * form again; any other failure is an ApiError with the server's `{"error": {"code", "message"}}`.
 */

/** sessionStorage key of the token. */
const TOKEN_KEY = 'sst-ingest.console.token';
/** The longest error message shown from a reply body (a proxy's HTML page would be long). */
const ERROR_MESSAGE_MAX_CHARS = 300;

export class Unauthorized extends Error {
  constructor() {
    super('the server asks for a token');
    this.name = 'Unauthorized';
  }
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage disabled: the token lives for this page only (see setToken)
  }
}

let tokenInMemory: string | null = null;

export function setToken(token: string | null): void {
  tokenInMemory = token;
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // Storage disabled (a private window's policy): the token is kept in memory instead.
  }
}

function currentToken(): string | null {
  return storedToken() ?? tokenInMemory;
}

let onUnauthorized: () => void = () => undefined;

/** What to do on a 401 (the app shows the login form). */
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const doc = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof doc.error?.code === 'string' && typeof doc.error.message === 'string') {
      return new ApiError(res.status, doc.error.code, doc.error.message.slice(0, ERROR_MESSAGE_MAX_CHARS));
    }
  } catch {
    // Not JSON: shown as text below.
  }
  return new ApiError(res.status, 'HTTP', `${res.status} ${res.statusText} ${text.slice(0, ERROR_MESSAGE_MAX_CHARS)}`.trim());
}

/** GET `path` (same origin) as JSON; throws Unauthorized (after calling the handler) or ApiError. */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const token = currentToken();
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await fetch(path, { headers, signal, cache: 'no-store' });
  if (res.status === 401) {
    setToken(null);
    onUnauthorized();
    throw new Unauthorized();
  }
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

/** A failure as one line for the page. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
