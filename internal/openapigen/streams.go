package openapigen

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// eventKind is one value of an event message's `event` field: when the
// agent service sends it and what its `name` and `data` hold.
type eventKind struct {
	event string
	doc   string
	name  string // what the envelope's name holds; "" when it is not set
	data  object // the schema of data; nil when the event carries none
}

// catalog describes the events of one streamed message type. The kinds are
// those the agent service emits; services/agent's tests compare them with
// the event names in its code.
type catalog struct {
	envelope protoreflect.FullName // the streamed message, e.g. wick.agent.v1.StreamEvent
	union    string                // component of the tagged union of kinds
	doc      string
	idDoc    string // what an event's id is
	kinds    []eventKind
}

const (
	runEventSchema    = "RunEvent"
	configEventSchema = "ConfigEvent"
	errorSchema       = "Error"
)

// defaultHeartbeatSeconds is the gateway's default SSE heartbeat interval
// (gateway.DefaultHeartbeat; compared by services/gateway's tests).
const defaultHeartbeatSeconds = 15

var catalogs = map[protoreflect.FullName]*catalog{
	"wick.agent.v1.StreamEvent": {
		envelope: "wick.agent.v1.StreamEvent",
		union:    runEventSchema,
		doc: "One event of a run: a wick.agent.v1.StreamEvent whose `event` says its kind and the shape of its `data`. " +
			"A run's first event is on_run_start and its last is done or error. Kinds may be added in a minor version; " +
			"a client should skip kinds it does not know.",
		idDoc: "The event's position in the run's log. Send the last one you saw as Last-Event-ID (or after_event_id) to " +
			"GET /runs/{run_id}/events to continue after it, on any replica.",
		kinds: []eventKind{
			{event: "on_run_start", doc: "The run started; sent at once, so the stream's headers go out before the model answers.",
				name: "The agent's id.",
				data: obj("", object{
					"run_id":    str("The run."),
					"thread_id": str("The thread the run works on."),
					"agent_id":  str("The agent."),
				})},
			{event: "on_chat_model_stream", doc: "A piece of the model's answer text.",
				data: obj("", object{"delta": str("The text to append.")}, "delta")},
			{event: "on_thought_stream", doc: "A piece of the agent's reasoning, shown apart from its answer (agents backed by " +
				"an external ACP agent send its thought chunks as these). Not part of the answer; never sent back to the model.",
				data: obj("", object{"delta": str("The text to append to the current thought.")}, "delta")},
			{event: "on_tool_start", doc: "A tool call starts.",
				name: "The tool's name.",
				data: obj("", object{
					"args":         object{"type": "object", "description": "The call's arguments.", "additionalProperties": true},
					"tool_call_id": str("The call's id, repeated in its on_tool_end."),
				}, "tool_call_id")},
			{event: "on_tool_end", doc: "A tool call ended; every on_tool_start has one, also when the run is cancelled.",
				name: "The tool's name.",
				data: obj("", object{
					"output":       str("The tool's output, as the model sees it."),
					"error":        str("Why the tool failed; empty when it did not."),
					"tool_call_id": str("The call's id."),
				}, "tool_call_id")},
			{event: "on_todos", doc: "The agent's todo list changed.",
				name: "The tool that changed it (write_todos).",
				data: obj("", object{"todos": array("The whole list.", schemaRef("wick.agent.v1.Todo"))}, "todos")},
			{event: "on_interrupt", doc: "The run waits for the user: approval of tool calls (interactive agents), or, with " +
				"data.kind \"question\", an answer to the model's ask_user question; decide or answer with POST /runs/{run_id}/resume.",
				data: obj("", object{
					"tool_calls":   array("The calls awaiting a decision (for a question, the ask_user call).", schemaRef("wick.agent.v1.ToolCall")),
					"kind":         str("approval (the default when absent) or question."),
					"question":     str("The question, when kind is question."),
					"choices":      array("The answers offered, when kind is question and the model gave some; any text is accepted.", object{"type": "string"}),
					"tool_call_id": str("The ask_user call to answer (action \"answer\"), when kind is question."),
					"always": boolean("True on an approval: a decision may carry always, which the thread remembers for " +
						"later calls of the same kind (tool name, or an ACP agent's tool kind). Absent on a question."),
				}, "tool_calls")},
			{event: "on_knowledge_retrieval", doc: "The knowledge hook searched the agent's collections before a model call; " +
				"the sources were put into the prompt's <knowledge> section, numbered as cited.",
				name: "The hook (knowledge).",
				data: obj("", object{
					"query": str("What was searched for: the latest user message and a little context."),
					"sources": array("The chunks injected, best first.", obj("", object{
						"n":          integer("The source's number, as the prompt cites it ([n])."),
						"chunk_id":   str("The chunk: collection/document#index."),
						"collection": str("The collection's id."),
						"document":   str("The document's id."),
						"title":      str("The document's title."),
						"heading":    str("The Markdown headings above the chunk."),
						"source":     str("Where the document came from: a workspace path or text."),
						"score":      object{"type": "number", "description": "Cosine similarity of query and chunk."},
						"text":       str("The start of the chunk's text."),
					}, "n", "chunk_id", "score")),
					"error": str("Why the search failed, when it did; the run goes on without knowledge."),
				}, "query", "sources")},
			{event: "on_usage", doc: "Tokens a model call used.",
				data: obj("", object{
					"input_tokens":  integer("Prompt tokens."),
					"output_tokens": integer("Completion tokens."),
				})},
			{event: "on_subagent_start", doc: "A task call started a sub-agent: a child run on a thread of its own, " +
				"in the same sandbox. Its events follow as on_subagent_event, then on_subagent_end.",
				name: "The sub-agent's name.",
				data: subagentData(object{"description": str("The task the parent handed it.")})},
			{event: "on_subagent_event", doc: "One event of a sub-agent, wrapped so that a client never takes a child's " +
				"done or error for the run's own. Events of deeper sub-agents come as their own on_subagent_* events, " +
				"tagged with their parent_run_id.",
				name: "The sub-agent's name.",
				data: subagentData(object{"event": obj("The child's event: its kind, name and data, as a run's event has them.", object{
					"event": str("The child event's kind (on_chat_model_stream, on_tool_start, done …)."),
					"name":  str("The child event's name."),
					"data":  object{"description": "The child event's data, shaped as for that kind."},
				}, "event")}, "event")},
			{event: "on_subagent_end", doc: "A sub-agent ended; its final answer is the output of the parent's task call (on_tool_end).",
				name: "The sub-agent's name.",
				data: subagentData(object{
					"status": str("completed, failed, timeout, stopped (its parent is stopping) or cancelled (with its parent)."),
					"error":  str("Why it did not complete; the parent's task call fails with it."),
				}, "status")},
			{event: "on_task_start", doc: "A tool call started a background task (its result says so at once). " +
				"Task events reach the run that started the task while it lasts; read the task with GET /tasks/{task_id} after.",
				name: "The tool's name.", data: taskEventData()},
			{event: "on_task_update", doc: "A background task reported progress (data.result holds it).",
				name: "The tool's name.", data: taskEventData()},
			{event: "on_task_end", doc: "A background task finished: done, failed or cancelled.",
				name: "The tool's name.", data: taskEventData()},
			{event: "done", doc: "The run completed; the last event.",
				data: obj("", object{"stop_reason": str("Why it stopped: completed, or stopped (POST /runs/{run_id}/stop; " +
					"continue it with POST /runs/{run_id}/continue).")})},
			{event: "error", doc: "The run failed or was cancelled; the last event.",
				data: obj("", object{
					"message": str("What went wrong."),
					"code": str("What ended the run: cancelled, aborted, failed, lost (its replica stopped), max_turns, " +
						"error (the model or a hook failed), resource_exhausted (a per-user or per-thread limit) " +
						"or unavailable (a dependency did not answer; worth a retry later)."),
					"stop_reason": str("The loop's reason, when the loop ended the run: error, max_turns or cancelled."),
				}, "message", "code")},
		},
	},
	"wick.agent.v1.ConfigEvent": {
		envelope: "wick.agent.v1.ConfigEvent",
		union:    configEventSchema,
		doc: "One configuration change: a wick.agent.v1.ConfigEvent whose `event` says its kind and the shape of its `data`. " +
			"Kinds may be added in a minor version; a client should skip kinds it does not know.",
		idDoc: "The event's sequence number on this stream, from 1. The feed cannot be resumed: after a reconnect, " +
			"re-read what you show (GET /agents).",
		kinds: []eventKind{
			{event: "subscribed", doc: "The subscription is live; sent at once, so the stream's headers go out."},
			{event: "agent_created", doc: "An agent was created.",
				data: schemaRef("wick.agent.v1.Agent")},
			{event: "agent_updated", doc: "An agent's hooks were turned on or off.",
				name: "The hooks named in the request, separated by commas.",
				data: obj("", object{"hooks": array("The agent's hooks after the change.", schemaRef("wick.agent.v1.HookStatus"))}, "hooks")},
			{event: "agent_deleted", doc: "An agent was deleted."},
			{event: "tool_registered", doc: "An external tool was registered or replaced; header values are redacted.",
				name: "The tool's name.",
				data: schemaRef("wick.agent.v1.ToolDefinition")},
			{event: "tool_deleted", doc: "An external tool was deleted.", name: "The tool's name."},
			{event: "backend_switched", doc: "An agent's backend changed.",
				data: schemaRef("wick.agent.v1.BackendConfig")},
			{event: "container_changed", doc: "An agent's sandbox container was stopped or restarted.",
				name: "The action: stop or restart.",
				data: obj("", object{
					"action": str("stop or restart."),
					"status": str("The sandbox's state after the action."),
				}, "action", "status")},
		},
	},
}

