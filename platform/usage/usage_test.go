package usage_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/platform/usage"
)

func stores(t *testing.T) map[string]usage.Store {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{testenv.Redis(t)}})
	t.Cleanup(func() { rdb.Close() })
	return map[string]usage.Store{
		"memory": usage.NewMemory(),
		"redis":  usage.NewRedis(rdb, "t"+time.Now().Format("150405.000000")),
	}
}

func TestStores(t *testing.T) {
	day1 := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	day2 := time.Date(2026, 12, 1, 0, 1, 0, 0, time.FixedZone("x", 3600)) // still Nov 30 in UTC
	day3 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	calls := []usage.Call{
		{User: "alice", Agent: "default", Model: "gpt|4o", At: day1, Counts: usage.Counts{Calls: 1, InputTokens: 10, OutputTokens: 5, CostMicroUSD: 7}},
		{User: "alice", Agent: "default", Model: "gpt|4o", At: day2, Counts: usage.Counts{Calls: 1, InputTokens: 1, OutputTokens: 1}},
		{User: "alice", Agent: "", Model: "claude", At: day3, Counts: usage.Counts{Calls: 1, InputTokens: 100, OutputTokens: 50, CostMicroUSD: 300}},
		{User: "bob", Agent: "coder", Model: "claude", At: day3, Counts: usage.Counts{Calls: 2, InputTokens: 3, OutputTokens: 4}},
	}
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for _, c := range calls {
				if err := s.Record(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Record(ctx, usage.Call{Agent: "a", Model: "m", At: day1}); !errors.Is(err, usage.ErrInvalid) {
				t.Fatalf("a call without user: %v", err)
			}
			alice := []usage.Row{
				{Day: "2026-11-30", User: "alice", Agent: "default", Model: "gpt|4o", Counts: usage.Counts{Calls: 2, InputTokens: 11, OutputTokens: 6, CostMicroUSD: 7}},
				{Day: "2026-12-02", User: "alice", Agent: usage.External, Model: "claude", Counts: usage.Counts{Calls: 1, InputTokens: 100, OutputTokens: 50, CostMicroUSD: 300}},
			}
			bob := usage.Row{Day: "2026-12-02", User: "bob", Agent: "coder", Model: "claude", Counts: usage.Counts{Calls: 2, InputTokens: 3, OutputTokens: 4}}
			for _, tc := range []struct {
				name, user string
				from, to   time.Time
				want       []usage.Row
			}{
				{"own", "alice", day1, day3, alice},
				{"one day", "alice", day3, day3, alice[1:]},
				{"other user", "bob", day1, day3, []usage.Row{bob}},
				{"everyone", "", day1, day3, []usage.Row{alice[0], alice[1], bob}},
				{"nothing", "carol", day1, day3, nil},
			} {
				got, err := s.Rows(ctx, tc.user, tc.from, tc.to)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: rows\n got %+v\nwant %+v", tc.name, got, tc.want)
				}
			}
			for _, tc := range []struct {
				at   time.Time
				want usage.Counts
			}{
				{day1, usage.Counts{Calls: 2, InputTokens: 11, OutputTokens: 6, CostMicroUSD: 7}},
				{day3, usage.Counts{Calls: 1, InputTokens: 100, OutputTokens: 50, CostMicroUSD: 300}},
				{day3.AddDate(0, 1, 0), usage.Counts{}},
			} {
				got, err := s.Month(ctx, "alice", tc.at)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("month of %s: got %+v, want %+v", tc.at, got, tc.want)
				}
			}
		})
	}
}

func TestRedisKeysExpire(t *testing.T) {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{testenv.Redis(t)}})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := usage.NewRedis(rdb, "ttl")
	at := time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)
	if err := s.Record(ctx, usage.Call{User: "u", Agent: "a", Model: "m", At: at, Counts: usage.Counts{Calls: 1, InputTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ttl:{u}:usage:2026-05-06", "ttl:{u}:usage-month:2026-05", "ttl:usage-users:2026-05-06"} {
		ttl, err := rdb.TTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= usage.Retention-time.Minute || ttl > usage.Retention {
			t.Errorf("%s expires in %v, want %v", k, ttl, usage.Retention)
		}
	}
}
