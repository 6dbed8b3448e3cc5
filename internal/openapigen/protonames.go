package openapigen

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// statusSchema is the component protoc-gen-openapiv3 adds for its default
// error responses. The gateway answers errors with its own body, but its
// JSON-lines streams end in {"error": google.rpc.Status}, so it stays.
const statusSchema = "google.rpc.Status"

// protoNames renames the properties and query parameters the generator named
// by their JSON names (runId) to the proto names the gateway's marshaler
// uses (UseProtoNames: run_id). Each name is looked up in the message the
// schema describes, so json_name options and odd capitalisation come out
// right; a name that matches no field is an error.
func protoNames(doc object, bindings []*binding, res Resolver) error {
	schemas, _ := child(doc, "components", "schemas")
	for _, name := range sortedKeys(schemas) {
		md, err := message(res, name)
		if err != nil {
			return err
		}
		if md == nil {
			continue
		}
		s, ok := schemas[name].(object)
		if !ok {
			return fmt.Errorf("schema %s is not an object", name)
		}
		if err := renameMessage(s, md); err != nil {
			return fmt.Errorf("schema %s: %w", name, err)
		}
	}
	for _, b := range bindings {
		if err := renameOperation(b); err != nil {
			return fmt.Errorf("%s %s: %w", strings.ToUpper(b.verb), b.path, err)
		}
	}
	return nil
}

// message returns the message a component schema is named after, nil for
// the google.rpc.Status schema and for enums, and an error for a name that
// is no proto definition.
func message(res Resolver, name string) (protoreflect.MessageDescriptor, error) {
	d, err := res.FindDescriptorByName(protoreflect.FullName(name))
	if errors.Is(err, protoregistry.NotFound) && name == statusSchema {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schema %s: no proto definition of that name: %w", name, err)
	}
	switch d := d.(type) {
	case protoreflect.MessageDescriptor:
		if name == statusSchema {
			return nil, nil
		}
		return d, nil
	case protoreflect.EnumDescriptor:
		return nil, nil
	}
	return nil, fmt.Errorf("schema %s names a %T, not a message", name, d)
}

func renameOperation(b *binding) error {
	in := b.method.Input()
	params, _ := b.op["parameters"].([]any)
	for _, p := range params {
		po, ok := p.(object)
		if !ok {
			continue
		}
		name, _ := po["name"].(string)
		switch po["in"] {
		case "query":
			renamed, err := queryName(in, name)
			if err != nil {
				return err
			}
			po["name"] = renamed
		case "path":
			// Path variables come from the rule's template, in proto names.
			if _, err := fieldPath(in, name, byName); err != nil {
				return fmt.Errorf("path parameter: %w", err)
			}
		}
	}
	schema, ok := child(b.op, "requestBody", "content", "application/json", "schema")
	if !ok {
		return nil
	}
	if b.body == "*" {
		return renameMessage(schema, in)
	}
	fds, err := fieldPath(in, b.body, byName)
	if err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return renameField(schema, fds[len(fds)-1])
}

// queryName renames a query parameter: a dotted field path, optionally with
// a map key in brackets (labels[key]).
func queryName(in protoreflect.MessageDescriptor, name string) (string, error) {
	base, key, isMap := strings.Cut(name, "[")
	fds, err := fieldPath(in, base, byJSONName)
	if err != nil {
		return "", fmt.Errorf("query parameter: %w", err)
	}
	parts := make([]string, len(fds))
	for i, fd := range fds {
		parts[i] = string(fd.Name())
	}
	out := strings.Join(parts, ".")
	if isMap {
		out += "[" + key
	}
	return out, nil
}

type fieldLookup func(protoreflect.MessageDescriptor, string) protoreflect.FieldDescriptor

func byName(md protoreflect.MessageDescriptor, s string) protoreflect.FieldDescriptor {
	return md.Fields().ByName(protoreflect.Name(s))
}

func byJSONName(md protoreflect.MessageDescriptor, s string) protoreflect.FieldDescriptor {
	return md.Fields().ByJSONName(s)
}

