package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickserver/suite"
)

// slowTokens is the length of the slow client's reply: enough SSE frames
// (about 200 bytes each) to fill the loopback socket's buffers (the
// sender's grows to 4 MiB) so that events wait in the run log for the
// client.
const slowTokens = 30000

// slowText is the slow client's reply: distinct tokens, so that a piece
// lost or repeated changes the concatenation.
func slowText() string {
	words := make([]string, slowTokens)
	for i := range words {
		words[i] = strconv.FormatInt(int64(i), 36)
	}
	return strings.Join(words, " ")
}

// withSlowScript adds the script "slow" (slowText, no delay) to the suite's
// LLM gateway.
func withSlowScript(t *testing.T) suiteOption {
	return func(c *suite.Config) {
		body, err := json.Marshal(map[string]any{"turns": []map[string]string{{"text": slowText()}}, "end_text": "end"})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.LLM.ScriptDir, "slow"), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// smallWindowClient reads through a socket with a small receive buffer, so
// that a client that stops reading makes the gateway's writes wait soon.
func smallWindowClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// textPieces reads a stream's text deltas from an open event stream until
// stop says so or the stream ends, checking that ids increase; it returns
// the deltas and the id of the last.
func textPieces(t *testing.T, es *eventStream, after string, stop func(delta string) bool) (pieces []string, last string, ended bool) {
	t.Helper()
	last = after
	for {
		ev, err := es.next()
		if err != nil {
			return pieces, last, true
		}
		if ev.Event == "error" {
			t.Fatalf("error event: %s", ev.Data)
		}
		if !idLess(t, last, ev.ID) {
			t.Fatalf("event id %q after %q: ids must increase", ev.ID, last)
		}
		last = ev.ID
		if ev.Event != "on_chat_model_stream" {
			continue
		}
		var d struct {
			Data struct {
				Delta string `json:"delta"`
			} `json:"data"`
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
			t.Fatal(err)
		}
		if d.ID != ev.ID {
			t.Fatalf("frame id %q, data id %q", ev.ID, d.ID)
		}
		pieces = append(pieces, d.Data.Delta)
		if stop != nil && stop(d.Data.Delta) {
			return pieces, last, false
		}
	}
}

// idLess compares run log ids "<ms>-<seq>"; "" is before every id.
func idLess(t *testing.T, a, b string) bool {
	t.Helper()
	if a == "" {
		return true
	}
	parse := func(s string) (uint64, uint64) {
		hi, lo, ok := strings.Cut(s, "-")
		h, err1 := strconv.ParseUint(hi, 10, 64)
		l, err2 := strconv.ParseUint(lo, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("event id %q is not <ms>-<seq>", s)
		}
		return h, l
	}
	ah, al := parse(a)
	bh, bl := parse(b)
	return ah < bh || (ah == bh && al < bl)
}

// isMerged reports whether a delta holds more than one of the script's
// tokens (each token but the last ends with its space).
func isMerged(delta string) bool { return strings.Count(strings.TrimSuffix(delta, " "), " ") > 0 }

// waitRunDone waits until the run has logged its last event.
func waitRunDone(t *testing.T, base, runID string) {
	t.Helper()
	waitFor(t, "the run to finish", 2*time.Minute, func() (bool, string) {
		r := call(t, "GET", base+"/runs/"+runID, aliceToken, nil)
		return strings.Contains(r.String(), `"status":"done"`), r.String()
	})
}

// TestSlowClientGetsMergedDeltas: a client that stops reading while its run
// streams gets the text deltas that waited for it merged — the text exact,
// ids increasing — and a re-join from a merged event's id, through another
// gateway and agent replica sharing Redis, yields the rest exactly once. A
// client that keeps up gets every delta on its own.
func TestSlowClientGetsMergedDeltas(t *testing.T) {
	addr := testenv.Redis(t)
	env := startWick(t, func(c *suite.Config) { c.RedisAddr = addr }, withSlowScript(t))
	for id, model := range map[string]string{"slow": "script:slow", "bench": "script:bench50"} {
		if r := call(t, "POST", env.url+"/agents", aliceToken, jsonBody(map[string]any{"agent_id": id, "model": model})); r.code != 200 {
			t.Fatalf("create agent %s: %d %s", id, r.code, r)
		}
	}
	want := slowText()
	client := smallWindowClient()
	// stall opens a slow stream, reads its first event and waits, without
	// reading, until the run has logged everything.
	stall := func(ctx context.Context) (*eventStream, string) {
		resp, err := openStream(ctx, client, env.url, "slow", `{"messages":[{"role":"user","content":"go"}],"background":true}`)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		es := newEventStream(resp.Body)
		first, err := es.next()
		if err != nil {
			t.Fatal(err)
		}
		runID := decodeRun(t, []sseMessage{first}).runID()
		waitRunDone(t, env.url, runID)
		return es, runID
	}

	t.Run("slow client", func(t *testing.T) {
		es, _ := stall(t.Context())
		pieces, _, _ := textPieces(t, es, "", nil)
		if got := strings.Join(pieces, ""); got != want {
			t.Fatalf("the deltas make %d bytes of text, want the %d of the reply", len(got), len(want))
		}
		merged := 0
		for _, p := range pieces {
			if isMerged(p) {
				merged++
			}
		}
		if merged == 0 || len(pieces) >= slowTokens {
			t.Fatalf("%d events for %d tokens, %d merged: want some merged", len(pieces), slowTokens, merged)
		}
	})

	t.Run("re-join from a merged id on another replica", func(t *testing.T) {
		other := startReplica(t, env, addr)
		ctx, cancel := context.WithCancel(t.Context())
		es, runID := stall(ctx)
		before, last, ended := textPieces(t, es, "", isMerged)
		cancel()
		if ended {
			t.Fatal("the stream ended before a merged event")
		}
		rest := openSSE(t, t.Context(), "GET", other+"/runs/"+runID+"/events", aliceToken, nil, "Last-Event-ID", last)
		after, _, _ := textPieces(t, newEventStream(rest.Body), last, nil)
		if got := strings.Join(before, "") + strings.Join(after, ""); got != want {
			t.Fatalf("before and after the re-join the deltas make %d bytes, want the %d of the reply exactly once", len(got), len(want))
		}
	})

	t.Run("a client that keeps up gets no merged event", func(t *testing.T) {
		resp := openSSE(t, t.Context(), "POST", env.url+"/agents/bench/stream", aliceToken, jsonBody(userMessage("go", nil)))
		pieces, _, _ := textPieces(t, newEventStream(resp.Body), "", nil)
		if len(pieces) != 50 {
			t.Fatalf("%d deltas, want the 50 tokens each on its own: %q", len(pieces), pieces)
		}
		for _, p := range pieces {
			if strings.Count(p, "token") != 1 {
				t.Fatalf("delta %q holds more than one token", p)
			}
		}
	})
}
