// Package tlstest makes throwaway certificate authorities and certificates
// for tests of TLS between services: nothing is committed, every test run
// has its own keys.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-agent/wick/platform/tlsconf"
)

// validity of the certificates made here: long enough for any test run.
const validity = time.Hour

// serials numbers every certificate of the process, so a test can tell a
// rotated certificate from the one before.
var serials atomic.Int64

// CA is a certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA returns a fresh self-signed CA named name.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serials.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// PEM is the CA's certificate.
func (ca *CA) PEM() []byte { return ca.pem }

// Pool is a certificate pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Pair is a certificate and its key, PEM-encoded.
type Pair struct {
	Cert, Key []byte
	// Serial is the certificate's serial number, unique in the process.
	Serial int64
}

// Issue returns a certificate for server and client use, valid for hosts
// (DNS names or IP addresses).
func (ca *CA) Issue(tb testing.TB, hosts ...string) Pair {
	tb.Helper()
	key := newKey(tb)
	serial := serials.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "wick test"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return Pair{
		Cert:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Serial: serial,
	}
}

// Write writes the pair and the CA into dir as tls.crt, tls.key and ca.crt
// (the names of a cert-manager secret), each replaced by a rename as a
// Kubernetes secret volume does, and returns the files. ca may be nil.
func Write(tb testing.TB, dir string, p Pair, ca *CA) tlsconf.Files {
	tb.Helper()
	f := tlsconf.Files{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	Replace(tb, f.CertFile, p.Cert)
	Replace(tb, f.KeyFile, p.Key)
	if ca != nil {
		f.CAFile = filepath.Join(dir, "ca.crt")
		Replace(tb, f.CAFile, ca.PEM())
	}
	return f
}

// Load loads f, failing tb if it does not.
func Load(tb testing.TB, f tlsconf.Files, opts ...tlsconf.Option) *tlsconf.Source {
	tb.Helper()
	src, err := tlsconf.Load(f, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// Replace writes data to path through a rename, so that a reader sees the
// old file or the new one, never a part.
func Replace(tb testing.TB, path string, data []byte) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}
