// Package runevent names a run's events and writes their data as JSON. The
// kinds are the fields of wick.agent.v1.RunEventData's oneof, so a kind is
// defined once, in the protos; JSON clients (Server-Sent Events, JSON lines)
// and the run log get an event as {event, name, run_id, data, thread_id, id}
// with data the set field's message.
package runevent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// oneof is RunEventData's oneof: its fields are the event kinds.
var oneof = (&agentv1.RunEventData{}).ProtoReflect().Descriptor().Oneofs().ByName("kind")

// Kind is the event kind d holds: the name of its set field, or "" when
// none is set.
func Kind(d *agentv1.RunEventData) string {
	switch d.GetKind().(type) {
	case nil:
		return ""
	case *agentv1.RunEventData_OnChatModelStream:
		// The hot path: a run streams these by the thousand.
		return "on_chat_model_stream"
	}
	fd := d.ProtoReflect().WhichOneof(oneof)
	if fd == nil {
		return ""
	}
	return string(fd.Name())
}

// Kinds lists every event kind, in the order the proto declares them.
func Kinds() []string {
	fields := oneof.Fields()
	out := make([]string, fields.Len())
	for i := range fields.Len() {
		out[i] = string(fields.Get(i).Name())
	}
	return out
}

// ErrUnknownKind is returned for data of a kind this version does not know.
var ErrUnknownKind = errors.New("runevent: unknown event kind")

// New returns data of the named kind holding msg, which must be the
// message type of that kind's field.
func New(kind string, msg proto.Message) (*agentv1.RunEventData, error) {
	fd := oneof.Fields().ByName(protoreflect.Name(kind))
	if fd == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, kind)
	}
	if msg.ProtoReflect().Descriptor() != fd.Message() {
		return nil, fmt.Errorf("runevent: %s holds a %s, not a %s", kind, fd.Message().FullName(), msg.ProtoReflect().Descriptor().FullName())
	}
	d := &agentv1.RunEventData{}
	d.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(msg.ProtoReflect()))
	return d, nil
}

// Payload is the message of d's set field, or nil.
func Payload(d *agentv1.RunEventData) proto.Message {
	if d == nil {
		return nil
	}
	m := d.ProtoReflect()
	fd := m.WhichOneof(oneof)
	if fd == nil {
		return nil
	}
	return m.Get(fd).Message().Interface()
}

// AppendEvent appends ev as the JSON object JSON clients get: event, name,
// run_id, data (the payload's message), thread_id and id, empty ones left
// out (data too when it is {}), in that order.
func AppendEvent(b []byte, ev *agentv1.StreamEvent) ([]byte, error) {
	start := len(b)
	b = append(b, '{')
	var err error
	field := func(name, v string) {
		if v == "" || err != nil {
			return
		}
		if len(b) > start+1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b, err = appendString(b, v)
	}
	field("event", ev.GetEvent())
	field("name", ev.GetName())
	field("run_id", ev.GetRunId())
	if p := ev.GetPayload(); p.GetKind() != nil && err == nil {
		mark := len(b)
		if len(b) > start+1 {
			b = append(b, ',')
		}
		b = append(b, `"data":`...)
		b, err = AppendData(b, p)
		if err == nil && string(b[len(b)-2:]) == "{}" {
			// Data with nothing set is left out, as events without data
			// always were; the kind says what it would hold.
			b = b[:mark]
		}
	}
	field("thread_id", ev.GetThreadId())
	field("id", ev.GetId())
	if err != nil {
		return b[:start], err
	}
	return append(b, '}'), nil
}

// AppendData appends the JSON of d's payload: its fields by their proto
// names, sorted; a field marked REQUIRED is always written, any other only
// when set (an optional field that was set is written even when empty).
// Integers are JSON numbers. It fails on a string that is not UTF-8, as
// protobuf strings must be.
func AppendData(b []byte, d *agentv1.RunEventData) ([]byte, error) {
	if k, ok := d.GetKind().(*agentv1.RunEventData_OnChatModelStream); ok {
		b = append(b, `{"delta":`...)
		b, err := appendString(b, k.OnChatModelStream.GetDelta())
		return append(b, '}'), err
	}
	p := Payload(d)
	if p == nil {
		return append(b, "null"...), nil
	}
	return appendMessage(b, p.ProtoReflect())
}

