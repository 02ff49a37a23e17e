package streamable

import (
	"context"
	"time"
)

// The store's health, as the log tells it: one Warn line when the store
// stops answering (the first failed call that was not the caller's own
// cancellation) and one Info line when a call succeeds again, however many
// requests, sweeps and lease renewals failed in between; the lines per
// session and per stream of the outage are at Debug.

// storeFailed records that a store call (op) failed with err, an error
// that is not a session's absence or a conflict, unless ctx, the caller's,
// had ended: the store is taken to be unreachable.
func (h *Handler) storeFailed(ctx context.Context, op string, err error) {
	if ctx.Err() != nil || !h.storeDown.CompareAndSwap(false, true) {
		return
	}
	h.storeDownAt.Store(time.Now().UnixNano())
	h.log.Warn("lifeline: the store is unreachable; requests that need it get 503 until it answers again",
		"op", op, "err", err)
}

// storeAnswered records that a store call succeeded. It costs one atomic
// load while the store is healthy.
func (h *Handler) storeAnswered() {
	if !h.storeDown.Load() || !h.storeDown.CompareAndSwap(true, false) {
		return
	}
	h.log.Info("lifeline: the store answers again",
		"down_for", time.Since(time.Unix(0, h.storeDownAt.Load())).Round(time.Millisecond))
}
