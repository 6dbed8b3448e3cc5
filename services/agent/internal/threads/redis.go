package threads

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/meters"
)

// DefaultPrefix starts every key this package writes.
const DefaultPrefix = "wick"

// RedisOption configures a RedisStore.
type RedisOption func(*RedisStore)

// WithRedisTTL sets the sliding TTL of threads.
func WithRedisTTL(d time.Duration) RedisOption { return func(s *RedisStore) { s.ttl = d } }

// WithLease sets the run lock's lease; it is renewed every third of it.
func WithLease(d time.Duration) RedisOption { return func(s *RedisStore) { s.lease = d } }

// WithRetryInterval sets how often a waiting Acquire retries.
func WithRetryInterval(d time.Duration) RedisOption { return func(s *RedisStore) { s.retry = d } }

// WithRedisMeterProvider sets where the store's Redis errors are counted
// (wick.agent.redis.errors); the default is the global provider.
func WithRedisMeterProvider(mp metric.MeterProvider) RedisOption {
	return func(s *RedisStore) { s.errs = meters.NewRedisErrors(mp) }
}

// WithPrefix sets the key prefix, so several suites can share one Redis.
func WithPrefix(p string) RedisOption { return func(s *RedisStore) { s.prefix = p } }

// WithHolderName ends every lock token this store takes with "@" and name
// (a replica's host and pid), so that reading a thread's lock key tells an
// operator which replica runs it.
func WithHolderName(name string) RedisOption { return func(s *RedisStore) { s.holder = name } }

// RedisStore is the Store and Locker shared by replicas. A thread is a hash
// {v: version, m: meta part (history.go), g: generation of the messages
// array, a: agent id, n: message count, u: updated unix ms, t: title, T: the
// title the user gave (Rename), r: run mark and R: its run's id (MarkRun)} and a string holding its messages array, both with a
// sliding TTL; a thread saved before the two parts has its whole state in
// the hash's s instead, until its next save. Each user has a sorted set of
// thread ids by update time (unix ms) that List reads a page of. Keys carry the user as a hash tag so that a thread,
// its index and its lock live in one cluster slot and one script can touch them.
type RedisStore struct {
	rdb    redis.UniversalClient
	ttl    time.Duration
	lease  time.Duration
	retry  time.Duration
	prefix string
	holder string
	errs   *meters.RedisErrors
}

// NewRedisStore returns a store on rdb; the caller owns rdb.
func NewRedisStore(rdb redis.UniversalClient, opts ...RedisOption) *RedisStore {
	s := &RedisStore{rdb: rdb, ttl: DefaultTTL, lease: DefaultLease, retry: DefaultRetryInterval, prefix: DefaultPrefix}
	for _, o := range opts {
		o(s)
	}
	if s.errs == nil {
		s.errs = meters.NewRedisErrors(nil)
	}
	return s
}

func (s *RedisStore) threadKey(user, thread string) string {
	return s.prefix + ":{" + user + "}:thread:" + thread
}
func (s *RedisStore) indexKey(user string) string { return s.prefix + ":{" + user + "}:threads" }
func (s *RedisStore) lockKey(user, thread string) string {
	return s.prefix + ":{" + user + "}:lock:" + thread
}

func (s *RedisStore) msgsKey(user, thread string) string {
	return s.prefix + ":{" + user + "}:msgs:" + thread
}

// getScript reads a thread and slides its TTL in one round trip: version,
// whole state (a thread stored before the two parts), meta part,
// generation, and the messages array.
var getScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'v', 's', 'm', 'g')
if not r[1] then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[1])
return {r[1], r[2] or '', r[3] or '', r[4] or '', redis.call('GET', KEYS[3]) or ''}`)

// saveScript is the compare-and-set: it writes only while the run lock
// (KEYS[3], same hash slot) holds the writer's fence token (” = nobody),
// and only over the version the writer loaded (0 = absent). A new thread
// is refused (-3) when the user's index holds ARGV[9] (> 0) threads
// already, in the same step as the write, so replicas creating threads at
// once cannot together pass the bound. The run mark (r) and the title the
// user gave (T) are left as they are.
//
// ARGV[12] says how the messages (KEYS[4]) are written: -1 whole (SET to
// ARGV[13], a new generation ARGV[11]); otherwise it is the array's length
// that the writer appends to, and ARGV[13] replaces the array's closing
// bracket, so a load stays one GET. An append whose array is not the one
// the writer knows (generation ARGV[11] and that length) writes nothing
// and answers -4.
var saveScript = redis.NewScript(`
if (redis.call('GET', KEYS[3]) or '') ~= ARGV[8] then return -2 end
local cur = redis.call('HGET', KEYS[1], 'v') or '0'
if cur ~= ARGV[1] then return -1 end
local size = tonumber(ARGV[12])
if size < 0 then
  local max = tonumber(ARGV[9])
  if cur == '0' and max > 0 and not redis.call('ZSCORE', KEYS[2], ARGV[7]) and redis.call('ZCARD', KEYS[2]) >= max then
    return -3
  end
  redis.call('SET', KEYS[4], ARGV[13])
  redis.call('HDEL', KEYS[1], 's')
