package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/meters"
)

// Redis is the Store and Log shared by replicas. A run is a hash {s: status,
// j: record JSON, c: cancel requested, p: stop requested, m and k: error
// message and code set by Finish} and a stream of events {e: event JSON}
// ended by an entry {end: 1}; decisions wait in a string key. Keys
// carry the run id as a hash tag so one run's keys share a cluster slot.
type Redis struct {
	rdb       redis.UniversalClient
	prefix    string
	maxEvents int64
	retention time.Duration
	liveTTL   time.Duration
	// blockSlots bounds the reads that wait inside Redis (XREAD BLOCK), since
	// each holds a pooled connection; readers beyond it poll.
	blockSlots chan struct{}
	poll       time.Duration
	errs       *meters.RedisErrors
}

// Defaults of Redis log readers.
const (
	// DefaultBlockingReaders is how many log reads may wait inside Redis at once.
	DefaultBlockingReaders = 8
	// DefaultReadPoll is how often a reader without a blocking slot polls.
	DefaultReadPoll = 100 * time.Millisecond
)

// WithBlockingReaders bounds the reads that hold a connection while waiting
// for events; keep it well under the client's pool size.
func WithBlockingReaders(n int) RedisOption {
	return func(r *Redis) {
		if n > 0 {
			r.blockSlots = make(chan struct{}, n)
		}
	}
}

// RedisOption configures Redis.
type RedisOption func(*Redis)

// WithRedisPrefix sets the key prefix.
func WithRedisPrefix(p string) RedisOption { return func(r *Redis) { r.prefix = p } }

// WithRedisRetention sets how long a finished run's keys live.
func WithRedisRetention(d time.Duration) RedisOption { return func(r *Redis) { r.retention = d } }

// WithRedisMeterProvider sets where the store's Redis errors are counted
// (wick.agent.redis.errors); the default is the global provider.
func WithRedisMeterProvider(mp metric.MeterProvider) RedisOption {
	return func(r *Redis) { r.errs = meters.NewRedisErrors(mp) }
}

// WithRedisMaxEvents caps a run's stream (approximately).
func WithRedisMaxEvents(n int64) RedisOption { return func(r *Redis) { r.maxEvents = n } }

// NewRedis returns runs on rdb; the caller owns rdb.
func NewRedis(rdb redis.UniversalClient, opts ...RedisOption) *Redis {
	r := &Redis{rdb: rdb, prefix: "wick", maxEvents: DefaultMaxEvents, retention: DefaultRetention, liveTTL: DefaultLiveTTL,
		blockSlots: make(chan struct{}, DefaultBlockingReaders), poll: DefaultReadPoll}
	for _, o := range opts {
		o(r)
	}
	if r.errs == nil {
		r.errs = meters.NewRedisErrors(nil)
	}
	return r
}

func (r *Redis) runKey(id string) string       { return r.prefix + ":run:{" + id + "}" }
func (r *Redis) eventsKey(id string) string    { return r.prefix + ":run:{" + id + "}:events" }
func (r *Redis) decisionsKey(id string) string { return r.prefix + ":run:{" + id + "}:decisions" }
func (r *Redis) nudgeChannel() string          { return r.prefix + ":run-nudge" }

// agentRunsKey is the set of a user's unfinished runs of an agent, by which
// deleting an agent finds its runs on every replica.
func (r *Redis) agentRunsKey(user, agentID string) string {
	return r.prefix + ":agent-runs:{" + user + "}:" + agentID
}

// Put implements Store.
func (r *Redis) Put(ctx context.Context, run *Run) (err error) {
	defer r.errs.Observe(ctx, "run.put", &err)
	data, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run: %w", err)
	}
	ttl := r.liveTTL
	switch {
	case run.Status == StatusStopped:
		ttl = DefaultStoppedRetention
	case Terminal(run.Status):
		ttl = r.retention
	}
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, r.runKey(run.ID), "s", run.Status, "j", data)
		p.PExpire(ctx, r.runKey(run.ID), ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	// The index lives in another slot than the record, so it is written
	// apart; a stale member is harmless (Unfinished's callers check records).
	key := r.agentRunsKey(run.User, run.AgentID)
	_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if Terminal(run.Status) {
			p.SRem(ctx, key, run.ID)
		} else {
			p.SAdd(ctx, key, run.ID)
			p.PExpire(ctx, key, r.liveTTL)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index run: %w", err)
	}
	return nil
}

