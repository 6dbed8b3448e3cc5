package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wick-agent/wick/platform/testenv"
)

// BenchmarkTokenEvent is the work of one token event on /mcp, the same
// event as the SSE encoder's BenchmarkTokenEvent (its received wire form
// decoded, then taken into the call's reply and its progress), so the two
// compare. A call sends no message per token: the reply goes out once, and
// progress at most every DefaultProgressInterval (BenchmarkProgressNotification).
func BenchmarkTokenEvent(b *testing.B) {
	r := &run{}
	p := newProgress(nil, "token", DefaultProgressInterval)
	b.ReportAllocs()
	for b.Loop() {
		ev := testenv.TokenEvent(b)
		msg, res := r.apply(ev)
		if res != nil || msg == "" {
			b.Fatal("a token ended the call")
		}
		p.pending, p.has = msg, true
		p.n++
		if r.reply.Len() > 1<<20 {
			r.reply.Reset() // keep the reply a realistic size
		}
	}
}

// BenchmarkProgressNotification is the encoding of one progress
// notification, at most one per DefaultProgressInterval of a call.
func BenchmarkProgressNotification(b *testing.B) {
	msg := tail(strings.Repeat("token ", 700), progressTail)
	b.ReportAllocs()
	for b.Loop() {
		params, err := json.Marshal(&mcp.ProgressNotificationParams{ProgressToken: "token", Progress: 42, Message: msg})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: "notifications/progress", Params: params}); err != nil {
			b.Fatal(err)
		}
	}
}