// AppendMessage appends the JSON of one payload message (or a message it
// holds), written as AppendData writes a payload.
func AppendMessage(b []byte, m proto.Message) ([]byte, error) {
	return appendMessage(b, m.ProtoReflect())
}

// MarshalData is AppendData into a new slice.
func MarshalData(d *agentv1.RunEventData) ([]byte, error) { return AppendData(nil, d) }

// field is one field of a payload message as JSON writes it.
type field struct {
	fd       protoreflect.FieldDescriptor
	key      string // the quoted name and the colon
	required bool
}

var fieldsCache sync.Map // protoreflect.FullName → []field

// fieldsOf lists md's fields sorted by name, which is the order the
// google.protobuf.Struct data of earlier versions had.
func fieldsOf(md protoreflect.MessageDescriptor) []field {
	if f, ok := fieldsCache.Load(md.FullName()); ok {
		return f.([]field)
	}
	fds := md.Fields()
	out := make([]field, 0, fds.Len())
	for i := range fds.Len() {
		fd := fds.Get(i)
		req := slices.Contains(proto.GetExtension(fd.Options(), annotations.E_FieldBehavior).([]annotations.FieldBehavior), annotations.FieldBehavior_REQUIRED)
		out = append(out, field{fd: fd, key: strconv.Quote(string(fd.Name())) + ":", required: req})
	}
	slices.SortFunc(out, func(a, b field) int { return cmp.Compare(a.fd.Name(), b.fd.Name()) })
	fieldsCache.Store(md.FullName(), out)
	return out
}

var (
	structName       = (&structpb.Struct{}).ProtoReflect().Descriptor().FullName()
	runEventDataName = (&agentv1.RunEventData{}).ProtoReflect().Descriptor().FullName()
)

func appendMessage(b []byte, m protoreflect.Message) ([]byte, error) {
	switch m.Descriptor().FullName() {
	case structName:
		// Free-form JSON (a tool call's arguments): protojson's, compacted
		// (it adds random spaces), with its keys sorted.
		raw, err := protojson.Marshal(m.Interface())
		if err != nil {
			return b, err
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return b, err
		}
		return append(b, buf.Bytes()...), nil
	case runEventDataName:
		// A sub-agent's event carries its child's data as a run event does.
		return AppendData(b, m.Interface().(*agentv1.RunEventData))
	}
	b = append(b, '{')
	n := 0
	for _, f := range fieldsOf(m.Descriptor()) {
		if !f.required && !m.Has(f.fd) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, f.key...)
		var err error
		if f.fd.IsList() {
			l := m.Get(f.fd).List()
			b = append(b, '[')
			for i := range l.Len() {
				if i > 0 {
					b = append(b, ',')
				}
				if b, err = appendValue(b, f.fd, l.Get(i)); err != nil {
					return b, err
				}
			}
			b = append(b, ']')
			continue
		}
		if f.fd.IsMap() {
			return b, fmt.Errorf("runevent: %s: map fields are not written", f.fd.FullName())
		}
		if b, err = appendValue(b, f.fd, m.Get(f.fd)); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendValue(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return appendString(b, v.String())
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return b, fmt.Errorf("runevent: %s is %v, which JSON has no number for", fd.FullName(), f)
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(b, string(ev.Name()))
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendMessage(b, v.Message())
	}
	return b, fmt.Errorf("runevent: %s: %s fields are not written", fd.FullName(), fd.Kind())
}

// appendString quotes s as protojson does: `"`, `\` and control
// characters escaped, the rest as is; invalid UTF-8 is refused.
func appendString(b []byte, s string) ([]byte, error) {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return b, errors.New("runevent: a string is not valid UTF-8")
			}
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < ' ':
			b = append(b, `\u00`...)
			if c < 0x10 {
				b = append(b, '0')
			}
			b = strconv.AppendUint(b, uint64(c), 16)
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"'), nil
}

