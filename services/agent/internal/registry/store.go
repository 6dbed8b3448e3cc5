package registry

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	json "github.com/goccy/go-json"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/quota"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

var (
	marshal   = json.Marshal
	unmarshal = json.Unmarshal
)

// ErrNotFound is returned for a missing agent or tool.
var ErrNotFound = errcode.New(codes.NotFound, "not found")

// Store keeps each user's own agents (created ones and clones of templates)
// and external tools; Redis when replicas share them.
type Store interface {
	GetAgent(ctx context.Context, user, id string) (*loop.AgentConfig, error)
	// PutAgent stores the agent. A new id is refused with lim.Refuse when
	// the user stores lim.Max agents already; replacing one never is.
	PutAgent(ctx context.Context, user, id string, cfg *loop.AgentConfig, lim quota.Limit) error
	// DeleteAgent reports whether the agent existed.
	DeleteAgent(ctx context.Context, user, id string) (bool, error)
	ListAgents(ctx context.Context, user string) (map[string]*loop.AgentConfig, error)
	GetTool(ctx context.Context, user, name string) (*tools.HTTPToolDef, error)
	// PutTool stores the tool, bounded by lim like PutAgent.
	PutTool(ctx context.Context, user string, def *tools.HTTPToolDef, lim quota.Limit) error
	DeleteTool(ctx context.Context, user, name string) (bool, error)
	// ListTools returns the user's tools sorted by name.
	ListTools(ctx context.Context, user string) ([]*tools.HTTPToolDef, error)
}

// MemoryStore is the single-process Store. Values are kept encoded so no
// caller shares memory with them.
type MemoryStore struct {
	mu     sync.Mutex
	agents map[string]map[string][]byte
	tools  map[string]map[string][]byte
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{agents: map[string]map[string][]byte{}, tools: map[string]map[string][]byte{}}
}

func put(m map[string]map[string][]byte, user, key string, v any, lim quota.Limit) error {
	data, err := marshal(v)
	if err != nil {
		return err
	}
	if _, replace := m[user][key]; !replace && !lim.Allows(int64(len(m[user]))+1) {
		return lim.Refuse(user, int64(len(m[user])))
	}
	if m[user] == nil {
		m[user] = map[string][]byte{}
	}
	m[user][key] = data
	return nil
}

// GetAgent implements Store.
func (s *MemoryStore) GetAgent(_ context.Context, user, id string) (*loop.AgentConfig, error) {
	s.mu.Lock()
	data, ok := s.agents[user][id]
	s.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	var c loop.AgentConfig
	return &c, unmarshal(data, &c)
}

// PutAgent implements Store.
func (s *MemoryStore) PutAgent(_ context.Context, user, id string, cfg *loop.AgentConfig, lim quota.Limit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return put(s.agents, user, id, cfg, lim)
}

// DeleteAgent implements Store.
func (s *MemoryStore) DeleteAgent(_ context.Context, user, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.agents[user][id]
	delete(s.agents[user], id)
	return ok, nil
}

// ListAgents implements Store.
func (s *MemoryStore) ListAgents(_ context.Context, user string) (map[string]*loop.AgentConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*loop.AgentConfig{}
	for id, data := range s.agents[user] {
		var c loop.AgentConfig
		if err := unmarshal(data, &c); err != nil {
			return nil, err
		}
		out[id] = &c
	}
	return out, nil
}

// GetTool implements Store.
func (s *MemoryStore) GetTool(_ context.Context, user, name string) (*tools.HTTPToolDef, error) {
	s.mu.Lock()
	data, ok := s.tools[user][name]
	s.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	var d tools.HTTPToolDef
	return &d, unmarshal(data, &d)
}

// PutTool implements Store.
func (s *MemoryStore) PutTool(_ context.Context, user string, def *tools.HTTPToolDef, lim quota.Limit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return put(s.tools, user, def.Name, def, lim)
}

// DeleteTool implements Store.
func (s *MemoryStore) DeleteTool(_ context.Context, user, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tools[user][name]
	delete(s.tools[user], name)
	return ok, nil
}

