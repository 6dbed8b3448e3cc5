// Package openapigen builds the OpenAPI 3.1 document the gateway serves
// (gen/openapi/wick.openapi.json) from the documents grpc-gateway's
// protoc-gen-openapiv3 generates from the protos, one per proto file with
// google.api.http rules.
//
// The generator alone does not describe what clients get:
//   - it names fields by their JSON names (runId) where the gateway speaks
//     proto names (run_id);
//   - its errors are google.rpc.Status where the gateway answers with its own
//     body {code, status, message, trace_id};
//   - it describes server streams as one JSON response where the gateway
//     sends Server-Sent Events (or JSON lines);
//   - it knows only the routes grpc-gateway maps, not /health, /openapi.json,
//     /metrics, raw file transfer, the terminal WebSocket or the LLM
//     gateway's /v1 API;
//   - it has no security scheme and no API version.
//
// Build fixes each from the proto descriptors and from what this package
// says about the gateway's own routes. Those descriptions are checked
// against the code that serves them by tests next to that code
// (services/gateway, services/agent, services/llmgw).
package openapigen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// APIVersion is the version of the REST API: the document's info.version and
// the version the SDKs carry. Its major is the version of the proto packages
// (wick.agent.v1); the minor grows with every addition (a route, a field, an
// event kind), the patch with corrections of the document alone. `make
// breaking` keeps the protos from breaking v1.
const APIVersion = "1.0.0"

// Generated is one document protoc-gen-openapiv3 wrote, with the proto file
// it was generated from.
type Generated struct {
	File protoreflect.FileDescriptor
	JSON []byte
}

// Resolver finds the proto definitions the document's schemas are named
// after; protoregistry.GlobalFiles is one.
type Resolver interface {
	FindDescriptorByName(protoreflect.FullName) (protoreflect.Descriptor, error)
}

// Build merges the generated documents into one and makes it describe the
// gateway as served. res resolves the messages the schemas are named after.
func Build(generated []Generated, res Resolver) ([]byte, error) {
	return build(generated, res, catalogs)
}

// build is Build with the event catalogs of the streamed messages.
func build(generated []Generated, res Resolver, cats map[protoreflect.FullName]*catalog) ([]byte, error) {
	if len(generated) == 0 {
		return nil, errors.New("openapigen: no generated documents")
	}
	docs := make([]object, len(generated))
	files := make([]protoreflect.FileDescriptor, len(generated))
	for i, g := range generated {
		if err := checkVersion(g.File); err != nil {
			return nil, fmt.Errorf("openapigen: %w", err)
		}
		d, err := decode(g.JSON)
		if err != nil {
			return nil, fmt.Errorf("openapigen: %s: %w", g.File.Path(), err)
		}
		docs[i], files[i] = d, g.File
	}
	doc, err := merge(docs)
	if err != nil {
		return nil, fmt.Errorf("openapigen: merge: %w", err)
	}
	bindings, err := bind(doc, files)
	if err != nil {
		return nil, fmt.Errorf("openapigen: %w", err)
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"proto names", func() error { return protoNames(doc, bindings, res) }},
		{"streams", func() error { return describeStreams(doc, bindings, cats) }},
		{"errors", func() error { return describeErrors(doc, bindings) }},
		{"gateway routes", func() error { return addGatewayRoutes(doc) }},
		{"security", func() error { return addSecurity(doc) }},
		{"info", func() error { setInfo(doc); return nil }},
		{"proto schemas", func() error { return verifyProtoSchemas(doc, res, cats) }},
		{"references", func() error { return checkRefs(doc) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return nil, fmt.Errorf("openapigen: %s: %w", s.name, err)
		}
	}
	return encode(doc)
}

// checkVersion refuses a proto package whose version is not APIVersion's
// major: a v2 package needs its own document version.
func checkVersion(f protoreflect.FileDescriptor) error {
	pkg := string(f.Package())
	want := "v" + strings.SplitN(APIVersion, ".", 2)[0]
	if !strings.HasSuffix(pkg, "."+want) {
		return fmt.Errorf("%s: package %s is not version %s of the API (APIVersion %s)", f.Path(), pkg, want, APIVersion)
	}
	return nil
}

func decode(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	// Numbers stay as written instead of passing through float64.
	dec.UseNumber()
	var doc object
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// encode writes the document with sorted keys, two-space indents and no HTML
// escaping, so that `make gen` reproduces it byte for byte.
func encode(doc object) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("openapigen: encode: %w", err)
	}
	return buf.Bytes(), nil
}

// merge combines per-file documents: paths may not collide, a schema two
// files share must be the same, tags are joined.
func merge(docs []object) (object, error) {
	out := object{"openapi": docs[0]["openapi"], "paths": object{}, "components": object{"schemas": object{}}}
	paths := out["paths"].(object)
	schemas := out["components"].(object)["schemas"].(object)
	var tags []any
	tagByName := map[string]any{}
	for i, d := range docs {
		if d["openapi"] != out["openapi"] {
			return nil, fmt.Errorf("document %d is OpenAPI %v, the first is %v", i, d["openapi"], out["openapi"])
		}
		p, _ := child(d, "paths")
		for _, path := range sortedKeys(p) {
			if _, dup := paths[path]; dup {
				return nil, fmt.Errorf("path %s is generated twice", path)
			}
			paths[path] = p[path]
		}
		comps, _ := child(d, "components")
		for kind := range comps {
			if kind != "schemas" {
				return nil, fmt.Errorf("document %d has components/%s, which merge does not handle", i, kind)
			}
		}
		s, _ := child(d, "components", "schemas")
		for _, name := range sortedKeys(s) {
			if prev, ok := schemas[name]; ok && !reflect.DeepEqual(prev, s[name]) {
				return nil, fmt.Errorf("schema %s differs between documents", name)
			}
			schemas[name] = s[name]
		}
		ts, _ := d["tags"].([]any)
		for _, t := range ts {
			name, _ := t.(object)["name"].(string)
			if prev, ok := tagByName[name]; ok {
				if !reflect.DeepEqual(prev, t) {
					return nil, fmt.Errorf("tag %s differs between documents", name)
				}
				continue
			}
			tagByName[name] = t
			tags = append(tags, t)
		}
	}
	if len(tags) > 0 {
		out["tags"] = tags
	}
	return out, nil
}

