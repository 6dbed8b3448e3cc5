package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickfs/confine"
)

// e2eKey stands for a provider key in the server's environment.
const e2eKey = "sk-e2e-7f3a9c2e51d0"

// The audit's reproduction: a scripted agent on the local backend prints the
// server's provider key reversed (so redacting the literal value would not
// help) and lists the host's temp directory.
func init() {
	probe, _ := json.Marshal("printenv OPENAI_API_KEY | rev; ls " + os.TempDir() + "; echo probe-done")
	scripts["probe"] = `{"delay":"2ms","turns":[
		{"text":"Looking around.","tool_calls":[{"name":"execute","arguments":{"command":` + string(probe) + `}}]},
		{"text":"Done looking."}
	],"end_text":"Done looking."}`
}

// TestLocalSandboxHidesTheHost: not parallel, it sets the server's environment.
func TestLocalSandboxHidesTheHost(t *testing.T) {
	if abi := confine.ABI(); abi < confine.MinABI {
		testenv.Missing(t, "Landlock ABI %d (confinement needs %d)", abi, confine.MinABI)
	}
	t.Setenv("OPENAI_API_KEY", e2eKey)
	marker, err := os.CreateTemp("", "wick-e2e-marker-")
	if err != nil {
		t.Fatal(err)
	}
	marker.Close()
	t.Cleanup(func() { os.Remove(marker.Name()) })

	env := startWick(t)
	if r := call(t, "POST", env.url+"/agents/", aliceToken, jsonBody(map[string]any{"agent_id": "prober", "model": "script:probe", "backend": map[string]any{"type": "local"}})); r.code != 200 {
		t.Fatalf("create = %d %s", r.code, r)
	}
	resp := openSSE(t, t.Context(), "POST", env.url+"/agents/prober/stream", aliceToken, jsonBody(userMessage("look around", nil)))
	run := decodeRun(t, readEvents(t, resp.Body))
	end := run.find("on_tool_end", "execute")
	if end == nil {
		t.Fatalf("no execute tool end: %+v", run.frames)
	}
	out, _ := json.Marshal(end.GetData())
	reversed := []byte(e2eKey)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	for _, secret := range []string{e2eKey, string(reversed), filepath.Base(marker.Name())} {
		if strings.Contains(string(out), secret) {
			t.Errorf("the command's output reveals %q: %s", secret, out)
		}
	}
	if !strings.Contains(string(out), "probe-done") {
		t.Fatalf("the command did not run: %s", out)
	}
}
