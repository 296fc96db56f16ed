/**
 * The console's shell: the login gate (a first GET /v1/stats tells whether the token is needed
 * and good; any 401 later brings the form back), the tabs, and the view of the location's hash:
 * #lsm (default), #imports, #conflicts or #conflicts/{import id}, #charts. Views not shown are
 * unmounted, so only the visible one polls the server.
 */
import { useEffect, useState } from 'preact/hooks';
import { Unauthorized, getJson, messageOf, setToken, setUnauthorizedHandler, storedToken } from './api';
import { Login } from './login';
import { LsmView } from './lsmView';
import { ImportsView } from './importsView';
import { ConflictsView } from './conflictsView';
import { ChartsView } from './chartsView';

type ViewName = 'lsm' | 'imports' | 'conflicts' | 'charts';

const TABS: ReadonlyArray<{ view: ViewName; label: string }> = [
  { view: 'lsm', label: 'LSM' },
  { view: 'imports', label: 'Imports' },
  { view: 'conflicts', label: 'Conflicts' },
  { view: 'charts', label: 'Charts' },
];

interface Route {
  view: ViewName;
  /** #conflicts/{id}: the import whose report is shown. */
  importId: string | null;
}

function routeOf(hash: string): Route {
  const [name, ...rest] = hash.replace(/^#/, '').split('/');
  const view = TABS.some((t) => t.view === name) ? (name as ViewName) : 'lsm';
  const importId = view === 'conflicts' && rest.length > 0 && rest[0] !== '' ? decodeURIComponent(rest.join('/')) : null;
  return { view, importId };
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const onChange = (): void => setRoute(routeOf(location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

type Auth = { state: 'checking' } | { state: 'login'; message: string | null } | { state: 'ok' } | { state: 'down'; message: string };

function useAuth(): [Auth, (a: Auth | ((prev: Auth) => Auth)) => void] {
  const [auth, setAuth] = useState<Auth>({ state: 'checking' });
  useEffect(() => {
    // A token that stops working while the console is open (the server restarted with another):
    // the form again, saying why. During the first check and the form's own tries, they say it.
    setUnauthorizedHandler(() =>
      setAuth((prev) => (prev.state === 'ok' ? { state: 'login', message: 'The server refused the token (401): enter it again.' } : prev)),
    );
    const hadToken = storedToken() !== null;
    getJson('/v1/stats').then(
      () => setAuth({ state: 'ok' }),
      (err: unknown) => {
        if (err instanceof Unauthorized) setAuth({ state: 'login', message: hadToken ? 'The server refused the stored token.' : null });
        else setAuth({ state: 'down', message: messageOf(err) });
      },
    );
  }, []);
  return [auth, setAuth];
}

function Header({ route, onSignOut }: { route: Route; onSignOut: () => void }) {
  return (
    <header>
      <span class="brand">sst-ingest</span>
      <span class="host">{location.host}</span>
      <nav>
        {TABS.map((t) => (
          <a key={t.view} href={`#${t.view}`} class={`tab tab-${t.view}${route.view === t.view ? ' active' : ''}`}>
            {t.label}
          </a>
        ))}
      </nav>
      {storedToken() !== null && (
        <button type="button" class="sign-out" onClick={onSignOut}>
          forget token
        </button>
      )}
    </header>
  );
}

export function App() {
  const [auth, setAuth] = useAuth();
  const route = useRoute();
  if (auth.state === 'checking') return <p class="muted centred">Connecting…</p>;
  if (auth.state === 'down') return <p class="error centred">The server did not answer GET /v1/stats: {auth.message}</p>;
  if (auth.state === 'login') return <Login message={auth.message} onSignedIn={() => setAuth({ state: 'ok' })} />;
  const signOut = (): void => {
    setToken(null);
    setAuth({ state: 'login', message: null });
  };
  const setImportId = (id: string | null): void => {
    location.hash = id === null ? '#conflicts' : `#conflicts/${encodeURIComponent(id)}`;
  };
  return (
    <div class="app" data-view={route.view}>
      <Header route={route} onSignOut={signOut} />
      <main>
        {route.view === 'lsm' && <LsmView />}
        {route.view === 'imports' && <ImportsView />}
        {route.view === 'conflicts' && <ConflictsView importId={route.importId} setImportId={setImportId} />}
        {route.view === 'charts' && <ChartsView />}
      </main>
    </div>
  );
}
