package tlsconf_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/wick-agent/wick/platform/tlsconf"
	"github.com/wick-agent/wick/platform/tlsconf/tlstest"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files tlsconf.Files
		want  error
	}{
		{"nothing", tlsconf.Files{}, nil},
		{"certificate and key", tlsconf.Files{CertFile: "c", KeyFile: "k"}, nil},
		{"mutual", tlsconf.Files{CertFile: "c", KeyFile: "k", CAFile: "ca"}, nil},
		{"mutual with a server name", tlsconf.Files{CertFile: "c", KeyFile: "k", CAFile: "ca", ServerName: "wick"}, nil},
		{"certificate without key", tlsconf.Files{CertFile: "c"}, tlsconf.ErrCertWithoutKey},
		{"key without certificate", tlsconf.Files{KeyFile: "k"}, tlsconf.ErrKeyWithoutCert},
		{"CA alone", tlsconf.Files{CAFile: "ca"}, tlsconf.ErrCAWithoutCert},
		{"CA and key", tlsconf.Files{CAFile: "ca", KeyFile: "k"}, tlsconf.ErrKeyWithoutCert},
		{"server name alone", tlsconf.Files{ServerName: "wick"}, tlsconf.ErrNameWithoutTLS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.files.Validate(); !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
			if _, err := tlsconf.Load(tc.files); tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Load = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestLoadRefusesBrokenFiles(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	dir := t.TempDir()
	good := tlstest.Write(t, dir, ca.Issue(t, "127.0.0.1"), ca)
	other := tlstest.Write(t, t.TempDir(), ca.Issue(t, "127.0.0.1"), nil)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files tlsconf.Files
	}{
		{"missing certificate", tlsconf.Files{CertFile: good.CertFile + ".missing", KeyFile: good.KeyFile}},
		{"missing CA", tlsconf.Files{CertFile: good.CertFile, KeyFile: good.KeyFile, CAFile: good.CAFile + ".missing"}},
		{"key of another certificate", tlsconf.Files{CertFile: good.CertFile, KeyFile: other.KeyFile}},
		{"CA file without a certificate", tlsconf.Files{CertFile: good.CertFile, KeyFile: good.KeyFile, CAFile: garbage}},
		{"certificate file without a certificate", tlsconf.Files{CertFile: garbage, KeyFile: good.KeyFile}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tlsconf.Load(tc.files); err == nil {
				t.Fatal("Load succeeded")
			}
		})
	}
	if _, err := tlsconf.Load(good); err != nil {
		t.Fatalf("Load of the good files: %v", err)
	}
}

// serverInfo is what one call saw of the connection it came on.
type serverInfo struct {
	mu           sync.Mutex
	clientSerial int64 // 0: no client certificate
}

// serve starts a gRPC server with the health service over creds and
// returns its address; every call records the client certificate's serial.
func serve(t *testing.T, creds credentials.TransportCredentials) (string, *serverInfo) {
	t.Helper()
	info := &serverInfo{}
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		var serial int64
		if p, ok := peer.FromContext(ctx); ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
				serial = ti.State.PeerCertificates[0].SerialNumber.Int64()
			}
		}
		info.mu.Lock()
		info.clientSerial = serial
		info.mu.Unlock()
		return h(ctx, req)
	}
	s := grpc.NewServer(grpc.Creds(creds), grpc.UnaryInterceptor(record))
	healthpb.RegisterHealthServer(s, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String(), info
}

// check makes one health call on a new connection and returns the serial of
// the server's certificate.
func check(t *testing.T, addr string, creds credentials.TransportCredentials) (int64, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var p peer.Peer
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
		return 0, err
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		t.Fatalf("peer auth %T, want TLS", p.AuthInfo)
	}
	return ti.State.PeerCertificates[0].SerialNumber.Int64(), nil
}

func TestMutualTLS(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	serverPair := ca.Issue(t, "127.0.0.1", "sandbox")
	server := tlstest.Load(t, tlstest.Write(t, t.TempDir(), serverPair, ca))
	addr, info := serve(t, server.ServerCredentials())

	clientPair := ca.Issue(t, "agent")
	client := tlstest.Load(t, tlstest.Write(t, t.TempDir(), clientPair, ca))
	stranger := tlstest.NewCA(t, "another CA")
	foreign := tlstest.Load(t, tlstest.Write(t, t.TempDir(), stranger.Issue(t, "agent"), ca))
	trustsOther := tlstest.Load(t, tlstest.Write(t, t.TempDir(), clientPair, stranger))
	wrongName := tlstest.Load(t, tlsconf.Files{CertFile: client.Files().CertFile, KeyFile: client.Files().KeyFile, CAFile: client.Files().CAFile, ServerName: "llmgw"})
	rightName := tlstest.Load(t, tlsconf.Files{CertFile: client.Files().CertFile, KeyFile: client.Files().KeyFile, CAFile: client.Files().CAFile, ServerName: "sandbox"})

	tests := []struct {
		name   string
		creds  credentials.TransportCredentials
		ok     bool
		client int64 // serial of the client certificate the server saw
	}{
		{"a client with a certificate of the CA", client.ClientCredentials(), true, clientPair.Serial},
		{"the server name overridden to one the certificate has", rightName.ClientCredentials(), true, clientPair.Serial},
		{"a client without a certificate", credentials.NewTLS(clientTLSWithoutCert(t, ca)), false, 0},
		{"a client certificate of another CA", foreign.ClientCredentials(), false, 0},
		{"a client that trusts another CA", trustsOther.ClientCredentials(), false, 0},
		{"a server name the certificate lacks", wrongName.ClientCredentials(), false, 0},
		{"a plaintext client", insecure.NewCredentials(), false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			serial, err := check(t, addr, tc.creds)
			if tc.ok != (err == nil) {
				t.Fatalf("call err = %v, want success %v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if serial != serverPair.Serial {
				t.Errorf("server certificate serial %d, want %d", serial, serverPair.Serial)
			}
			info.mu.Lock()
			defer info.mu.Unlock()
			if info.clientSerial != tc.client {
				t.Errorf("server saw client certificate %d, want %d", info.clientSerial, tc.client)
			}
		})
	}
}

