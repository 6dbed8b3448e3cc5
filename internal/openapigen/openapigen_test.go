package openapigen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// testFile is a small proto file for the tests:
//
//	package test.v1;
//	message Inner { string deep_field = 1; }
//	message Req {
//	  string agent_id = 1; string after_event_id = 2; Inner inner = 3;
//	  repeated Inner items = 4; map<string, Inner> by_name = 5;
//	  string custom = 6 [json_name = "renamedX"];
//	}
//	message Resp { string run_id = 1; Inner inner = 2; }
//	service Svc {
//	  rpc Get(Req) returns (Resp)        { get: "/things/{agent_id}" }
//	  rpc Post(Req) returns (Resp)       { post: "/things/{agent_id}" body: "*" }
//	  rpc PostInner(Req) returns (Resp)  { put: "/inner/{agent_id=*}" body: "inner" }
//	  rpc Watch(Req) returns (stream Resp) { get: "/watch" response_body: "inner" }
//	}
func testFile(t *testing.T) (protoreflect.FileDescriptor, *protoregistry.Files) {
	t.Helper()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	field := func(name string, num int32, typ *descriptorpb.FieldDescriptorProto_Type, label *descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ, Label: label}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	custom := field("custom", 6, str, opt, "")
	custom.JsonName = proto.String("renamedX")
	method := func(name, in, out string, rule *annotations.HttpRule, stream bool) *descriptorpb.MethodDescriptorProto {
		opts := &descriptorpb.MethodOptions{}
		proto.SetExtension(opts, annotations.E_Http, rule)
		return &descriptorpb.MethodDescriptorProto{Name: proto.String(name), InputType: proto.String(in), OutputType: proto.String(out),
			Options: opts, ServerStreaming: proto.Bool(stream)}
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("test/v1/test.proto"),
		Package: proto.String("test.v1"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Inner"), Field: []*descriptorpb.FieldDescriptorProto{field("deep_field", 1, str, opt, "")}},
			{Name: proto.String("Req"), Field: []*descriptorpb.FieldDescriptorProto{
				field("agent_id", 1, str, opt, ""),
				field("after_event_id", 2, str, opt, ""),
				field("inner", 3, msg, opt, ".test.v1.Inner"),
				field("items", 4, msg, rep, ".test.v1.Inner"),
				field("by_name", 5, msg, rep, ".test.v1.Req.ByNameEntry"),
				custom,
			}, NestedType: []*descriptorpb.DescriptorProto{{
				Name:    proto.String("ByNameEntry"),
				Field:   []*descriptorpb.FieldDescriptorProto{field("key", 1, str, opt, ""), field("value", 2, msg, opt, ".test.v1.Inner")},
				Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			}}},
			{Name: proto.String("Resp"), Field: []*descriptorpb.FieldDescriptorProto{field("run_id", 1, str, opt, ""), field("inner", 2, msg, opt, ".test.v1.Inner")}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Svc"),
			Method: []*descriptorpb.MethodDescriptorProto{
				method("Get", ".test.v1.Req", ".test.v1.Resp", &annotations.HttpRule{Pattern: &annotations.HttpRule_Get{Get: "/things/{agent_id}"}}, false),
				method("Post", ".test.v1.Req", ".test.v1.Resp", &annotations.HttpRule{Pattern: &annotations.HttpRule_Post{Post: "/things/{agent_id}"}, Body: "*"}, false),
				method("PostInner", ".test.v1.Req", ".test.v1.Resp", &annotations.HttpRule{Pattern: &annotations.HttpRule_Put{Put: "/inner/{agent_id=*}"}, Body: "inner"}, false),
				method("Watch", ".test.v1.Req", ".test.v1.Resp", &annotations.HttpRule{Pattern: &annotations.HttpRule_Get{Get: "/watch"}, ResponseBody: "inner"}, true),
			},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := &protoregistry.Files{}
	if err := files.RegisterFile(fd); err != nil {
		t.Fatal(err)
	}
	return fd, files
}

// testDoc is what protoc-gen-openapiv3 writes for testFile, trimmed to what
// the steps read; extra is merged into its paths and schemas.
func testDoc(t *testing.T, extraSchemas string) object {
	t.Helper()
	base := `{
	  "openapi": "3.1.0",
	  "info": {"title": "test", "version": "1.0.0"},
	  "paths": {
	    "/things/{agent_id}": {
	      "get": {"operationId": "Svc_Get", "parameters": [
	          {"name": "agent_id", "in": "path", "required": true, "schema": {"type": "string"}},
	          {"name": "afterEventId", "in": "query", "schema": {"type": "string"}},
	          {"name": "inner.deepField", "in": "query", "schema": {"type": "string"}},
	          {"name": "renamedX", "in": "query", "schema": {"type": "string"}}],
	        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/test.v1.Resp"}}}},
	          "default": {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/google.rpc.Status"}}}}}},
	      "post": {"operationId": "Svc_Post",
	        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {
	          "afterEventId": {"type": "string"},
	          "items": {"type": "array", "items": {"type": "object", "properties": {"deepField": {"type": "string"}}}},
	          "byName": {"type": "object", "additionalProperties": {"type": "object", "properties": {"deepField": {"type": "string"}}}},
	          "renamedX": {"type": "string"}}, "required": ["afterEventId"]}}}},
	        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/test.v1.Resp"}}}}}}
	    },
	    "/inner/{agent_id}": {
	      "put": {"operationId": "Svc_PostInner",
	        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"deepField": {"type": "string"}}}}}},
	        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/test.v1.Resp"}}}}}}
	    },
	    "/watch": {
	      "get": {"operationId": "Svc_Watch",
	        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/test.v1.Inner"}}}}}}
	    }
	  },
	  "components": {"schemas": {
	    "test.v1.Resp": {"type": "object", "properties": {"runId": {"type": "string"}, "inner": {"$ref": "#/components/schemas/test.v1.Inner"}}, "required": ["runId"]},
	    "test.v1.Inner": {"type": "object", "properties": {"deepField": {"type": "string"}}},
	    "google.rpc.Status": {"type": "object", "properties": {"code": {"type": "integer"}}}` + extraSchemas + `
	  }},
	  "tags": [{"name": "Svc"}]
	}`
	d, err := decode([]byte(base))
	if err != nil {
		t.Fatalf("test document: %v", err)
	}
	return d
}

// testCatalogs describe the events testFile's Watch streams.
var testCatalogs = map[protoreflect.FullName]*catalog{
	"test.v1.Inner": {envelope: "test.v1.Inner", union: "InnerEvent", kinds: []eventKind{
		{event: "hello", doc: "Hello."},
		{event: "data", doc: "Data.", data: obj("", object{"x": str("x")})},
	}},
}

func get(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		switch c := v.(type) {
		case object:
			v = c[k]
		case []any:
			var i int
			if err := json.Unmarshal([]byte(k), &i); err != nil || i >= len(c) {
				t.Fatalf("no element %s in %v", k, c)
			}
			v = c[i]
		default:
			t.Fatalf("cannot take %q of %T (path %v)", k, v, keys)
		}
	}
	return v
}

func TestOpenAPIPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tmpl, want, err string
	}{
		{"/agents", "/agents", ""},
		{"/agents/{agent_id}/stream", "/agents/{agent_id}/stream", ""},
		{"/agents/{agent_id=*}/files/{path=*}", "/agents/{agent_id}/files/{path}", ""},
		{"/files/{path=**}", "", "only one segment"},
		{"/things/{name=things/*}", "", "only one segment"},
		{"/runs/{run_id}:cancel", "", "custom verbs"},
		{"/runs/{run_id", "", "unclosed"},
	} {
		got, err := openAPIPath(tc.tmpl)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("openAPIPath(%q) = %q, %v; want an error with %q", tc.tmpl, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("openAPIPath(%q) = %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
}

// TestProtoNames renames what the generator named by JSON name, from the
// descriptors: json_name options, nested messages, maps, lists, query
// paths and both body forms.
func TestProtoNames(t *testing.T) {
	t.Parallel()
	fd, files := testFile(t)
	tests := []struct {
		name   string
		schema string // an extra component
		path   []string
		want   any
		err    string
	}{
		{name: "component property", path: []string{"components", "schemas", "test.v1.Resp", "properties", "run_id", "type"}, want: "string"},
		{name: "component required", path: []string{"components", "schemas", "test.v1.Resp", "required", "0"}, want: "run_id"},
		{name: "nested component", path: []string{"components", "schemas", "test.v1.Inner", "properties", "deep_field", "type"}, want: "string"},
		{name: "query parameter", path: []string{"paths", "/things/{agent_id}", "get", "parameters", "1", "name"}, want: "after_event_id"},
		{name: "dotted query parameter", path: []string{"paths", "/things/{agent_id}", "get", "parameters", "2", "name"}, want: "inner.deep_field"},
		{name: "json_name option", path: []string{"paths", "/things/{agent_id}", "get", "parameters", "3", "name"}, want: "custom"},
		{name: "path parameter kept", path: []string{"paths", "/things/{agent_id}", "get", "parameters", "0", "name"}, want: "agent_id"},
		{name: "body *", path: []string{"paths", "/things/{agent_id}", "post", "requestBody", "content", "application/json", "schema", "required", "0"}, want: "after_event_id"},
		{name: "body * list of messages", path: []string{"paths", "/things/{agent_id}", "post", "requestBody", "content", "application/json", "schema",
			"properties", "items", "items", "properties", "deep_field", "type"}, want: "string"},
		{name: "body * map of messages", path: []string{"paths", "/things/{agent_id}", "post", "requestBody", "content", "application/json", "schema",
			"properties", "by_name", "additionalProperties", "properties", "deep_field", "type"}, want: "string"},
		{name: "body * json_name", path: []string{"paths", "/things/{agent_id}", "post", "requestBody", "content", "application/json", "schema",
			"properties", "custom", "type"}, want: "string"},
		{name: "body field", path: []string{"paths", "/inner/{agent_id}", "put", "requestBody", "content", "application/json", "schema",
			"properties", "deep_field", "type"}, want: "string"},
		{name: "oneOf of a message", schema: `, "test.v1.Req": {"type": "object", "properties": {"agentId": {"type": "string"}},
			"oneOf": [{"required": ["renamedX"]}, {"not": {"required": ["afterEventId"]}}]}`,
			path: []string{"components", "schemas", "test.v1.Req", "oneOf", "1", "not", "required", "0"}, want: "after_event_id"},
		{name: "unknown property", schema: `, "test.v1.Req": {"type": "object", "properties": {"agentID": {"type": "string"}}}`,
			err: `property "agentID" is no field of test.v1.Req`},
		{name: "unknown required", schema: `, "test.v1.Req": {"type": "object", "required": ["nope"]}`,
			err: `required "nope"`},
		{name: "schema named after nothing", schema: `, "test.v1.Missing": {"type": "object"}`,
			err: "no proto definition"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := testDoc(t, tc.schema)
			bs, err := bind(doc, []protoreflect.FileDescriptor{fd})
			if err != nil {
				t.Fatal(err)
			}
			err = protoNames(doc, bs, files)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := get(t, doc, tc.path...); got != tc.want {
				t.Fatalf("%v = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

func TestBind(t *testing.T) {
	t.Parallel()
	fd, _ := testFile(t)
	for _, tc := range []struct {
		name   string
		mutate func(object)
		err    string
	}{
		{"every rule has its operation", func(object) {}, ""},
		{"a rule without an operation", func(d object) { delete(get(t, d, "paths").(object), "/watch") }, "GET /watch has no generated operation"},
		{"an operation without a rule", func(d object) {
			get(t, d, "paths", "/watch").(object)["delete"] = object{"responses": object{}}
		}, "DELETE /watch has no HTTP rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := testDoc(t, "")
			tc.mutate(doc)
			bs, err := bind(doc, []protoreflect.FileDescriptor{fd})
			if tc.err == "" {
				if err != nil || len(bs) != 4 {
					t.Fatalf("bind = %d bindings, %v; want 4", len(bs), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one with %q", err, tc.err)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	doc := func(paths, schemas, tags string) object {
		d, err := decode([]byte(`{"openapi": "3.1.0", "paths": {` + paths + `}, "components": {"schemas": {` + schemas + `}}, "tags": [` + tags + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name  string
		docs  []object
		paths int
		err   string
	}{
		{"disjoint", []object{doc(`"/a": {}`, `"A": {"type": "object"}`, `{"name": "S"}`), doc(`"/b": {}`, `"A": {"type": "object"}`, `{"name": "S"}`)}, 2, ""},
		{"path twice", []object{doc(`"/a": {}`, ``, ``), doc(`"/a": {}`, ``, ``)}, 0, "path /a is generated twice"},
		{"schemas differ", []object{doc(``, `"A": {"type": "object"}`, ``), doc(``, `"A": {"type": "string"}`, ``)}, 0, "schema A differs"},
		{"tags differ", []object{doc(``, ``, `{"name": "S"}`), doc(``, ``, `{"name": "S", "description": "x"}`)}, 0, "tag S differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := merge(tc.docs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || len(get(t, got, "paths").(object)) != tc.paths || len(get(t, got, "tags").([]any)) != 1 {
				t.Fatalf("merge = %v, %v", got, err)
			}
		})
	}
}

func TestCheckRefs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"resolved and used", `{"paths": {"/a": {"get": {"x": {"$ref": "#/components/schemas/A"}}}}, "components": {"schemas": {"A": {"$ref": "#/components/schemas/B~1c"}, "B/c": {}}}}`, ""},
		{"dangling", `{"paths": {"/a": {"get": {"x": {"$ref": "#/components/schemas/Nope"}}}}}`, "does not resolve"},
		{"unused", `{"components": {"schemas": {"A": {}}}}`, "schema A is not used"},
		{"remote", `{"x": {"$ref": "https://example.com/a.json"}}`, "is not local"},
	} {
		d, err := decode([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		err = checkRefs(d)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: checkRefs = %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestDescribeStreams: a server stream gets SSE and JSON-lines responses
// from its event catalog, and a stream without a catalog is an error.
func TestDescribeStreams(t *testing.T) {
	t.Parallel()
	fd, _ := testFile(t)
	doc := testDoc(t, "")
	bs, err := bind(doc, []protoreflect.FileDescriptor{fd})
	if err != nil {
		t.Fatal(err)
	}
	if err := describeStreams(doc, bs, catalogs); err == nil || !strings.Contains(err.Error(), "test.v1.Inner, which has no event catalog") {
		t.Fatalf("describeStreams = %v, want the missing catalog", err)
	}
	if err := describeStreams(doc, bs, testCatalogs); err != nil {
		t.Fatal(err)
	}
	content := get(t, doc, "paths", "/watch", "get", "responses", "200", "content").(object)
	if get(t, content, "text/event-stream", "schema", "$ref") != "#/components/schemas/InnerEventFrame" ||
		get(t, content, "application/json", "schema", "$ref") != "#/components/schemas/InnerEventLine" {
		t.Fatalf("stream content = %v", content)
	}
	if get(t, doc, "components", "schemas", "InnerEvent", "discriminator", "mapping", "data") != "#/components/schemas/InnerEvent.data" {
		t.Fatal("the union does not map its kinds")
	}
	if get(t, doc, "components", "schemas", "InnerEvent.data", "properties", "event", "const") != "data" {
		t.Fatal("a kind does not fix its event name")
	}
	// Watch's request has after_event_id, so EventSource's Last-Event-ID
	// resumes it; the unary GET on the same request is untouched.
	if get(t, doc, "paths", "/watch", "get", "parameters", "0", "name") != "Last-Event-ID" {
		t.Fatal("no Last-Event-ID on a stream that can resume")
	}
	if params := get(t, doc, "paths", "/things/{agent_id}", "get", "parameters").([]any); len(params) != 4 {
		t.Fatalf("a unary route got parameters: %v", params)
	}
	if _, ok := child(doc, "paths", "/things/{agent_id}", "get", "responses", "200", "content", "text/event-stream"); ok {
		t.Fatal("a unary route became a stream")
	}
}

// TestBuild runs every step on the test file and checks the result is
// complete, stable and reproducible.
func TestBuild(t *testing.T) {
	t.Parallel()
	fd, files := testFile(t)
	raw, err := encode(testDoc(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	out, err := build([]Generated{{File: fd, JSON: raw}}, files, testCatalogs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := build([]Generated{{File: fd, JSON: raw}}, files, testCatalogs)
	if err != nil || !bytes.Equal(out, again) {
		t.Fatalf("a second build differs (%v)", err)
	}
	doc, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path []string
		want any
	}{
		{[]string{"info", "version"}, APIVersion},
		{[]string{"openapi"}, "3.1.0"},
		{[]string{"paths", "/things/{agent_id}", "get", "responses", "default", "$ref"}, "#/components/responses/Error"},
		{[]string{"paths", "/things/{agent_id}", "get", "responses", "401", "$ref"}, "#/components/responses/Unauthenticated"},
		{[]string{"paths", "/watch", "get", "responses", "default", "$ref"}, "#/components/responses/StreamError"},
		{[]string{"paths", "/health", "get", "operationId"}, "Gateway_Health"},
		{[]string{"paths", "/agents/{agent_id}/terminal", "get", "operationId"}, "AgentService_Terminal"},
		{[]string{"security", "0", "bearer"}, []any{}},
		{[]string{"components", "securitySchemes", "access_token", "in"}, "query"},
	} {
		got := get(t, doc, tc.path...)
		if b1, b2 := mustJSON(t, got), mustJSON(t, tc.want); b1 != b2 {
			t.Errorf("%v = %s, want %s", tc.path, b1, b2)
		}
	}
	// Public routes say so; every GET of the API also takes the query token.
	if s := get(t, doc, "paths", "/openapi.json", "get", "security").([]any); len(s) != 0 {
		t.Errorf("/openapi.json requires %v", s)
	}
	if s := get(t, doc, "paths", "/things/{agent_id}", "get", "security").([]any); len(s) != 2 {
		t.Errorf("GET security = %v", s)
	}
	if _, ok := get(t, doc, "paths", "/things/{agent_id}", "post").(object)["security"]; ok {
		t.Error("a POST takes the query token")
	}
	if !bytes.HasSuffix(out, []byte("}\n")) || bytes.Contains(out, []byte(`\u003c`)) {
		t.Error("the output is not plain, newline-terminated JSON")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVersion refuses a proto package of another major version.
func TestVersion(t *testing.T) {
	t.Parallel()
	fd, _ := testFile(t)
	if err := checkVersion(fd); err != nil {
		t.Errorf("test.v1: %v", err)
	}
	v2, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{Name: proto.String("x/v2/x.proto"), Package: proto.String("x.v2"), Syntax: proto.String("proto3")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkVersion(v2); err == nil {
		t.Error("x.v2 passed as version 1")
	}
}
