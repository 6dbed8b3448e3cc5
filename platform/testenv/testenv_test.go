package testenv

import (
	"context"
	"testing"
)

func TestRedis(t *testing.T) {
	t.Parallel()
	a, b := Redis(t), Redis(t)
	if a == b {
		t.Fatalf("two servers share %s", a)
	}
	for _, addr := range []string{a, b} {
		if err := redisPing(addr, ""); err != nil {
			t.Fatalf("ping %s: %v", addr, err)
		}
	}
}

func TestDocker(t *testing.T) {
	t.Parallel()
	cli := Docker(t)
	v, err := cli.ServerVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.APIVersion == "" {
		t.Fatal("engine reported no API version")
	}
}
