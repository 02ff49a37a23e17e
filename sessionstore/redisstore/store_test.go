package redisstore_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
)

// A Store needs a prefix of its own: with a shared default, two unrelated
// applications on one Redis would serve and delete each other's sessions.
// New without one panics, saying what to do, before it starts anything.
func TestNewRequiresPrefix(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never contacted
	defer client.Close()
	defer func() {
		v := recover()
		msg, _ := v.(string)
		if !strings.Contains(msg, "Prefix") || !strings.Contains(msg, "application") {
			t.Errorf("New without a prefix panicked with %v, want a message asking for a prefix per application", v)
		}
	}()
	s := redisstore.New(client, redisstore.Options{})
	s.Close()
	t.Error("New without a prefix returned a Store")
}
