package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/gateway"
)

// jaegerPrompt is the user's message of the traced run: distinctive, so a
// span that quotes it is found.
const jaegerPrompt = "please keep this private: jaeger prompt 5c1e"

// jaegerTrace is a trace as Jaeger's query API (/api/traces/{id}) returns it.
type jaegerTrace struct {
	Spans []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags      []jaegerTag                    `json:"tags"`
		Logs      []struct{ Fields []jaegerTag } `json:"logs"`
		ProcessID string                         `json:"processID"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string      `json:"serviceName"`
		Tags        []jaegerTag `json:"tags"`
	} `json:"processes"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// jaegerServices are the processes one REST request with a tool call in a
// Docker sandbox passes through.
var jaegerServices = []string{"wick-gateway", "wick-agent", "wick-llmgw", "wick-sandbox", "wick-daemon"}

// TestTraceInJaeger runs every Wick binary as its own process, exporting
// to a real Jaeger, makes one REST request whose run calls tools in a
// Docker sandbox, and reads the trace back from Jaeger's query API: one
// connected trace across every process, the daemon's spans included
// (relayed by the sandbox service), with the run id and the tool names, and
// nothing a user, a model or the operator's secrets wrote.
func TestTraceInJaeger(t *testing.T) {
	j := testenv.StartJaeger(t)
	cli, image := dockerSetup(t)
	manager := "wick-e2e-" + randomHex(6)
	removeManaged(t, cli, manager)
	s := startProcs(t, procConfig{
		sandboxArgs: []string{"-default-type", "docker", "-manager-id", manager, "-default-image", image,
			"-daemon-bin", daemonBin, "-wickfs-bin", wickfsBin},
		agentArgs: []string{"-default-image", image},
		// Each RPC and HTTP request is logged at debug level, in its context.
		commonArgs: []string{"-log-format", "json", "-log-level", "debug"},
		env: []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + j.OTLPGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
			"OTEL_TRACES_SAMPLER=always_on",
			// Spans reach Jaeger within a tenth of a second, not five.
			"OTEL_BSP_SCHEDULE_DELAY=100",
		},
		gateway: true,
	})

	ctx, cancel := context.WithTimeout(as(t.Context(), "alice"), time.Minute)
	defer cancel()
	if _, err := s.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{
		AgentId: "traced", Model: structpb.NewStringValue(e2eModel), Backend: &agentv1.BackendConfig{Type: "docker", Image: image},
	}}); err != nil {
		t.Fatal(err)
	}
	resp := openSSE(t, t.Context(), "POST", s.gatewayURL+"/agents/traced/stream", aliceToken, jsonBody(userMessage(jaegerPrompt, nil)))
	tr := resp.Header.Get(gateway.TraceResponseHeader)
	run := decodeRun(t, readEvents(t, resp.Body))
	checkDemoRun(t, run)
	parts := strings.Split(tr, "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		t.Fatalf("%s header %q, want 00-<trace id>-<span id>-<flags>", gateway.TraceResponseHeader, tr)
	}
	traceID := parts[1]

	var got jaegerTrace
	waitFor(t, "the trace in Jaeger with every service", 60*time.Second, func() (bool, string) {
		var err error
		if got, err = fetchTrace(j.QueryURL, traceID); err != nil {
			return false, err.Error()
		}
		have := map[string]bool{}
		for _, sp := range got.Spans {
			have[got.Processes[sp.ProcessID].ServiceName] = true
		}
		for _, svc := range jaegerServices {
			if !have[svc] {
				return false, fmt.Sprintf("no span of %s yet; services %v", svc, have)
			}
		}
		return true, ""
	})

	t.Run("one root, every parent in the trace", func(t *testing.T) {
		ids := map[string]bool{}
		for _, sp := range got.Spans {
			ids[sp.SpanID] = true
		}
		var roots []string
		for _, sp := range got.Spans {
			var parent string
			for _, r := range sp.References {
				if r.RefType == "CHILD_OF" {
					parent = r.SpanID
				}
			}
			switch {
			case parent == "":
				roots = append(roots, sp.OperationName)
			case !ids[parent]:
				t.Errorf("span %q (%s) has parent %s outside the trace", sp.OperationName, got.Processes[sp.ProcessID].ServiceName, parent)
			}
		}
		if len(roots) != 1 || roots[0] != "POST /agents/{agent_id}/stream" {
			t.Errorf("roots %v, want the gateway's request alone", roots)
		}
	})

	t.Run("the run id and the tool names", func(t *testing.T) {
		var runIDs, tools []string
		for _, sp := range got.Spans {
			for _, tag := range sp.Tags {
				switch tag.Key {
				case "wick.run_id":
					runIDs = append(runIDs, fmt.Sprint(tag.Value))
				case "tool_name":
					tools = append(tools, fmt.Sprint(tag.Value))
				}
			}
		}
		if !slices.Contains(runIDs, run.runID()) {
			t.Errorf("wick.run_id tags %v, want %s", runIDs, run.runID())
		}
		for _, want := range []string{"write_file", "execute"} {
			if !slices.Contains(tools, want) {
				t.Errorf("tool_name tags %v, want %s", tools, want)
			}
		}
	})

	t.Run("no message content and no secret in any attribute", func(t *testing.T) {
		secret := []string{jaegerPrompt, "I will write a note.", "Now I will read it back.", e2eAnswer,
			"wick e2e note", aliceToken, s.key.String()}
		check := func(where string, tags []jaegerTag) {
			for _, tag := range tags {
				v := fmt.Sprint(tag.Value)
				for _, sec := range secret {
					if strings.Contains(v, sec) {
						t.Errorf("%s: %s = %q holds %q", where, tag.Key, v, sec)
					}
				}
			}
		}
		for _, sp := range got.Spans {
			where := got.Processes[sp.ProcessID].ServiceName + " " + sp.OperationName
			check(where, sp.Tags)
			for _, l := range sp.Logs {
				check(where+" event", l.Fields)
			}
		}
		for _, p := range got.Processes {
			check(p.ServiceName+" resource", p.Tags)
		}
	})

	t.Run("the logs carry the trace id", func(t *testing.T) {
		for _, p := range []*testenv.Proc{s.gateway, s.agent, s.llmgw, s.sandbox} {
			if !logsTrace(p.Output(), traceID) {
				t.Errorf("no JSON log record of %s has trace_id %s", p.Name(), traceID)
			}
		}
	})
}

// fetchTrace reads one trace from Jaeger's query API.
func fetchTrace(queryURL, traceID string) (jaegerTrace, error) {
	resp, err := http.Get(queryURL + "/api/traces/" + traceID)
	if err != nil {
		return jaegerTrace{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return jaegerTrace{}, fmt.Errorf("GET /api/traces/%s: %s", traceID, resp.Status)
	}
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return jaegerTrace{}, err
	}
	if len(body.Data) != 1 {
		return jaegerTrace{}, fmt.Errorf("%d traces for id %s", len(body.Data), traceID)
	}
	return body.Data[0], nil
}

// logsTrace reports whether a JSON log line of out has trace_id id.
func logsTrace(out, id string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		var rec struct {
			TraceID string `json:"trace_id"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.TraceID == id {
			return true
		}
	}
	return false
}
