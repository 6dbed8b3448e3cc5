package dockerbox

import (
	"archive/tar"
	"bytes"
	"testing"
)

func TestValidateHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host string
		ok   bool
	}{
		{"tcp://10.0.0.5:2376", true},
		{"unix:///var/run/docker.sock", true},
		{"http://10.0.0.5:2375", false},
		{"ssh://me@host", false},
		{"10.0.0.5:2376", false},
		{"tcp://", false},
		{"::::", false},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			if err := ValidateHost(tc.host); (err == nil) != tc.ok {
				t.Fatalf("ValidateHost(%q) = %v", tc.host, err)
			}
		})
	}
}

func TestParsePasswd(t *testing.T) {
	t.Parallel()
	content := "root:x:0:0:root:/root:/bin/sh\nbroken line\napp:x:1001:1002::/app:/bin/sh\nbad:x:a:b::/:/bin/sh\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "passwd", Mode: 0o644, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	tw.Close()
	got, err := parsePasswdTar(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []passwdEntry{{"root", 0, 0}, {"app", 1001, 1002}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestCappedOutput(t *testing.T) {
	t.Parallel()
	c := &capped{left: 5}
	var out, errb bytes.Buffer
	o, e := c.writer(&out), c.writer(&errb)
	for _, w := range []struct {
		w interface{ Write([]byte) (int, error) }
		s string
	}{{o, "abc"}, {e, "defg"}, {o, "hij"}} {
		if n, err := w.w.Write([]byte(w.s)); err != nil || n != len(w.s) {
			t.Fatalf("write %q: %d %v", w.s, n, err)
		}
	}
	if out.String() != "abc" || errb.String() != "de" || !c.truncated() {
		t.Fatalf("out %q err %q truncated %v", out.String(), errb.String(), c.truncated())
	}
}
