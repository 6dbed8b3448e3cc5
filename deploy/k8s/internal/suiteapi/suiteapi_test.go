package suiteapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestStreamNext(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []Event
	}{
		{"events", "event: a\ndata: {\"x\":\"1\"}\n\nevent: b\ndata: 2\n\n", []Event{{"a", `{"x":"1"}`}, {"b", "2"}}},
		{"comments and heartbeats skipped", ": ping\n\n\nevent: a\n: mid\ndata: 1\n\n", []Event{{"a", "1"}}},
		{"CRLF line ends", "event: a\r\ndata: 1\r\n\r\n", []Event{{"a", "1"}}},
		{"data without a type", "data: 1\n\n", []Event{{"", "1"}}},
		{"an event the stream cuts off is not returned", "event: a\ndata: 1\n\nevent: b\ndata: 2\n", []Event{{"a", "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Accept") != "text/event-stream" {
					http.Error(w, "bad headers", http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			s := New(t, srv.URL, "tok").SSE(t.Context(), "GET", "/events", nil)
			var got []Event
			for {
				ev, err := s.Next()
				if err != nil {
					break
				}
				got = append(got, ev)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEventStr(t *testing.T) {
	for _, tc := range []struct {
		data, field, want string
	}{
		{`{"run_id":"r1","n":2}`, "run_id", "r1"},
		{`{"run_id":"r1","n":2}`, "n", ""},
		{`{"run_id":"r1"}`, "thread_id", ""},
		{`not json`, "run_id", ""},
	} {
		if got := (Event{Data: tc.data}).Str(tc.field); got != tc.want {
			t.Errorf("Str(%q) of %s = %q, want %q", tc.field, tc.data, got, tc.want)
		}
	}
}
