// The sign-in dialog of `--auth jwt`: it opens when the server answers 401, takes a bearer
// token (kept in sessionStorage for the tab's life) and reads everything on screen again.
import { useEffect, useState } from "react";
import { client, setToken, SIGN_IN_EVENT, takeSignInRequest, token } from "./api";
import { Modal } from "./dialogs";

export function SignIn() {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState("");
  useEffect(() => {
    const show = () => {
      takeSignInRequest();
      setOpen(true);
    };
    window.addEventListener(SIGN_IN_EVENT, show);
    // A 401 that came before this listener (the first requests leave before the first render).
    if (takeSignInRequest()) setOpen(true);
    return () => window.removeEventListener(SIGN_IN_EVENT, show);
  }, []);
  if (!open) return null;
  return (
    <Modal title="Sign in" onClose={() => setOpen(false)}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setToken(text.trim());
          setOpen(false);
          setText("");
          void client.resetStore().catch(() => undefined);
        }}
      >
        <p>
          This gateway needs a bearer token{token() ? " (the one given was refused)" : ""}. For development,{" "}
          <code>gridgate token --tenant &lt;id&gt;</code> mints one.
        </p>
        <label className="field">
          <span>Token</span>
          <textarea autoFocus rows={4} value={text} onChange={(e) => setText(e.target.value)} />
        </label>
        <div className="buttons">
          <button type="submit" className="primary" disabled={text.trim() === ""}>
            Sign in
          </button>
        </div>
      </form>
    </Modal>
  );
}
