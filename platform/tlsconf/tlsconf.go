// Package tlsconf gives a service its TLS identity from PEM files — its
// certificate and key, and the CA that signs its peers — for mutual TLS
// between the suite's services. The files are read again when they change, so
// a certificate rotated on disk (by cert-manager, say) is presented and
// trusted from the next handshake on, without a restart.
package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

// DefaultCheckInterval bounds how often the files are looked at: at most one
// stat of each per interval, however many handshakes there are. A rotation is
// picked up within it (cert-manager renews at two thirds of a certificate's
// life, so seconds do not matter; a stat per handshake would).
const DefaultCheckInterval = 10 * time.Second

// MinVersion is the lowest TLS version between the suite's services: every
// service is this code, so there is no old client to accommodate.
const MinVersion = tls.VersionTLS13

// Errors of a configuration that is half there; each names what is missing.
var (
	ErrCertWithoutKey = errors.New("a TLS certificate without its key: give both -tls-cert and -tls-key")
	ErrKeyWithoutCert = errors.New("a TLS key without its certificate: give both -tls-cert and -tls-key")
	ErrCAWithoutCert  = errors.New("a TLS CA without a certificate: mutual TLS also needs this service's own -tls-cert and -tls-key")
	ErrNameWithoutTLS = errors.New("a TLS server name without a certificate: -tls-server-name needs -tls-cert and -tls-key")
)

// Files names the PEM files of a TLS identity.
type Files struct {
	// CertFile is the certificate (chain, leaf first) presented as server
	// and as client; KeyFile is its private key. Both or neither.
	CertFile, KeyFile string
	// CAFile is the CA bundle peers are verified against. Set, a server
	// requires a client certificate it signed (mutual TLS) and a client
	// verifies servers against it; empty, a server asks for no client
	// certificate and a client uses the system roots.
	CAFile string
	// ServerName, when set, is the name a client verifies in every server's
	// certificate instead of the host of the target it dials (for IP
	// targets, or one certificate name shared by the suite).
	ServerName string
}

// Enabled reports whether any file is named: TLS is then on, or the
// configuration is refused by Validate.
func (f Files) Enabled() bool {
	return f.CertFile != "" || f.KeyFile != "" || f.CAFile != "" || f.ServerName != ""
}

// Validate refuses a half configuration, which would otherwise leave a
// service in plaintext while its operator believes it is not.
func (f Files) Validate() error {
	switch {
	case f.CertFile != "" && f.KeyFile == "":
		return ErrCertWithoutKey
	case f.KeyFile != "" && f.CertFile == "":
		return ErrKeyWithoutCert
	case f.CAFile != "" && f.CertFile == "":
		return ErrCAWithoutCert
	case f.ServerName != "" && f.CertFile == "":
		return ErrNameWithoutTLS
	}
	return nil
}

// Option configures Load.
type Option func(*Source)

// WithMinVersion sets the lowest TLS version accepted (MinVersion by
// default); an edge facing clients outside the suite may need TLS 1.2.
func WithMinVersion(v uint16) Option { return func(s *Source) { s.minVersion = v } }

// WithCheckInterval sets how often the files are looked at for a change
// (DefaultCheckInterval); zero looks at every handshake.
func WithCheckInterval(d time.Duration) Option { return func(s *Source) { s.interval = d } }

// WithLogger logs reloads and failed reloads.
func WithLogger(l *slog.Logger) Option { return func(s *Source) { s.logger = l } }

// WithClock replaces time.Now, for tests of the check interval.
func WithClock(now func() time.Time) Option { return func(s *Source) { s.now = now } }

// Source is a TLS identity loaded from files and reloaded when they change.
// It is safe for concurrent use by every handshake of a process.
type Source struct {
	files      Files
	minVersion uint16
	interval   time.Duration
	logger     *slog.Logger
	now        func() time.Time

	mu      sync.Mutex
	cur     *material
	checked time.Time
}

// material is one loaded state of the files.
type material struct {
	cert  *tls.Certificate
	roots *x509.CertPool // nil without a CA file
	stats []os.FileInfo  // of cert, key and CA files, to see a change
}

