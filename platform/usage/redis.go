package usage

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Retention is how long a day's counts are kept: a year and a month, so
// that last year's same month can still be compared.
const Retention = 400 * 24 * time.Hour

// Redis is the Store replicas share. Each user has a hash per UTC day,
// "<prefix>:{<user>}:usage:<day>", whose fields "<agent>|<model>|<counter>"
// (calls, in, out, cost) grow by HINCRBY, and a hash per UTC month,
// "<prefix>:{<user>}:usage-month:<yyyy-mm>", of the same counters summed,
// which a budget check reads in one round trip. "<prefix>:usage-users:<day>"
// is the set of users with calls that day, for the operator's view of
// everyone. Every key expires Retention after its last write; a day's hash
// holds one field per agent and model the user used that day, so it is
// bounded by the user's agents.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedis returns a store on rdb with keys under prefix ("wick").
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	if prefix == "" {
		prefix = "wick"
	}
	return &Redis{rdb: rdb, prefix: prefix}
}

func (r *Redis) dayKey(user, day string) string { return r.prefix + ":{" + user + "}:usage:" + day }
func (r *Redis) monthKey(user string, t time.Time) string {
	return r.prefix + ":{" + user + "}:usage-month:" + t.UTC().Format("2006-01")
}
func (r *Redis) usersKey(day string) string { return r.prefix + ":usage-users:" + day }

// The counters of a hash.
const (
	counterCalls = "calls"
	counterIn    = "in"
	counterOut   = "out"
	counterCost  = "cost"
)

// Record implements Recorder. The writes go in one pipeline, not a
// transaction: the users set lives in another cluster slot than the user's
// hashes.
func (r *Redis) Record(ctx context.Context, c Call) error {
	if err := c.check(); err != nil {
		return err
	}
	day := Day(c.At).Format(DayLayout)
	dk, mk, uk := r.dayKey(c.User, day), r.monthKey(c.User, c.At), r.usersKey(day)
	field := agentOf(c.Agent) + fieldSep + c.Model + fieldSep
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for counter, n := range counters(c.Counts) {
			if n != 0 {
				p.HIncrBy(ctx, dk, field+counter, n)
				p.HIncrBy(ctx, mk, counter, n)
			}
		}
		p.SAdd(ctx, uk, c.User)
		for _, k := range []string{dk, mk, uk} {
			p.Expire(ctx, k, Retention)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

func counters(c Counts) map[string]int64 {
	return map[string]int64{counterCalls: c.Calls, counterIn: c.InputTokens, counterOut: c.OutputTokens, counterCost: c.CostMicroUSD}
}

func addCounter(c *Counts, counter string, n int64) {
	switch counter {
	case counterCalls:
		c.Calls += n
	case counterIn:
		c.InputTokens += n
	case counterOut:
		c.OutputTokens += n
	case counterCost:
		c.CostMicroUSD += n
	}
}

// Rows implements Store: the users of each day (one SMEMBERS per day for
// everyone), then one HGETALL per user and day, pipelined.
func (r *Redis) Rows(ctx context.Context, user string, from, to time.Time) ([]Row, error) {
	ds := days(from, to)
	type userDay struct{ user, day string }
	var want []userDay
	if user != "" {
		for _, d := range ds {
			want = append(want, userDay{user, d.Format(DayLayout)})
		}
	} else {
		cmds := make([]*redis.StringSliceCmd, len(ds))
		if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, d := range ds {
				cmds[i] = p.SMembers(ctx, r.usersKey(d.Format(DayLayout)))
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("read usage: %w", err)
		}
		for i, d := range ds {
			for _, u := range cmds[i].Val() {
				want = append(want, userDay{u, d.Format(DayLayout)})
			}
		}
	}
	cmds := make([]*redis.MapStringStringCmd, len(want))
	if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range want {
			cmds[i] = p.HGetAll(ctx, r.dayKey(w.user, w.day))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	var rows []Row
	for i, w := range want {
		byKey := map[[2]string]*Counts{}
		for field, v := range cmds[i].Val() {
			agent, rest, ok := strings.Cut(field, fieldSep)
			j := strings.LastIndex(rest, fieldSep)
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || j < 0 || err != nil {
				continue // not a field this store wrote
			}
			k := [2]string{agent, rest[:j]}
			if byKey[k] == nil {
				byKey[k] = &Counts{}
			}
			addCounter(byKey[k], rest[j+1:], n)
		}
		for k, c := range byKey {
			rows = append(rows, Row{Day: w.day, User: w.user, Agent: k[0], Model: k[1], Counts: *c})
		}
	}
	sortRows(rows)
	return rows, nil
}

// Month implements Store.
func (r *Redis) Month(ctx context.Context, user string, t time.Time) (Counts, error) {
	var c Counts
	m, err := r.rdb.HGetAll(ctx, r.monthKey(user, t)).Result()
	if err != nil {
		return c, fmt.Errorf("read usage: %w", err)
	}
	for counter, v := range m {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			addCounter(&c, counter, n)
		}
	}
	return c, nil
}
