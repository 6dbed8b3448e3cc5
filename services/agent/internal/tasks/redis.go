package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore is a Store shared by replicas. Every key carries the hash tag
// {tasks}, so the scripts, which touch a task, the lease set and the indexes
// together, run on Redis Cluster too. Times come from Redis's clock (TIME),
// so replicas with skewed clocks agree on when a lease ends.
//
// Keys: <prefix>:{tasks}:t:<id> a hash (doc: the fixed part as JSON; user,
// status, result, attempts, owner, delivered, updated); <prefix>:{tasks}:leases
// running ids scored by lease end (ms); <prefix>:{tasks}:th:<user>:<thread>
// a thread's ids; <prefix>:{tasks}:run:<user> a user's running ids.
type RedisStore struct {
	rdb       redis.UniversalClient
	prefix    string
	retention time.Duration
}

// NewRedisStore returns a store on rdb under prefix ("wick" when empty).
func NewRedisStore(rdb redis.UniversalClient, prefix string) *RedisStore {
	if prefix == "" {
		prefix = "wick"
	}
	return &RedisStore{rdb: rdb, prefix: prefix + ":{tasks}:", retention: DefaultRetention}
}

func (s *RedisStore) taskKey(id string) string { return s.prefix + "t:" + id }
func (s *RedisStore) leasesKey() string        { return s.prefix + "leases" }
func (s *RedisStore) threadKey(user, thread string) string {
	return s.prefix + "th:" + user + ":" + thread
}
func (s *RedisStore) runningKey(user string) string { return s.prefix + "run:" + user }

// nowMS is the Lua prologue giving Redis's clock in milliseconds.
const nowMS = `local tm = redis.call('TIME'); local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
`

// KEYS: task, leases, thread, running. ARGV: id, doc, user, owner, lease ms, max running, retention ms.
var createScript = redis.NewScript(nowMS + `
if tonumber(ARGV[6]) > 0 and redis.call('SCARD', KEYS[4]) >= tonumber(ARGV[6]) then return 0 end
redis.call('HSET', KEYS[1], 'doc', ARGV[2], 'user', ARGV[3], 'status', 'running', 'result', '',
  'attempts', 1, 'owner', ARGV[4], 'delivered', 0, 'updated', now)
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[7])
redis.call('SADD', KEYS[4], ARGV[1])
return 1`)

// KEYS: leases. ARGV: task key prefix, owner, lease ms, ids…; returns the ids lost.
var renewScript = redis.NewScript(nowMS + `
local lost = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local st = redis.call('HMGET', ARGV[1] .. id, 'status', 'owner')
  if st[1] == 'running' and st[2] == ARGV[2] then
    redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), id)
  else
    lost[#lost + 1] = id
  end
end
return lost`)

// finishLua ends a running task: status, result, no owner, off the lease
// set and the user's running set, kept for the retention.
const finishLua = `
local function finish(key, id, status, result, now, leases, runprefix, retention)
  redis.call('HSET', key, 'status', status, 'result', result, 'owner', '', 'updated', now)
  redis.call('ZREM', leases, id)
  redis.call('SREM', runprefix .. redis.call('HGET', key, 'user'), id)
  redis.call('PEXPIRE', key, retention)
end
`

// KEYS: leases. ARGV: task key prefix, running key prefix, owner, lease ms,
// max attempts, limit, retention ms, failure text. Returns {id, 0|1 failed}…
var claimScript = redis.NewScript(nowMS + finishLua + `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[6]))
local out = {}
for _, id in ipairs(ids) do
  local key = ARGV[1] .. id
  if redis.call('HGET', key, 'status') ~= 'running' then
    redis.call('ZREM', KEYS[1], id)
  else
    local n = redis.call('HINCRBY', key, 'attempts', 1)
    if n > tonumber(ARGV[5]) then
      finish(key, id, 'failed', ARGV[8], now, KEYS[1], ARGV[2], ARGV[7])
      out[#out + 1] = id; out[#out + 1] = 1
    else
      redis.call('HSET', key, 'owner', ARGV[3], 'updated', now)
      redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), id)
      out[#out + 1] = id; out[#out + 1] = 0
    end
  end
end
return out`)

// KEYS: task, leases. ARGV: id, owner (” = any owner), status, result,
// running key prefix, retention ms.
var finishScript = redis.NewScript(nowMS + finishLua + `
local st = redis.call('HMGET', KEYS[1], 'status', 'owner')
if st[1] ~= 'running' or (ARGV[2] ~= '' and st[2] ~= ARGV[2]) then return 0 end
finish(KEYS[1], ARGV[1], ARGV[3], ARGV[4], now, KEYS[2], ARGV[5], ARGV[6])
return 1`)

