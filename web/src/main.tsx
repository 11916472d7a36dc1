// The grid page's entry point: routes `/` to the project list and `/p/<projectId>` to its
// grid, following the address bar (links and history move without a reload).
import { Component, useEffect, useState } from "react";
import type { ReactNode } from "react";
import { createRoot } from "react-dom/client";
import { ApolloProvider } from "@apollo/client";
import { client } from "./api";
import { DialogHost } from "./dialogs";
import { GridPage, startGridPage } from "./GridPage";
import { closeHandoff, handoff } from "./handoff";
import { Home } from "./Home";
import { SignIn } from "./SignIn";
import { parseLocation } from "./url";
import "./styles.css";

function useUrl(): URL {
  const [url, setUrl] = useState(() => new URL(window.location.href));
  useEffect(() => {
    const update = () => setUrl(new URL(window.location.href));
    window.addEventListener("popstate", update);
    return () => window.removeEventListener("popstate", update);
  }, []);
  return url;
}

/** Whatever goes wrong while rendering ends here, with a way back, never a blank page. */
class Boundary extends Component<{ children: ReactNode }, { error: string | null }> {
  state = { error: null as string | null };

  static getDerivedStateFromError(error: unknown) {
    return { error: error instanceof Error ? error.message : String(error) };
  }

  render() {
    if (this.state.error === null) return this.props.children;
    return (
      <div className="page-message" role="alert">
        <p className="error">The page failed: {this.state.error}</p>
        <p>
          <a href="/">Back to the projects</a>
        </p>
      </div>
    );
  }
}

function App() {
  const url = useUrl();
  const grid = parseLocation(url);
  return (
    <ApolloProvider client={client}>
      <Boundary key={grid?.projectId ?? "home"}>{grid ? <GridPage key={grid.projectId} location={grid} /> : <Home />}</Boundary>
      <SignIn />
      <DialogHost />
    </ApolloProvider>
  );
}

const root = document.getElementById("root");
const first = handoff();
first.started = true;
const opening = parseLocation(new URL(window.location.href));
// The grid's first requests leave before React renders anything (or were sent by the first
// paint, whose answers they take).
const ready = opening ? startGridPage(opening) : Promise.resolve();
const render = () => {
  if (root) createRoot(root).render(<App />);
};
// React's first render replaces what is in the root: over the first paint's rows it waits for
// its own, which are on their way from the first paint's answers, so the rows never blank;
// but never for long, since the first paint answers nothing.
const TAKEOVER_MS = 2000;
if (first.painted) void Promise.race([ready, new Promise((resolve) => setTimeout(resolve, TAKEOVER_MS))]).then(render);
else render();
void ready.then(closeHandoff);
