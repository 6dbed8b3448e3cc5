package agui

import (
	"strings"
	"testing"
)

func TestParseInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		text       string // the user's text, when valid
		field      string // the field the error names, when not
	}{
		{"string content", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"hi"}]}`, "hi", ""},
		{"text parts", `{"threadId":"t","runId":"r","messages":[{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"tools":[{"name":"x","description":"y"}],"state":{}}`, "a\n\nb", ""},
		{"resume without a new message", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"run_1:c","status":"resolved"}]}`, "", ""},
		{"empty body", ``, "", "body"},
		{"not JSON", `{`, "", "body"},
		{"no threadId", `{"runId":"r","messages":[]}`, "", "threadId"},
		{"threadId not a string", `{"threadId":5,"runId":"r","messages":[]}`, "", "threadId"},
		{"no runId", `{"threadId":"t","messages":[]}`, "", "runId"},
		{"no messages", `{"threadId":"t","runId":"r"}`, "", "messages"},
		{"empty messages", `{"threadId":"t","runId":"r","messages":[]}`, "", "messages"},
		{"last not the user's", `{"threadId":"t","runId":"r","messages":[{"role":"user","content":"a"},{"role":"tool","content":"x"}]}`, "", "messages[1].role"},
		{"image part", `{"threadId":"t","runId":"r","messages":[{"role":"user","content":[{"type":"image"}]}]}`, "", "messages[0].content[0].type"},
		{"blank text", `{"threadId":"t","runId":"r","messages":[{"role":"user","content":"  "}]}`, "", "messages[0].content"},
		{"bad resume status", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"a:b","status":"ok"}]}`, "", "resume[0].status"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := parseInput(strings.NewReader(tc.body))
			if tc.field != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.field+": ") {
					t.Fatalf("error = %v, want one naming %s", err, tc.field)
				}
				return
			}
			if err != nil || req.text != tc.text || req.threadID != "t" || req.runID != "r" {
				t.Fatalf("parseInput = %+v, %v; want text %q", req, err, tc.text)
			}
		})
	}
}
