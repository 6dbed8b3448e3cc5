import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { WickError, type Todo, type Wick } from "@wick-agent/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";

import { SidePanel } from "./SidePanel";
import type { PanelContext, WrittenFile } from "./types";

afterEach(cleanup);

/** How long a test waits for a lazily loaded view (its module's first import). */
const LAZY_MS = 10_000;

/** A fake of the SDK client: a workspace of files in memory. */
function fakeClient(files: Record<string, string>, backend: { type?: string; workdir?: string } | null = { type: "local" }) {
  const getAgent = vi.fn(async () => ({ data: { agent: { agent_id: "default", ...(backend ? { backend } : {}) } } }));
  const list = vi.fn(async (_route: string, init: { params: { query: { path: string } } }) => {
    const dir = init.params.query.path;
    const names = new Map<string, { name: string; type: string; size: string }>();
    for (const [path, content] of Object.entries(files)) {
      if (!path.startsWith(dir + "/")) continue;
      const [name, ...rest] = path.slice(dir.length + 1).split("/");
      if (name) names.set(name, { name, type: rest.length > 0 ? "dir" : "file", size: String(content.length) });
    }
    return { data: { entries: [...names.values()] } };
  });
  const downloadStream = vi.fn(async (_agent: string, path: string) => {
    const content = files[path];
    if (content === undefined) throw WickError.fromCode(5, `${path}: no such file`);
    return new Response(content).body as ReadableStream<Uint8Array>;
  });
  const upload = vi.fn(async (_agent: string, path: string, body: unknown) => {
    files[path] = typeof body === "string" ? body : "";
    return { path, bytes_written: 0 };
  });
  const GET = (route: string, init: { params: { query: { path: string } } }) =>
    route === "/agents/{agent_id}" ? getAgent() : list(route, init);
  const client = { api: { GET }, downloadStream, upload } as unknown as Wick;
  return { client, list, getAgent, downloadStream, upload };
}

function written(path: string, version = 1, runId = "run_1"): WrittenFile {
  return { path, runId, eventId: `${version}-0`, version };
}

function ctx(client: Wick, over: Partial<PanelContext> = {}): PanelContext {
  return { client, agentId: "default", threadId: "th_1", writtenFiles: [], todos: [], running: false, onError: vi.fn(), ...over };
}

const selectedTab = () => screen.getAllByRole("tab").find((t) => t.getAttribute("aria-selected") === "true")?.dataset.testid;

