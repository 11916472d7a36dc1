// The home page (`/`): the tenants the caller can see and their projects, each a link to its
// grid.
import { useQuery } from "@apollo/client";
import { errorMessage } from "./api";
import { TENANTS } from "./queries";
import { navigate } from "./url";

interface TenantsData {
  tenants: {
    edges: {
      node: {
        id: string;
        name: string;
        projects: { edges: { node: { id: string; name: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
      };
    }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

export function Home() {
  const { data, error, loading, fetchMore } = useQuery<TenantsData>(TENANTS);
  if (error) return <p className="error page-message" role="alert">{errorMessage(error)}</p>;
  if (loading || !data) return <p className="page-message">Loading…</p>;
  const tenants = data.tenants.edges.map((e) => e.node);
  return (
    <main className="home-page">
      <h1>gridgate</h1>
      <p className="muted">Pick a project to open its grid. The API is at <a href="/graphiql">/graphiql</a>.</p>
      {tenants.length === 0 ? <p>No tenants yet: run <code>gridgate seed</code> to load the demo data.</p> : null}
      {tenants.map((tenant) => (
        <section key={tenant.id} aria-label={tenant.name}>
          <h2>{tenant.name}</h2>
          {tenant.projects.edges.length === 0 ? <p className="muted">No projects.</p> : null}
          <ul className="projects">
            {tenant.projects.edges.map(({ node: project }) => (
              <li key={project.id}>
                <a
                  href={`/p/${encodeURIComponent(project.id)}`}
                  onClick={(e) => {
                    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
                    e.preventDefault();
                    navigate(`/p/${encodeURIComponent(project.id)}`);
                  }}
                >
                  {project.name}
                </a>
              </li>
            ))}
          </ul>
          {tenant.projects.pageInfo.hasNextPage ? <p className="muted">Only the first 25 projects are listed; the API lists the rest.</p> : null}
        </section>
      ))}
      {data.tenants.pageInfo.hasNextPage ? (
        <button type="button" onClick={() => void fetchMore({ variables: { after: data.tenants.pageInfo.endCursor } })}>
          More tenants
        </button>
      ) : null}
    </main>
  );
}