// fieldPath resolves a dotted path of fields from md.
func fieldPath(md protoreflect.MessageDescriptor, path string, lookup fieldLookup) ([]protoreflect.FieldDescriptor, error) {
	var out []protoreflect.FieldDescriptor
	for seg := range strings.SplitSeq(path, ".") {
		if md == nil {
			return nil, fmt.Errorf("%q goes past a field that is no message", path)
		}
		fd := lookup(md, seg)
		if fd == nil {
			return nil, fmt.Errorf("%s has no field %q (in %q)", md.FullName(), seg, path)
		}
		out = append(out, fd)
		md = fd.Message()
	}
	return out, nil
}

// renameMessage renames the properties of an inline schema of md. A $ref
// schema is left alone: the component it names is renamed by itself.
func renameMessage(s object, md protoreflect.MessageDescriptor) error {
	if _, ok := s["$ref"]; ok {
		return nil
	}
	if props, ok := s["properties"].(object); ok {
		out := make(object, len(props))
		for _, k := range sortedKeys(props) {
			fd := byJSONName(md, k)
			if fd == nil {
				return fmt.Errorf("property %q is no field of %s", k, md.FullName())
			}
			name := string(fd.Name())
			if _, dup := out[name]; dup {
				return fmt.Errorf("two properties name field %s of %s", name, md.FullName())
			}
			if ps, ok := props[k].(object); ok {
				if err := renameField(ps, fd); err != nil {
					return fmt.Errorf("property %s: %w", name, err)
				}
			}
			out[name] = props[k]
		}
		s["properties"] = out
	}
	if req, ok := s["required"].([]any); ok {
		for i, r := range req {
			k, _ := r.(string)
			fd := byJSONName(md, k)
			if fd == nil {
				return fmt.Errorf("required %q is no field of %s", k, md.FullName())
			}
			req[i] = string(fd.Name())
		}
	}
	// oneof constraints and wrappers describe the same message.
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		subs, _ := s[k].([]any)
		for _, sub := range subs {
			if so, ok := sub.(object); ok {
				if err := renameMessage(so, md); err != nil {
					return err
				}
			}
		}
	}
	if not, ok := s["not"].(object); ok {
		return renameMessage(not, md)
	}
	return nil
}

// renameField renames within the schema of fd's value when that value is a
// message described inline (a map's values, a list's items, a nested body).
func renameField(s object, fd protoreflect.FieldDescriptor) error {
	switch {
	case fd.IsMap():
		v := fd.MapValue()
		if v.Message() == nil || wellKnown(v.Message()) {
			return nil
		}
		if ap, ok := s["additionalProperties"].(object); ok {
			return renameMessage(ap, v.Message())
		}
	case fd.Message() != nil && !wellKnown(fd.Message()):
		if fd.IsList() {
			items, ok := s["items"].(object)
			if !ok {
				return nil
			}
			s = items
		}
		return renameMessage(s, fd.Message())
	}
	return nil
}

// wellKnown reports whether md is a google.protobuf type, which the
// generator describes by its JSON form (a timestamp string, any value).
func wellKnown(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile().Package() == "google.protobuf"
}

// verifyProtoSchemas checks that every schema named after a message lists
// exactly the message's fields by proto name: the generated ones after
// renaming, and those this package writes itself (UploadFileResponse),
// except the fields JSON never shows and the messages JSON shows as their
// set oneof field (a catalog's payload).
func verifyProtoSchemas(doc object, res Resolver, cats map[protoreflect.FullName]*catalog) error {
	schemas, _ := child(doc, "components", "schemas")
	for _, name := range sortedKeys(schemas) {
		d, err := res.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			continue // not a proto definition (Error, RunEvent, …)
		}
		md, ok := d.(protoreflect.MessageDescriptor)
		if !ok || name == statusSchema || jsonUnion(cats, md) {
			continue
		}
		props, _ := child(schemas, name, "properties")
		fields := md.Fields()
		for i := range fields.Len() {
			if jsonHidden(cats, fields.Get(i)) {
				continue
			}
			if _, ok := props[string(fields.Get(i).Name())]; !ok {
				return fmt.Errorf("schema %s lacks field %s", name, fields.Get(i).Name())
			}
		}
		for k := range props {
			if fields.ByName(protoreflect.Name(k)) == nil {
				return fmt.Errorf("schema %s has property %q, which is no field of the message", name, k)
			}
		}
	}
	return nil
}
