// The knowledge base's routes (/knowledge/collections…) as typed calls. The
// generated types leave every field optional (proto JSON omits zero values)
// and spell int64 counts as strings; these calls fill in the zero values and
// turn the counts into numbers, so that callers read one plain shape.
import type { Client } from "openapi-fetch";

import type { components, paths } from "./gen/wick.js";

type Schemas = components["schemas"];

/** A knowledge collection: documents split into chunks, each embedded by the collection's one model. */
export interface Collection {
  /** The collection's id: its name when the caller owns it, "org.name" when an organisation does. */
  collection: string;
  /** The name within its owner. */
  name: string;
  /** The organisation that owns it; "" when the caller does. */
  org: string;
  description: string;
  /** The embedding model every chunk is embedded by, e.g. "wick-hash-384". */
  embed_model: string;
  /** The size of its vectors; 0 until the first embedding. */
  dimensions: number;
  /** Target size of a chunk in bytes. */
  chunk_size: number;
  /** Bytes repeated between consecutive chunks of a section. */
  chunk_overlap: number;
  document_count: number;
  chunk_count: number;
  /** RFC 3339. */
  created_at: string;
}

/** What createCollection creates; only name is required. */
export interface NewCollection {
  /** Letters, digits, '-' and '_', at most 64 bytes. */
  name: string;
  /** An organisation of the caller's that owns the collection; none makes it the caller's. */
  org?: string;
  description?: string;
  /** A model of the LLM gateway or a spec ("wick-hash-384"); none uses the gateway's default. */
  embed_model?: string;
  /** Target size of a chunk in bytes; none uses the server's default (1000). */
  chunk_size?: number;
  /** Bytes repeated between chunks; none uses the server's default (150). */
  chunk_overlap?: number;
}

/** A document of a collection. */
export interface KnowledgeDocument {
  /** The document's id within its collection. */
  document: string;
  /** The collection's id. */
  collection: string;
  /** Given, else its first Markdown heading, else its path. */
  title: string;
  /** The workspace path it was read from, or "text". */
  source: string;
  /** "markdown" or "text". */
  content_type: string;
  /** SHA-256 of the text, hex. */
  content_hash: string;
  size_bytes: number;
  chunk_count: number;
  metadata: Record<string, string>;
  /** When it was last embedded, RFC 3339. */
  updated_at: string;
}

/** The fields of addDocument besides the text's origin. */
interface DocumentFields {
  /** The document's id; none derives it from path, title or the text's hash. An existing id is replaced. */
  document?: string;
  /** None uses the first Markdown heading, else the path. */
  title?: string;
  /** "markdown" or "text"; none means Markdown for content and for .md/.markdown paths. */
  content_type?: "markdown" | "text";
  /** Key/value pairs kept with the document, matched by search filters. */
  metadata?: Record<string, string>;
}

/** What addDocument adds: text given here, or a file of an agent's workspace. */
export type NewDocument =
  | (DocumentFields & { content: string; path?: never; agent_id?: never })
  | (DocumentFields & { path: string; agent_id: string; content?: never });

/** The answer of addDocument. */
export interface AddDocumentResult {
  document: KnowledgeDocument;
  /** The same text was stored already: nothing was embedded. */
  unchanged: boolean;
  /** Chunks embedded by this call; unchanged chunks keep their vectors. */
  embedded_chunks: number;
}

/** A chunk found by a search. */
export interface KnowledgeHit {
  /** "collection/document#index". */
  chunk_id: string;
  collection: string;
  document: string;
  /** The document's title. */
  title: string;
  /** The Markdown headings above the chunk ("Setup > Redis"); "" for plain text. */
  heading: string;
  /** The document's source: a workspace path or "text". */
  source: string;
  /** Cosine similarity between the query and the chunk, -1..1. */
  score: number;
  text: string;
  /** The document's metadata. */
  metadata: Record<string, string>;
}

/** Options of search. */
export interface SearchOptions {
  /** The most hits, 1..100; default 5. */
  k?: number;
  /** The lowest score of a hit, 0..1; default the collection's model's (0.7, or 0.3 for wick-hash models). */
  min_score?: number;
  /** Only chunks of documents whose metadata has every one of these pairs. */
  filter?: Record<string, string>;
  signal?: AbortSignal;
}

/** The answer of search. */
export interface SearchResult {
  /** Best first. */
  hits: KnowledgeHit[];
  /** The threshold that was applied. */
  min_score: number;
}

/** Options of every call. */
export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * Knowledge is the knowledge base of the client's user: their collections
 * and their organisations'. A collection of someone else's does not exist
 * for the caller (a NOT_FOUND WickError); bad input is INVALID_ARGUMENT
 * with the server's words.
 */
