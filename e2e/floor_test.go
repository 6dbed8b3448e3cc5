package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/wick-agent/wick/platform/diag"
)

// benchFloorEnv makes the benchmark's child serve floorServer instead of
// the suite (BenchmarkSuiteSSEStreams/floor).
const benchFloorEnv = "WICK_BENCH_FLOOR"

// floorServer is not Wick: it is the least any Go server does to deliver
// the benchmark's streams, to measure the floor under the suite's figures
// on the same machine with the same client. It answers POST
// /agents/{id}/stream with the frames the suite sends for the bench50
// script — the same count, sizes and SSE headers — from a goroutine that
// waits on a timer until each token is due (as the scripted provider does:
// 20 ms apart from the start) and flushes each frame through net/http. No
// gRPC, no run log, no JSON encoding: what is left is net/http, the
// timers, the scheduler and the kernel's loopback TCP path.
type floorServer struct {
	runs atomic.Int64
}

func (f *floorServer) routes() *http.ServeMux {
	mux := http.NewServeMux()
	// The benchmark creates its agents first; there is nothing to create.
	mux.HandleFunc("POST /agents", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "{}")
	})
	mux.HandleFunc("POST /agents/{id}/stream", f.stream)
	return mux
}

func (f *floorServer) stream(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := f.runs.Add(1)
	// Ids of the suite's lengths ("run_" and "th_" and 24 hex digits).
	run, thread := fmt.Sprintf("run_%024x", n), fmt.Sprintf("th_%024x", n)
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 512)
	seq := 0
	send := func(event, data string) bool {
		seq++
		id := strconv.Itoa(seq) + "-0"
		buf = append(buf[:0], "id: "...)
		buf = append(buf, id...)
		buf = append(buf, "\nevent: "...)
		buf = append(buf, event...)
		buf = append(buf, "\ndata: {\"event\":\""...)
		buf = append(buf, event...)
		buf = append(buf, `","run_id":"`...)
		buf = append(buf, run...)
		buf = append(buf, `","data":`...)
		buf = append(buf, data...)
		buf = append(buf, `,"thread_id":"`...)
		buf = append(buf, thread...)
		buf = append(buf, `","id":"`...)
		buf = append(buf, id...)
		buf = append(buf, "\"}\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("on_run_start", `{"agent_id":"bench","run_id":"`+run+`","thread_id":"`+thread+`"}`) {
		return
	}
	// The idle agent's model, as the suite's script "idle", waits a minute
	// before its one token.
	tokens, interval := benchTokens, benchInterval
	if r.PathValue("id") == "idle" {
		tokens, interval = 1, time.Minute
	}
	next := time.Now()
	for i := range tokens {
		next = next.Add(interval)
		t := time.NewTimer(time.Until(next))
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
		delta := `{"delta":"token "}`
		if i == tokens-1 {
			delta = `{"delta":"token"}`
		}
		if !send("on_chat_model_stream", delta) {
			return
		}
	}
	if send("on_usage", `{"input_tokens":1,"output_tokens":75}`) {
		send("done", `{"stop_reason":"completed"}`)
	}
}

// serveFloor is serveBenchChild for floorServer: it prints "<url> <pprof
// address>" and serves until its standard input closes.
func serveFloor() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: (&floorServer{}).routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	d, err := diag.Start(diag.Flags{PprofAddr: "127.0.0.1:0"}, nil, quietLogger())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprof:", err)
		return 1
	}
	defer d.Close(context.Background())
	fmt.Printf("http://%s %s\n", ln.Addr(), d.PprofAddr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	return 0
}