describe("SidePanel", () => {
  it("switches tabs and keeps a visited panel mounted", async () => {
    const { client, list } = fakeClient({ "/workspace/a.txt": "a" });
    render(<SidePanel {...ctx(client)} />);
    expect(selectedTab()).toBe("panel-tab-todos");
    // Nothing is fetched for a panel never shown.
    expect(list).not.toHaveBeenCalled();

    fireEvent.click(screen.getByTestId("panel-tab-files"));
    expect(selectedTab()).toBe("panel-tab-files");
    await screen.findByTestId("file-entry");
    expect(list).toHaveBeenCalledTimes(1);

    fireEvent.click(screen.getByTestId("panel-tab-todos"));
    expect(screen.getByTestId("files-tree").closest("section")?.hidden).toBe(true);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    // Still there, not listed again.
    expect(screen.getByTestId("file-entry").dataset.path).toBe("/workspace/a.txt");
    expect(list).toHaveBeenCalledTimes(1);
  });

  it("moves between tabs with the arrow keys", () => {
    const { client } = fakeClient({});
    render(<SidePanel {...ctx(client)} />);
    fireEvent.keyDown(screen.getByTestId("panel-tab-todos"), { key: "ArrowLeft" });
    expect(selectedTab()).toBe("panel-tab-terminal");
    fireEvent.keyDown(screen.getByTestId("panel-tab-terminal"), { key: "ArrowRight" });
    expect(selectedTab()).toBe("panel-tab-todos");
  });

  it("lists the todos with their status", () => {
    const { client } = fakeClient({});
    const todos: Todo[] = [
      { id: "1", title: "plan", status: "done" },
      { id: "2", title: "write", status: "in_progress" },
      { id: "3", title: "review", status: "pending" },
      { id: "4", title: "other", status: "something new" },
    ];
    render(<SidePanel {...ctx(client, { todos })} />);
    expect(screen.getAllByTestId("todo-item").map((e) => `${e.dataset.status}:${within(e).getByText(/plan|write|review|other/).textContent}`)).toEqual([
      "done:plan",
      "in_progress:write",
      "pending:review",
      "pending:other",
    ]);
    expect(screen.getByTestId("panel-tab-todos").textContent).toContain("1/4");
  });

  it("opens the canvas on a run's new file and shows it", async () => {
    const files = { "/workspace/data.csv": "name,n\nb,10\na,9\nc,100\n", "/workspace/r.md": "# Title\n\n| x |\n|---|\n| 1 |\n" };
    const { client } = fakeClient(files);
    const c = ctx(client);
    const { rerender } = render(<SidePanel {...c} />);
    expect(selectedTab()).toBe("panel-tab-todos");

    rerender(<SidePanel {...c} writtenFiles={[written("/workspace/data.csv")]} />);
    expect(selectedTab()).toBe("panel-tab-canvas");
    const table = await screen.findByTestId("canvas-table");
    const firstColumn = () => within(table).getAllByRole("row").slice(1).map((r) => r.firstElementChild?.textContent);
    expect(firstColumn()).toEqual(["b", "a", "c"]);
    fireEvent.click(within(table).getByText("n"));
    expect(firstColumn()).toEqual(["a", "b", "c"]);
    fireEvent.click(within(table).getByText("n"));
    expect(firstColumn()).toEqual(["c", "b", "a"]);

    // The user goes elsewhere; the next new file brings the canvas back, showing that file.
    fireEvent.click(screen.getByTestId("panel-tab-todos"));
    rerender(<SidePanel {...c} writtenFiles={[written("/workspace/r.md"), written("/workspace/data.csv")]} />);
    expect(selectedTab()).toBe("panel-tab-canvas");
    // The Markdown view is a lazy chunk: its first import can take longer than findBy's default second on a busy machine.
    const md = await screen.findByTestId("canvas-markdown", {}, { timeout: LAZY_MS });
    expect(within(md).getByRole("heading").textContent).toBe("Title");
    expect(screen.getAllByTestId("canvas-item").map((e) => e.dataset.path)).toEqual(["/workspace/r.md", "/workspace/data.csv"]);

    // A file picked by hand stays picked across renders without news.
    fireEvent.click(screen.getAllByTestId("canvas-item")[1]!);
    await screen.findByTestId("canvas-table");
    rerender(<SidePanel {...c} writtenFiles={[written("/workspace/r.md"), written("/workspace/data.csv")]} />);
    expect(screen.getByTestId("canvas-table")).toBeTruthy();
  }, LAZY_MS * 2);

  it("reloads a file the run writes again", async () => {
    const files: Record<string, string> = { "/workspace/data.csv": "h\nold\n" };
    const { client, downloadStream } = fakeClient(files);
    const c = ctx(client);
    const { rerender } = render(<SidePanel {...c} />);
    rerender(<SidePanel {...c} writtenFiles={[written("/workspace/data.csv", 1)]} />);
    await screen.findByText("old");
    files["/workspace/data.csv"] = "h\nnew\n";
    fireEvent.click(screen.getByTestId("panel-tab-todos"));
    rerender(<SidePanel {...c} writtenFiles={[written("/workspace/data.csv", 2)]} />);
    await screen.findByText("new");
    expect(selectedTab()).toBe("panel-tab-canvas");
    expect(downloadStream).toHaveBeenCalledTimes(2);
  });

  it("does not open the canvas for another thread's files or a thread's history", () => {
    const { client } = fakeClient({});
    const c = ctx(client);
    const { rerender } = render(<SidePanel {...c} />);
    // Another thread opened, with the files its earlier runs wrote.
    rerender(<SidePanel {...c} threadId="th_2" writtenFiles={[written("/workspace/a.md"), written("/workspace/b.md")]} />);
    expect(selectedTab()).toBe("panel-tab-todos");
    // History that arrives after the thread's id: no run id.
    rerender(<SidePanel {...c} threadId="th_3" />);
    rerender(<SidePanel {...c} threadId="th_3" writtenFiles={[written("/workspace/old.md", 1, "")]} />);
    expect(selectedTab()).toBe("panel-tab-todos");
  });

  it("keeps the first run of a new thread opening the canvas when the thread gets its id", () => {
    const { client } = fakeClient({ "/workspace/n.md": "x" });
    const c = ctx(client, { threadId: undefined });
    const { rerender } = render(<SidePanel {...c} />);
    // The id and the write in one render, as after a batch of events.
    rerender(<SidePanel {...c} threadId="th_new" running writtenFiles={[written("/workspace/n.md")]} />);
    expect(selectedTab()).toBe("panel-tab-canvas");
  });

  it("does not render a file over the limit", async () => {
    const { client } = fakeClient({ "/workspace/big.txt": "x".repeat((1 << 20) + 1) });
    const c = ctx(client);
    const { rerender } = render(<SidePanel {...c} />);
    rerender(<SidePanel {...c} writtenFiles={[written("/workspace/big.txt")]} />);
    await screen.findByText(/too large to show here/);
    expect(screen.queryByTestId("canvas-code")).toBeNull();
  });

  it("says so without an agent", () => {
    render(<SidePanel />);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    expect(screen.getByText(/Choose an agent/)).toBeTruthy();
  });
});

