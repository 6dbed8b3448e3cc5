package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-agent/wick/gen/openapi"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/wickserver/suite"
)

// Bounds of TestFuzzAPI: a fixed seed, so that a failure replays, and a
// count that keeps the test well under a minute.
const (
	fuzzSeed     = 33
	fuzzRequests = 3000
	// fuzzTimeout bounds one request; the streaming routes answer with
	// their status at once and are cut after it.
	fuzzTimeout = 5 * time.Second
)

// fuzzRoute is one operation of the OpenAPI document.
type fuzzRoute struct {
	method, path string
	pathParams   []string
	query        []string
	body         map[string]any // the request body's schema, nil when none
}

// aliceIDs are the resources alice owns; bob naming any of them must never
// get a 2xx.
type aliceIDs struct {
	agent, thread, run string
}

// TestFuzzAPI walks every route of the OpenAPI document and sends it
// malformed requests as two users: wrong types, huge and invalid-UTF-8
// strings, NUL bytes, deep nesting, traversal in paths, negative and huge
// numbers. No answer may be a 5xx other than 503, nothing may panic, /health
// stays fine, and bob never gets a 2xx for a request that names alice's
// agent, thread or run.
func TestFuzzAPI(t *testing.T) {
	logs := &testenv.LogBuffer{}
	env := startWick(t, func(c *suite.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	ids := aliceResources(t, env.url)
	routes := openAPIRoutes(t)
	rng := rand.New(rand.NewPCG(fuzzSeed, fuzzSeed))
	client := &http.Client{Timeout: fuzzTimeout}

	type failure struct{ what, req, answer string }
	var failures []failure
	seen := map[string]bool{}
	fail := func(what, req, answer string) {
		if key := what + " " + req; !seen[key] && len(failures) < 50 {
			seen[key] = true
			failures = append(failures, failure{what, req, answer})
		}
	}
	statuses := map[int]int{}
	for i := range fuzzRequests {
		rt := routes[rng.IntN(len(routes))]
		bob := rng.IntN(2) == 0
		req, namesAlice := fuzzRequest(rng, env.url, rt, ids, bob)
		token := aliceToken
		if bob {
			token = bobToken
		}
		req.Header.Set("Authorization", "Bearer "+token)
		desc := fmt.Sprintf("#%d %s %.200s (bob=%v)", i, req.Method, req.URL.String(), bob)
		code, answer, err := send(client, req)
		if err != nil {
			fail("transport error", desc, err.Error())
			continue
		}
		statuses[code]++
		if code >= 500 && code != http.StatusServiceUnavailable {
			fail(fmt.Sprintf("HTTP %d", code), desc, answer)
		}
		if bob && namesAlice && code >= 200 && code < 300 {
			fail("bob got a 2xx for alice's resource", desc, answer)
		}
	}
	t.Logf("%d requests, statuses %v", fuzzRequests, statuses)

	if r := call(t, "GET", env.url+"/health", "", nil); r.code != http.StatusOK || !strings.Contains(r.String(), `"status":"ok"`) {
		fail("health after the fuzz", "GET /health", r.String())
	}
	if r := call(t, "GET", env.url+"/agents/"+ids.agent, aliceToken, nil); r.code != http.StatusOK {
		fail("alice's agent after the fuzz", "GET /agents/"+ids.agent, r.String())
	}
	if strings.Contains(logs.String(), "panic") {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(line, "panic") {
				fail("panic in the log", "", line)
			}
		}
	}
	for _, f := range failures {
		t.Errorf("%s: %s\n\t→ %.400s", f.what, f.req, f.answer)
	}
}

// send sends req and reads at most 64 KiB of the answer: a stream that
// answered with its status is cut there.
func send(client *http.Client, req *http.Request) (int, string, error) {
	ctx, cancel := context.WithTimeout(req.Context(), fuzzTimeout)
	defer cancel()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "(event stream)", nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), nil
}

