// Package diag serves an operator's diagnostics listeners, both off by
// default: Go's pprof profiles, on a loopback address only, and the
// process's Prometheus metrics.
package diag

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrNotLoopback refuses a pprof address other hosts could reach: profiles
// show memory contents, command lines and the program's structure.
var ErrNotLoopback = errors.New("pprof is served on a loopback address only")

// readHeaderTimeout bounds a request's headers. There is no write timeout:
// a CPU profile or trace streams for as long as it was asked to run.
const readHeaderTimeout = 10 * time.Second

// Flags are the listeners' addresses; empty serves none.
type Flags struct {
	PprofAddr   string
	MetricsAddr string
}

// RegisterPprof defines -pprof-addr on fs.
func (f *Flags) RegisterPprof(fs *flag.FlagSet) {
	fs.StringVar(&f.PprofAddr, "pprof-addr", "", "loopback address (127.0.0.1:6060) serving Go's pprof profiles at /debug/pprof/; empty: off")
}

// Register defines -pprof-addr and -metrics-addr on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.RegisterPprof(fs)
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "", "address serving this process's Prometheus metrics at /metrics; empty: off")
}

// Listeners are the running listeners.
type Listeners struct {
	servers []*http.Server
	// PprofAddr and MetricsAddr are where they listen ("" when off).
	PprofAddr, MetricsAddr string
}

// Start opens the listeners f asks for: pprof refuses any address that is
// not loopback, and metrics serves reg (nil: none).
func Start(f Flags, reg *prometheus.Registry, log *slog.Logger) (*Listeners, error) {
	l := &Listeners{}
	if f.PprofAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		addr, err := l.serve(f.PprofAddr, mux, true)
		if err != nil {
			return nil, fmt.Errorf("-pprof-addr: %w", err)
		}
		l.PprofAddr = addr
		log.Info("pprof profiles served", "url", "http://"+addr+"/debug/pprof/")
	}
	if f.MetricsAddr != "" && reg != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		addr, err := l.serve(f.MetricsAddr, mux, false)
		if err != nil {
			l.Close(context.Background())
			return nil, fmt.Errorf("-metrics-addr: %w", err)
		}
		l.MetricsAddr = addr
		log.Info("Prometheus metrics served", "url", "http://"+addr+"/metrics")
	}
	return l, nil
}

// serve listens on addr and serves h; loopback refuses an address whose
// listener is not on a loopback interface, checked on the listener itself
// so that a name like localhost is judged by what it resolved to.
func (l *Listeners) serve(addr string, h http.Handler, loopback bool) (string, error) {
	if host, _, err := net.SplitHostPort(addr); err != nil {
		return "", err
	} else if loopback && host == "" {
		return "", fmt.Errorf("%w: %q listens on every interface", ErrNotLoopback, addr)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	if ta, ok := lis.Addr().(*net.TCPAddr); loopback && (!ok || !ta.IP.IsLoopback()) {
		lis.Close()
		return "", fmt.Errorf("%w: %q is not", ErrNotLoopback, addr)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
	l.servers = append(l.servers, srv)
	go func() { _ = srv.Serve(lis) }()
	return lis.Addr().String(), nil
}

// Close stops the listeners, ending requests in flight when ctx ends.
func (l *Listeners) Close(ctx context.Context) {
	for _, s := range l.servers {
		if err := s.Shutdown(ctx); err != nil {
			s.Close()
		}
	}
}
