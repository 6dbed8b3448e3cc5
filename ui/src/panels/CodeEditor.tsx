// CodeMirror 6 in React: the Files panel's editor and the Canvas's
// read-only code view. Loaded lazily (React.lazy) with its language
// packages, so that none of it is in the initial bundle.
import { Compartment, EditorState, type Extension } from "@codemirror/state";
import { oneDarkHighlightStyle } from "@codemirror/theme-one-dark";
import { syntaxHighlighting } from "@codemirror/language";
import { basicSetup, EditorView } from "codemirror";
import { useEffect, useRef } from "react";

import { isDark, THEME_EVENT } from "../shell/theme";
import { languageOf, type Language } from "./kinds";

export interface CodeEditorProps {
  /** The file's path: its extension picks the language. */
  path: string;
  /** The text shown; a new value from outside (a reload) replaces the document. */
  value: string;
  readOnly?: boolean;
  /** Called with the whole text on every edit. */
  onChange?: (value: string) => void;
  /** Called on Mod-s, to save. */
  onSave?: () => void;
  "data-testid"?: string;
}

// Each language's package is its own chunk, fetched when a file of it opens.
async function loadLanguage(lang: Language | undefined): Promise<Extension> {
  switch (lang) {
    case "javascript":
    case "typescript":
    case "jsx":
    case "tsx": {
      const { javascript } = await import("@codemirror/lang-javascript");
      return javascript({ typescript: lang === "typescript" || lang === "tsx", jsx: lang === "jsx" || lang === "tsx" });
    }
    case "python":
      return (await import("@codemirror/lang-python")).python();
    case "markdown":
      return (await import("@codemirror/lang-markdown")).markdown();
    case "json":
      return (await import("@codemirror/lang-json")).json();
    case "html":
      return (await import("@codemirror/lang-html")).html();
    case "css":
      return (await import("@codemirror/lang-css")).css();
    default:
      return [];
  }
}

// The editor's colours are the theme's variables, so it follows light and
// dark with the rest of the page; in the dark the tokens use One Dark's
// colours (basicSetup's default highlighting is made for a light page).
const baseTheme = EditorView.theme({
  "&": { height: "100%", backgroundColor: "var(--code-bg)", color: "var(--fg)", fontSize: "13px" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.5" },
  ".cm-gutters": { backgroundColor: "var(--bg-soft)", color: "var(--fg-muted)", borderRight: "1px solid var(--border)" },
  ".cm-activeLine, .cm-activeLineGutter": { backgroundColor: "color-mix(in srgb, var(--accent) 8%, transparent)" },
  "&.cm-focused": { outline: "none" },
  ".cm-cursor": { borderLeftColor: "var(--fg)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": {
    backgroundColor: "color-mix(in srgb, var(--accent) 30%, transparent)",
  },
});

const darkQuery = "(prefers-color-scheme: dark)";

function highlighting(dark: boolean): Extension {
  return dark ? syntaxHighlighting(oneDarkHighlightStyle) : [];
}

export default function CodeEditor({ path, value, readOnly = false, onChange, onSave, ...rest }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const language = useRef(new Compartment());
  const colors = useRef(new Compartment());
  const editable = useRef(new Compartment());
  // The callbacks change on every render of the parent; the editor reads the latest.
  const handlers = useRef({ onChange, onSave });
  handlers.current = { onChange, onSave };

  useEffect(() => {
    if (!host.current) return;
    const media = window.matchMedia?.(darkQuery);
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          baseTheme,
          EditorView.lineWrapping,
          language.current.of([]),
          colors.current.of(highlighting(isDark())),
          // The editing surface is a textbox: it needs a name of its own.
          EditorView.contentAttributes.of({ "aria-label": `Contents of ${path}` }),
          editable.current.of(readOnlyExtension(readOnly)),
          EditorView.domEventHandlers({
            keydown: (e) => {
              if ((e.ctrlKey || e.metaKey) && e.key === "s") {
                e.preventDefault();
                handlers.current.onSave?.();
                return true;
              }
              return false;
            },
          }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) handlers.current.onChange?.(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    // The system's scheme, or the theme switch, changed.
    const onScheme = () => v.dispatch({ effects: colors.current.reconfigure(highlighting(isDark())) });
    media?.addEventListener?.("change", onScheme);
    window.addEventListener(THEME_EVENT, onScheme);
    return () => {
      media?.removeEventListener?.("change", onScheme);
      window.removeEventListener(THEME_EVENT, onScheme);
      v.destroy();
      view.current = null;
    };
    // The editor is made once; the effects below follow the props.
  }, []);

  useEffect(() => {
    let stale = false;
    loadLanguage(languageOf(path)).then(
      (ext) => {
        if (!stale) view.current?.dispatch({ effects: language.current.reconfigure(ext) });
      },
      // Without its language package the file is still shown, unhighlighted.
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [path]);

  useEffect(() => {
    view.current?.dispatch({ effects: editable.current.reconfigure(readOnlyExtension(readOnly)) });
  }, [readOnly]);

  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) {
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
    }
  }, [value]);

  return <div ref={host} className="wp-code" data-readonly={readOnly} {...rest} />;
}

function readOnlyExtension(readOnly: boolean): Extension {
  return readOnly ? [EditorState.readOnly.of(true), EditorView.editable.of(false)] : [];
}
