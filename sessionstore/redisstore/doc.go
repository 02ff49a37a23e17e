// Package redisstore is a sessionstore.Store on Redis, for several replicas
// serving the same sessions. It has the contract of sessionstore.Memory,
// with its clock being the Redis server's.
//
// Usage, one Store per process:
//
//	client := redis.NewClient(&redis.Options{
//		Addr:                  "127.0.0.1:6379",
//		ContextTimeoutEnabled: true, // let OpTimeout bound a hung server
//	})
//	defer client.Close()
//	store := redisstore.New(client, redisstore.Options{Prefix: "myapp:"})
//	defer store.Close()
//	err := store.Create(ctx, sessionstore.Record{ID: id}, 30*time.Minute)
//	if errors.Is(err, redisstore.ErrUnavailable) {
//		// answer 503
//	}
//
// # Layout
//
// Under the prefix P: the record of session id is the hash P+"session:"+id
// (fields v, ci, c, e, t, s, n, u, and k and kw for the live cache; see
// scripts.go) with a PX expiry of the
// session's ttl, none without one; a terminated session's record stays as a
// tombstone (s = "terminated") for its last ttl, or
// sessionstore.TombstoneTTL. P+"sessions" is a sorted set of the ids of
// live sessions scored by expiry (+inf for none), which Count counts and
// prunes. P+"lease:"+id holds the stream holder with a PX expiry. Messages
// for a session go to the pub/sub channel P+"bus:"+id, where a termination
// is broadcast too, and those for one topic of it to P+"bus:"+id+" "+topic
// (a space never occurs in a session id); Publish and PublishTopic report
// ErrNoSubscribers when Redis counted no subscriber; P+"broadcast" is the
// channel of broadcasts (sessionstore.Broadcaster), shared by every Store
// under the prefix; P+"wake:"+random is a Store's private channel for
// waking its own dispatcher. The event log (Store.EventLog) keeps each
// session's events under P+"eventlog:"+len(id)+":"+id (see EventLog). Every
// operation on records and leases is one
// command or one Lua script, so each is atomic; times are the server's
// (TIME).
//
// # The prefix
//
// Options.Prefix is required: every Store under one prefix on one Redis
// serves the same sessions, so it names an application, not a library. Two
// applications that shared a prefix would adopt, answer and terminate each
// other's sessions; replicas of one application must share theirs. Name it
// after the application (or its MCP server's name), e.g. "myapp:".
//
// # The bus
//
// Each Store has one pub/sub connection, on which it subscribes a session's
// channel once however many local subscriptions it has, and one dispatcher
// goroutine, the only user of that connection: it subscribes and
// unsubscribes channels as local subscriptions come and go and routes what
// arrives. Close stops both. Subscribe returns once the server has the
// subscription, so every later Publish reaches it; closing a subscription
// never waits for Redis. Delivery is Redis pub/sub's: in order and at most
// once per Publish that reached the server (go-redis retries a call whose
// connection broke, which can repeat one). A subscription whose buffer (Options.BusBuffer) is full misses the
// message, which is counted in Store.Dropped; Publish cannot report it, as
// Memory's does, since delivery happens after it returns. Messages
// published while a Store's pub/sub connection is down are lost for it;
// after reconnecting, and every Options.CheckInterval, it closes its
// subscriptions to sessions that ended meanwhile, so a missed termination
// closes them late, not never. A subscription to a session that expires is
// closed by that check, or at once when this Store finds the session gone.
//
// Broadcasts (PublishBroadcast, SubscribeBroadcasts) ride the same
// connection and dispatcher, on the channel P+"broadcast", subscribed once
// per Store however many local broadcast subscriptions it has, with the
// same buffer, drops (counted in Dropped) and ordering. They belong to no
// session: the checks leave them alone, and they end only on Close or
// with the Store. After an outage the channel is resubscribed like every
// other; what was published meanwhile is lost for this Store.
//
// # The live cache
//
// CheckLive, which the transport calls for most requests, answers a
// session Redis found live less than Options.LiveCacheWindow ago (10 ms by
// default) from memory: a client calling again and again costs one round
// trip per window, not one per request. The record remembers each such
// window, and Terminate and Remove wait until no other Store's window for
// the session is open before they return, so a DELETE on one replica is
// still a 404 on every replica from the moment it is answered; that wait,
// at most the longest window of the replicas plus a millisecond, is what
// the DELETE of a session another replica served within it costs. Only a
// session checked on the Store within the last second (or twice the
// window, if longer) opens a window (its
// check is a script that writes the mark; any other check is a plain
// HGET). A window never outlasts the record's expiry. Every replica must
// run a version that knows the windows before any turns them on. See
// live_cache.go.
//
// # Failures
//
// Every call is bounded by Options.OpTimeout, go-redis's own retries
// included (with the client's default MaxRetries and DialerRetries an
// unreachable server can use all of it; lower them to fail sooner). An
// error caused by Redis being unreachable, timing out or not ready wraps
// ErrUnavailable (and the cause); the transport answers 503 for it.
// go-redis reconnects by itself, so calls succeed again once Redis is
// back. Redis without persistence loses every session on a restart: calls
// then answer ErrNotFound, and clients re-initialize.
//
// # Cluster and Sentinel
//
// A Sentinel-backed client (redis.NewFailoverClient, or NewUniversalClient
// with MasterName) works as is; a failover loses what was not replicated,
// like a restart. On Redis Cluster the prefix must contain a hash tag, e.g.
// "{lifeline}:", so that all keys share one slot (the scripts touch several
// keys); that puts every session on one shard. Pub/sub messages are
// broadcast to every node of a cluster.
package redisstore
