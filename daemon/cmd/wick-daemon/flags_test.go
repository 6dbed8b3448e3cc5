package main

import (
	"strings"
	"testing"
)

// TestTunnelFlag: -tunnel takes name=port or name=/socket, several at once
// separated by commas, and refuses anything else naming what is wrong.
func TestTunnelFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the rules, or the error's text
		ok   bool
	}{
		{[]string{"-tunnel", "model=47100", "-tunnel", "otlp=/run/wick/otlp.sock"}, "model=127.0.0.1:47100,otlp=/run/wick/otlp.sock", true},
		{[]string{"-tunnel", "model=47100,egress=47101"}, "model=127.0.0.1:47100,egress=127.0.0.1:47101", true},
		{[]string{"-tunnel", "model"}, `tunnel "model": want name=port or name=/absolute/socket/path`, false},
		{[]string{"-tunnel", "=47100"}, `tunnel "=47100": want name=port`, false},
		{[]string{"-tunnel", "Model=47100"}, `the name in [a-z0-9-]`, false},
		{[]string{"-tunnel", "model=0"}, `tunnel "model=0": want name=port`, false},
		{[]string{"-tunnel", "model=65536"}, `tunnel "model=65536": want name=port`, false},
		{[]string{"-tunnel", "model=relative.sock"}, `tunnel "model=relative.sock": want name=port`, false},
		{[]string{"-tunnel", "model=47100", "-tunnel", "model=/s"}, `the name model is taken`, false},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f, err := parse(tc.args)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil || f.tunnels.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", f, err, tc.want)
			}
		})
	}
}
