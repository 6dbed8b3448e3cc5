package knowledge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis stream settings.
const (
	// changesMaxLen bounds the change stream; a replica that falls further
	// behind than this reloads everything (catchUp).
	changesMaxLen = 100_000
	// followBlock is how long one XREAD waits; it only bounds how soon the
	// follower notices that it should stop.
	followBlock = 2 * time.Second
)

// RedisStore shares the knowledge base between replicas. Collections and
// documents (with their vectors) live in Redis hashes; every change is also
// added to a Redis stream that each replica follows (XREAD BLOCK) into its
// own Index, so a write on one replica is searchable on every other within
// the time of one stream read — milliseconds on a healthy network.
type RedisStore struct {
	indexed
	rdb    redis.UniversalClient
	prefix string
	origin string
	logger *slog.Logger
	stop   context.CancelFunc
	done   chan struct{}
}

// NewRedisStore loads the knowledge base from rdb and follows its changes
// until Close. prefix starts every key ("wick" when empty).
func NewRedisStore(ctx context.Context, rdb redis.UniversalClient, prefix string, logger *slog.Logger) (*RedisStore, error) {
	if prefix == "" {
		prefix = "wick"
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	// One hash tag for every key: a change writes a hash and the stream in
	// one transaction, which Redis Cluster allows within one slot only.
	s := &RedisStore{rdb: rdb, prefix: prefix + ":{kb}", origin: hex.EncodeToString(b), logger: logger, done: make(chan struct{})}
	s.indexed = indexed{Index: NewIndex(), journal: s.write}
	last, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	fctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.follow(fctx, last)
	return s, nil
}

func (s *RedisStore) collsKey() string     { return s.prefix + ":collections" }
func (s *RedisStore) docsKey(k Key) string { return s.prefix + ":documents:" + k.String() }
func (s *RedisStore) changesKey() string   { return s.prefix + ":changes" }

// load reads every collection and document into a fresh index and returns
// the stream id to follow from. The id is read first, so a change made
// while loading is applied again by the follower — applying is idempotent.
func (s *RedisStore) load(ctx context.Context) (string, error) {
	last := "0-0"
	msgs, err := s.rdb.XRevRangeN(ctx, s.changesKey(), "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("knowledge: read change stream: %w", err)
	}
	if len(msgs) == 1 {
		last = msgs[0].ID
	}
	colls, err := s.rdb.HGetAll(ctx, s.collsKey()).Result()
	if err != nil {
		return "", fmt.Errorf("knowledge: load collections: %w", err)
	}
	x := NewIndex()
	for field := range colls {
		k, err := parseKey(field)
		if err != nil {
			return "", err
		}
		if err := s.reloadCollection(ctx, x, k); err != nil {
			return "", err
		}
	}
	s.Index.mu.Lock()
	s.Index.parts = x.parts
	s.Index.mu.Unlock()
	return last, nil
}

// reloadCollection makes x's copy of collection k what Redis holds. The
// collection is loaded apart and swapped in whole, so a search never sees
// it half loaded.
func (s *RedisStore) reloadCollection(ctx context.Context, x *Index, k Key) error {
	raw, err := s.rdb.HGet(ctx, s.collsKey(), k.String()).Result()
	if errors.Is(err, redis.Nil) {
		x.deleteCollection(k)
		return nil
	}
	if err != nil {
		return fmt.Errorf("knowledge: load collection %s: %w", k, err)
	}
	var c Collection
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return fmt.Errorf("knowledge: collection %s: %w", k, err)
	}
	fresh := NewIndex()
	fresh.putCollection(c)
	docs, err := s.rdb.HGetAll(ctx, s.docsKey(k)).Result()
	if err != nil {
		return fmt.Errorf("knowledge: load documents of %s: %w", k, err)
	}
	for _, raw := range docs {
		if err := applyJSON(fresh, raw); err != nil {
			return fmt.Errorf("knowledge: document of %s: %w", k, err)
		}
	}
	x.swapCollection(k, fresh.coll(k))
	return nil
}

// reloadDocument makes the index's copy of one document what Redis holds.
func (s *RedisStore) reloadDocument(ctx context.Context, k Key, id string) error {
	raw, err := s.rdb.HGet(ctx, s.docsKey(k), id).Result()
	if errors.Is(err, redis.Nil) {
		s.deleteDocument(k, id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("knowledge: load document %s of %s: %w", id, k, err)
	}
	return applyJSON(s.Index, raw)
}

func applyJSON(x *Index, raw string) error {
	var r record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return err
	}
	return x.apply(r)
}