// aliceResources creates alice's agent, a thread and a run on it, and a file.
func aliceResources(t *testing.T, base string) aliceIDs {
	t.Helper()
	ids := aliceIDs{agent: "fz-alice"}
	if r := call(t, "POST", base+"/agents/", aliceToken, jsonBody(map[string]any{"agent_id": ids.agent, "model": e2eModel, "backend": map[string]any{"type": "local"}})); r.code != 200 {
		t.Fatalf("create = %d %s", r.code, r)
	}
	inv := call(t, "POST", base+"/agents/"+ids.agent+"/invoke", aliceToken, jsonBody(userMessage("hello", nil)))
	var res struct {
		ThreadID string `json:"thread_id"`
		RunID    string `json:"run_id"`
	}
	if inv.code != 200 || json.Unmarshal(inv.body, &res) != nil || res.ThreadID == "" || res.RunID == "" {
		t.Fatalf("invoke = %d %s", inv.code, inv)
	}
	ids.thread, ids.run = res.ThreadID, res.RunID
	return ids
}

// openAPIRoutes lists the document's operations, the metrics and document
// routes aside.
func openAPIRoutes(t *testing.T) []fuzzRoute {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	var out []fuzzRoute
	for p, ops := range doc.Paths {
		if p == "/metrics" || p == "/openapi.json" {
			continue
		}
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				Parameters []struct {
					In   string `json:"in"`
					Name string `json:"name"`
				} `json:"parameters"`
				RequestBody struct {
					Content map[string]struct {
						Schema map[string]any `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, p, err)
			}
			rt := fuzzRoute{method: strings.ToUpper(method), path: p}
			for _, prm := range op.Parameters {
				switch prm.In {
				case "path":
					rt.pathParams = append(rt.pathParams, prm.Name)
				case "query":
					rt.query = append(rt.query, prm.Name)
				}
			}
			if c, ok := op.RequestBody.Content["application/json"]; ok {
				rt.body = c.Schema
				if rt.body == nil {
					rt.body = map[string]any{}
				}
			}
			out = append(out, rt)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].method+out[i].path < out[j].method+out[j].path })
	if len(out) < 30 {
		t.Fatalf("only %d routes in the OpenAPI document", len(out))
	}
	return out
}

// badSegments are path parameter values, already escaped for a URL.
var badSegments = []string{
	"", "-1", "0", "99999999999999999999", "%ff%fe", "%00", "a%00b", "..", "..%2F..%2Fetc%2Fpasswd",
	"%2e%2e", "default", strings.Repeat("a", 300), strings.Repeat("%ff", 50), "%E2%80%AE", "a%20b", "*", "%25",
	strings.Repeat("x", 5000), "true", "null", "%7B%7D",
}

// badFilePaths are values of the raw file route's {path...}, escaped.
var badFilePaths = []string{
	"workspace/notes.txt", "workspace/" + strings.Repeat("a", 300), "workspace/%ff%fe", "workspace/a%00b",
	"workspace/../../etc/passwd", "workspace/..%2F..%2Fetc%2Fpasswd", "etc/passwd", "workspace/" + strings.Repeat("d/", 2100) + "f",
	"workspace", "workspace/", "workspace/%2e%2e/%2e%2e/proc/self/environ",
}

// badValues are query and JSON string values.
var badValues = []string{
	"", "-1", "-9223372036854775809", "99999999999999999999999", "1e308", "NaN", "\x00", "a\x00b", "\xff\xfe",
	"../../../../etc/passwd", "/workspace/../../etc/passwd", strings.Repeat("a", 300), strings.Repeat("é", 40000),
	"/workspace/" + strings.Repeat("a", 300), "/workspace/\xff", "true", "{}", "[]", "script:e2e", "ollama:x",
	"http://127.0.0.1:1/", "${secret:mcp-token}",
}

// fuzzRequest builds one malformed request for rt, and reports whether it
// names one of alice's resources.
func fuzzRequest(rng *rand.Rand, base string, rt fuzzRoute, ids aliceIDs, bob bool) (*http.Request, bool) {
	namesAlice := false
	// Alice does not delete or stop her own resources: bob's requests must
	// keep finding them.
	useReal := bob || (rt.method != "DELETE" && !strings.HasSuffix(rt.path, "/cancel") && !strings.HasSuffix(rt.path, "/stop"))
	p := rt.path
	for _, name := range rt.pathParams {
		var v string
		switch {
		case name == "path":
			v = badFilePaths[rng.IntN(len(badFilePaths))]
		case useReal && rng.IntN(3) == 0:
			switch name {
			case "agent_id":
				v = ids.agent
			case "thread_id":
				v = ids.thread
			case "run_id":
				v = ids.run
			default:
				v = badSegments[rng.IntN(len(badSegments))]
			}
			namesAlice = namesAlice || v == ids.agent || v == ids.thread || v == ids.run
		default:
			v = badSegments[rng.IntN(len(badSegments))]
		}
		p = strings.Replace(p, "{"+name+"}", v, 1)
	}
	q := url.Values{}
	for _, name := range rt.query {
		if rng.IntN(2) == 0 {
			q.Set(name, badValues[rng.IntN(len(badValues))])
		}
	}
	if len(rt.query) > 0 && rng.IntN(4) == 0 {
		q.Set("unknown_param", "1")
	}
	if useReal && rng.IntN(3) == 0 {
		// Alice's ids in the query and the body too (thread_id, run_id).
		for _, name := range rt.query {
			if name == "thread_id" {
				q.Set(name, ids.thread)
				namesAlice = true
			}
		}
	}
	u := base + p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if rt.body != nil {
		b, real := fuzzBody(rng, rt.body, ids, useReal)
		namesAlice = namesAlice || real
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(rt.method, u, body)
	if err != nil {
		// A URL net/http cannot even build: send the path raw.
		req, _ = http.NewRequest(rt.method, base+"/", body)
		req.URL.Opaque = "//" + strings.TrimPrefix(base, "http://") + p
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if rng.IntN(3) == 0 {
		req.Header.Set("Accept", "text/event-stream")
	}
	return req, namesAlice
}

// fuzzBody returns a request body: a JSON object with the schema's fields
// given wrong or extreme values, or plain malformed JSON.
func fuzzBody(rng *rand.Rand, schema map[string]any, ids aliceIDs, useReal bool) ([]byte, bool) {
	switch rng.IntN(10) {
	case 0:
		return []byte(`{"messages": [`), false
	case 1:
		return []byte(strings.Repeat("[", 20000) + strings.Repeat("]", 20000)), false
	case 2:
		return []byte("{\"agent_id\":\"a\xff\xfe\"}"), false
	case 3:
		return []byte(`"just a string"`), false
	}
	props := schemaProperties(schema)
	obj := map[string]any{}
	real := false
	for _, name := range props {
		if rng.IntN(2) == 0 {
			continue
		}
		obj[name] = fuzzValue(rng, 0)
		if useReal && rng.IntN(4) == 0 {
			// Not agent_id: an agent bob creates under that id is his own.
			if name == "thread_id" {
				obj[name], real = ids.thread, true
			}
		}
	}
	if rng.IntN(3) == 0 {
		obj["messages"] = []any{map[string]any{"role": "user", "content": fuzzValue(rng, 0)}}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return []byte("{}"), false
	}
	// json.Marshal replaces invalid UTF-8; put some back raw.
	if rng.IntN(5) == 0 {
		b = bytes.Replace(b, []byte(`\ufffd`), []byte("\xff"), 1)
	}
	return b, real
}

// fuzzValue is a JSON value of a wrong or extreme kind.
func fuzzValue(rng *rand.Rand, depth int) any {
	switch rng.IntN(9) {
	case 0:
		return -1
	case 1:
		return 1e300
	case 2:
		return json.Number("99999999999999999999999999")
	case 3:
		return true
	case 4:
		if depth < 3 {
			return []any{fuzzValue(rng, depth+1), fuzzValue(rng, depth+1)}
		}
		return nil
	case 5:
		if depth < 3 {
			return map[string]any{"x": fuzzValue(rng, depth+1)}
		}
		return nil
	case 6:
		return nested(200 + rng.IntN(200))
	}
	return badValues[rng.IntN(len(badValues))]
}

// nested is an object n levels deep.
func nested(n int) any {
	var v any = "leaf"
	for range n {
		v = map[string]any{"a": v}
	}
	return v
}

var refName = regexp.MustCompile(`[^/]+$`)

// schemaProperties returns the property names of a schema, following one $ref.
func schemaProperties(schema map[string]any) []string {
	if ref, ok := schema["$ref"].(string); ok {
		schema = componentSchema(refName.FindString(ref))
	}
	props, _ := schema["properties"].(map[string]any)
	out := make([]string, 0, len(props))
	for name := range props {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

var (
	componentsOnce sync.Once
	components     map[string]map[string]any
)

func componentSchema(name string) map[string]any {
	componentsOnce.Do(func() {
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		_ = json.Unmarshal(openapi.Document, &doc)
		components = doc.Components.Schemas
	})
	return components[name]
}
