package openapigen

import "fmt"

// object is a JSON object of the document. The generator's output is decoded
// into these so that each step can rewrite it; encoding/json writes their
// keys sorted, which makes the output reproducible.
type object = map[string]any

func schemaRef(name string) object { return object{"$ref": "#/components/schemas/" + name} }

func responseRef(name string) object { return object{"$ref": "#/components/responses/" + name} }

func str(desc string) object { return object{"type": "string", "description": desc} }

func integer(desc string) object { return object{"type": "integer", "description": desc} }

func boolean(desc string) object { return object{"type": "boolean", "description": desc} }

func array(desc string, items object) object {
	return object{"type": "array", "description": desc, "items": items}
}

// obj is an object schema; required names properties a value always has.
func obj(desc string, props object, required ...string) object {
	o := object{"type": "object", "properties": props}
	if desc != "" {
		o["description"] = desc
	}
	if len(required) > 0 {
		o["required"] = anyList(required)
	}
	return o
}

func enum(desc string, values ...string) object {
	o := str(desc)
	o["enum"] = anyList(values)
	return o
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// jsonContent is a media type map with one JSON schema.
func jsonContent(schema object) object {
	return object{"application/json": object{"schema": schema}}
}

// child returns the object at the path of keys under o.
func child(o object, keys ...string) (object, bool) {
	for _, k := range keys {
		next, ok := o[k].(object)
		if !ok {
			return nil, false
		}
		o = next
	}
	return o, true
}

// ensure returns the object at the path of keys under o, creating the
// objects that are missing.
func ensure(o object, keys ...string) object {
	for _, k := range keys {
		next, ok := o[k].(object)
		if !ok {
			next = object{}
			o[k] = next
		}
		o = next
	}
	return o
}

// addComponent adds a named component of the given kind ("schemas",
// "responses", …); a name the document already uses is a mistake in this
// package, not something to overwrite silently.
func addComponent(doc object, kind, name string, v object) error {
	c := ensure(doc, "components", kind)
	if _, dup := c[name]; dup {
		return fmt.Errorf("component %s/%s is defined twice", kind, name)
	}
	c[name] = v
	return nil
}

// httpMethods are the operation keys of a path item, in the order the
// document's readers expect them.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations calls fn for every operation of the document.
func operations(doc object, fn func(path, method string, op object) error) error {
	paths, _ := child(doc, "paths")
	for _, path := range sortedKeys(paths) {
		item, ok := paths[path].(object)
		if !ok {
			return fmt.Errorf("path %s is not an object", path)
		}
		for _, m := range httpMethods {
			op, ok := item[m].(object)
			if !ok {
				continue
			}
			if err := fn(path, m, op); err != nil {
				return err
			}
		}
	}
	return nil
}