// binding is one HTTP rule of an RPC and the operation generated for it.
type binding struct {
	method       protoreflect.MethodDescriptor
	verb, path   string // as in the document: "post", "/agents/{agent_id}/stream"
	body         string // the rule's body: "", "*" or a field path
	responseBody string // the rule's response_body: "" or a field path
	op           object
}

// bind pairs every HTTP rule of the files' services with its generated
// operation. A rule without an operation, or an operation without a rule,
// means the generator and this package disagree about the mapping.
func bind(doc object, files []protoreflect.FileDescriptor) ([]*binding, error) {
	var out []*binding
	seen := map[string]bool{}
	for _, f := range files {
		svcs := f.Services()
		for i := range svcs.Len() {
			methods := svcs.Get(i).Methods()
			for j := range methods.Len() {
				md := methods.Get(j)
				rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
				if rule == nil {
					continue
				}
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					verb, tmpl := ruleVerb(r)
					if verb == "" {
						return nil, fmt.Errorf("%s: HTTP rule without a method", md.FullName())
					}
					path, err := openAPIPath(tmpl)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", md.FullName(), err)
					}
					op, ok := child(doc, "paths", path, verb)
					if !ok {
						return nil, fmt.Errorf("%s: HTTP rule %s %s has no generated operation", md.FullName(), strings.ToUpper(verb), path)
					}
					seen[verb+" "+path] = true
					out = append(out, &binding{method: md, verb: verb, path: path, body: r.GetBody(), responseBody: r.GetResponseBody(), op: op})
				}
			}
		}
	}
	err := operations(doc, func(path, verb string, _ object) error {
		if !seen[verb+" "+path] {
			return fmt.Errorf("generated operation %s %s has no HTTP rule", strings.ToUpper(verb), path)
		}
		return nil
	})
	return out, err
}

// ruleVerb returns the rule's lower-case HTTP method and path template.
func ruleVerb(r *annotations.HttpRule) (verb, tmpl string) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return "get", p.Get
	case *annotations.HttpRule_Put:
		return "put", p.Put
	case *annotations.HttpRule_Post:
		return "post", p.Post
	case *annotations.HttpRule_Delete:
		return "delete", p.Delete
	case *annotations.HttpRule_Patch:
		return "patch", p.Patch
	case *annotations.HttpRule_Custom:
		return strings.ToLower(p.Custom.GetKind()), p.Custom.GetPath()
	}
	return "", ""
}

// openAPIPath turns a google.api.http path template into an OpenAPI path.
// Only whole-segment variables ({name} or {name=*}) are supported: a
// variable spanning segments or a custom verb has no faithful OpenAPI path,
// so meeting one is an error, not a guess.
func openAPIPath(tmpl string) (string, error) {
	if strings.Contains(tmpl, ":") {
		return "", fmt.Errorf("path template %q: custom verbs are not supported", tmpl)
	}
	var b strings.Builder
	for rest := tmpl; rest != ""; {
		before, after, found := strings.Cut(rest, "{")
		b.WriteString(before)
		if !found {
			break
		}
		v, tail, ok := strings.Cut(after, "}")
		if !ok {
			return "", fmt.Errorf("path template %q: unclosed variable", tmpl)
		}
		name, pattern, hasPattern := strings.Cut(v, "=")
		if hasPattern && pattern != "*" {
			return "", fmt.Errorf("path template %q: variable %s matches %q; only one segment ({%s} or {%s=*}) is supported", tmpl, name, pattern, name, name)
		}
		b.WriteString("{" + name + "}")
		rest = tail
	}
	return b.String(), nil
}

// checkRefs makes sure every local $ref resolves and every component schema
// is referenced: a dangling reference breaks clients, an unused schema is a
// step that forgot what it replaced.
func checkRefs(doc object) error {
	used := map[string]bool{}
	var walk func(v any) error
	walk = func(v any) error {
		switch t := v.(type) {
		case object:
			if r, ok := t["$ref"].(string); ok {
				if err := resolvePointer(doc, r); err != nil {
					return err
				}
				used[r] = true
			}
			for _, k := range sortedKeys(t) {
				if err := walk(t[k]); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range t {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(doc); err != nil {
		return err
	}
	schemas, _ := child(doc, "components", "schemas")
	for _, name := range sortedKeys(schemas) {
		escaped := strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
		if !used["#/components/schemas/"+escaped] {
			return fmt.Errorf("schema %s is not used", name)
		}
	}
	return nil
}

func resolvePointer(doc object, ref string) error {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return fmt.Errorf("$ref %q is not local", ref)
	}
	var cur any = doc
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		o, ok := cur.(object)
		if !ok {
			return fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = o[tok]; !ok {
			return fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
