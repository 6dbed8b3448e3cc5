// A front end on LangGraph's useStream hook, pointed at Wick's /langgraph
// with a user's token as the API key.
import { useStream } from "@langchain/langgraph-sdk/react";
import { useState, type FormEvent } from "react";
import { createRoot } from "react-dom/client";

import { pageParams } from "./params.js";

const params = pageParams();

function content(c: unknown): string {
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p: { text?: string }) => p.text ?? "").join("");
  return JSON.stringify(c);
}

function App() {
  const stream = useStream({ apiUrl: `${params.wick}/langgraph`, apiKey: params.token, assistantId: params.agent });
  const [draft, setDraft] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void stream.submit({ messages: [{ type: "human", content: draft }] });
    setDraft("");
  };
  return (
    <main>
      <h1>useStream → {params.agent}</h1>
      <ul id="messages">
        {stream.messages.map((m, i) => (
          <li key={m.id ?? i} className="message" data-type={m.type}>
            <b>{m.type}</b>: <span className="content">{content(m.content)}</span>
          </li>
        ))}
      </ul>
      <form onSubmit={submit}>
        <input id="message" value={draft} onChange={(e) => setDraft(e.target.value)} />
        <button id="send" type="submit">
          Send
        </button>
      </form>
      <p id="status">{stream.isLoading ? "loading" : "idle"}</p>
      {stream.error ? <p id="error">{String(stream.error)}</p> : null}
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<App />);