else
  if redis.call('HGET', KEYS[1], 'g') ~= ARGV[11] or redis.call('STRLEN', KEYS[4]) ~= size then return -4 end
  if #ARGV[13] > 0 then redis.call('SETRANGE', KEYS[4], size - 1, ARGV[13]) end
end
local nv = tonumber(ARGV[1]) + 1
redis.call('HSET', KEYS[1], 'v', nv, 'm', ARGV[2], 'g', ARGV[11], 'a', ARGV[3], 'n', ARGV[4], 'u', ARGV[5], 't', ARGV[10])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[4], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[7])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return nv`)

// LoadOrCreate implements Store.
func (s *RedisStore) LoadOrCreate(ctx context.Context, user, threadID string) (_ *loop.AgentState, err error) {
	defer s.errs.Observe(ctx, "thread.load", &err)
	st, err := s.Get(ctx, user, threadID)
	if errors.Is(err, ErrNotFound) {
		return newState(threadID), nil
	}
	return st, err
}

// Get implements Store.
func (s *RedisStore) Get(ctx context.Context, user, threadID string) (_ *loop.AgentState, err error) {
	defer s.errs.Observe(ctx, "thread.get", &err)
	keys := []string{s.threadKey(user, threadID), s.indexKey(user), s.msgsKey(user, threadID)}
	res, err := getScript.Run(ctx, s.rdb, keys, s.ttl.Milliseconds()).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load thread: %w", err)
	}
	if len(res) != 5 {
		return nil, fmt.Errorf("load thread: unexpected reply %v", res)
	}
	var f [5]string
	for i := range f {
		f[i], _ = res[i].(string)
	}
	vs, whole, meta, gen, msgs := f[0], f[1], f[2], f[3], f[4]
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("load thread %s: %w: bad version %q", threadID, ErrCorrupt, vs)
	}
	if meta == "" {
		return decodeWhole(threadID, []byte(whole), v)
	}
	return decodeParts(threadID, []byte(meta), []byte(msgs), v, gen)
}

// Save implements Store.
func (s *RedisStore) Save(ctx context.Context, user string, state *loop.AgentState, fence string, b Bounds) (err error) {
	defer s.errs.Observe(ctx, "thread.save", &err)
	prevV, prevT := state.Version, state.UpdatedAt
	state.Version, state.UpdatedAt = prevV+1, time.Now().UTC()
	err = s.save(ctx, user, state, prevV, fence, b)
	if errors.Is(err, errMoved) {
		// The thread was replaced by a whole write this state never saw
		// (deleted and written again up to the same version): write it
		// whole.
		state.Stored = nil
		err = s.save(ctx, user, state, prevV, fence, b)
	}
	if err != nil {
		state.Version, state.UpdatedAt = prevV, prevT
	}
	return err
}

// save is one attempt of Save over version prev.
func (s *RedisStore) save(ctx context.Context, user string, state *loop.AgentState, prev int64, fence string, b Bounds) error {
	enc, err := encodeSave(state, prev, b)
	if err != nil {
		return err
	}
	size := int64(-1)
	if enc.from != nil {
		size = enc.from.size
	}
	keys := []string{s.threadKey(user, state.ThreadID), s.indexKey(user), s.lockKey(user, state.ThreadID), s.msgsKey(user, state.ThreadID)}
	save := func() (int64, error) {
		return saveScript.Run(ctx, s.rdb, keys,
			prev, enc.meta, state.AgentID, len(state.Messages), state.UpdatedAt.UnixMilli(), s.ttl.Milliseconds(), state.ThreadID, fence,
			max(b.Threads.Max, 0), title(state.Messages), enc.gen, size, enc.msgs).Int64()
	}
	nv, err := save()
	if err == nil && nv == -3 {
		// The index may still name threads that expired: drop them and
		// count again before refusing.
		var n int64
		if n, err = s.Count(ctx, user); err == nil {
			if nv, err = save(); err == nil && nv == -3 {
				return b.Threads.Refuse(user, n)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("save thread: %w", err)
	}
	switch nv {
	case -2:
		return ErrLeaseLost
	case -1:
		return ErrConflict
	case -4:
		return errMoved
	}
	state.Stored = enc.note(nv, state.Messages)
	return nil
}

// markScript sets the run mark and run id of a thread that exists while
// the run lock (KEYS[2]) holds the writer's fence token; it leaves the TTL
// alone.
var markScript = redis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return -2 end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[2], 'R', ARGV[3])
return 1`)

