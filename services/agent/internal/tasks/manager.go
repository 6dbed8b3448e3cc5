package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"

	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// The events of a task, sent to the run that started it while that run
// lasts on this replica (later, clients read the task through the API).
func startEvent(d *agentv1.TaskEventData) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTaskStart{OnTaskStart: d}}
}

func updateEvent(d *agentv1.TaskEventData) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTaskUpdate{OnTaskUpdate: d}}
}

func endEvent(d *agentv1.TaskEventData) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTaskEnd{OnTaskEnd: d}}
}

// claimBatch is how many expired tasks one sweep takes over.
const claimBatch = 64

// ToolDefs resolves a user's external HTTP tool (registry.Store implements
// it); a taken-over HTTP task finds its tool's headers through it.
type ToolDefs interface {
	GetTool(ctx context.Context, user, name string) (*tools.HTTPToolDef, error)
}

// Listener hears about tasks: Event for each of the three events (the run
// may be over), Finished once a task's result waits for its thread.
type Listener interface {
	Event(t *Task, data *agentv1.RunEventData)
	Finished(t *Task)
}

// Carrier carries on a task of a kind this package does not run itself
// (KindSubagent: the run executor runs the child) and returns its result.
// ctx ends when the task is cancelled, lost or its replica stops.
type Carrier func(ctx context.Context, t *Task) (string, error)

// Option configures a Manager.
type Option func(*Manager)

// WithLease sets the lease of running tasks (default DefaultLease); they
// are renewed every third of it, and expired ones looked for as often.
func WithLease(d time.Duration) Option { return func(m *Manager) { m.lease = d } }

// WithMaxAttempts sets how many starts a task gets (default DefaultMaxAttempts).
func WithMaxAttempts(n int) Option { return func(m *Manager) { m.maxAttempts = n } }

// WithPollBackoff sets the first and the longest wait between two polls of
// an HTTP task's status URL (default 0.5 s and 30 s).
func WithPollBackoff(min, max time.Duration) Option {
	return func(m *Manager) { m.pollMin, m.pollMax = min, max }
}

// WithMaxRunning bounds one user's running tasks (default DefaultMaxRunning; 0: no bound).
func WithMaxRunning(n int) Option { return func(m *Manager) { m.maxRunning = n } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(m *Manager) { m.logger = l } }

// Manager starts, carries on, takes over and cancels background tasks. Each
// replica has one; they share the Store.
type Manager struct {
	store       Store
	owner       string
	native      map[string]loop.Tool
	defs        ToolDefs
	client      *http.Client
	listener    Listener
	carriers    map[string]Carrier
	lease       time.Duration
	maxAttempts int
	pollMin     time.Duration
	pollMax     time.Duration
	maxRunning  int
	logger      *slog.Logger

	base    context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
}

// NewManager returns a manager for the replica named owner. native are the
// background-capable Go tools by name, which a take-over starts again;
// client reaches status URLs (it must be the SSRF-guarded client of HTTP
// tools). Start begins its lease loop.
func NewManager(store Store, owner string, native map[string]loop.Tool, defs ToolDefs, client *http.Client, opts ...Option) *Manager {
	m := &Manager{
		store: store, owner: owner, native: native, defs: defs, client: client,
		lease: DefaultLease, maxAttempts: DefaultMaxAttempts, pollMin: DefaultPollMin, pollMax: DefaultPollMax,
		maxRunning: DefaultMaxRunning, logger: slog.New(slog.DiscardHandler), running: map[string]context.CancelCauseFunc{},
	}
	m.carriers = map[string]Carrier{KindNative: m.runNative, KindHTTP: m.poll}
	for _, o := range opts {
		o(m)
	}
	m.base, m.stop = context.WithCancel(context.Background())
	return m
}

// Carry sets how tasks of kind are carried on, for kinds whose work lives
// outside this package. It must be called before Start: a take-over may
// launch a task of any kind from the first sweep on.
func (m *Manager) Carry(kind string, c Carrier) { m.carriers[kind] = c }

