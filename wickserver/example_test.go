package wickserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wick-agent/wick/services/agent"
	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/wickserver"
)

// addScript is a scripted model: it calls the add tool, then answers. A
// real deployment names a hosted model instead ("gpt-4o-mini", ...).
const addScript = `{"turns":[
	{"text":"Let me add them.","tool_calls":[{"name":"add","arguments":{"a":2,"b":3}}]},
	{"text":"2 + 3 = 5."}
]}`

// A program that embeds Wick, registers a native Go tool and an agent that
// uses it, and asks the agent over the REST API. The tool runs in this
// process: it prints as it is called.
func Example() {
	scripts, err := os.MkdirTemp("", "wick-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(scripts)
	if err := os.WriteFile(filepath.Join(scripts, "add"), []byte(addScript), 0o600); err != nil {
		log.Fatal(err)
	}
	llm := llmgw.DefaultConfig()
	llm.ScriptDir = scripts // "script:add" replays scripts/add

	s, err := wickserver.New(
		wickserver.WithHTTPAddr("127.0.0.1:0"),
		wickserver.WithLLM(llm),
		wickserver.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		log.Fatal(err)
	}
	err = s.RegisterTool(&agent.FuncTool{
		ToolName: "add",
		ToolDesc: "Add two numbers",
		ToolParams: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"a": map[string]any{"type": "number"},
				"b": map[string]any{"type": "number"},
			},
			"required": []string{"a", "b"},
		},
		Fn: func(ctx context.Context, args map[string]any) (string, error) {
			a, _ := args["a"].(float64)
			b, _ := args["b"].(float64)
			fmt.Printf("add(%g, %g) runs in the program's process\n", a, b)
			return strconv.FormatFloat(a+b, 'f', -1, 64), nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	err = s.RegisterAgent("calculator", &agent.AgentConfig{
		Name:         "Calculator",
		Model:        "script:add",
		SystemPrompt: "You add numbers with the add tool.",
		Tools:        []string{"add"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer s.Shutdown(context.Background())

	resp, err := http.Post(s.HTTPURL()+"/agents/calculator/invoke", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"What is 2 + 3?"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var run struct {
		Messages []struct{ Role, Name, Content string }
		Content  string
	}
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil {
		log.Fatal(err)
	}
	for _, m := range run.Messages {
		if m.Role == "tool" {
			fmt.Printf("the %s tool returned %s\n", m.Name, m.Content)
		}
	}
	fmt.Println("answer:", run.Content)
	// Output:
	// add(2, 3) runs in the program's process
	// the add tool returned 5
	// answer: 2 + 3 = 5.
}
