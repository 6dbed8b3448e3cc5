// The side panel's width: dragged by its edge or set with the arrow keys on
// it (a focusable separator), kept in localStorage.
import { useCallback, useState, type KeyboardEvent, type PointerEvent } from "react";

export const PANEL_WIDTH_KEY = "wick.panelWidth";
export const MIN_PANEL_WIDTH = 320;
export const MAX_PANEL_WIDTH = 900;
const DEFAULT_PANEL_WIDTH = 480;
const STEP = 24;

function clamp(w: number): number {
  return Math.round(Math.min(MAX_PANEL_WIDTH, Math.max(MIN_PANEL_WIDTH, w)));
}

function loadWidth(): number {
  try {
    const w = Number(localStorage.getItem(PANEL_WIDTH_KEY));
    return w > 0 ? clamp(w) : DEFAULT_PANEL_WIDTH;
  } catch {
    return DEFAULT_PANEL_WIDTH;
  }
}

/** usePanelWidth is the panel's width and its setter, which remembers it. */
export function usePanelWidth(): [number, (w: number) => void] {
  const [width, setWidthState] = useState(loadWidth);
  const setWidth = useCallback((w: number) => {
    const c = clamp(w);
    setWidthState(c);
    try {
      localStorage.setItem(PANEL_WIDTH_KEY, String(c));
    } catch {
      // Not kept: the width lasts for this page.
    }
  }, []);
  return [width, setWidth];
}

/** ResizeHandle is the separator on the panel's left edge. */
export function ResizeHandle({ width, onResize }: { width: number; onResize(w: number): void }) {
  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    e.preventDefault();
    const el = e.currentTarget;
    el.setPointerCapture(e.pointerId);
    const startX = e.clientX;
    const startW = width;
    // The panel is on the right: dragging left widens it.
    const move = (ev: globalThis.PointerEvent) => onResize(startW + startX - ev.clientX);
    const up = () => {
      el.removeEventListener("pointermove", move);
      el.removeEventListener("pointerup", up);
      el.removeEventListener("pointercancel", up);
    };
    el.addEventListener("pointermove", move);
    el.addEventListener("pointerup", up);
    el.addEventListener("pointercancel", up);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const next =
      e.key === "ArrowLeft" ? width + STEP : e.key === "ArrowRight" ? width - STEP : e.key === "Home" ? MAX_PANEL_WIDTH : e.key === "End" ? MIN_PANEL_WIDTH : undefined;
    if (next === undefined) return;
    e.preventDefault();
    onResize(next);
  };
  return (
    <div
      role="separator"
      aria-orientation="vertical"
      aria-label="Resize the side panel"
      aria-valuemin={MIN_PANEL_WIDTH}
      aria-valuemax={MAX_PANEL_WIDTH}
      aria-valuenow={width}
      tabIndex={0}
      className="resize-handle"
      data-testid="panel-resize"
      onPointerDown={onPointerDown}
      onKeyDown={onKeyDown}
    />
  );
}
