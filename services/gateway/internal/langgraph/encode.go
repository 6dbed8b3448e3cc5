package langgraph

import (
	"encoding/json"
	"io"
)

// encoder writes LangGraph's SSE frames: event, data (one line of JSON)
// and, on the last frame of a Wick event, its id for Last-Event-ID.
type encoder struct {
	w   io.Writer
	buf []byte
}

func newEncoder(w io.Writer) *encoder { return &encoder{w: w, buf: make([]byte, 0, 512)} }

func (e *encoder) frame(f frame, id string) error {
	data, err := json.Marshal(f.data)
	if err != nil {
		return err
	}
	b := e.buf[:0]
	b = append(b, "event: "...)
	b = append(b, f.event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, '\n')
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	e.buf = b
	_, err = e.w.Write(b)
	return err
}