// KEYS: thread. ARGV: task key prefix. Marks the finished, undelivered
// tasks delivered and returns their ids.
var takeScript = redis.NewScript(`
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = ARGV[1] .. id
  local st = redis.call('HMGET', key, 'status', 'delivered')
  if st[1] == false then
    redis.call('SREM', KEYS[1], id)
  elseif st[1] ~= 'running' and st[2] == '0' then
    redis.call('HSET', key, 'delivered', 1)
    out[#out + 1] = id
  end
end
return out`)

// Create implements Store.
func (s *RedisStore) Create(ctx context.Context, t *Task, lease time.Duration, maxRunning int) error {
	doc, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task: %w", err)
	}
	ok, err := createScript.Run(ctx, s.rdb,
		[]string{s.taskKey(t.ID), s.leasesKey(), s.threadKey(t.User, t.ThreadID), s.runningKey(t.User)},
		t.ID, doc, t.User, t.Owner, lease.Milliseconds(), maxRunning, s.retention.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	if ok == 0 {
		return ErrTooMany
	}
	return nil
}

// load reads tasks by id; missing ones are skipped.
func (s *RedisStore) load(ctx context.Context, ids []string) ([]*Task, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, s.taskKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("load tasks: %w", err)
	}
	out := make([]*Task, 0, len(ids))
	for _, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue
		}
		t, err := decode(h)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func decode(h map[string]string) (*Task, error) {
	var t Task
	if err := json.Unmarshal([]byte(h["doc"]), &t); err != nil {
		return nil, fmt.Errorf("decode task: %w", err)
	}
	t.Status, t.Result, t.Owner = h["status"], h["result"], h["owner"]
	t.Attempts, _ = strconv.Atoi(h["attempts"])
	t.Delivered = h["delivered"] == "1"
	if ms, err := strconv.ParseInt(h["updated"], 10, 64); err == nil {
		t.UpdatedAt = time.UnixMilli(ms).UTC()
	}
	return &t, nil
}

// Get implements Store.
func (s *RedisStore) Get(ctx context.Context, user, id string) (*Task, error) {
	ts, err := s.load(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 || ts[0].User != user {
		return nil, ErrNotFound
	}
	return ts[0], nil
}

// List implements Store.
func (s *RedisStore) List(ctx context.Context, user, threadID string) ([]*Task, error) {
	ids, err := s.rdb.SMembers(ctx, s.threadKey(user, threadID)).Result()
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	ts, err := s.load(ctx, ids)
	if err != nil {
		return nil, err
	}
	sortTasks(ts)
	return ts, nil
}

// Renew implements Store.
func (s *RedisStore) Renew(ctx context.Context, owner string, ids []string, lease time.Duration) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 3+len(ids))
	args = append(args, s.prefix+"t:", owner, lease.Milliseconds())
	for _, id := range ids {
		args = append(args, id)
	}
	lost, err := renewScript.Run(ctx, s.rdb, []string{s.leasesKey()}, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("renew task leases: %w", err)
	}
	return lost, nil
}

// Claim implements Store.
func (s *RedisStore) Claim(ctx context.Context, owner string, lease time.Duration, maxAttempts, limit int) ([]*Task, error) {
	res, err := claimScript.Run(ctx, s.rdb, []string{s.leasesKey()},
		s.prefix+"t:", s.prefix+"run:", owner, lease.Milliseconds(), maxAttempts, limit,
		s.retention.Milliseconds(), failedAttempts(maxAttempts)).Slice()
	if err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	ids := make([]string, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		ids = append(ids, id)
	}
	return s.load(ctx, ids)
}

// Finish implements Store.
func (s *RedisStore) Finish(ctx context.Context, owner, id, status, result string) (bool, error) {
	n, err := finishScript.Run(ctx, s.rdb, []string{s.taskKey(id), s.leasesKey()},
		id, owner, status, result, s.prefix+"run:", s.retention.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("finish task %s: %w", id, err)
	}
	return n == 1, nil
}

// Cancel implements Store.
func (s *RedisStore) Cancel(ctx context.Context, user, id, reason string) (*Task, error) {
	if _, err := s.Get(ctx, user, id); err != nil {
		return nil, err
	}
	if _, err := finishScript.Run(ctx, s.rdb, []string{s.taskKey(id), s.leasesKey()},
		id, "", StatusCancelled, reason, s.prefix+"run:", s.retention.Milliseconds()).Int(); err != nil {
		return nil, fmt.Errorf("cancel task %s: %w", id, err)
	}
	return s.Get(ctx, user, id)
}

// TakeUndelivered implements Store.
func (s *RedisStore) TakeUndelivered(ctx context.Context, user, threadID string) ([]*Task, error) {
	ids, err := takeScript.Run(ctx, s.rdb, []string{s.threadKey(user, threadID)}, s.prefix+"t:").StringSlice()
	if err != nil {
		return nil, fmt.Errorf("take task results: %w", err)
	}
	ts, err := s.load(ctx, ids)
	if err != nil {
		return nil, err
	}
	sortTasks(ts)
	return ts, nil
}

func failedAttempts(max int) string {
	return fmt.Sprintf("failed: the task was started %d times and its replica stopped each time", max)
}
