// The colour theme: the system's, or light or dark as the user chose. The
// choice is kept in localStorage and set as <html data-theme> (index.html
// sets it again before the first paint, so a reload does not flash).
import { useCallback, useEffect, useState } from "react";

export type Theme = "system" | "light" | "dark";
export const THEMES: readonly Theme[] = ["system", "light", "dark"];
/** The localStorage key; index.html's inline script reads the same one. */
export const THEME_KEY = "wick.theme";

export function loadTheme(): Theme {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return t === "light" || t === "dark" ? t : "system";
  } catch {
    return "system";
  }
}

/** The event applyTheme sends, for what draws its own colours (the code editor). */
export const THEME_EVENT = "wick-theme";

export function applyTheme(t: Theme): void {
  const root = document.documentElement;
  if (t === "system") root.removeAttribute("data-theme");
  else root.setAttribute("data-theme", t);
  window.dispatchEvent(new Event(THEME_EVENT));
}

/** isDark says whether the page is dark now: the choice, else the system's. */
export function isDark(): boolean {
  const t = document.documentElement.getAttribute("data-theme");
  if (t === "light" || t === "dark") return t === "dark";
  return window.matchMedia?.("(prefers-color-scheme: dark)").matches ?? false;
}

/** useTheme is the chosen theme and its setter, which applies and remembers it. */
export function useTheme(): [Theme, (t: Theme) => void] {
  const [theme, setThemeState] = useState<Theme>(loadTheme);
  useEffect(() => applyTheme(theme), [theme]);
  const setTheme = useCallback((t: Theme) => {
    try {
      if (t === "system") localStorage.removeItem(THEME_KEY);
      else localStorage.setItem(THEME_KEY, t);
    } catch {
      // Storage refused (private mode): the choice lasts for this page.
    }
    setThemeState(t);
  }, []);
  return [theme, setTheme];
}
