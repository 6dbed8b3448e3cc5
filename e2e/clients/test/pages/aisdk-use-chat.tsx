// A front end on the AI SDK's useChat hook with its default transport
// pointed at Wick's chat endpoint, a user's token in the headers.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type UIMessage } from "ai";
import { useState, type FormEvent } from "react";
import { createRoot } from "react-dom/client";

import { pageParams } from "./params.js";

const params = pageParams();
const transport = new DefaultChatTransport({
  api: `${params.wick}/ai-sdk/agents/${params.agent}/chat`,
  headers: { Authorization: `Bearer ${params.token}` },
});

function Part({ part }: { part: UIMessage["parts"][number] }) {
  switch (part.type) {
    case "text":
      return <span className="text">{part.text}</span>;
    case "dynamic-tool":
      return (
        <div className="tool" data-tool={part.toolName} data-state={part.state}>
          <b className="tool-name">{part.toolName}</b>
          <pre className="tool-input">{JSON.stringify(part.input)}</pre>
          {part.state === "output-available" ? <pre className="tool-output">{String(part.output)}</pre> : null}
        </div>
      );
    default:
      return null;
  }
}

function App() {
  const { messages, sendMessage, status, error } = useChat({ transport });
  const [draft, setDraft] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void sendMessage({ text: draft });
    setDraft("");
  };
  return (
    <main>
      <h1>useChat → {params.agent}</h1>
      <ul id="messages">
        {messages.map((m) => (
          <li key={m.id} className="message" data-role={m.role}>
            <b>{m.role}</b>:{" "}
            {m.parts.map((p, i) => (
              <Part key={i} part={p} />
            ))}
          </li>
        ))}
      </ul>
      <form onSubmit={submit}>
        <input id="message" value={draft} onChange={(e) => setDraft(e.target.value)} />
        <button id="send" type="submit">
          Send
        </button>
      </form>
      <p id="status">{status}</p>
      {error ? <p id="error">{error.message}</p> : null}
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<App />);
