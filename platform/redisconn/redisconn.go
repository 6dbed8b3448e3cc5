// Package redisconn opens the Redis that a service's replicas share, from
// the one address form every binary's -redis-addr takes.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPingTimeout bounds Open's first PING.
const DefaultPingTimeout = 10 * time.Second

// Open connects to the Redis the replicas share and checks that it
// answers. target is one of
//
//	host:port                         one server
//	host:port,host:port,…             a Redis Cluster, through its seed nodes
//	redis://[user:password@]host:port[/db]   one server with credentials (AUTH) and a database
//	rediss://…                        the same over TLS
//
// A managed Redis needs a password, which belongs in a Secret: the URL form
// carries it in one value (the manifests' wick-redis Secret). name labels the
// connections (CLIENT SETNAME), so CLIENT LIST shows which replica holds
// which; empty leaves them unnamed. Errors show the target with its password
// masked.
func Open(ctx context.Context, target, name string) (redis.UniversalClient, error) {
	rdb, shown, err := newRedisClient(target, name)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, DefaultPingTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis %s: %w", shown, err)
	}
	return rdb, nil
}

// newRedisClient parses target (see Open) and returns its client and
// the target as it may be shown, with any password masked.
func newRedisClient(target, name string) (redis.UniversalClient, string, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, "", errors.New("redis: empty address")
	}
	scheme, _, isURL := strings.Cut(target, "://")
	if !isURL {
		var addrs []string
		for a := range strings.SplitSeq(target, ",") {
			a = strings.TrimSpace(a)
			if strings.Contains(a, "@") {
				// Credentials belong in a URL; never echo them.
				return nil, "", errors.New("redis address: credentials need the URL form redis://user:password@host:port")
			}
			if a == "" || !strings.Contains(a, ":") {
				return nil, "", fmt.Errorf("redis address %q: want host:port, a comma-separated list of them, or a redis:// or rediss:// URL", a)
			}
			addrs = append(addrs, a)
		}
		return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, ClientName: name}), target, nil
	}
	u, err := url.Parse(target)
	if err != nil {
		// url's error quotes the input, password and all.
		return nil, "", fmt.Errorf("redis address: not a valid URL (%s://…)", scheme)
	}
	shown := u.Redacted()
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, "", fmt.Errorf("redis address %s: scheme %q: want redis:// or rediss://", shown, u.Scheme)
	}
	o, err := redis.ParseURL(target)
	if err != nil {
		return nil, "", fmt.Errorf("redis address %s: %w", shown, err)
	}
	o.ClientName = name
	return redis.NewClient(o), shown, nil
}

// ReplicaName names this process among the replicas: its host name (a
// Kubernetes pod's name) and its pid, as "host:pid".
func ReplicaName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// ShownRedis is target as logs and banners may show it: a URL's password
// masked, anything else as given.
func ShownRedis(target string) string {
	if u, err := url.Parse(target); err == nil && u.User != nil {
		return u.Redacted()
	}
	if strings.Contains(target, "@") {
		return "(a redis address that does not parse)"
	}
	return target
}
