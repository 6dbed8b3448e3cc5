// The inline input that renames a thread in its list row: Enter saves,
// Escape cancels; a refused title keeps the input open, saying why, so that
// nothing typed is lost.
import { useEffect, useId, useRef, useState } from "react";

import { errorText } from "../api/client";

/** The longest title the server takes (UpdateThread). */
export const MAX_THREAD_TITLE = 200;

interface Props {
  /** The title shown now, which the input starts from. */
  title: string;
  /** onSave stores the new title; it throws when the server refuses it. */
  onSave(title: string): Promise<void>;
  /** onDone closes the editor: saved, or cancelled. */
  onDone(): void;
}

export function ThreadTitleEditor({ title, onSave, onDone }: Props) {
  const [value, setValue] = useState(title);
  const [error, setError] = useState<string>();
  const [saving, setSaving] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const errorId = useId();

  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);

  const save = async () => {
    const t = value.trim();
    if (t === title) return onDone();
    if (t === "") return setError(`A title cannot be empty: type one, or press Escape to keep “${title}”.`);
    setSaving(true);
    setError(undefined);
    try {
      await onSave(t);
      onDone();
    } catch (err) {
      setError(errorText(err));
      setSaving(false);
      // The input was disabled while saving, which took its focus.
      queueMicrotask(() => input.current?.focus());
    }
  };

  return (
    <form
      className="thread-rename"
      data-testid="thread-rename-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (!saving) void save();
      }}
    >
      <input
        ref={input}
        data-testid="thread-rename-input"
        aria-label={`New title for the thread “${title}”`}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? errorId : undefined}
        maxLength={MAX_THREAD_TITLE}
        value={value}
        disabled={saving}
        onChange={(e) => {
          setValue(e.target.value);
          setError(undefined);
        }}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.preventDefault();
            onDone();
          }
        }}
        // Leaving an untouched input closes it; a changed one stays open
        // so that the text is not lost without Enter or Escape.
        onBlur={() => {
          if (!saving && value.trim() === title) onDone();
        }}
      />
      {error && (
        <p className="danger small thread-rename-error" id={errorId} role="alert" data-testid="thread-rename-error">
          {error}
        </p>
      )}
    </form>
  );
}