// subagentData is the data of an on_subagent_* event: the tags that place
// the sub-agent in the tree of runs, and extra.
func subagentData(extra object, required ...string) object {
	props := object{
		"name":          str("The sub-agent's name (general-purpose or one the agent declares)."),
		"run_id":        str("The child run's id."),
		"thread_id":     str("The child's thread (GET /threads/{thread_id}); thread lists leave it out."),
		"parent_run_id": str("The run whose task call started the child: the streamed run, or a sub-agent of it."),
		"tool_call_id":  str("The parent's task call."),
		"depth":         integer("How deep the child runs: 1 for a child of the streamed run."),
	}
	for k, v := range extra {
		props[k] = v
	}
	return obj("", props, append([]string{"name", "run_id", "thread_id", "parent_run_id", "tool_call_id", "depth"}, required...)...)
}

// frameSchema and lineSchema name the components describing one SSE frame
// and one JSON line of a catalog's stream.
func frameSchema(c *catalog) string { return c.union + "Frame" }
func lineSchema(c *catalog) string  { return c.union + "Line" }

// describeStreams replaces the generator's single JSON response of every
// server-streaming RPC with what the gateway sends: Server-Sent Events, or
// JSON lines for a client that asks for application/json.
func describeStreams(doc object, bindings []*binding, cats map[protoreflect.FullName]*catalog) error {
	added := map[*catalog]bool{}
	for _, b := range bindings {
		md := b.method
		if md.IsStreamingClient() {
			return fmt.Errorf("%s: client streams have an HTTP rule, which the gateway does not serve", md.FullName())
		}
		if !md.IsStreamingServer() {
			continue
		}
		ev := md.Output()
		if b.responseBody != "" {
			fds, err := fieldPath(md.Output(), b.responseBody, byName)
			if err != nil {
				return fmt.Errorf("%s: response_body: %w", md.FullName(), err)
			}
			ev = fds[len(fds)-1].Message()
		}
		if ev == nil {
			return fmt.Errorf("%s: its response_body is no message", md.FullName())
		}
		c, ok := cats[ev.FullName()]
		if !ok {
			return fmt.Errorf("%s streams %s, which has no event catalog in openapigen: describe its kinds", md.FullName(), ev.FullName())
		}
		if !added[c] {
			if err := addCatalog(doc, c); err != nil {
				return err
			}
			added[c] = true
		}
		describeStream(b, c)
	}
	return nil
}