// MarkRun implements Store.
func (s *RedisStore) MarkRun(ctx context.Context, user, threadID, fence, runID, mark string) (err error) {
	defer s.errs.Observe(ctx, "thread.mark", &err)
	n, err := markScript.Run(ctx, s.rdb, []string{s.threadKey(user, threadID), s.lockKey(user, threadID)}, fence, mark, runID).Int64()
	if err != nil {
		return fmt.Errorf("mark thread %s: %w", threadID, err)
	}
	if n == -2 {
		return ErrLeaseLost
	}
	return nil
}

// renameScript sets (or with an empty ARGV[1] drops) the title the user
// gave a thread that exists, and slides the thread's TTL as any access
// does.
var renameScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'T') else redis.call('HSET', KEYS[1], 'T', ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1`)

// Rename implements Store.
func (s *RedisStore) Rename(ctx context.Context, user, threadID, title string) (err error) {
	defer s.errs.Observe(ctx, "thread.rename", &err)
	keys := []string{s.threadKey(user, threadID), s.indexKey(user), s.msgsKey(user, threadID)}
	n, err := renameScript.Run(ctx, s.rdb, keys, title, s.ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("rename thread %s: %w", threadID, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Count implements Store. Index entries whose thread expired are dropped
// first, so that expired threads free their place.
func (s *RedisStore) Count(ctx context.Context, user string) (_ int64, err error) {
	defer s.errs.Observe(ctx, "thread.count", &err)
	threadIDs, err := s.rdb.ZRange(ctx, s.indexKey(user), 0, -1).Result()
	if err != nil {
		return 0, fmt.Errorf("count threads: %w", err)
	}
	cmds := make([]*redis.IntCmd, len(threadIDs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range threadIDs {
			cmds[i] = p.Exists(ctx, s.threadKey(user, id))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count threads: %w", err)
	}
	var gone []any
	for i, c := range cmds {
		if c.Val() == 0 {
			gone = append(gone, threadIDs[i])
		}
	}
	if len(gone) > 0 {
		if err := s.rdb.ZRem(ctx, s.indexKey(user), gone...).Err(); err != nil {
			return 0, fmt.Errorf("count threads: %w", err)
		}
	}
	return int64(len(threadIDs) - len(gone)), nil
}

// Delete implements Store.
func (s *RedisStore) Delete(ctx context.Context, user, threadID string) (err error) {
	defer s.errs.Observe(ctx, "thread.delete", &err)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.threadKey(user, threadID), s.msgsKey(user, threadID))
		p.ZRem(ctx, s.indexKey(user), threadID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete thread: %w", err)
	}
	return nil
}

// summaryFields are the hash fields a Summary is read from.
var summaryFields = []string{"a", "n", "u", "t", "r", "T", "R"}

// summaryOf is a Summary from the summaryFields of the thread's hash and
// whether its lock is held; false when the thread expired (no u).
func summaryOf(threadID string, vals []any, locked bool) (Summary, bool) {
	if len(vals) != len(summaryFields) || vals[2] == nil {
		return Summary{}, false
	}
	str := func(i int) string { v, _ := vals[i].(string); return v }
	n, _ := strconv.Atoi(str(1))
	u, _ := strconv.ParseInt(str(2), 10, 64)
	sum := Summary{ThreadID: threadID, AgentID: str(0), MessageCount: n, UpdatedAt: time.UnixMilli(u).UTC(),
		Title: listTitle(str(5), str(3)), Status: statusOf(locked, str(4))}
	if locked {
		sum.ActiveRunID = str(6)
	}
	return sum, true
}

// List implements Store. It reads the user's index in the list order from
// q.After on, in batches, with each thread's fields and whether its lock
// is held in one pipeline per batch, and stops once the page is full or
// it has read scanBudget threads. Index entries whose thread expired are
// dropped here.
func (s *RedisStore) List(ctx context.Context, user string, q ListQuery) (_ Page, err error) {
	defer s.errs.Observe(ctx, "thread.list", &err)
	limit := q.limit()
	budget := scanBudget(limit)
	var p Page
	var gone []any
	defer func() {
		if len(gone) > 0 {
			s.rdb.ZRem(context.WithoutCancel(ctx), s.indexKey(user), gone...)
		}
	}()
	cur, scanned := q.After, 0
	for {
		batch, end, err := s.indexAfter(ctx, user, cur, min(limit, budget-scanned))
		if err != nil {
			return Page{}, fmt.Errorf("list threads: %w", err)
		}
		fields := make([]*redis.SliceCmd, len(batch))
		locks := make([]*redis.IntCmd, len(batch))
		_, err = s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for i, z := range batch {
				fields[i] = pl.HMGet(ctx, s.threadKey(user, z.ThreadID), summaryFields...)
				locks[i] = pl.Exists(ctx, s.lockKey(user, z.ThreadID))
			}
			return nil
		})
		if err != nil {
			return Page{}, fmt.Errorf("list threads: %w", err)
		}
		for i, z := range batch {
			scanned++
			cur = &batch[i]
			sum, ok := summaryOf(z.ThreadID, fields[i].Val(), locks[i].Val() == 1)
			if !ok {
				gone = append(gone, z.ThreadID)
				continue
			}
			if !q.keeps(sum.ThreadID, sum.AgentID, sum.Title) {
				continue
			}
			p.Threads = append(p.Threads, sum)
			if len(p.Threads) == limit {
				if i < len(batch)-1 || !end {
					p.Next = cur
				}
				return p, nil
			}
		}
		if end {
			return p, nil
		}
		if scanned >= budget {
			p.Next = cur
			return p, nil
		}
	}
}

// indexAfter reads up to n entries of the user's index after c (from the
// start when c is nil) in the list order; end says the index has no more.
// A sorted set read in reverse orders entries of one score by member,
// descending, so the entries after c are those of c's millisecond with a
// smaller id, then those of earlier milliseconds: both are read in one
// round trip. The first are all read, however many threads were saved in
// that one millisecond.
func (s *RedisStore) indexAfter(ctx context.Context, user string, c *Cursor, n int) (_ []Cursor, end bool, _ error) {
	key := s.indexKey(user)
	if c == nil {
		zs, err := s.rdb.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Max: "+inf", Min: "-inf", Count: int64(n)}).Result()
		return cursors(zs), len(zs) < n, err
	}
	ms := strconv.FormatInt(c.At.UnixMilli(), 10)
	var ties, older *redis.ZSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		ties = pl.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Max: ms, Min: ms})
		older = pl.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Max: "(" + ms, Min: "-inf", Count: int64(n)})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	var out []Cursor
	for _, t := range cursors(ties.Val()) {
		if t.ThreadID < c.ThreadID {
			out = append(out, t)
		}
	}
	rest := cursors(older.Val())
	if len(out) >= n {
		return out[:n], false, nil
	}
	k := n - len(out)
	out = append(out, rest[:min(len(rest), k)]...)
	return out, len(rest) < n && len(rest) <= k, nil
}

// cursors are the positions of index entries (score: updated unix ms).
func cursors(zs []redis.Z) []Cursor {
	out := make([]Cursor, len(zs))
	for i, z := range zs {
		id, _ := z.Member.(string)
		out[i] = Cursor{At: time.UnixMilli(int64(z.Score)).UTC(), ThreadID: id}
	}
	return out
}

// Summary implements Store.
func (s *RedisStore) Summary(ctx context.Context, user, threadID string) (_ Summary, err error) {
	defer s.errs.Observe(ctx, "thread.summary", &err)
	var fields *redis.SliceCmd
	var lock *redis.IntCmd
	_, err = s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		fields = pl.HMGet(ctx, s.threadKey(user, threadID), summaryFields...)
		lock = pl.Exists(ctx, s.lockKey(user, threadID))
		return nil
	})
	if err != nil {
		return Summary{}, fmt.Errorf("read thread %s: %w", threadID, err)
	}
	sum, ok := summaryOf(threadID, fields.Val(), lock.Val() == 1)
	if !ok {
		return Summary{}, ErrNotFound
	}
	return sum, nil
}

var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// Acquire implements Locker with a lease: SET NX PX, renewed by a goroutine
// every third of the lease, released only by its owner's token. A crashed
// holder stops renewing, so its lease expires and the thread frees itself.
func (s *RedisStore) Acquire(ctx context.Context, user, threadID string, wait bool) (_ Lease, err error) {
	defer s.errs.Observe(ctx, "thread.lock", &err)
	key := s.lockKey(user, threadID)
	tok := ids.New("lk_")
	if s.holder != "" {
		tok += "@" + s.holder
	}
	var acquired time.Time
	for {
		acquired = time.Now()
		ok, err := s.rdb.SetNX(ctx, key, tok, s.lease).Result()
		if err != nil {
			return nil, fmt.Errorf("acquire thread lock: %w", err)
		}
		if ok {
			break
		}
		if !wait {
			return nil, ErrBusy
		}
		if err := pause(ctx, s.retry); err != nil {
			return nil, err
		}
	}
	l := &redisLease{s: s, key: key, token: tok, acquired: acquired, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew()
	return l, nil
}

// Holder implements Locker.
func (s *RedisStore) Holder(ctx context.Context, user, threadID string) (_ string, err error) {
	defer s.errs.Observe(ctx, "thread.holder", &err)
	v, err := s.rdb.Get(ctx, s.lockKey(user, threadID)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read thread lock: %w", err)
	}
	return v, nil
}

type redisLease struct {
	s        *RedisStore
	key      string
	token    string
	acquired time.Time
	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func (l *redisLease) Token() string         { return l.token }
func (l *redisLease) Lost() <-chan struct{} { return l.lost }

// renewal is the answer to one renewal, sent at sent.
type renewal struct {
	sent time.Time
	n    int64
	err  error
}

// renew extends the lease every third of it. The lease is given up one
// interval before it would expire unrenewed, decided by the clock and not by
// a renewal's answer: a Redis that stops answering can hold a call far
// longer than the interval (the client's own read timeout), and the run must
// stop before another replica can take its thread.
func (l *redisLease) renew() {
	defer close(l.done)
	every := l.s.lease / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	// valid is when the lease surely still holds: a renewal extends it from
	// the moment it was sent, not from when its answer came.
	valid := l.acquired.Add(l.s.lease)
	giveUp := time.NewTimer(time.Until(valid) - every)
	defer giveUp.Stop()
	answers := make(chan renewal, 1) // one renewal in flight at most
	inFlight := false
	for {
		select {
		case <-l.stop:
			return
		case <-giveUp.C:
			close(l.lost)
			return
		case a := <-answers:
			inFlight = false
			switch {
			case a.err == nil && a.n == 1:
				valid = a.sent.Add(l.s.lease)
				giveUp.Reset(time.Until(valid) - every)
			case a.err == nil: // the key is gone or holds another token
				close(l.lost)
				return
			}
			// A failed call is retried on the next tick while the lease holds.
		case <-tick.C:
			if inFlight {
				continue
			}
			inFlight = true
			go func(sent time.Time) {
				ctx, cancel := context.WithTimeout(context.Background(), l.s.lease)
				defer cancel()
				n, err := renewScript.Run(ctx, l.s.rdb, []string{l.key}, l.token, l.s.lease.Milliseconds()).Int64()
				answers <- renewal{sent: sent, n: n, err: err}
			}(time.Now())
		}
	}
}

func (l *redisLease) Release(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	if err := releaseScript.Run(ctx, l.s.rdb, []string{l.key}, l.token).Err(); err != nil {
		// Redis may answer again well before the lock expires by itself (a
		// restart, a failover): keep trying until then, so that the thread's
		// next run does not wait out a whole lease.
		go l.retryRelease(time.Now().Add(l.s.lease))
		return fmt.Errorf("release thread lock: %w", err)
	}
	return nil
}

// maxReleaseBackoff bounds the pause between retries of a failed release.
const maxReleaseBackoff = time.Second

// retryRelease retries the release with backoff until it succeeds or the
// lock has expired anyway (deadline). The script deletes only this lease's
// lock, so a retry can never free another holder's.
func (l *redisLease) retryRelease(deadline time.Time) {
	for delay := l.s.retry; ; delay = min(2*delay, maxReleaseBackoff) {
		wait := time.NewTimer(delay)
		<-wait.C
		if time.Now().After(deadline) {
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := releaseScript.Run(ctx, l.s.rdb, []string{l.key}, l.token).Err()
		cancel()
		if err == nil {
			return
		}
	}
}
