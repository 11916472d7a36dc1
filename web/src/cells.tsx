// How a cell looks and how it is edited, per column type: text, integer and decimal inputs
// (the server validates and its message is shown), a date picker, a list of options with
// their colours for SELECT and State, and a checkbox that toggles in place.
import { useEffect, useRef, useState } from "react";
import type { Column } from "./columns";
import { cellLook, chipStyle, rawValue } from "./columns";
import type { Issue, SelectOption } from "./queries";

/** A chip: an option's label in its colour. */
export function Chip(props: { label: string; color: string | null }) {
  const { className, background } = chipStyle(props.color);
  return (
    <span className={className} style={background ? { background } : undefined}>
      {props.label}
    </span>
  );
}

export function CellView(props: { issue: Issue; column: Column }) {
  const look = cellLook(props.issue, props.column);
  switch (look.kind) {
    case "checkbox":
      return (
        <span className="checkbox" aria-label={look.checked ? "checked" : "not checked"}>
          {look.checked ? "☑" : "☐"}
        </span>
      );
    case "chip":
      return <Chip label={look.label} color={look.color} />;
    case "text":
      return <>{look.text}</>;
    case "empty":
      return null;
  }
}

export interface EditorProps {
  issue: Issue;
  column: Column;
  /** The text typed to start the edit, which replaces the value. */
  initial: string | null;
  commit: (value: string | null) => void;
  cancel: () => void;
}

/** Whether a column is edited in place (a checkbox toggles) rather than in an editor. */
export function togglesInPlace(column: Column): boolean {
  return column.type === "CHECKBOX";
}

export function isEditable(column: Column): boolean {
  return column.type !== "NUM";
}

export function Editor(props: EditorProps) {
  switch (props.column.type) {
    case "SELECT":
    case "STATE":
      return <OptionEditor {...props} />;
    default:
      return <InputEditor {...props} />;
  }
}

function InputEditor(props: EditorProps) {
  const { issue, column, initial, commit, cancel } = props;
  const [text, setText] = useState(initial ?? rawValue(issue, column) ?? "");
  const done = useRef(false);
  const finish = (value: string | null | undefined) => {
    if (done.current) return;
    done.current = true;
    if (value === undefined) cancel();
    else commit(value);
  };
  const kind = column.type === "DATE" ? "date" : "text";
  const inputMode = column.type === "INT" ? "numeric" : column.type === "NUMBER" ? "decimal" : undefined;
  return (
    <input
      className="cell-editor"
      aria-label={`Edit ${column.label}`}
      type={kind}
      inputMode={inputMode}
      autoFocus
      value={text}
      onFocus={(e) => {
        if (initial == null && kind === "text") e.currentTarget.select();
      }}
      onChange={(e) => setText(e.target.value)}
      onKeyDown={(e) => {
        e.stopPropagation();
        // Enter while an input method composes a character belongs to the input method.
        if (e.nativeEvent.isComposing) return;
        if (e.key === "Enter" || e.key === "Tab") {
          e.preventDefault();
          finish(text.trim() === "" && column.type !== "NAME" ? null : text);
        } else if (e.key === "Escape") {
          e.preventDefault();
          finish(undefined);
        }
      }}
      onBlur={() => {
        // The window losing focus (another window, a dialog of the browser) is not the user
        // leaving the cell: the edit stays open. Clicking elsewhere in the page commits it.
        if (!document.hasFocus()) return;
        finish(text.trim() === "" && column.type !== "NAME" ? null : text);
      }}
    />
  );
}

function OptionEditor(props: EditorProps) {
  const { issue, column, commit, cancel } = props;
  const options: (SelectOption | null)[] =
    column.type === "STATE"
      ? [
          { id: "OPEN", label: "Open", color: "green", position: 0 },
          { id: "CLOSED", label: "Closed", color: "gray", position: 1 },
        ]
      : [null, ...[...(column.field?.options ?? [])].sort((a, b) => a.position - b.position)];
  const current = rawValue(issue, column);
  const [active, setActive] = useState(Math.max(0, options.findIndex((o) => (o?.id ?? null) === current)));
  const list = useRef<HTMLUListElement>(null);
  const done = useRef(false);
  useEffect(() => list.current?.focus(), []);
  const finish = (value: string | null | undefined) => {
    if (done.current) return;
    done.current = true;
    if (value === undefined) cancel();
    else commit(value);
  };
  return (
    <ul
      ref={list}
      className="option-editor"
      role="listbox"
      aria-label={`Choose ${column.label}`}
      tabIndex={-1}
      aria-activedescendant={`option-${active}`}
      onKeyDown={(e) => {
        e.stopPropagation();
        if (e.key === "ArrowDown") {
          e.preventDefault();
          setActive((a) => Math.min(options.length - 1, a + 1));
        } else if (e.key === "ArrowUp") {
          e.preventDefault();
          setActive((a) => Math.max(0, a - 1));
        } else if (e.key === "Enter") {
          e.preventDefault();
          finish(options[active]?.id ?? null);
        } else if (e.key === "Escape" || e.key === "Tab") {
          e.preventDefault();
          finish(undefined);
        }
      }}
      onBlur={() => finish(undefined)}
    >
      {options.map((option, i) => (
        <li
          key={option?.id ?? "empty"}
          id={`option-${i}`}
          role="option"
          aria-selected={i === active}
          className={i === active ? "active" : undefined}
          onMouseDown={(e) => {
            e.preventDefault();
            finish(option?.id ?? null);
          }}
        >
          {option ? <Chip label={option.label} color={option.color} /> : <span className="muted">(empty)</span>}
        </li>
      ))}
    </ul>
  );
}