export class Knowledge {
  readonly #api: Client<paths>;

  constructor(api: Client<paths>) {
    this.#api = api;
  }

  /** createCollection creates a collection (POST /knowledge/collections). */
  async createCollection(c: NewCollection, options: CallOptions = {}): Promise<Collection> {
    const { data } = await this.#api.POST("/knowledge/collections", { body: c, ...signalOf(options) });
    return toCollection(data?.collection);
  }

  /** listCollections lists the caller's and their organisations' collections, sorted by id. */
  async listCollections(options: CallOptions = {}): Promise<Collection[]> {
    const { data } = await this.#api.GET("/knowledge/collections", signalOf(options));
    return (data?.collections ?? []).map(toCollection);
  }

  /** deleteCollection removes a collection with its documents and chunks. */
  async deleteCollection(collection: string, options: CallOptions = {}): Promise<void> {
    await this.#api.DELETE("/knowledge/collections/{collection}", { params: { path: { collection } }, ...signalOf(options) });
  }

  /**
   * addDocument chunks and embeds a document: content (text or Markdown),
   * or the file at path in agent_id's workspace. The same text added again
   * is not embedded again (unchanged).
   */
  async addDocument(collection: string, doc: NewDocument, options: CallOptions = {}): Promise<AddDocumentResult> {
    const { data } = await this.#api.POST("/knowledge/collections/{collection}/documents", {
      params: { path: { collection } },
      body: doc,
      ...signalOf(options),
    });
    return {
      document: toDocument(data?.document),
      unchanged: data?.unchanged ?? false,
      embedded_chunks: data?.embedded_chunks ?? 0,
    };
  }

  /** listDocuments lists a collection's documents, sorted by id. */
  async listDocuments(collection: string, options: CallOptions = {}): Promise<KnowledgeDocument[]> {
    const { data } = await this.#api.GET("/knowledge/collections/{collection}/documents", {
      params: { path: { collection } },
      ...signalOf(options),
    });
    return (data?.documents ?? []).map(toDocument);
  }

  /** deleteDocument removes a document and its chunks; it returns how many chunks went. */
  async deleteDocument(collection: string, document: string, options: CallOptions = {}): Promise<number> {
    const { data } = await this.#api.DELETE("/knowledge/collections/{collection}/documents/{document}", {
      params: { path: { collection, document } },
      ...signalOf(options),
    });
    return data?.deleted_chunks ?? 0;
  }

  /** search returns the collection's chunks nearest in meaning to query, best first. */
  async search(collection: string, query: string, options: SearchOptions = {}): Promise<SearchResult> {
    const { signal, ...rest } = options;
    const { data } = await this.#api.POST("/knowledge/collections/{collection}/search", {
      params: { path: { collection } },
      body: { query, ...rest },
      ...signalOf({ signal }),
    });
    return { hits: (data?.hits ?? []).map(toHit), min_score: data?.min_score ?? 0 };
  }
}

function signalOf(options: CallOptions): { signal?: AbortSignal } {
  return options.signal ? { signal: options.signal } : {};
}

function toCollection(c: Schemas["wick.agent.v1.Collection"] = {}): Collection {
  return {
    collection: c.collection ?? "",
    name: c.name ?? "",
    org: c.org ?? "",
    description: c.description ?? "",
    embed_model: c.embed_model ?? "",
    dimensions: c.dimensions ?? 0,
    chunk_size: c.chunk_size ?? 0,
    chunk_overlap: c.chunk_overlap ?? 0,
    // int64: proto JSON writes them as strings.
    document_count: Number(c.document_count ?? 0),
    chunk_count: Number(c.chunk_count ?? 0),
    created_at: c.created_at ?? "",
  };
}

function toDocument(d: Schemas["wick.agent.v1.KnowledgeDocument"] = {}): KnowledgeDocument {
  return {
    document: d.document ?? "",
    collection: d.collection ?? "",
    title: d.title ?? "",
    source: d.source ?? "",
    content_type: d.content_type ?? "",
    content_hash: d.content_hash ?? "",
    size_bytes: Number(d.size_bytes ?? 0),
    chunk_count: d.chunk_count ?? 0,
    metadata: d.metadata ?? {},
    updated_at: d.updated_at ?? "",
  };
}

function toHit(h: Schemas["wick.agent.v1.KnowledgeHit"]): KnowledgeHit {
  return {
    chunk_id: h.chunk_id ?? "",
    collection: h.collection ?? "",
    document: h.document ?? "",
    title: h.title ?? "",
    heading: h.heading ?? "",
    source: h.source ?? "",
    score: h.score ?? 0,
    text: h.text ?? "",
    metadata: h.metadata ?? {},
  };
}
