// The dcl technician's console: sign in with a bearer token, then sites → racks → elevation,
// the moves board, devices; reservations (read-only) for a commerce token. What a token may do
// is learnt from the server's own answers (its role from a ROLE_NOT_PERMITTED refusal), never
// decided here: the gate stays the one judge.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Code } from "@connectrpc/connect";
import { makeApi, refusalOf, storeToken, storedToken, type Api } from "./api";
import { DevicesView, ReservationsView, SitesView } from "./lists";
import { MovesBoard } from "./moves";
import { RackView } from "./rack";

type Role = "dc-operator" | "commerce" | "other";
interface Session {
  api: Api;
  role: Role;
  roleName: string;
}

// Operators may list sites and not reservations; commerce both; anyone else neither.
async function signIn(token: string): Promise<Session | string> {
  const api = makeApi(token);
  try {
    await api.inventory.listSites({ pageSize: 1 });
  } catch (e) {
    const r = refusalOf(e);
    if (r.code === Code.Unauthenticated) return `This token was not accepted: ${r.message}.`;
    if (r.code === Code.PermissionDenied) return { api, role: "other", roleName: r.role || "unknown" };
    return `The server could not be asked: ${r.message}`;
  }
  try {
    await api.reservations.listReservations({ pageSize: 1 });
    return { api, role: "commerce", roleName: "commerce" };
  } catch (e) {
    const r = refusalOf(e);
    if (r.code === Code.PermissionDenied) return { api, role: r.role === "dc-operator" ? "dc-operator" : "other", roleName: r.role || "unknown" };
    return `The server could not be asked: ${r.message}`;
  }
}

function useHash(): string {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const on = () => setHash(window.location.hash);
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignIn({ onSession }: { onSession: (s: Session) => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (value: string) => {
    setBusy(true);
    const result = await signIn(value.trim());
    setBusy(false);
    if (typeof result === "string") {
      setError(result);
      storeToken("");
    } else {
      storeToken(value.trim());
      onSession(result);
    }
  };
  useEffect(() => {
    const stored = storedToken();
    if (stored) void submit(stored);
  }, []);
  return (
    <main id="main">
      <h1>dcl console</h1>
      <form
        class="sign-in"
        aria-label="Sign in"
        onSubmit={(e) => {
          e.preventDefault();
          void submit(token);
        }}
      >
        <label>
          Token
          <input type="password" autocomplete="off" value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary" disabled={busy || token.trim() === ""}>
          Sign in
        </button>
        <p class="small">The token stays in this tab (session storage); no cookie is set.</p>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const hash = useHash();
  if (!session) return <SignIn onSession={setSession} />;
  const operator = session.role === "dc-operator";
  const commerce = session.role === "commerce";
  const fallback = operator ? "#/sites" : commerce ? "#/reservations" : "";
  const route = hash || fallback;
  const links: [string, string][] = operator
    ? [["#/sites", "Sites and racks"], ["#/moves", "Moves"], ["#/devices", "Devices"]]
    : commerce
      ? [["#/reservations", "Reservations"], ["#/devices", "Devices"]]
      : [];
  let view;
  const rack = /^#\/racks\/([0-9a-f-]{36})$/.exec(route);
  if (operator && rack) view = <RackView api={session.api} rackId={rack[1]} readOnly={false} />;
  else if (operator && route === "#/sites") view = <SitesView api={session.api} />;
  else if (operator && route === "#/moves") view = <MovesBoard api={session.api} />;
  else if ((operator || commerce) && route === "#/devices") view = <DevicesView api={session.api} />;
  else if (commerce && route === "#/reservations") view = <ReservationsView api={session.api} />;
  else if (!operator && !commerce)
    view = (
      <p role="alert" class="error">
        This token (role {session.roleName}) may not see sites, racks, moves or reservations.
      </p>
    );
  else view = <p>Nothing here. Choose a page above.</p>;
  return (
    <>
      <header class="top">
        <a class="skip" href="#main">
          Skip to content
        </a>
        <span class="brand">dcl console</span>
        <nav aria-label="Pages">
          {links.map(([href, text]) => (
            <a key={href} href={href} aria-current={route.startsWith(href) ? "page" : undefined}>
              {text}
            </a>
          ))}
        </nav>
        <span class="who">role: {session.roleName}</span>
        <button
          type="button"
          onClick={() => {
            storeToken("");
            setSession(null);
            window.location.hash = "";
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main">
        <h1 class="visually-hidden">dcl console</h1>
        {view}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
