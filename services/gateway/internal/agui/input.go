package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// runAgentInput is the part of AG-UI's RunAgentInput that Wick reads. The
// client's tools, context, state and forwardedProps are accepted and not
// used: an agent's tools and state are its own, on the server.
type runAgentInput struct {
	ThreadID *string         `json:"threadId"`
	RunID    *string         `json:"runId"`
	Messages *[]inputMessage `json:"messages"`
	Resume   []resumeEntry   `json:"resume"`
}

// inputMessage is one message of RunAgentInput.messages; only the last
// one, the user's new message, is read in full.
type inputMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// resumeEntry answers one interrupt of a run that ended suspended.
type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// request is what a valid RunAgentInput asks for: a new run with the
// user's text, or the resumption of a suspended run.
type request struct {
	threadID string
	runID    string
	// text is the user's new message; empty when resume is set.
	text   string
	resume []resumeEntry
}

// inputError is a RunAgentInput that cannot be run; its message names the
// field.
type inputError struct{ field, msg string }

func (e *inputError) Error() string { return e.field + ": " + e.msg }

func badInput(field, format string, args ...any) error {
	return &inputError{field: field, msg: fmt.Sprintf(format, args...)}
}

// parseInput reads and checks a RunAgentInput. A new run takes the last
// message, which must be the user's: AG-UI clients send the whole
// conversation each time, and the thread already holds the rest of it.
func parseInput(body io.Reader) (request, error) {
	dec := json.NewDecoder(body)
	var in runAgentInput
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return request{}, badInput(te.Field, "must be a JSON %s", jsonKind(te.Type.Kind().String()))
		case errors.Is(err, io.EOF):
			return request{}, badInput("body", "a RunAgentInput JSON object is required")
		default:
			return request{}, badInput("body", "not a RunAgentInput JSON object")
		}
	}
	if dec.More() {
		return request{}, badInput("body", "holds more than one JSON value")
	}
	req := request{resume: in.Resume}
	if in.ThreadID == nil || *in.ThreadID == "" {
		return request{}, badInput("threadId", "is required")
	}
	req.threadID = *in.ThreadID
	if in.RunID == nil || *in.RunID == "" {
		return request{}, badInput("runId", "is required")
	}
	req.runID = *in.RunID
	if in.Messages == nil {
		return request{}, badInput("messages", "is required")
	}
	for i, e := range in.Resume {
		if e.InterruptID == "" {
			return request{}, badInput(fmt.Sprintf("resume[%d].interruptId", i), "is required")
		}
		if e.Status != "resolved" && e.Status != "cancelled" {
			return request{}, badInput(fmt.Sprintf("resume[%d].status", i), "must be resolved or cancelled")
		}
	}
	if len(in.Resume) > 0 {
		return req, nil
	}
	msgs := *in.Messages
	if len(msgs) == 0 {
		return request{}, badInput("messages", "holds no message; the last one must be the user's new message")
	}
	last := len(msgs) - 1
	if msgs[last].Role != "user" {
		return request{}, badInput(fmt.Sprintf("messages[%d].role", last), "is %q; the last message must be the user's new message (role user)", msgs[last].Role)
	}
	text, err := userText(fmt.Sprintf("messages[%d].content", last), msgs[last].Content)
	if err != nil {
		return request{}, err
	}
	req.text = text
	return req, nil
}

// userText is the text of a user message's content: a string, or text
// parts, joined by blank lines.
func userText(field string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	var text string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", badInput(field, "is required")
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", badInput(field, "is not a JSON string")
		}
	case raw[0] == '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", badInput(field, "must be a string or an array of content parts")
		}
		texts := make([]string, 0, len(parts))
		for i, p := range parts {
			if p.Type != "text" {
				// The agent's model input is text; files reach an agent
				// through its workspace.
				return "", badInput(fmt.Sprintf("%s[%d].type", field, i), "is %q; only text parts are supported", p.Type)
			}
			if p.Text == nil {
				return "", badInput(fmt.Sprintf("%s[%d].text", field, i), "is required")
			}
			texts = append(texts, *p.Text)
		}
		text = strings.Join(texts, "\n\n")
	default:
		return "", badInput(field, "must be a string or an array of content parts")
	}
	if strings.TrimSpace(text) == "" {
		return "", badInput(field, "is empty")
	}
	return text, nil
}

// jsonKind names a Go kind as the JSON type a client should send.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "slice", "array":
		return "array"
	case "struct", "map", "ptr":
		return "object"
	}
	return "value of another type"
}