// Unfinished implements Store. Members whose record is gone or ended are
// dropped from the index as they are seen.
func (r *Redis) Unfinished(ctx context.Context, user, agentID string) (_ []string, err error) {
	defer r.errs.Observe(ctx, "run.unfinished", &err)
	key := r.agentRunsKey(user, agentID)
	ids, err := r.rdb.SMembers(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("list runs of agent %s: %w", agentID, err)
	}
	out := ids[:0]
	for _, id := range ids {
		st, err := r.rdb.HGet(ctx, r.runKey(id), "s").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("load run: %w", err)
		}
		if st == "" || Terminal(st) {
			r.rdb.SRem(ctx, key, id)
			continue
		}
		out = append(out, id)
	}
	return out, nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, runID string) (_ *Run, err error) {
	defer r.errs.Observe(ctx, "run.get", &err)
	vals, err := r.rdb.HMGet(ctx, r.runKey(runID), "s", "j", "m", "k").Result()
	if err != nil {
		return nil, fmt.Errorf("load run: %w", err)
	}
	st, _ := vals[0].(string)
	data, _ := vals[1].(string)
	msg, _ := vals[2].(string)
	code, _ := vals[3].(string)
	if data == "" {
		return nil, ErrNotFound
	}
	var run Run
	if err := json.Unmarshal([]byte(data), &run); err != nil {
		return nil, fmt.Errorf("decode run: %w", err)
	}
	if Terminal(st) && !Terminal(run.Status) {
		// Closed by Finish, which writes only its fields.
		run.Status, run.Pending, run.Error, run.Code = st, nil, msg, code
	}
	return &run, nil
}