func TestTLSWithoutCA(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	pair := ca.Issue(t, "127.0.0.1")
	server := tlstest.Load(t, tlstest.Write(t, t.TempDir(), pair, nil))
	if server.Mutual() {
		t.Fatal("a source without a CA is mutual")
	}
	addr, info := serve(t, server.ServerCredentials())
	// Without a CA the server asks for no client certificate: a client
	// that trusts the server's CA and has none is served.
	serial, err := check(t, addr, credentials.NewTLS(clientTLSWithoutCert(t, ca)))
	if err != nil {
		t.Fatal(err)
	}
	if serial != pair.Serial || info.clientSerial != 0 {
		t.Fatalf("server serial %d (want %d), client serial %d (want none)", serial, pair.Serial, info.clientSerial)
	}
	// A client of this source verifies against the system roots, which do
	// not hold the test CA.
	if _, err := check(t, addr, server.ClientCredentials()); err == nil {
		t.Fatal("a client without a CA trusted a server of the test CA")
	}
}

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestRotation(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "wick test CA")
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	const interval = time.Minute
	serverDir, clientDir := t.TempDir(), t.TempDir()
	first := ca.Issue(t, "127.0.0.1")
	server := tlstest.Load(t, tlstest.Write(t, serverDir, first, ca), tlsconf.WithClock(clk.Now), tlsconf.WithCheckInterval(interval))
	firstClient := ca.Issue(t, "agent")
	client := tlstest.Load(t, tlstest.Write(t, clientDir, firstClient, ca), tlsconf.WithClock(clk.Now), tlsconf.WithCheckInterval(interval))
	addr, info := serve(t, server.ServerCredentials())

	want := func(step string, serverSerial, clientSerial int64) {
		t.Helper()
		got, err := check(t, addr, client.ClientCredentials())
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		info.mu.Lock()
		defer info.mu.Unlock()
		if got != serverSerial || info.clientSerial != clientSerial {
			t.Fatalf("%s: server certificate %d, client certificate %d; want %d and %d", step, got, info.clientSerial, serverSerial, clientSerial)
		}
	}
	want("before rotation", first.Serial, firstClient.Serial)

	second := ca.Issue(t, "127.0.0.1")
	secondClient := ca.Issue(t, "agent")
	tlstest.Write(t, serverDir, second, ca)
	tlstest.Write(t, clientDir, secondClient, ca)
	clk.Advance(interval / 2)
	want("within the check interval", first.Serial, firstClient.Serial)
	clk.Advance(interval / 2)
	want("after the check interval", second.Serial, secondClient.Serial)

	// A rotation caught half-written (a key that is not the
	// certificate's) keeps the loaded pair and is retried.
	third := ca.Issue(t, "127.0.0.1")
	tlstest.Replace(t, server.Files().CertFile, third.Cert)
	clk.Advance(interval)
	want("half-written files", second.Serial, secondClient.Serial)
	tlstest.Replace(t, server.Files().KeyFile, third.Key)
	clk.Advance(interval)
	want("completed files", third.Serial, secondClient.Serial)

	// A new CA is trusted from the next check on.
	next := tlstest.NewCA(t, "next CA")
	nextServer := next.Issue(t, "127.0.0.1")
	tlstest.Write(t, serverDir, nextServer, next)
	tlstest.Write(t, clientDir, next.Issue(t, "agent"), next)
	clk.Advance(interval)
	if got, err := check(t, addr, client.ClientCredentials()); err != nil || got != nextServer.Serial {
		t.Fatalf("after a CA rotation: server certificate %d, %v; want %d", got, err, nextServer.Serial)
	}
}

// clientTLSWithoutCert is a client that trusts ca and has no certificate.
func clientTLSWithoutCert(t *testing.T, ca *tlstest.CA) *tls.Config {
	t.Helper()
	return &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS13}
}