describe("FilesPanel", () => {
  it("expands directories lazily and uploads into the one clicked", async () => {
    const { client, list, upload } = fakeClient({ "/workspace/out/r.md": "r", "/workspace/a.txt": "a" });
    const c = ctx(client);
    render(<SidePanel {...c} />);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    const dir = await screen.findByText("out");
    expect(list).toHaveBeenCalledTimes(1);
    fireEvent.click(dir);
    await screen.findByText("r.md");
    expect(list).toHaveBeenLastCalledWith("/agents/{agent_id}/files/list", { params: { path: { agent_id: "default" }, query: { path: "/workspace/out" } } });

    const file = new File(["hello"], "up.txt");
    fireEvent.change(screen.getByTestId("file-upload"), { target: { files: [file] } });
    await waitFor(() => expect(upload).toHaveBeenCalledWith("default", "/workspace/out/up.txt", file));
  });

  it("shows the gateway's upload limit from its 413", async () => {
    const { client, upload } = fakeClient({ "/workspace/a.txt": "a" });
    upload.mockRejectedValueOnce(new WickError(413, { code: 8, status: "RESOURCE_EXHAUSTED", message: "upload is larger than the limit of 2097152 bytes" }));
    const c = ctx(client);
    render(<SidePanel {...c} />);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    expect(screen.getByTestId("file-upload-limit").textContent).toContain("100 MiB");
    fireEvent.change(screen.getByTestId("file-upload"), { target: { files: [new File(["x"], "big.bin")] } });
    await waitFor(() => expect(screen.getByTestId("file-upload-limit").textContent).toContain("2 MiB"));
    expect(c.onError).toHaveBeenCalledWith(expect.any(WickError));
  });

  it("offers a binary file for download only", async () => {
    const { client } = fakeClient({ "/workspace/x.bin": "\u0000\u0001" });
    render(<SidePanel {...ctx(client)} />);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    fireEvent.click(await screen.findByText("x.bin"));
    await screen.findByText(/A binary file/);
    expect(screen.getByTestId("file-download")).toBeTruthy();
    expect(screen.queryByTestId("file-save")).toBeNull();
  });

  it("lists a Docker backend's workdir", async () => {
    const { client, list } = fakeClient({ "/app/main.go": "package main" }, { type: "docker", workdir: "/app" });
    render(<SidePanel {...ctx(client)} />);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    expect((await screen.findByTestId("file-entry")).dataset.path).toBe("/app/main.go");
    expect(list.mock.calls[0]?.[1]).toEqual({ params: { path: { agent_id: "default" }, query: { path: "/app" } } });
    expect(screen.getByTestId("file-upload-limit").textContent).toContain("to /app");
  });

  it("says that an agent without a backend has no files, without listing", async () => {
    const { client, list } = fakeClient({}, null);
    const c = ctx(client);
    render(<SidePanel {...c} />);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    await screen.findByText(/has no sandbox backend/);
    expect(list).not.toHaveBeenCalled();
    expect(c.onError).not.toHaveBeenCalled();
  });

  it("reports a listing that fails", async () => {
    const { client, list } = fakeClient({});
    list.mockRejectedValueOnce(WickError.fromCode(9, "the agent has no sandbox backend"));
    const c = ctx(client);
    render(<SidePanel {...c} />);
    fireEvent.click(screen.getByTestId("panel-tab-files"));
    await screen.findByText(/cannot be listed: the agent has no sandbox backend/);
    expect(c.onError).toHaveBeenCalledTimes(1);
  });
});
