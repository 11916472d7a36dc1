// The grid page's entry point: routes `/` to the project list and `/p/<projectId>` to its
// grid, following the address bar (links and history move without a reload).
import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { ApolloProvider } from "@apollo/client";
import { client } from "./api";
import { DialogHost } from "./dialogs";
import { GridPage, startGridPage } from "./GridPage";
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

function App() {
  const url = useUrl();
  const grid = parseLocation(url);
  return (
    <ApolloProvider client={client}>
      {grid ? <GridPage key={grid.projectId} location={grid} /> : <Home />}
      <SignIn />
      <DialogHost />
    </ApolloProvider>
  );
}

const root = document.getElementById("root");
const opening = parseLocation(new URL(window.location.href));
// The grid's first requests leave before React renders anything.
if (opening) startGridPage(opening);
if (root) createRoot(root).render(<App />);
