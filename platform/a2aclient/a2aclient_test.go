package a2aclient_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/wick-agent/wick/platform/a2aclient"
	"github.com/wick-agent/wick/platform/netguard"
)

// TestSend covers the client's own rules against small scripted agents;
// the protocol itself is tested against Wick's A2A server in the gateway.
func TestSend(t *testing.T) {
	t.Parallel()
	completed := `data: {"jsonrpc":"2.0","id":"1","result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"}}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":"1","result":{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"Hel"}]}}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":"1","result":{"kind":"artifact-update","taskId":"t1","contextId":"c1","append":true,"artifact":{"artifactId":"a","parts":[{"kind":"text","text":"lo"}]}}}` + "\n\n" +
		`data: {"jsonrpc":"2.0","id":"1","result":{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"completed"},"final":true}}` + "\n\n"
	tests := []struct {
		name, contentType, body string
		allow                   []netip.Prefix
		maxBytes                int64
		want                    string
		wantErr                 error
	}{
		{name: "loopback refused without an allow list", contentType: "text/event-stream", body: completed, wantErr: netguard.ErrDenied},
		{name: "loopback allowed", contentType: "text/event-stream", body: completed, allow: loopback(), want: "Hello"},
		{name: "answer past the bound", contentType: "text/event-stream", body: completed, allow: loopback(), maxBytes: 100, wantErr: a2aclient.ErrTooLarge},
		{name: "JSON-RPC error", contentType: "application/json", body: `{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"Method not found"}}`, allow: loopback(), wantErr: a2aclient.ErrRemote},
		{name: "stream ends early", contentType: "text/event-stream", body: strings.SplitN(completed, "\n\n", 2)[0] + "\n\n", allow: loopback(), wantErr: a2aclient.ErrProtocol},
		{name: "not JSON", contentType: "text/event-stream", body: "data: nope\n\n", allow: loopback(), wantErr: a2aclient.ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var auth string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth = r.Header.Get("Authorization")
				w.Header().Set("Content-Type", tt.contentType)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(ts.Close)
			hc := &http.Client{Transport: netguard.New(tt.allow...).Transport()}
			res, err := a2aclient.New(hc, a2aclient.WithMaxBytes(tt.maxBytes)).Send(t.Context(), ts.URL, "tok", "hi")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.want || res.TaskID != "t1" || auth != "Bearer tok" {
				t.Fatalf("result = %+v, auth %q; want %q", res, auth, tt.want)
			}
		})
	}
}

func loopback() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} }
