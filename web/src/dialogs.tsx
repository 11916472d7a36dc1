// Modal dialogs on the native <dialog> element (focus kept inside, Escape closes, the rest
// of the page inert), and an imperative `ask()` for the confirmations, prompts and the
// conflict question, so that an event handler can await the user's answer.
import { useEffect, useRef, useState } from "react";
import type { ReactNode } from "react";

export function Modal(props: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className={props.wide ? "modal wide" : "modal"}
      aria-label={props.title}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
    >
      <h2>{props.title}</h2>
      {props.children}
    </dialog>
  );
}

export interface Button {
  label: string;
  value: string;
  primary?: boolean;
  danger?: boolean;
}

export interface Question {
  title: string;
  body?: ReactNode;
  input?: { label: string; initial: string };
  buttons: Button[];
}

export interface Answer {
  /** The value of the button pressed, or "cancel" for Escape. */
  button: string;
  text: string;
}

type Pending = Question & { resolve: (answer: Answer) => void };

let show: ((pending: Pending) => void) | null = null;

/** Shows `question` and resolves with the button pressed (and the text typed, if any). */
export function ask(question: Question): Promise<Answer> {
  return new Promise((resolve) => {
    if (show) show({ ...question, resolve });
    else resolve({ button: "cancel", text: "" });
  });
}

export async function confirmed(title: string, body: ReactNode, action: string, danger = false): Promise<boolean> {
  const answer = await ask({
    title,
    body,
    buttons: [
      { label: "Cancel", value: "cancel" },
      { label: action, value: "ok", primary: !danger, danger },
    ],
  });
  return answer.button === "ok";
}

export async function prompted(title: string, label: string, initial = "", action = "Save"): Promise<string | null> {
  const answer = await ask({
    title,
    input: { label, initial },
    buttons: [
      { label: "Cancel", value: "cancel" },
      { label: action, value: "ok", primary: true },
    ],
  });
  return answer.button === "ok" ? answer.text : null;
}

/** Renders the questions `ask` puts, one at a time. */
export function DialogHost() {
  const [queue, setQueue] = useState<Pending[]>([]);
  useEffect(() => {
    show = (pending) => setQueue((q) => [...q, pending]);
    return () => {
      show = null;
    };
  }, []);
  const current = queue[0];
  if (!current) return null;
  const finish = (button: string, text: string) => {
    setQueue((q) => q.slice(1));
    current.resolve({ button, text });
  };
  return <QuestionDialog key={queue.length} question={current} finish={finish} />;
}

function QuestionDialog(props: { question: Question; finish: (button: string, text: string) => void }) {
  const { question, finish } = props;
  const [text, setText] = useState(question.input?.initial ?? "");
  const primary = question.buttons.find((b) => b.primary)?.value ?? "ok";
  return (
    <Modal title={question.title} onClose={() => finish("cancel", text)}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          finish(primary, text);
        }}
      >
        {question.body ? <div className="dialog-body">{question.body}</div> : null}
        {question.input ? (
          <label className="field">
            <span>{question.input.label}</span>
            <input autoFocus value={text} onChange={(e) => setText(e.target.value)} />
          </label>
        ) : null}
        <div className="buttons">
          {question.buttons.map((b) => (
            <button
              key={b.value}
              type={b.value === primary ? "submit" : "button"}
              className={b.danger ? "danger" : b.primary ? "primary" : undefined}
              autoFocus={!question.input && b.value === primary}
              onClick={b.value === primary ? undefined : () => finish(b.value, text)}
            >
              {b.label}
            </button>
          ))}
        </div>
      </form>
    </Modal>
  );
}
