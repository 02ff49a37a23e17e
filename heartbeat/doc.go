// Package heartbeat schedules liveness pings for long-lived streams and
// tracks whether a peer still answers them.
//
// One Scheduler serves every stream of a transport: it keeps a single timer
// goroutine and a heap of due times, so an idle stream costs a heap entry and
// a one-slot channel, not a goroutine. A Tracker is the pure state machine
// that decides, from pings sent and pongs received, when a stream is dead.
package heartbeat

import "time"

// DefaultInterval is the ping interval used when a transport is configured
// with a zero Interval and heartbeats have not been disabled.
const DefaultInterval = 20 * time.Second

// DefaultMissedPongLimit is how many consecutive pings a peer that has
// answered before may leave unanswered before its stream counts as dead.
const DefaultMissedPongLimit = 2