// ListTools implements Store.
func (s *MemoryStore) ListTools(_ context.Context, user string) ([]*tools.HTTPToolDef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*tools.HTTPToolDef
	for _, data := range s.tools[user] {
		var d tools.HTTPToolDef
		if err := unmarshal(data, &d); err != nil {
			return nil, err
		}
		out = append(out, &d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RedisStore is the Store shared by replicas: a hash of agents and a hash of
// tools per user, without expiry (they are configuration).
type RedisStore struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedisStore returns a store on rdb with keys under prefix ("wick").
func NewRedisStore(rdb redis.UniversalClient, prefix string) *RedisStore {
	if prefix == "" {
		prefix = "wick"
	}
	return &RedisStore{rdb: rdb, prefix: prefix}
}

func (s *RedisStore) agentsKey(user string) string { return s.prefix + ":{" + user + "}:agents" }
func (s *RedisStore) toolsKey(user string) string  { return s.prefix + ":{" + user + "}:tools" }

func (s *RedisStore) get(ctx context.Context, key, field string, v any) error {
	data, err := s.rdb.HGet(ctx, key, field).Bytes()
	if errors.Is(err, redis.Nil) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return unmarshal(data, v)
}

// putScript sets a field of a hash unless it is a new field and the hash
// has ARGV[3] (> 0) fields already: the count and the write are one step,
// so replicas writing at once cannot together pass the bound. It answers
// -1 when it wrote, else the number of fields.
var putScript = redis.NewScript(`
local max = tonumber(ARGV[3])
if max > 0 and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local n = redis.call('HLEN', KEYS[1])
  if n >= max then return n end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return -1`)

func (s *RedisStore) put(ctx context.Context, user, key, field string, v any, lim quota.Limit) error {
	data, err := marshal(v)
	if err != nil {
		return err
	}
	n, err := putScript.Run(ctx, s.rdb, []string{key}, field, data, max(lim.Max, 0)).Int64()
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if n >= 0 {
		return lim.Refuse(user, n)
	}
	return nil
}

func (s *RedisStore) del(ctx context.Context, key, field string) (bool, error) {
	n, err := s.rdb.HDel(ctx, key, field).Result()
	if err != nil {
		return false, fmt.Errorf("registry: %w", err)
	}
	return n > 0, nil
}

// GetAgent implements Store.
func (s *RedisStore) GetAgent(ctx context.Context, user, id string) (*loop.AgentConfig, error) {
	var c loop.AgentConfig
	if err := s.get(ctx, s.agentsKey(user), id, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutAgent implements Store.
func (s *RedisStore) PutAgent(ctx context.Context, user, id string, cfg *loop.AgentConfig, lim quota.Limit) error {
	return s.put(ctx, user, s.agentsKey(user), id, cfg, lim)
}

// DeleteAgent implements Store.
func (s *RedisStore) DeleteAgent(ctx context.Context, user, id string) (bool, error) {
	return s.del(ctx, s.agentsKey(user), id)
}

// ListAgents implements Store.
func (s *RedisStore) ListAgents(ctx context.Context, user string) (map[string]*loop.AgentConfig, error) {
	all, err := s.rdb.HGetAll(ctx, s.agentsKey(user)).Result()
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	out := map[string]*loop.AgentConfig{}
	for id, data := range all {
		var c loop.AgentConfig
		if err := unmarshal([]byte(data), &c); err != nil {
			return nil, fmt.Errorf("registry: agent %s: %w", id, err)
		}
		out[id] = &c
	}
	return out, nil
}

// GetTool implements Store.
func (s *RedisStore) GetTool(ctx context.Context, user, name string) (*tools.HTTPToolDef, error) {
	var d tools.HTTPToolDef
	if err := s.get(ctx, s.toolsKey(user), name, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// PutTool implements Store.
func (s *RedisStore) PutTool(ctx context.Context, user string, def *tools.HTTPToolDef, lim quota.Limit) error {
	return s.put(ctx, user, s.toolsKey(user), def.Name, def, lim)
}

// DeleteTool implements Store.
func (s *RedisStore) DeleteTool(ctx context.Context, user, name string) (bool, error) {
	return s.del(ctx, s.toolsKey(user), name)
}

// ListTools implements Store.
func (s *RedisStore) ListTools(ctx context.Context, user string) ([]*tools.HTTPToolDef, error) {
	all, err := s.rdb.HGetAll(ctx, s.toolsKey(user)).Result()
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var out []*tools.HTTPToolDef
	for name, data := range all {
		var d tools.HTTPToolDef
		if err := unmarshal([]byte(data), &d); err != nil {
			return nil, fmt.Errorf("registry: tool %s: %w", name, err)
		}
		out = append(out, &d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
