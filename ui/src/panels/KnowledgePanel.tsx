// The Knowledge panel: the user's collections and their organisations',
// a collection's documents (upload a text or Markdown file, paste text, add
// a file of the agent's workspace; delete), and a search showing ranked
// chunks with their scores and where they come from. Everything goes
// through the SDK's knowledge calls.
import type { Collection, KnowledgeDocument, SearchResult, Wick } from "@wick-agent/sdk";
import { useCallback, useEffect, useId, useState, type ChangeEvent, type FormEvent } from "react";

import { counted } from "../state/words";
import { contentTypeOf, DEFAULT_K, documentIdOf, formatScore, MAX_K, organisations, ownerLabel, parseK, parseMinScore } from "./knowledge";

export interface KnowledgePanelProps {
  client: Wick;
  /** The agent whose workspace a document added by path is read from. */
  agentId: string;
  onError: (err: unknown) => void;
}

export default function KnowledgePanel({ client, agentId, onError }: KnowledgePanelProps) {
  const [collections, setCollections] = useState<Collection[]>();
  const [selected, setSelected] = useState<string>();
  const [creating, setCreating] = useState(false);
  // The documents of the collection they were listed for: a list that
  // arrives for another (the selection moved meanwhile) is not shown.
  const [docs, setDocs] = useState<{ collection: string; list: KnowledgeDocument[] }>();
  // Bumped by every change, so that the documents are listed again.
  const [changes, setChanges] = useState(0);
  // What the panel is doing, said in words while it does it.
  const [busy, setBusy] = useState<string>();
  const documents = docs !== undefined && docs.collection === selected ? docs.list : undefined;

  const loadCollections = useCallback(async () => {
    try {
      const cs = await client.knowledge.listCollections();
      setCollections(cs);
      // Keep the selection while it exists; else the first collection.
      setSelected((s) => (s !== undefined && cs.some((c) => c.collection === s) ? s : cs[0]?.collection));
    } catch (err) {
      setCollections((cs) => cs ?? []);
      onError(err);
    }
  }, [client, onError]);

  useEffect(() => {
    void loadCollections();
  }, [loadCollections]);
  useEffect(() => {
    if (selected === undefined) return;
    let live = true;
    client.knowledge.listDocuments(selected).then(
      (list) => live && setDocs({ collection: selected, list }),
      (err: unknown) => {
        if (!live) return;
        setDocs({ collection: selected, list: [] });
        onError(err);
      },
    );
    return () => {
      live = false;
    };
  }, [client, selected, changes, onError]);

  /** act runs a change, says so meanwhile, and lists the collections (counts) and documents again after it. */
  const act = async (what: string, change: () => Promise<unknown>): Promise<boolean> => {
    setBusy(what);
    try {
      await change();
      return true;
    } catch (err) {
      onError(err);
      return false;
    } finally {
      setBusy(undefined);
      // The selection follows the list (a deleted collection's moves on)
      // before the documents are listed again.
      await loadCollections();
      setChanges((n) => n + 1);
    }
  };

  const current = collections?.find((c) => c.collection === selected);

  const create = async (c: { name: string; org: string; description: string }) => {
    let id: string | undefined;
    const ok = await act(`Creating ${c.name}…`, async () => {
      const made = await client.knowledge.createCollection({ name: c.name, ...(c.org ? { org: c.org } : {}), ...(c.description ? { description: c.description } : {}) });
      id = made.collection;
    });
    if (ok) {
      setCreating(false);
      setSelected(id);
    }
  };

  const deleteCollection = async () => {
    if (!current || !window.confirm(`Delete the collection ${current.collection} and all its documents?`)) return;
    await act(`Deleting ${current.collection}…`, () => client.knowledge.deleteCollection(current.collection));
  };

  return (
    <div className="wp-kb" data-testid="knowledge-panel">
      <div className="wp-toolbar">
        <strong className="wp-grow">Collections</strong>
        <button type="button" className="wp-button" data-testid="kb-new" aria-expanded={creating} onClick={() => setCreating(!creating)}>
          New collection
        </button>
      </div>
      {creating && <NewCollection orgs={organisations(collections ?? [])} disabled={busy !== undefined} onCreate={create} onCancel={() => setCreating(false)} />}
      {collections === undefined ? (
        <p className="wp-empty">Loading the collections…</p>
      ) : collections.length === 0 ? (
        <p className="wp-empty">No collections yet. Create one, add documents to it, and name it in an agent's collections.</p>
      ) : (
        <ul className="wp-kb-list" data-testid="kb-collections" aria-label="Collections">
          {collections.map((c) => (
            <li key={c.collection}>
              <button
                type="button"
                className="wp-kb-row"
                data-testid="kb-collection"
                data-collection={c.collection}
                aria-current={c.collection === selected || undefined}
                onClick={() => setSelected(c.collection)}
              >
                <span className="wp-grow wp-ellipsis">
                  <strong>{c.name}</strong>
                  {c.description && <span className="wp-muted"> · {c.description}</span>}
                </span>
                <span className="wp-badge" data-testid="kb-owner" title="who owns the collection">
                  {ownerLabel(c)}
                </span>
                <span className="wp-muted wp-size">
                  {counted(c.document_count, "doc", "docs")} · {counted(c.chunk_count, "chunk", "chunks")}
                </span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {busy && (
        <p className="wp-busy wp-muted" role="status">
          {busy}
        </p>
      )}
      {current && (
        <>
          <div className="wp-toolbar wp-kb-head">
            <span className="wp-grow wp-ellipsis">
              <strong className="wp-path">{current.collection}</strong>{" "}
              <span className="wp-muted">
                {current.embed_model || "default embedding model"}
                {current.dimensions > 0 ? `, ${current.dimensions} dims` : ""}
              </span>
            </span>
            <button type="button" className="wp-button" data-testid="kb-delete-collection" disabled={busy !== undefined} onClick={deleteCollection}>
              Delete
            </button>
          </div>
          <Documents
            key={current.collection}
            documents={documents}
            disabled={busy !== undefined}
            onDelete={(d) => act(`Deleting ${d}…`, () => client.knowledge.deleteDocument(current.collection, d))}
          />
          <AddDocuments
            key={`add-${current.collection}`}
            empty={documents === undefined ? undefined : documents.length === 0}
            agentId={agentId}
            disabled={busy !== undefined}
            onAdd={(what, doc) => act(`Adding ${what}…`, () => client.knowledge.addDocument(current.collection, doc))}
          />
          <Search key={`search-${current.collection}`} client={client} collection={current.collection} onError={onError} />
        </>
      )}
    </div>
  );
}

function NewCollection({
  orgs,
  disabled,
  onCreate,
  onCancel,
}: {
  orgs: string[];
  disabled: boolean;
  onCreate(c: { name: string; org: string; description: string }): Promise<void>;
  onCancel(): void;
}) {
  const id = useId();
  const [f, setF] = useState({ name: "", org: "", description: "" });
  const set = (k: keyof typeof f) => (e: ChangeEvent<HTMLInputElement>) => setF({ ...f, [k]: e.target.value });
  const nameOK = /^[A-Za-z0-9_-]{1,64}$/.test(f.name);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (nameOK) void onCreate({ name: f.name, org: f.org.trim(), description: f.description.trim() });
  };
  return (
    <form className="wp-kb-form" data-testid="kb-create-form" onSubmit={submit} onKeyDown={(e) => e.key === "Escape" && onCancel()}>
      <label>
        Name <span className="wp-muted">(letters, digits, - and _)</span>
        <input data-testid="kb-create-name" value={f.name} onChange={set("name")} required pattern="[A-Za-z0-9_\-]{1,64}" autoFocus />
      </label>
      <label>
        Organisation <span className="wp-muted">(empty: yours alone)</span>
        <input data-testid="kb-create-org" value={f.org} onChange={set("org")} list={`${id}-orgs`} />
        <datalist id={`${id}-orgs`}>
          {orgs.map((o) => (
            <option key={o} value={o} />
          ))}
        </datalist>
      </label>
      <label>
        Description
        <input data-testid="kb-create-description" value={f.description} onChange={set("description")} />
      </label>
      <div className="wp-kb-actions">
        <button type="submit" className="wp-button wp-primary" data-testid="kb-create-submit" disabled={disabled || !nameOK}>
          Create
        </button>
        <button type="button" className="wp-button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Documents({ documents, disabled, onDelete }: { documents: KnowledgeDocument[] | undefined; disabled: boolean; onDelete(document: string): void }) {
  return (
    <section className="wp-kb-section" aria-label="Documents">
      <h2>Documents</h2>
      {documents === undefined ? (
        <p className="wp-muted">Loading…</p>
      ) : documents.length === 0 ? (
        <p className="wp-muted">No documents yet: add some below.</p>
      ) : (
        <ul className="wp-kb-docs" data-testid="kb-documents">
          {documents.map((d) => (
            <li key={d.document} className="wp-kb-doc" data-testid="kb-document" data-document={d.document}>
              <span className="wp-grow">
                <span className="wp-ellipsis wp-kb-title">{d.title || d.document}</span>
                <span className="wp-muted wp-kb-meta wp-ellipsis">
                  <span className="wp-path">{d.document}</span> · {d.source === "text" ? "pasted or uploaded" : d.source}
                </span>
              </span>
              <span className="wp-muted wp-size" data-testid="kb-chunks">
                {counted(d.chunk_count, "chunk", "chunks")}
              </span>
              <button type="button" className="wp-button" aria-label={`Delete the document ${d.document}`} disabled={disabled} onClick={() => onDelete(d.document)}>
                Delete
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

type NewDoc = Parameters<Wick["knowledge"]["addDocument"]>[1];

interface AddProps {
  /** Whether the collection has no documents; undefined while they load. */
  empty: boolean | undefined;
  agentId: string;
  disabled: boolean;
  onAdd(what: string, doc: NewDoc): Promise<boolean>;
}

/** AddDocuments starts open for an empty collection and folded for one with documents, then stays as the user leaves it. */
function AddDocuments({ empty, agentId, disabled, onAdd }: AddProps) {
  const id = useId();
  const [open, setOpen] = useState<boolean>();
  useEffect(() => {
    if (empty !== undefined) setOpen((o) => o ?? empty);
  }, [empty]);
  const [title, setTitle] = useState("");
  const [text, setText] = useState("");
  const [path, setPath] = useState("");

  const upload = async (e: ChangeEvent<HTMLInputElement>) => {
    const input = e.currentTarget;
    const files = [...(input.files ?? [])];
    for (const f of files) {
      await onAdd(f.name, { document: documentIdOf(f.name), content: await f.text(), content_type: contentTypeOf(f.name) });
    }
    input.value = "";
  };
  const paste = async (e: FormEvent) => {
    e.preventDefault();
    if (text.trim() === "") return;
    const t = title.trim();
    if (await onAdd(t || "the text", { content: text, ...(t ? { title: t } : {}) })) {
      setTitle("");
      setText("");
    }
  };
  const fromWorkspace = async (e: FormEvent) => {
    e.preventDefault();
    const p = path.trim();
    if (p !== "" && (await onAdd(p, { path: p, agent_id: agentId }))) setPath("");
  };

  return (
    <details className="wp-kb-section wp-kb-add" data-testid="kb-add" open={open ?? false} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        <h2>Add documents</h2>
      </summary>
      <label className="wp-button wp-kb-upload">
        Upload text or Markdown files…
        <input
          type="file"
          multiple
          accept=".md,.markdown,.txt,text/plain,text/markdown"
          className="wp-visually-hidden"
          data-testid="kb-upload"
          disabled={disabled}
          onChange={(e) => void upload(e)}
        />
      </label>
      <form className="wp-kb-form" onSubmit={paste}>
        <label htmlFor={`${id}-title`}>Title of pasted text</label>
        <input id={`${id}-title`} data-testid="kb-paste-title" placeholder="empty: its first heading" value={title} onChange={(e) => setTitle(e.target.value)} />
        <label htmlFor={`${id}-text`}>Text or Markdown</label>
        <textarea id={`${id}-text`} data-testid="kb-paste-text" rows={4} value={text} onChange={(e) => setText(e.target.value)} />
        <div className="wp-kb-actions">
          <button type="submit" className="wp-button" data-testid="kb-paste-submit" disabled={disabled || text.trim() === ""}>
            Add text
          </button>
        </div>
      </form>
      <form className="wp-kb-form wp-kb-inline" onSubmit={fromWorkspace}>
        <label htmlFor={`${id}-path`}>
          A file of {agentId}'s workspace
        </label>
        <div className="wp-kb-actions">
          <input id={`${id}-path`} className="wp-grow wp-path" data-testid="kb-path" placeholder="/workspace/notes.md" value={path} onChange={(e) => setPath(e.target.value)} />
          <button type="submit" className="wp-button" data-testid="kb-path-submit" disabled={disabled || path.trim() === ""}>
            Add file
          </button>
        </div>
      </form>
    </details>
  );
}

function Search({ client, collection, onError }: { client: Wick; collection: string; onError: (err: unknown) => void }) {
  const id = useId();
  const [query, setQuery] = useState("");
  const [k, setK] = useState(String(DEFAULT_K));
  const [minScore, setMinScore] = useState("");
  const [result, setResult] = useState<SearchResult>();
  const [searching, setSearching] = useState(false);
  const kField = parseK(k);
  const scoreField = parseMinScore(minScore);
  const invalid = kField.error ?? scoreField.error;

  const search = async (e: FormEvent) => {
    e.preventDefault();
    if (query.trim() === "" || invalid) return;
    setSearching(true);
    try {
      const opts = { ...(kField.value !== undefined ? { k: kField.value } : {}), ...(scoreField.value !== undefined ? { min_score: scoreField.value } : {}) };
      setResult(await client.knowledge.search(collection, query, opts));
    } catch (err) {
      onError(err);
    } finally {
      setSearching(false);
    }
  };

  return (
    <section className="wp-kb-section" aria-label="Search">
      <h2>Search</h2>
      <form className="wp-kb-form" role="search" onSubmit={search}>
        <label htmlFor={`${id}-q`}>Query</label>
        <div className="wp-kb-actions">
          <input id={`${id}-q`} type="search" className="wp-grow" data-testid="kb-query" value={query} onChange={(e) => setQuery(e.target.value)} placeholder="What are you looking for?" />
          <button type="submit" className="wp-button wp-primary" data-testid="kb-search" disabled={searching || query.trim() === "" || invalid !== undefined}>
            Search
          </button>
        </div>
        <div className="wp-kb-actions">
          <label htmlFor={`${id}-k`}>k</label>
          <input id={`${id}-k`} className="wp-kb-num" data-testid="kb-k" inputMode="numeric" value={k} onChange={(e) => setK(e.target.value)} aria-invalid={kField.error !== undefined} title={`how many chunks, 1 to ${MAX_K}`} />
          <label htmlFor={`${id}-min`}>min score</label>
          <input
            id={`${id}-min`}
            className="wp-kb-num"
            data-testid="kb-min-score"
            inputMode="decimal"
            value={minScore}
            placeholder="default"
            onChange={(e) => setMinScore(e.target.value)}
            aria-invalid={scoreField.error !== undefined}
            title="the lowest score, 0 to 1; empty: the collection's default"
          />
        </div>
        {invalid && <p className="wp-error wp-kb-note">{invalid}</p>}
      </form>
      {result && <Hits result={result} />}
    </section>
  );
}

function Hits({ result }: { result: SearchResult }) {
  if (result.hits.length === 0) {
    return (
      <p className="wp-muted" data-testid="kb-no-hits" role="status">
        Nothing scores {formatScore(result.min_score)} or more.
      </p>
    );
  }
  return (
    <>
      <p className="wp-muted wp-kb-note" role="status">
        {counted(result.hits.length, "chunk", "chunks")}, best first (min score {formatScore(result.min_score)})
      </p>
      <ol className="wp-kb-hits" data-testid="kb-hits" aria-label="Search results">
        {result.hits.map((h) => (
          <li key={h.chunk_id} className="wp-kb-hit" data-testid="kb-hit" data-document={h.document}>
            <div className="wp-kb-hit-head">
              <span className="wp-badge" data-testid="kb-hit-score" title="cosine similarity of the query and the chunk">
                {formatScore(h.score)}
              </span>
              <strong className="wp-grow wp-ellipsis">{h.title || h.document}</strong>
            </div>
            <div className="wp-muted wp-kb-meta">
              <span className="wp-path">{h.document}</span>
              {h.heading && <> · {h.heading}</>}
            </div>
            <p className="wp-kb-text">{h.text}</p>
          </li>
        ))}
      </ol>
    </>
  );
}
