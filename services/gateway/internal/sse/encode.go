package sse

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// appendEvent appends ev as the JSON protojson gives it (proto field
// names, empty fields left out, in field order, Struct keys sorted, the
// same string escapes) without protojson's reflection, for the events a
// run streams by the thousand: those whose data is absent, a string, or an
// object of strings (a text delta is {"delta": "…"}). It reports false for
// any other data, which the caller encodes with protojson.
func appendEvent(b []byte, ev *agentv1.StreamEvent) ([]byte, bool) {
	start := len(b)
	b = append(b, '{')
	var ok bool
	field := func(name, v string) {
		if v == "" || !ok {
			return
		}
		if len(b) > start+1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b, ok = appendString(b, v)
	}
	ok = true
	field("event", ev.GetEvent())
	field("name", ev.GetName())
	field("run_id", ev.GetRunId())
	if d := ev.GetData(); d != nil && ok {
		if len(b) > start+1 {
			b = append(b, ',')
		}
		b = append(b, `"data":`...)
		b, ok = appendValue(b, d)
	}
	field("thread_id", ev.GetThreadId())
	field("id", ev.GetId())
	return append(b, '}'), ok
}

// appendValue appends a Value that is a string or an object of strings.
func appendValue(b []byte, v *structpb.Value) ([]byte, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return appendString(b, k.StringValue)
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		keys := make([]string, 0, len(fields))
		for key, fv := range fields {
			if _, isString := fv.GetKind().(*structpb.Value_StringValue); !isString {
				return b, false
			}
			keys = append(keys, key)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, key := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendString(b, key); !ok {
				return b, false
			}
			b = append(b, ':')
			if b, ok = appendString(b, fields[key].GetStringValue()); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendString quotes s as protojson does: `"`, `\` and control
// characters escaped, the rest as is; invalid UTF-8 is refused, as
// protojson refuses it.
func appendString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return b, false
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
	return append(b, '"'), true
}
