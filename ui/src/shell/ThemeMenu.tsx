// The theme switch in the top bar: System, Light or Dark.
import * as Menu from "@radix-ui/react-dropdown-menu";
import * as Tooltip from "@radix-ui/react-tooltip";
import { Monitor, Moon, Sun } from "lucide-react";

import { THEMES, type Theme } from "./theme";

const LABEL: Record<Theme, string> = { system: "System", light: "Light", dark: "Dark" };
const ICON: Record<Theme, typeof Sun> = { system: Monitor, light: Sun, dark: Moon };

export function ThemeMenu({ theme, onChange }: { theme: Theme; onChange(t: Theme): void }) {
  const Icon = ICON[theme];
  const label = `Theme: ${LABEL[theme]}`;
  return (
    <Menu.Root>
      <Tooltip.Root>
        <Tooltip.Trigger asChild>
          <Menu.Trigger asChild>
            <button type="button" className="icon" aria-label={label} data-testid="theme-menu" data-theme-choice={theme}>
              <Icon size={18} aria-hidden="true" />
            </button>
          </Menu.Trigger>
        </Tooltip.Trigger>
        <Tooltip.Portal>
          <Tooltip.Content className="tooltip" sideOffset={4}>
            {label}
          </Tooltip.Content>
        </Tooltip.Portal>
      </Tooltip.Root>
      <Menu.Portal>
        <Menu.Content className="menu" align="end" sideOffset={4}>
          <Menu.Label className="menu-label">Theme</Menu.Label>
          <Menu.RadioGroup value={theme} onValueChange={(v) => onChange(v as Theme)}>
            {THEMES.map((t) => {
              const I = ICON[t];
              return (
                <Menu.RadioItem key={t} value={t} className="menu-item" data-testid={`theme-${t}`}>
                  <I size={16} aria-hidden="true" />
                  <span className="grow">{LABEL[t]}</span>
                  <Menu.ItemIndicator>✓</Menu.ItemIndicator>
                </Menu.RadioItem>
              );
            })}
          </Menu.RadioGroup>
        </Menu.Content>
      </Menu.Portal>
    </Menu.Root>
  );
}
