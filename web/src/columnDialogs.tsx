// The dialogs that change the table's columns: a new column (name, type, and options for a
// SELECT), and a SELECT field's options (labels, colours, order; adding and removing).
import { useState } from "react";
import { Modal } from "./dialogs";
import type { CustomField, FieldType } from "./queries";

const TYPES: { type: FieldType; label: string }[] = [
  { type: "TEXT", label: "Text" },
  { type: "INT", label: "Integer" },
  { type: "NUMBER", label: "Decimal" },
  { type: "DATE", label: "Date" },
  { type: "CHECKBOX", label: "Checkbox" },
  { type: "SELECT", label: "Select" },
];

export const COLOURS = ["default", "gray", "brown", "orange", "yellow", "green", "blue", "purple", "pink", "red"];

export interface OptionDraft {
  id?: string;
  label: string;
  color: string | null;
}

export function NewColumnDialog(props: {
  close: () => void;
  create: (name: string, type: FieldType, options: OptionDraft[]) => Promise<string | null>;
}) {
  const [name, setName] = useState("");
  const [type, setType] = useState<FieldType>("TEXT");
  const [options, setOptions] = useState<OptionDraft[]>([{ label: "", color: "blue" }]);
  const [error, setError] = useState<string | null>(null);
  return (
    <Modal title="New column" onClose={props.close}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const failure = await props.create(name, type, type === "SELECT" ? options.filter((o) => o.label.trim() !== "") : []);
          if (failure) setError(failure);
          else props.close();
        }}
      >
        <label className="field">
          <span>Name</span>
          <input autoFocus value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label className="field">
          <span>Type</span>
          <select value={type} onChange={(e) => setType(e.target.value as FieldType)}>
            {TYPES.map((t) => (
              <option key={t.type} value={t.type}>
                {t.label}
              </option>
            ))}
          </select>
        </label>
        {type === "SELECT" ? <OptionsEditor options={options} change={setOptions} /> : null}
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <div className="buttons">
          <button type="button" onClick={props.close}>
            Cancel
          </button>
          <button type="submit" className="primary">
            Add column
          </button>
        </div>
      </form>
    </Modal>
  );
}

export function OptionsDialog(props: {
  field: CustomField;
  close: () => void;
  save: (options: OptionDraft[]) => Promise<string | null>;
}) {
  const [options, setOptions] = useState<OptionDraft[]>(() =>
    [...props.field.options].sort((a, b) => a.position - b.position).map((o) => ({ id: o.id, label: o.label, color: o.color })),
  );
  const [error, setError] = useState<string | null>(null);
  return (
    <Modal title={`Options of ${props.field.name}`} onClose={props.close}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const failure = await props.save(options.filter((o) => o.label.trim() !== ""));
          if (failure) setError(failure);
          else props.close();
        }}
      >
        <p className="muted">Removing an option clears the cells that hold it; moving one changes how the column sorts.</p>
        <OptionsEditor options={options} change={setOptions} />
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <div className="buttons">
          <button type="button" onClick={props.close}>
            Cancel
          </button>
          <button type="submit" className="primary">
            Save options
          </button>
        </div>
      </form>
    </Modal>
  );
}

function OptionsEditor(props: { options: OptionDraft[]; change: (options: OptionDraft[]) => void }) {
  const { options, change } = props;
  const set = (i: number, draft: OptionDraft) => change(options.map((o, j) => (j === i ? draft : o)));
  const move = (i: number, by: number) => {
    const j = i + by;
    if (j < 0 || j >= options.length) return;
    const next = [...options];
    [next[i], next[j]] = [next[j], next[i]];
    change(next);
  };
  return (
    <fieldset className="options">
      <legend>Options</legend>
      {options.map((option, i) => (
        <div className="option-row" key={option.id ?? `new-${i}`}>
          <input aria-label={`Option ${i + 1} label`} value={option.label} onChange={(e) => set(i, { ...option, label: e.target.value })} />
          <select
            aria-label={`Option ${i + 1} colour`}
            value={option.color ?? "default"}
            onChange={(e) => set(i, { ...option, color: e.target.value })}
          >
            {COLOURS.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
          <button type="button" aria-label={`Move option ${i + 1} up`} onClick={() => move(i, -1)}>
            ↑
          </button>
          <button type="button" aria-label={`Move option ${i + 1} down`} onClick={() => move(i, 1)}>
            ↓
          </button>
          <button type="button" aria-label={`Remove option ${i + 1}`} onClick={() => change(options.filter((_, j) => j !== i))}>
            ✕
          </button>
        </div>
      ))}
      <button type="button" onClick={() => change([...options, { label: "", color: "default" }])}>
        + Option
      </button>
    </fieldset>
  );
}
