package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// RedisBackend is a real redis-server the harness started (127.0.0.1,
// persistence off, working in a temporary directory), with one client that
// every lifeline peer on it shares. Each peer gets a Store under a key
// prefix of its own, so two peers never see each other's sessions.
type RedisBackend struct {
	server *testutil.RedisServer
	client *redis.Client
	dir    string
	stores atomic.Int64 // how many Stores NewStore made, for their prefixes
}

// ErrNoRedisServer is what StartRedis returns (wrapped) when redis-server
// is not on PATH: the Redis cells are then not measured.
var ErrNoRedisServer = exec.ErrNotFound

// StartRedis starts a redis-server the way the root module's tests do
// (testutil.LaunchRedisServer) and connects a client to it. The error wraps
// ErrNoRedisServer when redis-server is not on PATH. The caller must Close
// the backend after every peer on it.
func StartRedis() (*RedisBackend, error) {
	dir, err := os.MkdirTemp("", "lifeline-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("redis working directory: %w", err)
	}
	srv, err := testutil.LaunchRedisServer(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	return &RedisBackend{server: srv, client: client, dir: dir}, nil
}

// IsNoRedisServer reports whether err says that redis-server is not on
// PATH.
func IsNoRedisServer(err error) bool { return errors.Is(err, ErrNoRedisServer) }

// newStore returns a Store on the backend under a prefix no other Store of
// it uses. The caller closes it.
func (b *RedisBackend) newStore() *redisstore.Store {
	prefix := "bench" + strconv.FormatInt(b.stores.Add(1), 10) + ":"
	return redisstore.New(b.client, redisstore.Options{Prefix: prefix})
}

// Info returns the server's INFO section (e.g. "commandstats"), for a
// profile's count of the commands a cell sent.
func (b *RedisBackend) Info(ctx context.Context, section string) (string, error) {
	return b.client.Info(ctx, section).Result()
}

// ResetStats resets the server's statistics (CONFIG RESETSTAT), so that
// an Info after it counts from here.
func (b *RedisBackend) ResetStats(ctx context.Context) error {
	return b.client.ConfigResetStat(ctx).Err()
}

// Close closes the client, stops redis-server and removes its directory.
func (b *RedisBackend) Close() {
	_ = b.client.Close()
	b.server.Stop()
	_ = os.RemoveAll(b.dir)
}