func describeStream(b *binding, c *catalog) {
	op := b.op
	desc, _ := op["description"].(string)
	note := fmt.Sprintf("The response is a stream of Server-Sent Events (text/event-stream), one %s per frame, "+
		"flushed as it happens, with a `: ping` comment after %d s of silence. A client that sends no Accept header, "+
		"or one that accepts text/event-stream, */* or text/*, gets SSE; one that asks for application/json gets one "+
		"JSON object per line instead ({\"result\": event}, and {\"error\": google.rpc.Status} when the stream fails). "+
		"A stream that fails before its first event answers with the error's HTTP status instead.",
		c.union, defaultHeartbeatSeconds)
	if b.verb == "post" {
		note += " Do not retry this POST with Last-Event-ID (it would start a second run; the gateway answers 400): " +
			"re-join with GET /runs/{run_id}/events."
	}
	op["description"] = strings.TrimSpace(desc + "\n\n" + note)
	ok := ensure(op, "responses", "200")
	ok["description"] = fmt.Sprintf("One %s per event: Server-Sent Events (%s) or JSON lines (%s).", c.union, frameSchema(c), lineSchema(c))
	ok["content"] = object{
		"text/event-stream": object{"schema": schemaRef(frameSchema(c))},
		"application/json":  object{"schema": schemaRef(lineSchema(c))},
	}
	in := b.method.Input()
	if b.verb == "get" && in.Fields().ByName("after_event_id") != nil {
		params, _ := op["parameters"].([]any)
		op["parameters"] = append(params, object{
			"name": "Last-Event-ID",
			"in":   "header",
			"description": "The id of the last event the client saw, as EventSource sends it when it reconnects: " +
				"the same as after_event_id, which wins when both are given.",
			"schema": object{"type": "string"},
		})
	}
}