// write makes a change durable in Redis and announces it on the stream.
func (s *RedisStore) write(ctx context.Context, r record) error {
	pipe := s.rdb.TxPipeline()
	switch r.Op {
	case opCollection:
		b, err := json.Marshal(r.Collection)
		if err != nil {
			return err
		}
		ok, err := s.rdb.HSetNX(ctx, s.collsKey(), r.Key.String(), b).Result()
		if err != nil {
			return fmt.Errorf("knowledge: save collection: %w", err)
		}
		if !ok {
			return fmt.Errorf("collection %s: %w", r.Key.ID(), ErrExists)
		}
	case opDrop:
		pipe.HDel(ctx, s.collsKey(), r.Key.String())
		pipe.Del(ctx, s.docsKey(r.Key))
	case opDocument:
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		pipe.HSet(ctx, s.docsKey(r.Key), r.Document.ID, b)
	case opDelete:
		pipe.HDel(ctx, s.docsKey(r.Key), r.DocID)
	}
	id := r.DocID
	if r.Document != nil {
		id = r.Document.ID
	}
	pipe.XAdd(ctx, &redis.XAddArgs{
		Stream: s.changesKey(), MaxLen: changesMaxLen, Approx: true,
		Values: map[string]any{"op": r.Op, "k": r.Key.String(), "id": id, "origin": s.origin},
	})
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("knowledge: save change: %w", err)
	}
	return nil
}

// Collection falls back to Redis when this replica has not seen the
// collection yet, so that a collection created on another replica can be
// written to at once.
func (s *RedisStore) Collection(ctx context.Context, k Key) (Collection, error) {
	if c, ok := s.collection(k); ok {
		return c, nil
	}
	if err := s.reloadCollection(ctx, s.Index, k); err != nil {
		return Collection{}, err
	}
	return s.indexed.Collection(ctx, k)
}

// follow applies other replicas' changes until ctx ends.
func (s *RedisStore) follow(ctx context.Context, last string) {
	defer close(s.done)
	for ctx.Err() == nil {
		res, err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{s.changesKey(), last}, Block: followBlock, Count: 256}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.logger.Warn("knowledge: reading the change stream failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(followBlock):
			}
			last = s.catchUp(ctx, last)
			continue
		}
		for _, st := range res {
			for _, m := range st.Messages {
				last = m.ID
				if m.Values["origin"] == s.origin {
					continue // applied when written
				}
				if err := s.applyChange(ctx, m.Values); err != nil {
					s.logger.Warn("knowledge: applying a change failed", "id", m.ID, "err", err)
				}
			}
		}
	}
}

// catchUp runs after a failed read: when the oldest change still in the
// stream is newer than the last one applied, changes in between may have
// been trimmed away, so the replica reloads everything rather than guess.
func (s *RedisStore) catchUp(ctx context.Context, last string) string {
	msgs, err := s.rdb.XRangeN(ctx, s.changesKey(), "-", "+", 1).Result()
	if err != nil || len(msgs) == 0 || !idAfter(msgs[0].ID, last) {
		return last
	}
	fresh, err := s.load(ctx)
	if err != nil {
		s.logger.Warn("knowledge: reloading after falling behind the change stream failed", "err", err)
		return last
	}
	return fresh
}

// idAfter reports whether stream id a ("ms-seq") comes after b.
func idAfter(a, b string) bool {
	var am, as, bm, bs uint64
	if _, err := fmt.Sscanf(a, "%d-%d", &am, &as); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(b, "%d-%d", &bm, &bs); err != nil {
		return true
	}
	return am > bm || (am == bm && as > bs)
}

func (s *RedisStore) applyChange(ctx context.Context, v map[string]any) error {
	op, _ := v["op"].(string)
	ks, _ := v["k"].(string)
	id, _ := v["id"].(string)
	k, err := parseKey(ks)
	if err != nil {
		return err
	}
	switch op {
	case opCollection, opDrop:
		return s.reloadCollection(ctx, s.Index, k)
	case opDocument, opDelete:
		if _, ok := s.collection(k); !ok {
			return s.reloadCollection(ctx, s.Index, k)
		}
		return s.reloadDocument(ctx, k, id)
	}
	return fmt.Errorf("unknown change %q", op)
}

// Close stops following the change stream; the client is the caller's.
func (s *RedisStore) Close() error {
	s.stop()
	<-s.done
	return nil
}
