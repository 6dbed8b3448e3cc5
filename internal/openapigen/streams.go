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
	// kinds are the kinds of an envelope whose data is free-form; an
	// envelope with a typed payload has its kinds read from the protos.
	kinds []eventKind
	// payload names the envelope's field that carries the data typed: a
	// message with one oneof, each of whose fields is a kind named after
	// it, its message the data's schema. JSON clients never see the field:
	// the gateway renders the set field's message as the envelope's data.
	payload protoreflect.Name
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
		payload: "payload",
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
			if err := addCatalog(doc, c, ev); err != nil {
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
// the frame and line schemas of its streams. md is the envelope.
func addCatalog(doc object, c *catalog, md protoreflect.MessageDescriptor) error {
	envelope := string(c.envelope)
	kinds := c.kinds
	if c.payload != "" {
		var err error
		if kinds, err = payloadKinds(doc, md, c.payload); err != nil {
			return fmt.Errorf("%s: %w", envelope, err)
		}
	}
	var oneOf []any
	mapping := object{}
	for _, k := range kinds {
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

// payloadKinds reads an envelope's kinds from its payload field (see
// catalog.payload) and makes the document say what JSON shows: the
// envelope's schema loses the payload field, and the payload message's
// schema becomes the union of the kinds' data, as a sub-agent's event
// carries its child's data.
func payloadKinds(doc object, md protoreflect.MessageDescriptor, payload protoreflect.Name) ([]eventKind, error) {
	fd := md.Fields().ByName(payload)
	if fd == nil || fd.Message() == nil {
		return nil, fmt.Errorf("no message field %s", payload)
	}
	pm := fd.Message()
	var oneof protoreflect.OneofDescriptor
	for i := range pm.Oneofs().Len() {
		if o := pm.Oneofs().Get(i); !o.IsSynthetic() {
			if oneof != nil {
				return nil, fmt.Errorf("%s has more than one oneof", pm.FullName())
			}
			oneof = o
		}
	}
	if oneof == nil || oneof.Fields().Len() != pm.Fields().Len() {
		return nil, fmt.Errorf("%s is not one oneof of the kinds", pm.FullName())
	}
	schemas, _ := child(doc, "components", "schemas")
	generated, ok := child(schemas, string(pm.FullName()))
	if !ok {
		return nil, fmt.Errorf("no schema %s", pm.FullName())
	}
	props, _ := child(generated, "properties")
	var kinds []eventKind
	var union []any
	seen := map[protoreflect.FullName]bool{}
	for i := range oneof.Fields().Len() {
		f := oneof.Fields().Get(i)
		if f.Message() == nil {
			return nil, fmt.Errorf("kind %s carries no message", f.Name())
		}
		prop, _ := child(props, string(f.Name()))
		desc, _ := prop["description"].(string)
		if desc == "" {
			return nil, fmt.Errorf("kind %s has no comment", f.Name())
		}
		data := schemaRef(string(f.Message().FullName()))
		kinds = append(kinds, eventKind{event: string(f.Name()), doc: oneLine(desc), data: data})
		if !seen[f.Message().FullName()] {
			seen[f.Message().FullName()] = true
			union = append(union, data)
		}
	}
	desc, _ := generated["description"].(string)
	schemas[string(pm.FullName())] = object{"description": desc, "anyOf": union}
	if env, ok := child(schemas, string(md.FullName()), "properties"); ok {
		delete(env, string(payload))
	}
	return kinds, nil
}

// oneLine joins a proto comment's lines into one paragraph.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// jsonHidden reports whether JSON clients never see a field: a payload
// field, whose message the gateway renders as the envelope's data instead.
func jsonHidden(cats map[protoreflect.FullName]*catalog, fd protoreflect.FieldDescriptor) bool {
	c, ok := cats[fd.ContainingMessage().FullName()]
	return ok && c.payload != "" && fd.Name() == c.payload
}

// jsonUnion reports whether JSON shows a message as the message of its set
// oneof field: a payload message.
func jsonUnion(cats map[protoreflect.FullName]*catalog, md protoreflect.MessageDescriptor) bool {
	for _, c := range cats {
		if c.payload == "" {
			continue
		}
		if f := md.ParentFile().Messages().ByName(c.envelope.Name()); f != nil && f.FullName() == c.envelope {
			if fd := f.Fields().ByName(c.payload); fd != nil && fd.Message() == md {
				return true
			}
		}
	}
	return false
}