// Start sets who hears about tasks and starts the loop that renews this
// replica's leases and takes over expired tasks.
func (m *Manager) Start(l Listener) {
	m.listener = l
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.leaseLoop()
	}()
}

// Close stops this replica's tasks without finishing them, so that another
// replica takes them over once their leases end, and waits for them.
func (m *Manager) Close() {
	m.stop()
	m.wg.Wait()
}

// Store returns the store, for the API's reads.
func (m *Manager) Store() Store { return m.store }

func (m *Manager) leaseLoop() {
	tick := time.NewTicker(m.lease / 3)
	defer tick.Stop()
	for {
		m.sweep()
		select {
		case <-m.base.Done():
			return
		case <-tick.C:
		}
	}
}

// sweep renews this replica's leases, stops the tasks it lost (cancelled
// from another replica, or taken over after a stall) and takes over tasks
// whose replica stopped renewing.
func (m *Manager) sweep() {
	ctx, cancel := context.WithTimeout(m.base, m.lease/3)
	defer cancel()
	m.mu.Lock()
	held := make([]string, 0, len(m.running))
	for id := range m.running {
		held = append(held, id)
	}
	m.mu.Unlock()
	lost, err := m.store.Renew(ctx, m.owner, held, m.lease)
	if err != nil {
		m.logger.Warn("renew task leases", "error", err)
		return
	}
	for _, id := range lost {
		m.abandon(id, errLost)
	}
	claimed, err := m.store.Claim(ctx, m.owner, m.lease, m.maxAttempts, claimBatch)
	if err != nil {
		m.logger.Warn("claim expired tasks", "error", err)
		return
	}
	for _, t := range claimed {
		if t.Finished() {
			m.finished(t)
			continue
		}
		m.logger.Info("taking over a background task", "task_id", t.ID, "tool", t.Tool, "attempt", t.Attempts)
		m.launch(t)
	}
}

var errLost = errors.New("the task is no longer this replica's")

// abandon stops this replica's work on a task without finishing it.
func (m *Manager) abandon(id string, cause error) {
	m.mu.Lock()
	cancel := m.running[id]
	delete(m.running, id)
	m.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// Spec is a tool call to carry on in the background.
type Spec struct {
	User       string
	ThreadID   string
	RunID      string
	ToolCallID string
	Tool       string
	Kind       string
	Args       map[string]any
	StatusURL  string
	Subagent   *Subagent
}

// Begin records a running task for spec and starts carrying it on.
func (m *Manager) Begin(ctx context.Context, spec Spec) (*Task, error) {
	t := &Task{
		ID: ids.New("task_"), User: spec.User, ThreadID: spec.ThreadID, RunID: spec.RunID, ToolCallID: spec.ToolCallID,
		Tool: spec.Tool, Kind: spec.Kind, Args: spec.Args, StatusURL: spec.StatusURL, Subagent: spec.Subagent, CreatedAt: time.Now().UTC(),
		Status: StatusRunning, Attempts: 1, Owner: m.owner,
	}
	if err := m.store.Create(ctx, t, m.lease, m.maxRunning); err != nil {
		if errors.Is(err, ErrTooMany) {
			return nil, fmt.Errorf("%w: user %s has %d; wait for one to finish or cancel one", ErrTooMany, spec.User, m.maxRunning)
		}
		return nil, err
	}
	t.UpdatedAt = t.CreatedAt
	m.event(t, startEvent)
	m.launch(t)
	return t, nil
}

// Cancel cancels the user's task: its status is final at once, from any
// replica; the replica running it stops at once when it is this one, else at
// its next renewal (a third of the lease).
func (m *Manager) Cancel(ctx context.Context, user, id string) (*Task, error) {
	t, err := m.store.Cancel(ctx, user, id, "cancelled by the user")
	if err != nil {
		return nil, err
	}
	if t.Status == StatusCancelled {
		m.abandon(id, errors.New("cancelled by the user"))
		m.finished(t)
	}
	return t, nil
}

// launch carries a running task on in a goroutine of this replica.
func (m *Manager) launch(t *Task) {
	ctx, cancel := context.WithCancelCause(m.base)
	m.mu.Lock()
	_, mine := m.running[t.ID]
	if m.base.Err() != nil || mine {
		// Closing; or a task of this replica whose lease ran out while it
		// could not renew, claimed back by itself: it is still running here.
		m.mu.Unlock()
		cancel(nil)
		return
	}
	m.running[t.ID] = cancel
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		defer m.abandon(t.ID, nil)
		ctx = identity.WithUser(ctx, t.User)
		ctx = loop.WithCallInfo(ctx, loop.CallInfo{ToolCallID: t.ToolCallID, ThreadID: t.ThreadID, RunID: t.RunID})
		out, err := m.carry(ctx, t)
		if ctx.Err() != nil {
			return // stopped, cancelled or lost: not this goroutine's to finish
		}
		status, result := StatusDone, out
		if err != nil {
			status, result = StatusFailed, "Error: "+err.Error()
			if out != "" {
				result += "\n" + out
			}
		}
		result = tools.Evict(result, DefaultMaxResultChars, DefaultMaxResultChars/2)
		ok, ferr := m.store.Finish(context.WithoutCancel(ctx), m.owner, t.ID, status, result)
		if ferr != nil {
			m.logger.Warn("finish task", "task_id", t.ID, "error", ferr)
			return
		}
		if !ok {
			return
		}
		t.Status, t.Result, t.Owner, t.UpdatedAt = status, result, "", time.Now().UTC()
		m.finished(t)
	}()
}

