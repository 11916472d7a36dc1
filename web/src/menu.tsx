// A menu button (the WAI-ARIA menu button pattern): a button that opens a list of actions,
// moved through with the arrow keys and closed with Escape or a click elsewhere.
import { useEffect, useRef, useState } from "react";

export interface MenuItem {
  label: string;
  run: () => void;
  disabled?: boolean;
  checked?: boolean;
}

export function MenuButton(props: { label: string; text: string; items: MenuItem[]; className?: string; tabbable?: boolean }) {
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const root = useRef<HTMLSpanElement>(null);
  const list = useRef<HTMLUListElement>(null);
  useEffect(() => {
    if (!open) return;
    list.current?.focus();
    const close = (e: MouseEvent) => {
      if (root.current && !root.current.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("mousedown", close);
    return () => document.removeEventListener("mousedown", close);
  }, [open]);
  const items = props.items.filter((i) => !i.disabled);
  const run = (item: MenuItem) => {
    setOpen(false);
    item.run();
  };
  return (
    <span className={`menu ${props.className ?? ""}`} ref={root}>
      <button
        type="button"
        aria-label={props.label}
        aria-haspopup="menu"
        aria-expanded={open}
        // In the grid the cell holds the tab stop (Shift+F10 opens its menu); elsewhere the
        // button is in the tab order itself.
        tabIndex={props.tabbable ? 0 : -1}
        onClick={(e) => {
          e.stopPropagation();
          setActive(0);
          setOpen((o) => !o);
        }}
        onKeyDown={(e) => e.stopPropagation()}
      >
        {props.text}
      </button>
      {open ? (
        <ul
          ref={list}
          role="menu"
          aria-label={props.label}
          tabIndex={-1}
          aria-activedescendant={`menuitem-${active}`}
          onKeyDown={(e) => {
            e.stopPropagation();
            if (e.key === "ArrowDown") setActive((a) => Math.min(items.length - 1, a + 1));
            else if (e.key === "ArrowUp") setActive((a) => Math.max(0, a - 1));
            else if (e.key === "Enter" || e.key === " ") {
              e.preventDefault();
              if (items[active]) run(items[active]);
            } else if (e.key === "Escape" || e.key === "Tab") {
              e.preventDefault();
              setOpen(false);
            }
          }}
        >
          {items.map((item, i) => (
            <li
              key={item.label}
              id={`menuitem-${i}`}
              role={item.checked === undefined ? "menuitem" : "menuitemradio"}
              aria-checked={item.checked}
              className={i === active ? "active" : undefined}
              onMouseEnter={() => setActive(i)}
              onClick={(e) => {
                e.stopPropagation();
                run(item);
              }}
            >
              {item.label}
            </li>
          ))}
        </ul>
      ) : null}
    </span>
  );
}
