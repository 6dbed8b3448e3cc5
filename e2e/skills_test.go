package e2e

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickserver/suite"
)

// shippedSkills are the skills of Wick's library.
var shippedSkills = []string{"code-review", "csv-analyzer", "data-analysis", "research", "slides", "summarization"}

// showcaseModel is the embedded showcase script, played without pauses.
const showcaseModel = "script:showcase?delay=0s"

// startShowcase starts the suite as a keyless `wick` does on a machine with
// Docker: sandboxes from the runtime image with the built-in skills library,
// and a default agent on the showcase script. It returns the suite and its
// log (shown when the test fails).
func startShowcase(t *testing.T) (*wickEnv, *testenv.LogBuffer) {
	t.Helper()
	cli, _ := dockerSetup(t)
	image := testenv.Image(t, backend.DefaultImage, "make image-runtime")
	manager := "wick-e2e-" + randomHex(6)
	removeManaged(t, cli, manager)
	logs := suiteLog(t)
	env := startWick(t, withDocker(image, manager), withLog(logs), func(c *suite.Config) {
		c.Sandbox.BuiltinSkills = true
		c.Model = showcaseModel
	})
	return env, logs
}

// TestSkillsShowcase: the default agent on script:showcase loads the
// csv-analyzer skill progressively (its SKILL.md is read before the script
// it names runs), the skill's script writes a chart into the workspace, the
// deck is written, and the run ends done; the library in the sandbox is
// listed by GET /agents/skills/available and cannot be changed through the
// file API.
func TestSkillsShowcase(t *testing.T) {
	env, _ := startShowcase(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	resp := openSSE(t, ctx, "POST", env.url+"/agents/default/stream", aliceToken,
		jsonBody(userMessage("Analyse some sales data and make me three slides about it.", nil)))
	run := decodeRun(t, readEvents(t, resp.Body))
	run.checkEnd(t, "completed")

	// Progressive loading: catalog → read_file of the SKILL.md → execute.
	readAt, execAt := -1, -1
	var execID string
	for i, ev := range run.events {
		if ev.GetEvent() != "on_tool_start" {
			continue
		}
		d := dataOf(ev)
		args, _ := d["args"].(map[string]any)
		switch ev.GetName() {
		case "read_file":
			if args["path"] == "/workspace/skills/csv-analyzer/SKILL.md" && readAt < 0 {
				readAt = i
				if out := run.toolOutput(t, d["tool_call_id"].(string)); !strings.Contains(out, "name: csv-analyzer") {
					t.Errorf("read_file of the SKILL.md gave %q", out)
				}
			}
		case "execute":
			if strings.Contains(args["command"].(string), "skills/csv-analyzer/analyze.py") && execAt < 0 {
				execAt, execID = i, d["tool_call_id"].(string)
			}
		}
	}
	if readAt < 0 || execAt < 0 || readAt > execAt {
		t.Fatalf("read_file of the SKILL.md at event %d, execute of analyze.py at %d; want the read first: %v", readAt, execAt, run.names())
	}
	if out := run.toolOutput(t, execID); !strings.Contains(out, "sales-chart.png") {
		t.Errorf("analyze.py printed %q, want the chart's path", out)
	}

	chart := call(t, "GET", env.url+"/agents/default/files/raw/workspace/report/sales-chart.png", aliceToken, nil)
	if chart.code != http.StatusOK {
		t.Fatalf("GET the chart = %d %s", chart.code, chart)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(chart.body))
	if err != nil || cfg.Width < 100 || cfg.Height < 100 {
		t.Fatalf("the chart is no PNG of a chart's size: %v %+v", err, cfg)
	}
	deck := call(t, "GET", env.url+"/agents/default/files/raw/workspace/sales.slides.md", aliceToken, nil)
	if deck.code != http.StatusOK || !strings.Contains(string(deck.body), "marp: true") || !strings.Contains(string(deck.body), "![chart](report/sales-chart.png)") {
		t.Fatalf("GET the deck = %d %s", deck.code, deck)
	}

	// The sandbox runs now: its library is listed.
	var avail agentv1.ListAvailableSkillsResponse
	restCall(t, "GET", env.url+"/agents/skills/available", nil, &avail)
	var names []string
	for _, s := range avail.GetSkills() {
		if strings.HasPrefix(s.GetPath(), "/workspace/skills/") {
			names = append(names, s.GetName())
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, shippedSkills) {
		t.Fatalf("GET /agents/skills/available lists %v, want %v (answer %v)", names, shippedSkills, &avail)
	}

	// The library is read-only through the file API; the workspace is not.
	for _, p := range []string{"skills/csv-analyzer/SKILL.md", "skills/new.md"} {
		if r := call(t, "PUT", env.url+"/agents/default/files/raw/workspace/"+p, aliceToken, strings.NewReader("changed")); r.code != http.StatusForbidden || !strings.Contains(string(r.body), "read-only file system") {
			t.Errorf("PUT %s = %d %s, want 403 saying read-only file system", p, r.code, r)
		}
	}
	skill := call(t, "GET", env.url+"/agents/default/files/raw/workspace/skills/csv-analyzer/SKILL.md", aliceToken, nil)
	if skill.code != http.StatusOK || !strings.Contains(string(skill.body), "name: csv-analyzer") {
		t.Fatalf("the SKILL.md after the writes = %d %s", skill.code, skill)
	}
	if r := call(t, "PUT", env.url+"/agents/default/files/raw/workspace/notes.md", aliceToken, strings.NewReader("mine")); r.code != http.StatusOK {
		t.Fatalf("PUT notes.md = %d %s", r.code, r)
	}
}
