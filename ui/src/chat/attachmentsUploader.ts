// The browser's Uploader: the SDK's upload, sent with XMLHttpRequest so
// that the page hears the bytes go out (fetch tells nothing of a request
// body's progress), and the SDK's listing of the upload directory.
import { Wick, WickError, type components } from "@wick-agent/sdk";
import { createContext } from "react";

import type { Uploader } from "./attachments";

type Agent = components["schemas"]["wick.agent.v1.Agent"];

/** What the composer needs to attach files: the open agent, and how to upload into its workspace. */
export interface AttachTarget {
  agent: Agent;
  uploader: Uploader;
}

/** AttachContext gives the composer its attach target; without one it offers no attachments. */
export const AttachContext = createContext<AttachTarget | undefined>(undefined);

/** browserUploader uploads into agentId's workspace through the gateway at baseUrl. */
export function browserUploader(client: Wick, baseUrl: string, token: string, agentId: string): Uploader {
  return {
    async upload(path, file, { signal, onProgress }) {
      const wick = new Wick({ baseUrl, ...(token ? { token } : {}), fetch: xhrFetch(onProgress) });
      const res = await wick.upload(agentId, path, file, { signal });
      return { path: res.path, bytes: res.bytes_written };
    },
    async list(dir) {
      try {
        const { data } = await client.api.GET("/agents/{agent_id}/files/list", {
          params: { path: { agent_id: agentId }, query: { path: dir } },
        });
        return (data?.entries ?? []).map((e) => e.name ?? "").filter((n) => n !== "");
      } catch (err) {
        if (err instanceof WickError && err.status === 404) return [];
        throw err;
      }
    },
  };
}

/** xhrFetch is a fetch for the SDK that reports the request body's progress. */
export function xhrFetch(onProgress: (sent: number) => void): (req: Request) => Promise<Response> {
  return async (req) => {
    const body = req.method === "GET" || req.method === "HEAD" ? null : await req.blob();
    return new Promise<Response>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(req.method, req.url);
      req.headers.forEach((v, k) => xhr.setRequestHeader(k, v));
      xhr.responseType = "blob";
      xhr.upload.onprogress = (e) => onProgress(e.loaded);
      xhr.onload = () => {
        const headers = new Headers();
        for (const line of xhr.getAllResponseHeaders().trim().split(/\r?\n/)) {
          const i = line.indexOf(":");
          if (i > 0) headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
        }
        const empty = xhr.status === 204 || xhr.status === 304;
        resolve(new Response(empty ? null : (xhr.response as Blob), { status: xhr.status, statusText: xhr.statusText, headers }));
      };
      xhr.onerror = () => reject(new TypeError("Failed to fetch: the upload's connection failed"));
      xhr.onabort = () => reject(new DOMException("The upload was cancelled", "AbortError"));
      if (req.signal.aborted) {
        reject(new DOMException("The upload was cancelled", "AbortError"));
        return;
      }
      req.signal.addEventListener("abort", () => xhr.abort(), { once: true });
      xhr.send(body);
    });
  };
}
