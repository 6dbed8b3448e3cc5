package hooks_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/hooks"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

var skillFiles = map[string]string{
	"/workspace/skills/csv-analyzer/SKILL.md": "---\nname: csv-analyzer\ndescription: Analyze CSV files and generate charts\n---\n# CSV\nLong body…\n",
	"/workspace/skills/code-review/SKILL.md":  "---\nname: code-review\ndescription: >\n  Review code for bugs\n  and style issues\n---\nbody\n",
	"/workspace/skills/unnamed/SKILL.md":      "---\ndescription: Uses its directory name\n---\n",
	"/workspace/skills/broken/SKILL.md":       "---\nname: [unclosed\n---\n",
	"/workspace/skills/nofront/SKILL.md":      "# just markdown\n",
	"/workspace/skills/other/README.md":       "---\nname: not-a-skill\n---\n",
	"/workspace/AGENTS.md":                    "# Project notes\n- Using FastAPI",
	"/workspace/team/AGENTS.md":               "- Tabs, not spaces\n",
}

func TestDiscoverSkills(t *testing.T) {
	t.Parallel()
	mfs := newMemFS(skillFiles)
	got, problems, err := hooks.DiscoverSkills(context.Background(), mfs, []string{"/workspace/skills", "/workspace/missing"})
	if err != nil {
		t.Fatal(err)
	}
	wantProblems := []hooks.SkillProblem{
		{Path: "/workspace/skills/broken/SKILL.md", Warning: "not loaded: front matter: yaml: line 1: did not find expected ',' or ']'"},
		{Path: "/workspace/skills/nofront/SKILL.md", Warning: "not loaded: no YAML front matter (--- … ---) at the top of the file"},
	}
	if !slices.Equal(problems, wantProblems) {
		t.Fatalf("problems %+v, want %+v", problems, wantProblems)
	}
	want := []hooks.SkillEntry{
		{Name: "code-review", Description: "Review code for bugs and style issues", Path: "/workspace/skills/code-review/SKILL.md"},
		{Name: "csv-analyzer", Description: "Analyze CSV files and generate charts", Path: "/workspace/skills/csv-analyzer/SKILL.md"},
		{Name: "unnamed", Description: "Uses its directory name", Path: "/workspace/skills/unnamed/SKILL.md"},
	}
	if len(got) != len(want) {
		t.Fatalf("skills %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("skill %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if line := want[1].CatalogLine(); line != "[csv-analyzer] Analyze CSV files and generate charts → Read /workspace/skills/csv-analyzer/SKILL.md for full instructions" {
		t.Fatalf("catalog line %q", line)
	}
}

func TestSkillsHookInjectsCatalog(t *testing.T) {
	t.Parallel()
	h := hooks.NewSkillsHook(newMemFS(skillFiles), []string{"/workspace/skills"})
	if err := h.BeforeAgent(context.Background(), &loop.AgentState{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := h.ModifyRequest(context.Background(), []llm.Message{loop.System("You are a coding assistant."), loop.Human("hi")})
	if err != nil {
		t.Fatal(err)
	}
	sys := msgs[0].Content
	if !strings.HasPrefix(sys, "You are a coding assistant.\n\n") ||
		!strings.Contains(sys, "\n[code-review] Review code for bugs and style issues → Read /workspace/skills/code-review/SKILL.md for full instructions\n") ||
		strings.Contains(sys, "Long body") {
		t.Fatalf("system message:\n%s", sys)
	}
	empty := hooks.NewSkillsHook(newMemFS(nil), []string{"/nowhere"})
	if err := empty.BeforeAgent(context.Background(), &loop.AgentState{}); err != nil {
		t.Fatal(err)
	}
	in := []llm.Message{loop.Human("hi")}
	if out, _ := empty.ModifyRequest(context.Background(), in); len(out) != 1 {
		t.Fatal("empty catalog injected")
	}
}

func TestMemoryHook(t *testing.T) {
	t.Parallel()
	h := hooks.NewMemoryHook(newMemFS(skillFiles), []string{"/workspace/AGENTS.md", "/workspace/missing/AGENTS.md", "/workspace/team/AGENTS.md"})
	if err := h.BeforeAgent(context.Background(), &loop.AgentState{}); err != nil {
		t.Fatal(err)
	}
	if c := h.Content(); c != "# Project notes\n- Using FastAPI\n\n---\n\n- Tabs, not spaces\n" {
		t.Fatalf("content %q", c)
	}
	msgs, _ := h.ModifyRequest(context.Background(), []llm.Message{loop.System("You are a coding assistant."), loop.Human("hi")})
	want := "You are a coding assistant.\n\n<agent_memory>\n# Project notes\n- Using FastAPI\n\n---\n\n- Tabs, not spaces\n\n</agent_memory>\n\n" +
		"Guidelines for agent memory:\n" +
		"- This memory persists across conversations\n" +
		"- You can update it by using edit_file on the AGENTS.md file\n" +
		"- Use it to track important context, decisions, and patterns\n" +
		"- Keep entries concise and organized"
	if msgs[0].Content != want {
		t.Fatalf("system:\n%q\nwant\n%q", msgs[0].Content, want)
	}
	none := hooks.NewMemoryHook(newMemFS(nil), []string{"/workspace/AGENTS.md"})
	if err := none.BeforeAgent(context.Background(), &loop.AgentState{}); err != nil {
		t.Fatal("missing memory file must be skipped, got", err)
	}
	if out, _ := none.ModifyRequest(context.Background(), []llm.Message{loop.Human("x")}); len(out) != 1 {
		t.Fatal("empty memory injected")
	}
	capped := hooks.NewMemoryHook(newMemFS(skillFiles), []string{"/workspace/AGENTS.md"}, hooks.WithMaxMemoryChars(10))
	_ = capped.BeforeAgent(context.Background(), &loop.AgentState{})
	if c := capped.Content(); c != "# Project \n... (memory truncated)" {
		t.Fatalf("capped %q", c)
	}
}
