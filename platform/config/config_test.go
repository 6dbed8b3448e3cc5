package config

import (
	"flag"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{name: "default", want: ":1"},
		{name: "env", env: map[string]string{"WICK_GRPC_ADDR": ":2"}, want: ":2"},
		{name: "flag wins", args: []string{"-grpc-addr", ":3"}, env: map[string]string{"WICK_GRPC_ADDR": ":2"}, want: ":3"},
		{name: "bad env value", env: map[string]string{"WICK_WORKERS": "many"}, want: ":1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			addr := fs.String("grpc-addr", ":1", "")
			fs.Int("workers", 1, "")
			err := Parse(fs, tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if *addr != tt.want {
				t.Errorf("addr = %q, want %q", *addr, tt.want)
			}
		})
	}
}
