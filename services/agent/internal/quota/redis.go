package quota

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLease is how long a held member counts without renewal: the thread
// lock's lease, so a replica that dies frees its users' run slots as soon
// as it frees their threads.
const DefaultLease = 15 * time.Second

// Redis is the Store shared by replicas. Each user's set of a kind is a
// sorted set of member ids scored by the time their lease ends (Redis's own
// clock, so replicas' clocks need not agree); expired members are removed
// before every count. A counter (INCR/DECR) would be cheaper but would leak
// the runs of a replica that crashed before its DECR, and that user would
// stay refused for good; a lease-scored set forgets them after one lease.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	lease  time.Duration
	errs   ErrorObserver
}

// ErrorObserver learns the error, if any, of each store operation (a
// metric of Redis errors); it is deferred with the operation's name.
type ErrorObserver interface {
	Observe(ctx context.Context, op string, errp *error)
}

// RedisOption configures Redis.
type RedisOption func(*Redis)

// WithRedisErrors tells o the result of every operation; without it
// nothing is told.
func WithRedisErrors(o ErrorObserver) RedisOption { return func(r *Redis) { r.errs = o } }

// observe tells r.errs the result of op.
func (r *Redis) observe(ctx context.Context, op string, errp *error) {
	if r.errs != nil {
		r.errs.Observe(ctx, op, errp)
	}
}

// NewRedis returns a store on rdb with keys under prefix ("wick") and
// members that live lease (DefaultLease when 0) without renewal.
func NewRedis(rdb redis.UniversalClient, prefix string, lease time.Duration, opts ...RedisOption) *Redis {
	if prefix == "" {
		prefix = "wick"
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	r := &Redis{rdb: rdb, prefix: prefix, lease: lease}
	for _, o := range opts {
		o(r)
	}
	return r
}

// key is the sorted set of a user's members of kind; the user is the hash
// tag, as in every other per-user key.
func (r *Redis) key(user, kind string) string { return r.prefix + ":{" + user + "}:held:" + kind }

// takeScript prunes expired members, then adds ARGV[2] unless the set holds
// ARGV[3] (> 0) members already. It answers {added, count}.
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
local max = tonumber(ARGV[3])
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  if max > 0 and n >= max then return {0, n} end
  n = n + 1
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[2])
redis.call('PEXPIRE', KEYS[1], lease)
return {1, n}`)

// renewScript extends a member's lease, adding it back when it expired
// meanwhile (it is still held: its holder is alive).
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`)

// Take implements Store.
func (r *Redis) Take(ctx context.Context, user, kind, id string, max int64) (_ int64, _ bool, err error) {
	defer r.observe(ctx, "quota.take", &err)
	res, err := takeScript.Run(ctx, r.rdb, []string{r.key(user, kind)}, r.lease.Milliseconds(), id, max).Int64Slice()
	if err != nil {
		return 0, false, fmt.Errorf("take %s: %w", kind, err)
	}
	if len(res) != 2 {
		return 0, false, fmt.Errorf("take %s: unexpected reply %v", kind, res)
	}
	return res[1], res[0] == 1, nil
}

// Renew implements Store.
func (r *Redis) Renew(ctx context.Context, user, kind, id string) (err error) {
	defer r.observe(ctx, "quota.renew", &err)
	if err := renewScript.Run(ctx, r.rdb, []string{r.key(user, kind)}, r.lease.Milliseconds(), id).Err(); err != nil {
		return fmt.Errorf("renew %s: %w", kind, err)
	}
	return nil
}

// Drop implements Store.
func (r *Redis) Drop(ctx context.Context, user, kind, id string) (err error) {
	defer r.observe(ctx, "quota.drop", &err)
	if err := r.rdb.ZRem(ctx, r.key(user, kind), id).Err(); err != nil {
		return fmt.Errorf("drop %s: %w", kind, err)
	}
	return nil
}

// Lease implements Store.
func (r *Redis) Lease() time.Duration { return r.lease }

// rateKey is the sorted set of a user's recent events of kind.
func (r *Redis) rateKey(user, kind string) string { return r.prefix + ":{" + user + "}:rate:" + kind }

// countScript drops the events older than the window (ARGV[1] ms), then
// records ARGV[2] unless ARGV[3] (> 0) events remain. It answers {added,
// count, ms until the oldest leaves the window}. Redis's clock scores the
// events, so replicas' clocks need not agree.
var countScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
local max = tonumber(ARGV[3])
if max > 0 and n >= max then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, n, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], window)
return {1, n + 1, 0}`)

// Count implements Rates.
func (r *Redis) Count(ctx context.Context, user, kind string, max int64, window time.Duration) (int64, bool, time.Duration, error) {
	res, err := countScript.Run(ctx, r.rdb, []string{r.rateKey(user, kind)}, window.Milliseconds(), rand.Text(), max).Int64Slice()
	if err != nil {
		return 0, false, 0, fmt.Errorf("count %s: %w", kind, err)
	}
	if len(res) != 3 {
		return 0, false, 0, fmt.Errorf("count %s: unexpected reply %v", kind, res)
	}
	return res[1], res[0] == 1, time.Duration(res[2]) * time.Millisecond, nil
}
