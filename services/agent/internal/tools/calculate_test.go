package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want string
	}{
		{"2+2", "4"},
		{"2 + 3 * 4", "14"},
		{"(2 + 3) * 4", "20"},
		{"10 / 4", "2.5"},
		{"10 % 4", "2"},
		{"2 ^ 10", "1024"},
		{"2 ** 3", "8"},
		{"2 ^ 3 ^ 2", "512"}, // right-associative
		{"-2 ^ 2", "-4"},     // unary minus binds looser than ^
		{"(-2) ^ 2", "4"},
		{"2 ^ -1", "0.5"},
		{"--3", "3"},
		{"+3 - -3", "6"},
		{"1.5 * 2", "3"},
		{".5 + .25", "0.75"},
		{"1e3 + 2.5E-1", "1000.25"},
		{"sqrt(16) + abs(-3)", "7"},
		{"min(3, 1, 2) + max(4, 9)", "10"},
		{"floor(2.7) + ceil(2.1) + round(2.5)", "8"},
		{"pi", "3.141592653589793"},
		{"round(e * 1000)", "2718"},
		{"log10(1000) + log2(8) + ln(1)", "6"},
		{"0.1 + 0.2", "0.30000000000000004"},
		{"2^60", "1.152921504606847e+18"},
		{" 7 ", "7"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			v, err := Eval(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := FormatNumber(v); got != tt.want {
				t.Fatalf("%s = %s, want %s", tt.expr, got, tt.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want string
	}{
		{"", "empty"},
		{"1 / 0", "division by zero"},
		{"5 % 0", "modulo by zero"},
		{"sqrt(-1)", "negative"},
		{"ln(0)", "non-positive"},
		{"2 +", "ends too early"},
		{"(1 + 2", `expected ")"`},
		{"1 + 2)", `unexpected ")"`},
		{"1 2", `unexpected "2"`},
		{"os.system('rm -rf /')", "unexpected character '.'"},
		{"__import__('os')", "unexpected character '\\''"},
		{"__import__(1)", "unknown function"},
		{"exec(1)", "unknown function"},
		{"2 & 3", "unexpected character"},
		{"x", `unknown name "x"`},
		{"max()", "at least 1"},
		{"sqrt(1, 2)", "1 argument"},
		{"1..2", "bad number"},
		{"10^400", "not a finite number"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "nested more than"},
		{strings.Repeat("-", 100) + "1", "nested more than"},
		{strings.Repeat("1+", 600) + "1", "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			_, err := Eval(tt.expr)
			if !errors.Is(err, ErrExpression) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Eval(%q) error %v, want %q", tt.expr, err, tt.want)
			}
		})
	}
}

func TestCalculateTool(t *testing.T) {
	t.Parallel()
	c := Calculate()
	if c.Name() != "calculate" || c.Parameters()["type"] != "object" {
		t.Fatal("shape")
	}
	out, err := c.Execute(context.Background(), map[string]any{"expr": "2+2"})
	if err != nil || out != "4" {
		t.Fatalf("%q %v", out, err)
	}
	if out, _ := c.Execute(context.Background(), map[string]any{"expression": "3*3"}); out != "9" {
		t.Fatalf("alias %q", out)
	}
	if _, err := c.Execute(context.Background(), map[string]any{}); err == nil {
		t.Fatal("missing expr accepted")
	}
}

func TestDatetime(t *testing.T) {
	t.Parallel()
	fixed := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // a Sunday
	tool := datetimeTool(func() time.Time { return fixed })
	tests := []struct {
		tz      string
		want    string
		wantErr bool
	}{
		{"", `"datetime":"2026-03-29T00:30:00Z"`, false},
		{"UTC", `"timezone":"UTC"`, false},
		{"Europe/Paris", `"datetime":"2026-03-29T01:30:00+01:00"`, false},
		{"America/New_York", `"datetime":"2026-03-28T20:30:00-04:00","timezone":"America/New_York","unix":1774744200,"weekday":"Saturday"`, false},
		{"Asia/Kolkata", `"datetime":"2026-03-29T06:00:00+05:30"`, false},
		{"Mars/Olympus", "", true},
		{"Local", "", true},
		{"../../etc/passwd", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.tz, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{}
			if tt.tz != "" {
				args["timezone"] = tt.tz
			}
			out, err := tool.Execute(context.Background(), args)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "unknown time zone") {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || !strings.Contains(out, tt.want) {
				t.Fatalf("%q %v, want %q", out, err, tt.want)
			}
		})
	}
	if _, err := tool.Execute(context.Background(), map[string]any{"timezone": 5.0}); err == nil {
		t.Fatal("non-string timezone accepted")
	}
	b := Builtins()
	if b["calculate"] == nil || b["datetime"] == nil || b["discard_steps"] == nil || len(b) != 3 || !IsBuiltin(AskUser) {
		t.Fatalf("builtins %v", b)
	}
}
