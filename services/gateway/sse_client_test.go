package gateway_test

import (
	"bufio"
	"io"
	"strings"
)

// sseEvent is one dispatched event, as the HTML standard's event-stream
// interpretation defines it.
type sseEvent struct {
	ID    string
	Event string
	Data  string
}

// sseReader parses an event stream following the HTML standard
// (https://html.spec.whatwg.org/multipage/server-sent-events.html),
// independently of the gateway's writer: lines end in CRLF, LF or CR; a
// blank line dispatches; ':' starts a comment; one space after the colon is
// dropped; data lines join with LF.
type sseReader struct {
	r        *bufio.Reader
	lastID   string
	comments []string
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

func (s *sseReader) line() (string, error) {
	var b strings.Builder
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if b.Len() > 0 && err == io.EOF {
				return b.String(), nil
			}
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if next, err := s.r.Peek(1); err == nil && next[0] == '\n' {
				_, _ = s.r.ReadByte()
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

// Next returns the next dispatched event; io.EOF at the end of the stream.
func (s *sseReader) Next() (sseEvent, error) {
	var data strings.Builder
	eventType := ""
	for {
		line, err := s.line()
		if err != nil {
			return sseEvent{}, err
		}
		if line == "" {
			if data.Len() == 0 {
				eventType = ""
				continue
			}
			d := strings.TrimSuffix(data.String(), "\n")
			if eventType == "" {
				eventType = "message"
			}
			return sseEvent{ID: s.lastID, Event: eventType, Data: d}, nil
		}
		if strings.HasPrefix(line, ":") {
			s.comments = append(s.comments, line[1:])
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "event":
			eventType = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
		case "id":
			if !strings.Contains(value, "\x00") {
				s.lastID = value
			}
		}
	}
}
