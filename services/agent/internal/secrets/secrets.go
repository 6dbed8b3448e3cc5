// Package secrets resolves the ${secret:NAME} references an agent's
// configuration may hold in the values it hands to processes and servers
// (MCP server env and headers, an ACP agent's env): NAME is a file of a
// directory of mounted secrets, as Kubernetes mounts a Secret, so keys stay
// out of the stored configuration and the API's answers.
package secrets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

// MaxBytes bounds one secret's file: secrets are keys and tokens, and a
// value goes into a process environment or an HTTP header.
const MaxBytes = 64 << 10

// ErrNotFound is what Expand returns for a reference to a secret that is
// not mounted (or when no directory of secrets is configured).
var ErrNotFound = errcode.New(codes.FailedPrecondition, "secret not mounted")

// refRE matches one reference. A name is a Kubernetes Secret key that does
// not start with a dot: the ..data links a mount keeps beside the keys and
// any path outside the directory are out of reach.
var refRE = regexp.MustCompile(`\$\{secret:(` + namePattern + `)\}`)

const namePattern = `[A-Za-z0-9_-][A-Za-z0-9._-]{0,252}`

var nameRE = regexp.MustCompile(`^` + namePattern + `$`)

// openMark starts a reference; a value holding one that refRE does not
// match is malformed.
const openMark = "${secret:"

// schemeRE is what may surround references in a value the API shows as
// written: an authorization scheme such as "Bearer ".
var schemeRE = regexp.MustCompile(`^(?:[A-Z][A-Za-z]{1,15} )?$`)

// Check reports a malformed reference in v: an opening ${secret: that does
// not close on a valid name.
func Check(v string) error {
	rest := refRE.ReplaceAllString(v, "")
	if strings.Contains(rest, openMark) {
		// The value is not quoted back: it may hold a key.
		return errors.New("malformed secret reference: want ${secret:NAME}, NAME made of letters, digits, '.', '_' and '-', not starting with '.'")
	}
	return nil
}

// Shown reports whether v can be shown as written: it holds references,
// and nothing else but an authorization scheme in front of them, so no key
// is in its text.
func Shown(v string) bool {
	if !refRE.MatchString(v) {
		return false
	}
	return schemeRE.MatchString(refRE.ReplaceAllString(v, ""))
}

// Dir reads secrets from the files of a directory. The zero Dir (no
// directory) has no secrets.
type Dir struct{ path string }

// NewDir returns the secrets of dir; an empty dir has none.
func NewDir(dir string) Dir { return Dir{path: dir} }

// Expand replaces every reference in v with its secret; a value with no
// reference is returned as it is. Each call reads the files again, so a
// rotated secret is used by the next process or connection.
func (d Dir) Expand(v string) (string, error) {
	if !strings.Contains(v, openMark) {
		return v, nil
	}
	if err := Check(v); err != nil {
		return "", err
	}
	var firstErr error
	out := refRE.ReplaceAllStringFunc(v, func(ref string) string {
		s, err := d.read(refRE.FindStringSubmatch(ref)[1])
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return s
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// ExpandMap returns a copy of m with every value expanded; nil stays nil.
func (d Dir) ExpandMap(m map[string]string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		x, err := d.Expand(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = x
	}
	return out, nil
}

// read returns the secret name, without the one line ending a file
// written by an editor or `echo` ends with.
func (d Dir) read(name string) (string, error) {
	if d.path == "" {
		return "", fmt.Errorf("%w: %s (no directory of secrets is configured: -secrets-dir)", ErrNotFound, name)
	}
	root, err := os.OpenRoot(d.path)
	if err != nil {
		return "", fmt.Errorf("open the secrets directory: %w", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %s (no such file in the secrets directory)", ErrNotFound, name)
	}
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", name, err)
	}
	if len(data) > MaxBytes {
		return "", fmt.Errorf("secret %s is larger than %d bytes", name, MaxBytes)
	}
	s := strings.TrimSuffix(string(data), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}
