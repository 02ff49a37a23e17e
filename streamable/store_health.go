package streamable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
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

// storeProbeID names no session: CheckStore asks the store for its record.
const storeProbeID = "lifeline-store-probe"

// CheckStore asks the store a question as cheap as any (the record of a
// session id that names none) and returns an error if it did not answer
// within ctx, nil if it did. An answer or a failure counts, for the log,
// as any store call does (one line when the store becomes unreachable, one
// when it answers again). A readiness check calls it.
func (h *Handler) CheckStore(ctx context.Context) error {
	_, err := h.cfg.Store.Get(ctx, storeProbeID)
	if err == nil || errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, sessionstore.ErrTerminated) {
		h.storeAnswered()
		return nil
	}
	// Not answering within ctx is the failure CheckStore looks for: ctx's
	// deadline passing counts, only the caller's leaving does not.
	if !errors.Is(ctx.Err(), context.Canceled) {
		h.storeFailed(context.WithoutCancel(ctx), "probe", err)
	}
	return fmt.Errorf("lifeline: the session store does not answer: %w", err)
}