func (m *Manager) runNative(ctx context.Context, t *Task) (string, error) {
	tool, ok := m.native[t.Tool]
	if !ok {
		return "", fmt.Errorf("tool %s is not a background tool of this server", t.Tool)
	}
	return tool.Execute(ctx, t.Args)
}

// carry runs the task's carrier; a panic fails the task, not the replica.
func (m *Manager) carry(ctx context.Context, t *Task) (out string, err error) {
	c, ok := m.carriers[t.Kind]
	if !ok {
		return "", fmt.Errorf("unknown task kind %q", t.Kind)
	}
	defer func() {
		if p := recover(); p != nil {
			m.logger.Error("background task panicked", "task_id", t.ID, "tool", t.Tool, "kind", t.Kind, "panic", p)
			err = fmt.Errorf("tool %s failed unexpectedly", t.Tool)
		}
	}()
	return c(ctx, t)
}

func (m *Manager) finished(t *Task) {
	m.event(t, endEvent)
	if m.listener != nil {
		m.listener.Finished(t)
	}
}

func (m *Manager) event(t *Task, kind func(*agentv1.TaskEventData) *agentv1.RunEventData) {
	if m.listener != nil {
		m.listener.Event(t, kind(EventData(t)))
	}
}

// EventData is a task as the data of its events and of the model's tools.
func EventData(t *Task) *agentv1.TaskEventData {
	d := &agentv1.TaskEventData{
		TaskId: t.ID, Tool: t.Tool, Kind: proto.String(t.Kind), Status: t.Status, ThreadId: proto.String(t.ThreadID),
		RunId: proto.String(t.RunID), ToolCallId: proto.String(t.ToolCallID), Attempts: proto.Int32(int32(t.Attempts)),
	}
	if t.Finished() {
		d.Result = proto.String(t.Result)
	}
	if c := t.Subagent; c != nil {
		// The child's thread is readable with GetThread while and after it runs.
		d.Subagent = &agentv1.TaskSubagent{Name: c.Name, ThreadId: c.ThreadID, RunId: c.RunID, Depth: int32(c.Depth)}
	}
	return d
}