// UnmarshalData reads data of the named kind from its JSON, as AppendData
// writes it or as earlier versions logged it; fields it does not know are
// skipped. JSON null is no data.
func UnmarshalData(kind string, raw []byte) (*agentv1.RunEventData, error) {
	fd := oneof.Fields().ByName(protoreflect.Name(kind))
	if fd == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, kind)
	}
	d := &agentv1.RunEventData{}
	msg := d.ProtoReflect().NewField(fd).Message()
	if err := unmarshalMessage(raw, msg); err != nil {
		return nil, fmt.Errorf("runevent: %s data: %w", kind, err)
	}
	d.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(msg))
	return d, nil
}

var lenient = protojson.UnmarshalOptions{DiscardUnknown: true}

var childEventName = (&agentv1.ChildEvent{}).ProtoReflect().Descriptor().FullName()

func unmarshalMessage(raw []byte, m protoreflect.Message) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	// A child event's data is a bare payload, which protojson cannot read
	// into RunEventData: read it by its kind.
	evField := m.Descriptor().Fields().ByName("event")
	if evField == nil || evField.Message() == nil || evField.Message().FullName() != childEventName {
		return lenient.Unmarshal(raw, m.Interface())
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	childRaw := obj["event"]
	delete(obj, "event")
	rest, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := lenient.Unmarshal(rest, m.Interface()); err != nil {
		return err
	}
	if len(childRaw) == 0 || bytes.Equal(childRaw, []byte("null")) {
		return nil
	}
	var child struct {
		Event string          `json:"event"`
		Name  *string         `json:"name"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(childRaw, &child); err != nil {
		return err
	}
	ce := &agentv1.ChildEvent{Event: child.Event, Name: child.Name}
	if len(child.Data) > 0 && !bytes.Equal(child.Data, []byte("null")) {
		d, err := UnmarshalData(child.Event, child.Data)
		if err != nil && !errors.Is(err, ErrUnknownKind) {
			return err
		}
		ce.Data = d
	}
	m.Set(evField, protoreflect.ValueOfMessage(ce.ProtoReflect()))
	return nil
}

// UnmarshalEvent reads an event as AppendEvent writes it (an SSE frame's
// data, a JSON line's result, an entry of the run log).
func UnmarshalEvent(b []byte) (*agentv1.StreamEvent, error) {
	var raw struct {
		Event    string          `json:"event"`
		Name     string          `json:"name"`
		RunID    string          `json:"run_id"`
		Data     json.RawMessage `json:"data"`
		ThreadID string          `json:"thread_id"`
		ID       string          `json:"id"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	ev := &agentv1.StreamEvent{Event: raw.Event, Name: raw.Name, RunId: raw.RunID, ThreadId: raw.ThreadID, Id: raw.ID}
	if len(raw.Data) == 0 {
		// Data left out is data with nothing set.
		raw.Data = json.RawMessage("null")
	}
	d, err := UnmarshalData(raw.Event, raw.Data)
	if err != nil {
		return nil, err
	}
	ev.Payload = d
	return ev, nil
}

// FromJSON builds data of the named kind from plain JSON values (a map as
// encoding/json decodes an object), as UnmarshalData reads them.
func FromJSON(kind string, v any) (*agentv1.RunEventData, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return UnmarshalData(kind, raw)
}

// MustFromJSON is FromJSON for fixed data, in tests: it panics on an error.
func MustFromJSON(kind string, v any) *agentv1.RunEventData {
	d, err := FromJSON(kind, v)
	if err != nil {
		panic(err)
	}
	return d
}

// FillData sets ev's data (the JSON form of its payload that JSON clients
// get) from its payload, for a gRPC client that reads events as JSON.
func FillData(ev *agentv1.StreamEvent) error {
	if ev.GetPayload().GetKind() == nil {
		return nil
	}
	b, err := MarshalData(ev.GetPayload())
	if err != nil {
		return err
	}
	v := &structpb.Value{}
	if err := protojson.Unmarshal(b, v); err != nil {
		return err
	}
	ev.Data = v
	return nil
}
