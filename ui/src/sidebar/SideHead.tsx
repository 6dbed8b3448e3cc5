// The heading of a sidebar list with its "+ New" button.
export function SideHead({ title, newTestId, newTitle, onNew }: { title: string; newTestId: string; newTitle: string; onNew(): void }) {
  return (
    <div className="side-head">
      <h2>{title}</h2>
      <button type="button" data-testid={newTestId} onClick={onNew} title={newTitle}>
        + New
      </button>
    </div>
  );
}
