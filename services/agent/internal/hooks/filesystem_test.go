package hooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tools"
	"github.com/wick-agent/wick/wickfs"
)

func findTool(t *testing.T, s *loop.AgentState, name string) loop.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("tool %q not registered", name)
	return nil
}

func setupFS(t *testing.T, files map[string]string, opts ...hooks.FilesystemOption) (*memFS, *loop.AgentState, *hooks.FilesystemHook) {
	t.Helper()
	mfs := newMemFS(files)
	h := hooks.NewFilesystemHook(mfs, opts...)
	state := &loop.AgentState{}
	if err := h.BeforeAgent(context.Background(), state); err != nil {
		t.Fatal(err)
	}
	return mfs, state, h
}

func TestFilesystemRegistersSevenTools(t *testing.T) {
	t.Parallel()
	_, state, h := setupFS(t, nil)
	var names []string
	for _, tl := range state.Tools() {
		names = append(names, tl.Name())
		p := tl.Parameters()
		if p["type"] != "object" || p["properties"] == nil {
			t.Errorf("%s: schema %v", tl.Name(), p)
		}
		if tl.Description() == "" {
			t.Errorf("%s: no description", tl.Name())
		}
	}
	if got := strings.Join(names, ","); got != "edit_file,execute,glob,grep,ls,read_file,write_file" {
		t.Fatalf("tools %s", got)
	}
	if h.Name() != "filesystem" || strings.Join(h.Phases(), ",") != "before_agent,wrap_tool_call" {
		t.Fatalf("name/phases %s %v", h.Name(), h.Phases())
	}
}

func TestFilesystemTools(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"/workspace/main.py":  "import os\nprint('hi')\n",
		"/workspace/lib/a.py": "def a():\n    return 1\n",
		"/workspace/notes.md": "todo\n",
	}
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		want    string // substring of the output
		wantErr string
	}{
		{"ls", "ls", map[string]any{"path": "/workspace"}, `{"name":"lib","type":"dir","size":0}`, ""},
		{"ls missing arg", "ls", map[string]any{}, "", `missing required argument "path"`},
		{"ls wrong type", "ls", map[string]any{"path": 3.0}, "", `argument "path" must be a string`},
		{"read numbered", "read_file", map[string]any{"path": "/workspace/main.py"}, "     1\timport os\n     2\tprint('hi')\n", ""},
		{"read missing file", "read_file", map[string]any{"path": "/workspace/nope"}, "", "not exist"},
		{"read bad offset", "read_file", map[string]any{"path": "/workspace/main.py", "offset": -1.0}, "", "non-negative integer"},
		{"glob", "glob", map[string]any{"pattern": "*.py"}, `"/workspace/lib/a.py","/workspace/main.py"`, ""},
		{"grep", "grep", map[string]any{"pattern": "return \\d"}, `{"file":"/workspace/lib/a.py","line":2,"text":"    return 1"}`, ""},
		{"grep bad regex", "grep", map[string]any{"pattern": "("}, "", "missing closing"},
		{"execute", "execute", map[string]any{"command": "echo hi"}, "ran: echo hi\n[exit code 0]", ""},
		{"execute missing command", "execute", map[string]any{}, "", `missing required argument "command"`},
		{"edit not found", "edit_file", map[string]any{"path": "/workspace/notes.md", "old_text": "zzz", "new_text": "y"}, "", "old_text not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, state, _ := setupFS(t, files)
			out, err := findTool(t, state, tt.tool).Execute(context.Background(), tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tt.want) {
				t.Fatalf("output %q does not contain %q", out, tt.want)
			}
		})
	}
}

func TestReadFileWindow(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	_, state, _ := setupFS(t, map[string]string{"/w/f.txt": b.String(), "/w/empty.txt": "", "/w/long.txt": strings.Repeat("x", 50)},
		hooks.WithReadLimit(4), hooks.WithMaxLineChars(10))
	read := findTool(t, state, "read_file")
	ctx := context.Background()

	out, err := read.Execute(ctx, map[string]any{"path": "/w/f.txt"})
	if err != nil {
		t.Fatal(err)
	}
	want := "     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tline 4\n\n... (more lines remain; call read_file with offset=4 to continue)\n"
	if out != want {
		t.Fatalf("default window:\n%q\nwant\n%q", out, want)
	}
	out, err = read.Execute(ctx, map[string]any{"path": "/w/f.txt", "offset": 8.0, "limit": 5.0})
	if err != nil {
		t.Fatal(err)
	}
	if out != "     9\tline 9\n    10\tline 10\n" {
		t.Fatalf("last window %q", out)
	}
	if _, err := read.Execute(ctx, map[string]any{"path": "/w/f.txt", "offset": 20.0}); err == nil {
		t.Fatal("offset past the end accepted")
	}
	if out, _ := read.Execute(ctx, map[string]any{"path": "/w/empty.txt"}); !strings.Contains(out, "empty") {
		t.Fatalf("empty file %q", out)
	}
	if out, _ := read.Execute(ctx, map[string]any{"path": "/w/long.txt"}); out != "     1\txxxxxxxxxx… (line cut)\n" {
		t.Fatalf("long line %q", out)
	}
}

