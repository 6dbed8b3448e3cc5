// The side panel with its tabs; replaced by the panels work.
import type { PanelContext } from "./types";

export function SidePanel(_props: Partial<PanelContext>) {
  return <aside />;
}
