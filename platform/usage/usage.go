// Package usage counts the tokens and cost of model calls per user, agent,
// model and UTC day, and answers what a user (or every user) spent over a
// range of days or in a calendar month. The agent service records its own
// calls (its loop, sub-agents, knowledge embeddings); the LLM gateway
// records the calls external agents make through its HTTP APIs.
package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DayLayout is how a day is written: in keys, in the API, in errors.
const DayLayout = "2006-01-02"

// MaxRangeDays bounds one query's range of days.
const MaxRangeDays = 366

// External is the agent of a call that no agent of Wick made: an external
// agent (Claude Code, Codex) calling the LLM gateway's HTTP APIs.
const External = "external"

// AgentHeader names, on a request to the LLM gateway's HTTP APIs, the agent
// whose sandbox made it; a sandbox's model endpoint sets it.
const AgentHeader = "X-Wick-Agent"

// Counts are what calls spent.
type Counts struct {
	// Calls is how many model calls (or embedding batches) were made.
	Calls int64
	// InputTokens and OutputTokens are the tokens.
	InputTokens, OutputTokens int64
	// CostMicroUSD is the cost in millionths of a US dollar, of the calls
	// whose model has a price; 0 when none has.
	CostMicroUSD int64
}

// Add returns c plus o.
func (c Counts) Add(o Counts) Counts {
	return Counts{c.Calls + o.Calls, c.InputTokens + o.InputTokens, c.OutputTokens + o.OutputTokens, c.CostMicroUSD + o.CostMicroUSD}
}

// Tokens is input plus output tokens.
func (c Counts) Tokens() int64 { return c.InputTokens + c.OutputTokens }

// Call is one model call to record.
type Call struct {
	User, Agent, Model string
	// At is when the call ended; its UTC day is the day it counts on.
	At time.Time
	Counts
}

// Row is what one user's agent spent on one model on one day.
type Row struct {
	// Day is the UTC day (DayLayout).
	Day                string
	User, Agent, Model string
	Counts
}

// Recorder records model calls.
type Recorder interface {
	Record(ctx context.Context, c Call) error
}

// Store records calls and answers for them.
type Store interface {
	Recorder
	// Rows returns what user spent on each day of [from, to] (UTC days,
	// both included), by agent and model; an empty user means every user.
	// Rows are sorted by day, user, agent and model.
	Rows(ctx context.Context, user string, from, to time.Time) ([]Row, error)
	// Month returns what user spent in the calendar month (UTC) holding t.
	Month(ctx context.Context, user string, t time.Time) (Counts, error)
}

// Day truncates t to its UTC day.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// MonthStart is the first instant of the UTC month holding t.
func MonthStart(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}

// ErrInvalid matches the errors of a bad call or range (errors.Is).
var ErrInvalid = errors.New("invalid usage record")

// check refuses a call that could not be stored or read back: the field
// separator of the Redis store in an agent id, or no user.
func (c Call) check() error {
	switch {
	case c.User == "":
		return fmt.Errorf("%w: no user", ErrInvalid)
	case strings.Contains(c.Agent, fieldSep):
		return fmt.Errorf("%w: agent %q holds %q", ErrInvalid, c.Agent, fieldSep)
	}
	return nil
}

// agentOf names the agent of a call that gives none.
func agentOf(a string) string {
	if a == "" {
		return External
	}
	return a
}

// fieldSep separates agent, model and counter in a Redis hash field; agent
// ids never hold it, and the model is what lies between the first and the
// last.
const fieldSep = "|"

// sortRows sorts rows by day, user, agent, model.
func sortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		return cmpStrings(a.Day, b.Day, a.User, b.User, a.Agent, b.Agent, a.Model, b.Model)
	})
}

func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}

// days lists the UTC days of [from, to].
func days(from, to time.Time) []time.Time {
	var out []time.Time
	for d := Day(from); !d.After(Day(to)); d = d.AddDate(0, 0, 1) {
		out = append(out, d)
	}
	return out
}

// ModelName is how usage names the model that answered a call:
// "provider:model" ("openai:gpt-4o"). A scripted model given inline (its
// whole script as its name) is "script:inline".
func ModelName(provider, model string) string {
	if provider == "script" && (strings.HasPrefix(model, "{") || strings.HasPrefix(model, "[")) {
		model = "inline"
	}
	if provider == "" {
		return model
	}
	return provider + ":" + model
}