var finishScript = redis.NewScript(`
local s = redis.call('HGET', KEYS[1], 's')
if not s then return -1 end
if s == 'done' or s == 'stopped' or s == 'cancelled' or s == 'failed' then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'm', ARGV[3], 'k', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

// Finish implements Store. Only the status, message and code fields
// change; Get reports them over the record's.
func (r *Redis) Finish(ctx context.Context, runID, status, msg, code string) (_ bool, err error) {
	defer r.errs.Observe(ctx, "run.finish", &err)
	n, err := finishScript.Run(ctx, r.rdb, []string{r.runKey(runID)}, status, r.retention.Milliseconds(), msg, code).Int64()
	if err != nil {
		return false, fmt.Errorf("finish run: %w", err)
	}
	if n < 0 {
		return false, ErrNotFound
	}
	return n == 1, nil
}

// Flags of a run's hash: requests addressed to its owner.
const (
	flagCancel = "c"
	flagStop   = "p"
)

// RequestCancel implements Store.
func (r *Redis) RequestCancel(ctx context.Context, runID string) (err error) {
	defer r.errs.Observe(ctx, "run.cancel", &err)
	if err := r.rdb.HSet(ctx, r.runKey(runID), flagCancel, 1).Err(); err != nil {
		return fmt.Errorf("request cancel: %w", err)
	}
	if err := r.rdb.Publish(ctx, r.nudgeChannel(), runID).Err(); err != nil {
		return fmt.Errorf("request cancel: %w", err)
	}
	return nil
}

// CancelRequested implements Store.
func (r *Redis) CancelRequested(ctx context.Context, runID string) (_ bool, err error) {
	defer r.errs.Observe(ctx, "run.cancel_requested", &err)
	return r.flag(ctx, runID, flagCancel)
}

// RequestStop implements Store. The owner reads the flag at each step
// boundary, so no nudge is needed.
func (r *Redis) RequestStop(ctx context.Context, runID string) (err error) {
	defer r.errs.Observe(ctx, "run.stop", &err)
	if err := r.rdb.HSet(ctx, r.runKey(runID), flagStop, 1).Err(); err != nil {
		return fmt.Errorf("request stop: %w", err)
	}
	return nil
}

// StopRequested implements Store.
func (r *Redis) StopRequested(ctx context.Context, runID string) (_ bool, err error) {
	defer r.errs.Observe(ctx, "run.stop_requested", &err)
	return r.flag(ctx, runID, flagStop)
}

// flag reports whether a request flag is set on the run.
func (r *Redis) flag(ctx context.Context, runID, field string) (bool, error) {
	v, err := r.rdb.HGet(ctx, r.runKey(runID), field).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read run flag %s: %w", field, err)
	}
	return v == "1", nil
}

// PutDecisions implements Store.
func (r *Redis) PutDecisions(ctx context.Context, runID string, d []loop.Decision) (err error) {
	defer r.errs.Observe(ctx, "run.put_decisions", &err)
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode decisions: %w", err)
	}
	if err := r.rdb.Set(ctx, r.decisionsKey(runID), data, r.liveTTL).Err(); err != nil {
		return fmt.Errorf("store decisions: %w", err)
	}
	if err := r.rdb.Publish(ctx, r.nudgeChannel(), runID).Err(); err != nil {
		return fmt.Errorf("store decisions: %w", err)
	}
	return nil
}

// TakeDecisions implements Store.
func (r *Redis) TakeDecisions(ctx context.Context, runID string) (_ []loop.Decision, err error) {
	defer r.errs.Observe(ctx, "run.take_decisions", &err)
	data, err := r.rdb.GetDel(ctx, r.decisionsKey(runID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("take decisions: %w", err)
	}
	var d []loop.Decision
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode decisions: %w", err)
	}
	return d, nil
}

// Nudges implements Store with one pub/sub subscription, confirmed before
// it returns so that no nudge published afterwards is missed.
func (r *Redis) Nudges(ctx context.Context) (<-chan string, error) {
	ps := r.rdb.Subscribe(ctx, r.nudgeChannel())
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, fmt.Errorf("subscribe to run nudges: %w", err)
	}
	out := make(chan string, 64)
	go func() {
		defer ps.Close()
		ch := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- m.Payload:
				default: // owners poll as well
				}
			}
		}
	}()
	return out, nil
}

// errRunEnded is appendScript's refusal of an event of a finished run.
const errRunEnded = "run has ended"

// appendScript adds an event unless the run was closed (by another replica
// that found its owner dead): an owner that outlived its lease is fenced off
// and stops, instead of writing after the log's end.
var appendScript = redis.NewScript(`
if ARGV[4] ~= '1' then
  local s = redis.call('HGET', KEYS[1], 's')
  if s == 'done' or s == 'stopped' or s == 'cancelled' or s == 'failed' then return redis.error_reply('run has ended') end
end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return id`)

// Append implements Log.
func (r *Redis) Append(ctx context.Context, runID string, ev loop.StreamEvent) (string, error) {
	return r.append(ctx, runID, ev, false)
}

// AppendClosing adds the event that closes a run another replica owned,
// after Finish; Append refuses events of a finished run.
func (r *Redis) AppendClosing(ctx context.Context, runID string, ev loop.StreamEvent) (string, error) {
	return r.append(ctx, runID, ev, true)
}

func (r *Redis) append(ctx context.Context, runID string, ev loop.StreamEvent, force bool) (_ string, err error) {
	defer func() {
		// The script's refusal of a finished run's event is an answer.
		if err == nil || !strings.Contains(err.Error(), errRunEnded) {
			r.errs.Observe(ctx, "run.append", &err)
		}
	}()
	ev.ID = ""
	data, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("encode event: %w", err)
	}
	f := "0"
	if force {
		f = "1"
	}
	id, err := appendScript.Run(ctx, r.rdb, []string{r.runKey(runID), r.eventsKey(runID)}, r.maxEvents, data, r.liveTTL.Milliseconds(), f).Text()
	if err != nil {
		return "", fmt.Errorf("append event: %w", err)
	}
	return id, nil
}

// End implements Log.
func (r *Redis) End(ctx context.Context, runID string) (err error) {
	defer r.errs.Observe(ctx, "run.end", &err)
	key := r.eventsKey(runID)
	_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"end", "1"}})
		p.PExpire(ctx, key, r.retention)
		p.PExpire(ctx, r.decisionsKey(runID), r.retention)
		return nil
	})
	if err != nil {
		return fmt.Errorf("end run log: %w", err)
	}
	return nil
}

// Read implements Log.
func (r *Redis) Read(ctx context.Context, runID, after string, max int, block time.Duration) (_ []loop.StreamEvent, _ bool, err error) {
	defer r.errs.Observe(ctx, "run.read", &err)
	if _, err := parseAfter(after); err != nil {
		return nil, false, err
	}
	if after == "" {
		after = "0-0"
	}
	if block <= 0 {
		return r.read(ctx, runID, after, max, -1) // no BLOCK argument: answer at once
	}
	select {
	case r.blockSlots <- struct{}{}:
		defer func() { <-r.blockSlots }()
		return r.read(ctx, runID, after, max, block)
	default:
	}
	// Every blocking slot is taken: poll instead of holding a connection.
	deadline := time.Now().Add(block)
	for {
		evs, ended, err := r.read(ctx, runID, after, max, -1)
		if err != nil || len(evs) > 0 || ended || !time.Now().Before(deadline) {
			return evs, ended, err
		}
		t := time.NewTimer(min(r.poll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, ctx.Err()
		case <-t.C:
		}
	}
}

func (r *Redis) read(ctx context.Context, runID, after string, max int, block time.Duration) ([]loop.StreamEvent, bool, error) {
	res, err := r.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{r.eventsKey(runID), after}, Count: int64(max), Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read run log: %w", err)
	}
	var out []loop.StreamEvent
	ended := false
	for _, s := range res {
		for _, m := range s.Messages {
			if _, ok := m.Values["end"]; ok {
				ended = true
				break
			}
			raw, _ := m.Values["e"].(string)
			var ev loop.StreamEvent
			if err := json.Unmarshal([]byte(raw), &ev); err != nil {
				return nil, false, fmt.Errorf("decode event %s: %w", m.ID, err)
			}
			ev.ID = m.ID
			out = append(out, ev)
		}
	}
	return out, ended, nil
}

// Last implements Log.
func (r *Redis) Last(ctx context.Context, runID string) (_ *loop.StreamEvent, err error) {
	defer r.errs.Observe(ctx, "run.last", &err)
	res, err := r.rdb.XRevRangeN(ctx, r.eventsKey(runID), "+", "-", 2).Result()
	if err != nil {
		return nil, fmt.Errorf("read run log: %w", err)
	}
	for _, m := range res {
		if _, ok := m.Values["end"]; ok {
			continue
		}
		raw, _ := m.Values["e"].(string)
		var ev loop.StreamEvent
		if err := json.Unmarshal([]byte(raw), &ev); err != nil {
			return nil, fmt.Errorf("decode event %s: %w", m.ID, err)
		}
		ev.ID = m.ID
		return &ev, nil
	}
	return nil, nil
}
