// A button that shows an icon only: its name is its aria-label, shown as a
// tooltip on hover and keyboard focus.
import * as Tooltip from "@radix-ui/react-tooltip";
import { forwardRef, type ButtonHTMLAttributes, type ReactNode } from "react";

interface Props extends ButtonHTMLAttributes<HTMLButtonElement> {
  label: string;
  children: ReactNode;
}

export const IconButton = forwardRef<HTMLButtonElement, Props>(function IconButton({ label, children, className, ...rest }, ref) {
  return (
    <Tooltip.Root>
      <Tooltip.Trigger asChild>
        <button ref={ref} type="button" aria-label={label} className={`icon${className ? ` ${className}` : ""}`} {...rest}>
          {children}
        </button>
      </Tooltip.Trigger>
      <Tooltip.Portal>
        <Tooltip.Content className="tooltip" sideOffset={4}>
          {label}
        </Tooltip.Content>
      </Tooltip.Portal>
    </Tooltip.Root>
  );
});
