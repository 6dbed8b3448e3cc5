// Package redact hides secrets in values the service sends out: agent
// configurations, tool definitions and run events.
package redact

import (
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// Mask replaces a secret value.
const Mask = "[REDACTED]"

// secretKeys are substrings of map keys whose values are secrets. Names of
// environment variables that hold a secret (api_key_env) are not secrets.
var secretKeys = []string{"api_key", "apikey", "secret", "password", "passwd", "token", "authorization", "credential", "private_key", "cookie"}

// notSecret are keys that match secretKeys but only name a secret.
var notSecret = map[string]bool{"api_key_env": true, "max_tokens": true, "input_tokens": true, "output_tokens": true, "tokens": true}

// secretValue matches token shapes that are secrets wherever they appear:
// provider API keys, bearer credentials, private key blocks.
var secretValue = regexp.MustCompile(`(?i)(sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|bearer\s+[A-Za-z0-9._~+/=-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----)`)

// SecretKey reports whether a map key names a secret value.
func SecretKey(k string) bool {
	l := strings.ToLower(k)
	if notSecret[l] {
		return false
	}
	for _, s := range secretKeys {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// String masks secret-looking substrings of s.
func String(s string) string {
	if !secretValue.MatchString(s) {
		return s
	}
	return secretValue.ReplaceAllString(s, Mask)
}

// Value returns a copy of a JSON-shaped value (maps, slices, scalars) with
// secret keys' values and secret-looking strings masked.
func Value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if SecretKey(k) {
				if e == nil || e == "" {
					out[k] = e
				} else {
					out[k] = Mask
				}
				continue
			}
			out[k] = Value(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Value(e)
		}
		return out
	case string:
		return String(t)
	default:
		return v
	}
}

// Headers masks every header value: callback headers carry credentials.
func Headers(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = Mask
	}
	return out
}

// Message returns a copy of m with secret-looking strings masked, the
// values of secret keys in its free-form JSON (google.protobuf.Struct)
// masked, and invalid UTF-8 replaced, as protobuf strings must be UTF-8.
func Message[M proto.Message](m M) M {
	c := proto.Clone(m).(M)
	message(c.ProtoReflect())
	return c
}

var structName = (&structpb.Struct{}).ProtoReflect().Descriptor().FullName()

func message(m protoreflect.Message) {
	isStruct := m.Descriptor().FullName() == structName
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if s, ok := text(fd.Kind(), l.Get(i)); ok {
					l.Set(i, protoreflect.ValueOfString(s))
				} else if fd.Message() != nil {
					message(l.Get(i).Message())
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
				if isStruct && SecretKey(k.String()) {
					// As Value: a null or empty value says nothing.
					sv := e.Message().Interface().(*structpb.Value)
					switch k := sv.GetKind().(type) {
					case nil, *structpb.Value_NullValue:
					case *structpb.Value_StringValue:
						if k.StringValue != "" {
							sv.Kind = &structpb.Value_StringValue{StringValue: Mask}
						}
					default:
						sv.Kind = &structpb.Value_StringValue{StringValue: Mask}
					}
					return true
				}
				if s, ok := text(fd.MapValue().Kind(), e); ok {
					mp.Set(k, protoreflect.ValueOfString(s))
				} else if fd.MapValue().Message() != nil {
					message(e.Message())
				}
				return true
			})
		default:
			if s, ok := text(fd.Kind(), v); ok {
				m.Set(fd, protoreflect.ValueOfString(s))
			} else if fd.Message() != nil {
				message(v.Message())
			}
		}
		return true
	})
}

// text is a string value masked and made valid UTF-8.
func text(k protoreflect.Kind, v protoreflect.Value) (string, bool) {
	if k != protoreflect.StringKind {
		return "", false
	}
	return String(strings.ToValidUTF8(v.String(), "\uFFFD")), true
}
