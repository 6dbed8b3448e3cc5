package openapigen_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wick-agent/wick/gen/openapi"
	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"
)

// TestRunEventsAgainstSchema builds one event of every kind (every field of
// RunEventData's oneof, found by reflection, each field of its data set),
// writes it as the gateway does (runevent.AppendEvent: an SSE frame's data,
// a JSON line's result) and has the validator check it against the
// document's RunEventLine, and checks that the event's data has exactly
// the properties its kind's schema declares and requires (the validator
// lets undeclared ones, and sometimes missing ones, through the union's
// oneOf). Each field of the data renamed must be refused, and
// each removed must be refused exactly when the schema requires it, so
// that the document and the JSON cannot drift.
func TestRunEventsAgainstSchema(t *testing.T) {
	t.Parallel()
	var document struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &document); err != nil {
		t.Fatal(err)
	}
	schemas := document.Components.Schemas
	var check func(t *testing.T, v validator.Validator, line []byte) (bool, string)
	// newValid returns a check of one line, with a validator of its own:
	// one validator is not safe for parallel use.
	newValid := func(t *testing.T) func(*testing.T, []byte) (bool, string) {
		t.Helper()
		d, err := libopenapi.NewDocument(openapi.Document)
		if err != nil {
			t.Fatal(err)
		}
		// A tool call's arguments are free-form JSON.
		v, errs := validator.NewValidator(d, config.WithStrictMode(), config.WithStrictIgnorePaths("$.body.**.args"))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return func(t *testing.T, line []byte) (bool, string) { return check(t, v, line) }
	}
	check = func(t *testing.T, v validator.Validator, line []byte) (bool, string) {
		t.Helper()
		req := httptest.NewRequest("GET", "http://wick.test/runs/run_1/events", nil)
		resp := &http.Response{
			StatusCode: 200,
			Header:     http.Header{"Content-Type": {"application/json"}},
			Body:       io.NopCloser(strings.NewReader(`{"result":` + string(line) + `}`)),
			Request:    req,
		}
		ok, verrs := v.ValidateHttpResponse(req, resp)
		var msgs []string
		var ev struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		kind, known := schemas["RunEvent."+ev.Event].(map[string]any)
		if !known {
			t.Fatalf("the document has no schema RunEvent.%s: run make gen", ev.Event)
		}
		props, _ := kind["properties"].(map[string]any)
		if err := declared(schemas, props["data"], ev.Data); err != nil {
			ok = false
			msgs = append(msgs, err.Error())
		}
		for _, e := range verrs {
			msgs = append(msgs, e.Message+": "+e.Reason)
			for _, se := range e.SchemaValidationErrors {
				msgs = append(msgs, "  "+se.Reason)
			}
		}
		return ok, strings.Join(msgs, "\n")
	}
	kinds := (&agentv1.RunEventData{}).ProtoReflect().Descriptor().Oneofs().ByName("kind").Fields()
	if kinds.Len() != len(runevent.Kinds()) {
		t.Fatalf("%d kinds, runevent knows %d", kinds.Len(), len(runevent.Kinds()))
	}
	for i := range kinds.Len() {
		fd := kinds.Get(i)
		t.Run(string(fd.Name()), func(t *testing.T) {
			t.Parallel()
			valid := newValid(t)
			data := &agentv1.RunEventData{}
			msg := data.ProtoReflect().NewField(fd).Message()
			fill(msg)
			data.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(msg))
			ev := &agentv1.StreamEvent{Event: runevent.Kind(data), Name: "n", RunId: "run_1", ThreadId: "th_1", Id: "1-0", Payload: data}
			line, err := runevent.AppendEvent(nil, ev)
			if err != nil {
				t.Fatal(err)
			}
			if ok, why := valid(t, line); !ok {
				t.Fatalf("%s is refused:\n%s", line, why)
			}
			var obj map[string]any
			if err := json.Unmarshal(line, &obj); err != nil {
				t.Fatal(err)
			}
			fields, _ := obj["data"].(map[string]any)
			if len(fields) == 0 {
				t.Fatalf("%s has no data", line)
			}
			for key := range fields {
				f := msg.Descriptor().Fields().ByName(protoreflect.Name(key))
				if f == nil {
					t.Fatalf("data field %q is no field of %s", key, msg.Descriptor().FullName())
				}
				renamed := mutate(t, obj, func(d map[string]any) { d[key+"_renamed"] = d[key]; delete(d, key) })
				if ok, _ := valid(t, renamed); ok {
					t.Errorf("data with %s renamed is accepted: %s", key, renamed)
				}
				removed := mutate(t, obj, func(d map[string]any) { delete(d, key) })
				ok, why := valid(t, removed)
				if ok && isRequired(f) {
					t.Errorf("data without the required %s is accepted", key)
				}
				if !ok && !isRequired(f) {
					t.Errorf("data without the optional %s is refused:\n%s", key, why)
				}
			}
		})
	}
}

// declared checks that every key of v's objects is a property schema
// declares and every property it requires is there (the validator does
// not always see through the union's oneOf); an object schema without
// properties is free-form, and of an anyOf one branch must hold.
func declared(schemas map[string]any, schema any, v any) error {
	sc, _ := schema.(map[string]any)
	if ref, ok := sc["$ref"].(string); ok {
		return declared(schemas, schemas[strings.TrimPrefix(ref, "#/components/schemas/")], v)
	}
	if branches, ok := sc["anyOf"].([]any); ok {
		var errs []string
		for _, b := range branches {
			err := declared(schemas, b, v)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("no branch of anyOf holds: %s", strings.Join(errs, "; "))
	}
	switch t := v.(type) {
	case map[string]any:
		req, _ := sc["required"].([]any)
		for _, k := range req {
			if _, ok := t[k.(string)]; !ok {
				return fmt.Errorf("required property %q is missing", k)
			}
		}
		props, ok := sc["properties"].(map[string]any)
		if !ok {
			return nil
		}
		for k, e := range t {
			p, ok := props[k]
			if !ok {
				return fmt.Errorf("property %q is not declared", k)
			}
			if err := declared(schemas, p, e); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		for _, e := range t {
			if err := declared(schemas, sc["items"], e); err != nil {
				return err
			}
		}
	}
	return nil
}

func isRequired(fd protoreflect.FieldDescriptor) bool {
	fb, _ := proto.GetExtension(fd.Options(), annotations.E_FieldBehavior).([]annotations.FieldBehavior)
	return slices.Contains(fb, annotations.FieldBehavior_REQUIRED)
}

// mutate returns the event with change applied to a copy of its data.
func mutate(t *testing.T, obj map[string]any, change func(map[string]any)) []byte {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	change(c["data"].(map[string]any))
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fill sets every field of m: strings, numbers, lists of one, messages
// filled in turn; free-form JSON gets one key and a child event's data a
// text delta.
func fill(m protoreflect.Message) {
	switch msg := m.Interface().(type) {
	case *structpb.Struct:
		msg.Fields = map[string]*structpb.Value{"path": structpb.NewStringValue("a.txt")}
		return
	case *agentv1.RunEventData:
		msg.Kind = &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: "hi"}}
		return
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Message() != nil {
				e := l.NewElement()
				fill(e.Message())
				l.Append(e)
			} else {
				l.Append(scalar(fd))
			}
		case fd.Message() != nil:
			fill(m.Mutable(fd).Message())
		default:
			m.Set(fd, scalar(fd))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("some " + string(fd.Name()))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(2)
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(2)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(0.5)
	}
	panic("fill: no sample of kind " + fd.Kind().String())
}