// Load validates f and reads the files once, so that a missing or broken
// file fails the start rather than the first call.
func Load(f Files, opts ...Option) (*Source, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.CertFile == "" {
		return nil, errors.New("tlsconf: no certificate configured")
	}
	s := &Source{files: f, minVersion: MinVersion, interval: DefaultCheckInterval, logger: slog.New(slog.DiscardHandler), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	stats, err := s.stat()
	if err != nil {
		return nil, err
	}
	m, err := s.load(stats)
	if err != nil {
		return nil, err
	}
	s.cur, s.checked = m, s.now()
	return s, nil
}

// Files returns the files the source reads.
func (s *Source) Files() Files { return s.files }

// Mutual reports whether peers must present a certificate the CA signed.
func (s *Source) Mutual() bool { return s.files.CAFile != "" }

func (s *Source) paths() []string {
	p := []string{s.files.CertFile, s.files.KeyFile}
	if s.files.CAFile != "" {
		p = append(p, s.files.CAFile)
	}
	return p
}

func (s *Source) stat() ([]os.FileInfo, error) {
	var stats []os.FileInfo
	for _, p := range s.paths() {
		fi, err := os.Stat(p) // follows the symlinks of a Kubernetes secret volume
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		stats = append(stats, fi)
	}
	return stats, nil
}

func (s *Source) load(stats []os.FileInfo) (*material, error) {
	cert, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: certificate %s and key %s: %w", s.files.CertFile, s.files.KeyFile, err)
	}
	m := &material{cert: &cert, stats: stats}
	if s.files.CAFile != "" {
		pem, err := os.ReadFile(s.files.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		m.roots = x509.NewCertPool()
		if !m.roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", s.files.CAFile)
		}
	}
	return m, nil
}

// changed reports whether a file is another one (a secret volume swaps a
// symlink) or was rewritten in place.
func changed(old, cur []os.FileInfo) bool {
	for i := range old {
		if !os.SameFile(old[i], cur[i]) || !old[i].ModTime().Equal(cur[i].ModTime()) || old[i].Size() != cur[i].Size() {
			return true
		}
	}
	return false
}

// current returns the loaded material, reloading it first when the interval
// has passed and a file changed. A reload that fails (a key written after
// its certificate, say) keeps the previous material and is tried again at
// the next check.
func (s *Source) current() *material {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.checked) < s.interval {
		return s.cur
	}
	s.checked = now
	stats, err := s.stat()
	if err != nil {
		s.logger.Warn("TLS files unreadable; keeping the loaded certificate", "error", err)
		return s.cur
	}
	if !changed(s.cur.stats, stats) {
		return s.cur
	}
	m, err := s.load(stats)
	if err != nil {
		s.logger.Warn("TLS files changed but do not load; keeping the loaded certificate", "error", err)
		return s.cur
	}
	s.cur = m
	s.logger.Info("TLS certificate reloaded", "cert", s.files.CertFile, "not_after", m.cert.Leaf.NotAfter)
	return m
}

// ServerCredentials are gRPC server credentials that take the current
// certificate and CA at every handshake, and require a client certificate
// signed by the CA when one is configured.
func (s *Source) ServerCredentials() credentials.TransportCredentials {
	// gRPC applies its defaults (HTTP/2 in ALPN) to the configuration
	// GetConfigForClient returns.
	return credentials.NewTLS(&tls.Config{
		MinVersion: s.minVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.current()
			cfg := &tls.Config{MinVersion: s.minVersion, Certificates: []tls.Certificate{*m.cert}}
			if m.roots != nil {
				cfg.ClientCAs = m.roots
				cfg.ClientAuth = tls.RequireAndVerifyClientCert
			}
			return cfg, nil
		},
	})
}

// clientConfig returns the client configuration of one handshake: the
// current CA as roots and the current certificate offered to the server.
func (s *Source) clientConfig() *tls.Config {
	m := s.current()
	return &tls.Config{
		MinVersion: s.minVersion,
		RootCAs:    m.roots,
		// Always offered, even when the server names other acceptable
		// CAs, so that a wrong certificate is refused with a clear alert
		// rather than silently not sent.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return m.cert, nil },
	}
}

// ClientCredentials are gRPC client credentials that verify the server
// against the CA (or the system roots) under the name of Files.ServerName,
// or else the host of the target, and present the current certificate.
func (s *Source) ClientCredentials() credentials.TransportCredentials {
	return &clientCreds{src: s, serverName: s.files.ServerName}
}

// clientCreds builds the TLS configuration afresh for every handshake:
// tls.Config has a hook for the certificate a client presents but none for
// the roots it verifies with, so a rotated CA needs a new configuration.
type clientCreds struct {
	src        *Source
	serverName string
}

func (c *clientCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	// gRPC's TLS credentials verify the host of the authority they are
	// given, whatever the configuration's ServerName says. (gRPC also
	// takes Info().ServerName as the channel's authority, but that field
	// is deprecated.)
	if c.serverName != "" {
		authority = c.serverName
	}
	return credentials.NewTLS(c.src.clientConfig()).ClientHandshake(ctx, authority, raw)
}

func (c *clientCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("tlsconf: client credentials cannot serve")
}

func (c *clientCreds) Info() credentials.ProtocolInfo {
	return credentials.NewTLS(&tls.Config{ServerName: c.serverName, MinVersion: c.src.minVersion}).Info()
}

func (c *clientCreds) Clone() credentials.TransportCredentials {
	cp := *c
	return &cp
}

// OverrideServerName is part of credentials.TransportCredentials (deprecated
// there in favour of grpc.WithAuthority).
func (c *clientCreds) OverrideServerName(name string) error {
	c.serverName = name
	return nil
}
