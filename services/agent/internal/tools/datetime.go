package tools

import (
	"context"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // zone names must resolve on minimal images without /usr/share/zoneinfo

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Datetime returns the datetime tool: the current time in an IANA zone
// (default UTC).
func Datetime() loop.Tool { return datetimeTool(time.Now) }

func datetimeTool(now func() time.Time) loop.Tool {
	return &loop.FuncTool{
		ToolName: "datetime",
		ToolDesc: "Get the current date and time, in UTC or in the given IANA time zone (e.g. \"Europe/Paris\")",
		ToolParams: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"timezone": map[string]any{"type": "string", "description": "IANA time zone name; default UTC"},
			},
		},
		Fn: func(_ context.Context, args map[string]any) (string, error) {
			name := "UTC"
			if v, ok := args["timezone"]; ok && v != nil {
				s, ok := v.(string)
				if !ok {
					return "", fmt.Errorf("argument \"timezone\" must be a string")
				}
				if s = strings.TrimSpace(s); s != "" {
					name = s
				}
			}
			// "Local" would leak the server's zone and differ between replicas.
			if strings.EqualFold(name, "local") {
				return "", fmt.Errorf("unknown time zone %q: use an IANA name such as \"America/New_York\" or \"UTC\"", name)
			}
			loc, err := time.LoadLocation(name)
			if err != nil {
				return "", fmt.Errorf("unknown time zone %q: use an IANA name such as \"America/New_York\" or \"UTC\"", name)
			}
			t := now().In(loc)
			return toJSON(map[string]any{
				"datetime": t.Format(time.RFC3339),
				"timezone": loc.String(),
				"weekday":  t.Weekday().String(),
				"unix":     t.Unix(),
			})
		},
	}
}

// AskUser is the built-in tool by which the model asks the user a
// question. It waits on its run, so the run executor builds it per run; it
// is not in Builtins.
const AskUser = "ask_user"

// Task is the built-in tool that hands a goal to a sub-agent. It runs
// child loops, so the run executor builds it per run; it is not in
// Builtins.
const Task = "task"

// TaskGeneralPurpose is the sub-agent the task tool runs when none is named:
// the parent's own configuration, tools included. No declared sub-agent may
// take its name.
const TaskGeneralPurpose = "general-purpose"

// IsBuiltin reports whether name is a built-in tool's, which no native or
// external tool may take: the web tools' names too, offered or not.
func IsBuiltin(name string) bool {
	_, ok := Builtins()[name]
	return ok || name == AskUser || name == Task || name == WebSearch || name == FetchURL
}

// Builtins returns the built-in tools by name.
func Builtins() map[string]loop.Tool {
	return map[string]loop.Tool{
		"calculate": Calculate(),
		"datetime":  Datetime(),
		// discard_steps lives with the loop, which reads it back when it
		// builds each prompt.
		loop.DiscardStepsTool: loop.DiscardSteps(),
	}
}
