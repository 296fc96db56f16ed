/**
 * The login form: the server's bearer token, entered once per tab (api.ts keeps it in
 * sessionStorage) and tried at once against GET /v1/stats; shown again on any 401.
 */
import { useState } from 'preact/hooks';
import { Unauthorized, getJson, messageOf, setToken } from './api';

export function Login({ message, onSignedIn }: { message: string | null; onSignedIn: () => void }) {
  const [value, setValue] = useState('');
  const [problem, setProblem] = useState<string | null>(message);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    const token = value.trim();
    if (token === '') {
      setProblem('Enter the token the server was started with (--token-file).');
      return;
    }
    setBusy(true);
    setToken(token);
    try {
      await getJson('/v1/stats');
      onSignedIn();
    } catch (err) {
      setProblem(err instanceof Unauthorized ? 'The server refused this token.' : messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="login" onSubmit={(e) => void submit(e)}>
      <h1>sst-ingest console</h1>
      <p>This server asks for its bearer token (the first line of the file given to --token-file).</p>
      <label>
        token{' '}
        <input
          type="password"
          name="token"
          autocomplete="current-password"
          value={value}
          onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)}
          autofocus
        />
      </label>
      <button type="submit" disabled={busy}>
        Sign in
      </button>
      {problem !== null && <p class="error login-error">{problem}</p>}
      <p class="muted">The token is kept in this tab's session storage only, and sent only to this server.</p>
    </form>
  );
}