// addCatalog adds the union of a catalog's kinds, one schema per kind, and
// the frame and line schemas of its streams.
func addCatalog(doc object, c *catalog) error {
	envelope := string(c.envelope)
	var oneOf []any
	mapping := object{}
	for _, k := range c.kinds {
		name := c.union + "." + k.event
		props := object{"event": object{"const": k.event}}
		if k.name != "" {
			props["name"] = str(k.name)
		}
		desc := k.doc
		if k.data != nil {
			props["data"] = k.data
		} else {
			desc += " It carries no data."
		}
		s := object{
			"description": desc,
			"allOf":       []any{schemaRef(envelope)},
			"type":        "object",
			"properties":  props,
			"required":    []any{"event"},
		}
		if err := addComponent(doc, "schemas", name, s); err != nil {
			return err
		}
		oneOf = append(oneOf, schemaRef(name))
		mapping[k.event] = "#/components/schemas/" + name
	}
	if err := addComponent(doc, "schemas", c.union, object{
		"description":   c.doc,
		"oneOf":         oneOf,
		"discriminator": object{"propertyName": "event", "mapping": mapping},
	}); err != nil {
		return err
	}
	if err := addComponent(doc, "schemas", frameSchema(c), obj(
		"One Server-Sent Event. The response body is a sequence of these frames, each a few `field: value` lines "+
			"ended by a blank line, and `: ping` comment lines that keep an idle stream open. A stream that fails after "+
			"its first event ends with a frame `event: error` that has no id and whose data is an Error.",
		object{
			"id": str(c.idDoc + " Absent on the error frame of a failed stream."),
			"event": str("The event's kind, as in the data's `event`; or error, for the frame of a failed stream " +
				"(told apart from a kind named error by its data)."),
			"data": object{
				"type":             "string",
				"description":      "The event as JSON on one line.",
				"contentMediaType": "application/json",
				"contentSchema":    object{"oneOf": []any{schemaRef(c.union), schemaRef(errorSchema)}},
			},
		}, "event", "data")); err != nil {
		return err
	}
	return addComponent(doc, "schemas", lineSchema(c), object{
		"description": "One line of the stream as JSON lines (Accept: application/json): the body is a sequence of " +
			"these objects, each on its own line; it is not one JSON document. The last line of a failed stream " +
			"holds its error; a google.rpc.RequestInfo detail then carries the trace id as request_id.",
		"type": "object",
		"oneOf": []any{
			obj("", object{"result": schemaRef(c.union)}, "result"),
			obj("", object{"error": schemaRef(statusSchema)}, "error"),
		},
	})
}

// taskEventData is the data of the three background task events.
func taskEventData() object {
	return obj("", object{
		"task_id":      str("The task (GET /tasks/{task_id})."),
		"tool":         str("The tool it runs."),
		"kind":         str("native (a Go tool of the server), http (an async callback tool) or subagent (a background task tool call)."),
		"status":       str("running, done, failed or cancelled."),
		"thread_id":    str("The thread the task's result joins."),
		"run_id":       str("The run that started it."),
		"tool_call_id": str("The model's call that started it."),
		"attempts":     integer("Starts so far: 1, then one per take-over by another replica."),
		"result":       str("The output, or why it failed or was cancelled, once finished; the progress, in on_task_update."),
		"subagent": obj("The child of a subagent task; its thread is read with GET /threads/{thread_id}.", object{
			"name":      str("The sub-agent type."),
			"thread_id": str("The child's thread."),
			"run_id":    str("The child's run id, as in its on_subagent_* events."),
			"depth":     integer("How deep the child runs (1)."),
		}, "name", "thread_id", "run_id", "depth"),
	}, "task_id", "tool", "status")
}