func TestWriteAndEditTrackFiles(t *testing.T) {
	t.Parallel()
	mfs, state, _ := setupFS(t, nil)
	ctx := context.Background()
	out, err := findTool(t, state, "write_file").Execute(ctx, map[string]any{"path": "/workspace/hello.py", "content": "print('a')\nprint('a')\n"})
	if err != nil {
		t.Fatal(err)
	}
	var wr wickfs.WriteResult
	if err := json.Unmarshal([]byte(out), &wr); err != nil || wr.BytesWritten != 22 {
		t.Fatalf("write result %q", out)
	}
	if state.Files["/workspace/hello.py"] != "print('a')\nprint('a')\n" {
		t.Fatalf("write not tracked: %v", state.Files)
	}

	edit := findTool(t, state, "edit_file")
	if _, err := edit.Execute(ctx, map[string]any{"path": "/workspace/hello.py", "old_text": "'a'", "new_text": "'b'"}); err == nil {
		t.Fatal("ambiguous edit accepted without replace_all")
	}
	out, err = edit.Execute(ctx, map[string]any{"path": "/workspace/hello.py", "old_text": "'a'", "new_text": "'b'", "replace_all": true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"replacements":2`) {
		t.Fatalf("edit result %q", out)
	}
	want := "print('b')\nprint('b')\n"
	if c, _ := mfs.get("/workspace/hello.py"); c != want || state.Files["/workspace/hello.py"] != want {
		t.Fatalf("after edit: fs %q, tracked %q", c, state.Files["/workspace/hello.py"])
	}
	if _, err := edit.Execute(ctx, map[string]any{"path": "/workspace/hello.py", "old_text": "print('b')\nprint('b')", "new_text": "x"}); err != nil {
		t.Fatal(err)
	}
	if state.Files["/workspace/hello.py"] != "x\n" {
		t.Fatalf("single edit tracked %q", state.Files["/workspace/hello.py"])
	}
}

func TestTrackedFileCap(t *testing.T) {
	t.Parallel()
	_, state, _ := setupFS(t, nil, hooks.WithMaxTrackedFileChars(10))
	write := findTool(t, state, "write_file")
	ctx := context.Background()
	if _, err := write.Execute(ctx, map[string]any{"path": "/w/a", "content": "small"}); err != nil {
		t.Fatal(err)
	}
	if _, err := write.Execute(ctx, map[string]any{"path": "/w/a", "content": "far too large"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := state.Files["/w/a"]; ok {
		t.Fatal("oversized file kept (or a stale copy left) in state.Files")
	}
}

func TestExecuteOptionsAndFormat(t *testing.T) {
	t.Parallel()
	mfs, state, _ := setupFS(t, nil, hooks.WithWorkdir("/work"), hooks.WithExecTimeout(time.Minute), hooks.WithExecMaxOutput(1000))
	mfs.exec = func(_ context.Context, _ string, _ wickfs.ExecOptions) (*wickfs.ExecResult, error) {
		return &wickfs.ExecResult{Stdout: "out", Stderr: "warn", ExitCode: 3, TimedOut: true, Truncated: true}, nil
	}
	out, err := findTool(t, state, "execute").Execute(context.Background(), map[string]any{"command": "make", "timeout": 5.0})
	if err != nil {
		t.Fatal(err)
	}
	if out != "out\n[stderr]\nwarn\n[exit code 3] (timed out) (output truncated)" {
		t.Fatalf("format %q", out)
	}
	o := mfs.execOpts
	if o.Workdir != "/work" || o.Timeout != 5*time.Second || o.MaxOutputBytes != 1000 {
		t.Fatalf("exec options %+v", o)
	}
	if _, err := findTool(t, state, "execute").Execute(context.Background(), map[string]any{"command": "make", "timeout": 1e6}); err != nil {
		t.Fatal(err)
	}
	if mfs.execOpts.Timeout != hooks.DefaultMaxExecTimeout {
		t.Fatalf("model-chosen timeout not capped: %s", mfs.execOpts.Timeout)
	}
}

func TestEviction(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", hooks.DefaultEvictKeepChars) + strings.Repeat("m", 80_000) + strings.Repeat("z", hooks.DefaultEvictKeepChars)
	h := hooks.NewFilesystemHook(newMemFS(nil))
	next := func(out string) loop.ToolCallFunc {
		return func(_ context.Context, c llm.ToolCall) (*loop.ToolResult, error) {
			return &loop.ToolResult{ToolCallID: c.ID, Name: c.Name, Output: out}, nil
		}
	}
	wantEvicted := strings.Repeat("a", 2000) + "\n\n... (truncated 80000 characters) ...\n\n" + strings.Repeat("z", 2000)
	for _, name := range []string{"execute", "my_custom_tool"} {
		res, err := h.WrapToolCall(context.Background(), llm.ToolCall{ID: "c", Name: name}, next(big))
		if err != nil || res.Output != wantEvicted {
			t.Fatalf("%s: not evicted over the threshold (len %d)", name, len(res.Output))
		}
	}
	for _, name := range []string{"ls", "glob", "grep", "read_file", "edit_file", "write_file"} {
		res, _ := h.WrapToolCall(context.Background(), llm.ToolCall{ID: "c", Name: name}, next(big))
		if res.Output != big {
			t.Fatalf("%s: exempt tool evicted", name)
		}
	}
	atLimit := strings.Repeat("x", hooks.DefaultMaxResultChars)
	if res, _ := h.WrapToolCall(context.Background(), llm.ToolCall{Name: "execute"}, next(atLimit)); res.Output != atLimit {
		t.Fatal("a result of exactly 80,000 chars was evicted")
	}
	over := atLimit + "y"
	if res, _ := h.WrapToolCall(context.Background(), llm.ToolCall{Name: "execute"}, next(over)); !strings.Contains(res.Output, "(truncated 76001 characters)") {
		t.Fatalf("80,001 chars not evicted: len %d", len(res.Output))
	}
	// Characters, not bytes: multi-byte text under the limit stays whole.
	wide := strings.Repeat("é", 50_000)
	if res, _ := h.WrapToolCall(context.Background(), llm.ToolCall{Name: "execute"}, next(wide)); res.Output != wide {
		t.Fatal("50,000 two-byte characters were evicted")
	}
	if got := tools.Evict("abcdefghij", 5, 2); got != "ab\n\n... (truncated 6 characters) ...\n\nij" {
		t.Fatalf("Evict %q", got)
	}
}

func TestCutToolResults(t *testing.T) {
	t.Parallel()
	long := func(c string) string { return strings.Repeat(c, 10_000) }
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: long("u")},
		{Role: llm.RoleTool, Name: hooks.ToolReadFile, Content: long("a")},
		{Role: llm.RoleTool, Name: hooks.ToolReadFile, Content: "short"},
		{Role: llm.RoleTool, Name: hooks.ToolExecute, Content: long("b")},
		{Role: llm.RoleTool, Name: hooks.ToolReadFile, Content: long("c")},
	}
	freed := hooks.CutToolResults(msgs, 1, 100)
	if freed <= 0 || !strings.Contains(msgs[1].Content, "size bound") || !strings.HasPrefix(msgs[1].Content, strings.Repeat("a", 100)+"\n") {
		t.Fatalf("oldest read_file result not cut first: freed %d, %.300q", freed, msgs[1].Content)
	}
	if msgs[3].Content != long("b") || msgs[4].Content != long("c") || msgs[0].Content != long("u") {
		t.Fatal("cut more than needed, or a message that is not a tool result")
	}
	// Asked for more, it cuts the rest; a cut result is not cut again.
	freed = hooks.CutToolResults(msgs, 1<<20, 100)
	if want := int64(2 * (10_000 - len(msgs[3].Content))); freed != want || len(msgs[4].Content) != len(msgs[3].Content) || msgs[2].Content != "short" {
		t.Fatalf("freed %d, want %d", freed, want)
	}
	if hooks.CutToolResults(msgs, 1<<20, 100) != 0 {
		t.Fatal("cut results were cut again")
	}
}
