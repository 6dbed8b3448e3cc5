package redisconn

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
)

// TestOpen connects to a real redis-server that requires a password,
// in every form -redis-addr takes, and checks that no error shows it.
func TestOpen(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "redis-server not found in PATH")
	}
	const pass = "pa55-w0rd"
	port := strconv.Itoa(testenv.FreePort(t))
	addr := "127.0.0.1:" + port
	testenv.NewProc(t, "redis-server", bin, []string{"--port", port, "--bind", "127.0.0.1", "--save", "",
		"--requirepass", pass, "--dir", t.TempDir()}, testenv.RedisServing(addr, pass)).Start()

	ctx := context.Background()
	good := []struct{ name, target, key string }{
		{"url with password", "redis://:" + pass + "@" + addr, "k0"},
		{"url with user and db", "redis://default:" + pass + "@" + addr + "/3", "k3"},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			rdb, err := Open(ctx, tc.target, "wick-agent@test")
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			if err := rdb.Set(ctx, tc.key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			name, err := rdb.ClientGetName(ctx).Result()
			if err != nil || name != "wick-agent@test" {
				t.Fatalf("client name %q, %v", name, err)
			}
		})
	}
	// The db of the URL is the one used: db 3 has the key, db 0 does not.
	rdb0, err := Open(ctx, "redis://:"+pass+"@"+addr+"/0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb0.Close()
	if n, _ := rdb0.Exists(ctx, "k3").Result(); n != 0 {
		t.Fatalf("db 0 has the key written to db 3")
	}

	bad := []struct{ name, target, want string }{
		{"no password", addr, "NOAUTH"},
		{"wrong password", "redis://:wrong-" + pass + "@" + addr, "WRONGPASS"},
		{"bad db", "redis://:" + pass + "@" + addr + "/x", "invalid database"},
		{"other scheme", "http://:" + pass + "@" + addr, "want redis://"},
		{"password without a URL", "user:" + pass + "@" + addr, "need the URL form"},
		{"empty element", addr + ",", "want host:port"},
		{"empty", "", "empty"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			rdb, err := Open(ctx, tc.target, "")
			if err == nil {
				rdb.Close()
				t.Fatalf("Open(%q) succeeded", tc.target)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), pass) {
				t.Fatalf("error shows the password: %q", err)
			}
		})
	}
	if s := ShownRedis("redis://:" + pass + "@" + addr); strings.Contains(s, pass) || !strings.Contains(s, addr) {
		t.Fatalf("ShownRedis = %q", s)
	}
}
