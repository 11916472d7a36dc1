// The views as tabs: "All issues" (the project's list under the URL's sort and filter) and
// each saved view by position, with a menu to rename, move and delete it and a button to
// save the current sort and filter as a new view. A view that is building shows its progress.
import type { View } from "./queries";
import { MenuButton } from "./menu";

export function ViewTabs(props: {
  views: View[];
  current: string | null;
  /** The number of issues of the view on screen, when known. */
  count: number | null;
  /** A view's order and filter in words. */
  describe: (view: View) => string;
  open: (viewId: string | null) => void;
  create: () => void;
  rename: (view: View) => void;
  move: (view: View, by: number) => void;
  remove: (view: View) => void;
}) {
  const views = [...props.views].sort((a, b) => a.position - b.position);
  return (
    <nav className="tabs" aria-label="Views">
      <div role="tablist" aria-label="Views">
        <button type="button" role="tab" aria-selected={props.current === null} onClick={() => props.open(null)}>
          All issues
        </button>
        {views.map((view, i) => (
          <span className="tab" key={view.id}>
            <button
              type="button"
              role="tab"
              aria-selected={props.current === view.id}
              data-view={view.id}
              title={props.describe(view)}
              onClick={() => props.open(view.id)}
            >
              <span className="name">{view.name}</span>
              {props.current === view.id && props.count != null ? (
                <span className="tab-count"> {props.count.toLocaleString("en")}</span>
              ) : null}
              {view.status === "BUILDING" ? (
                <span className="progress">
                  {" "}
                  building {view.progress ? `${view.progress.scanned}/${view.progress.total}` : "…"}
                </span>
              ) : null}
            </button>
            <MenuButton
              tabbable
              label={`View menu: ${view.name}`}
              text="⋯"
              items={[
                { label: "Rename…", run: () => props.rename(view) },
                { label: "Move left", run: () => props.move(view, -1), disabled: i === 0 },
                { label: "Move right", run: () => props.move(view, 1), disabled: i === views.length - 1 },
                { label: "Delete view…", run: () => props.remove(view) },
              ]}
            />
          </span>
        ))}
      </div>
      <button type="button" className="new-view" onClick={props.create}>
        + Save as view
      </button>
    </nav>
  );
}
