package streamable

import (
	"context"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// RequireClientCapabilities reports whether the client that sent the request
// being handled declared every capability in required (sampling,
// elicitation, roots, tasks, and experimental and extension keys that are
// set; sub-capabilities are not compared). It returns nil if
// so. Otherwise it returns an error wrapping
// mcp.MissingRequiredClientCapabilityError, and a tool, prompt or resource
// handler that returns that error (or any error, once this has been called)
// has its request answered by lifeline as the specification prescribes:
// JSON-RPC error -32021 with data {"requiredCapabilities": required} and,
// on 2026-07-28, HTTP 400. (mcp-go alone would answer any handler error as
// -32603.)
//
// On 2026-07-28 the capabilities are those in the request's _meta; on
// earlier versions, those the session declared in initialize.
func RequireClientCapabilities(ctx context.Context, required mcp.ClientCapabilities) error {
	declared := declaredCapabilities(ctx)
	missing := missingCapabilities(declared, required)
	if missing == "" {
		return nil
	}
	if slot, ok := ctx.Value(capabilitySlotKey{}).(*capabilitySlot); ok {
		slot.set(required)
	}
	return fmt.Errorf("lifeline: the client did not declare the %s capability this request needs: %w",
		missing, mcp.MissingRequiredClientCapabilityError{Capability: missing})
}

// declaredCapabilities returns what the request's client declared.
func declaredCapabilities(ctx context.Context) mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities != nil {
			return *info.ClientCapabilities
		}
		return mcp.ClientCapabilities{}
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return s.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// missingCapabilities names the first capability of required that declared
// lacks, or returns "".
func missingCapabilities(declared, required mcp.ClientCapabilities) string {
	switch {
	case required.Sampling != nil && declared.Sampling == nil:
		return "sampling"
	case required.Elicitation != nil && declared.Elicitation == nil:
		return "elicitation"
	case required.Roots != nil && declared.Roots == nil:
		return "roots"
	case required.Tasks != nil && declared.Tasks == nil:
		return "tasks"
	}
	for k := range required.Experimental {
		if _, ok := declared.Experimental[k]; !ok {
			return "experimental." + k
		}
	}
	for k := range required.Extensions {
		if _, ok := declared.Extensions[k]; !ok {
			return "extensions." + k
		}
	}
	return ""
}

// capabilitySlotKey is the context key of a request's capabilitySlot.
type capabilitySlotKey struct{}

// capabilitySlot records, for one request, the capabilities a handler
// required and the client lacked (RequireClientCapabilities).
type capabilitySlot struct {
	mu       sync.Mutex
	required *mcp.ClientCapabilities
}

func (c *capabilitySlot) set(required mcp.ClientCapabilities) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.required = &required
}

func (c *capabilitySlot) get() *mcp.ClientCapabilities {
	c.mu.Lock()
	r := c.required
	c.mu.Unlock()
	return r
}

// missingCapabilityData is the data of a -32021 error.
type missingCapabilityData struct {
	RequiredCapabilities mcp.ClientCapabilities `json:"requiredCapabilities"`
}

// withCapabilitySlot returns ctx carrying a fresh slot, and the slot.
func withCapabilitySlot(ctx context.Context) (context.Context, *capabilitySlot) {
	slot := &capabilitySlot{}
	return context.WithValue(ctx, capabilitySlotKey{}, slot), slot
}

// applyMissingCapability turns resp, an error answer to a request whose
// handler called RequireClientCapabilities and was refused, into the
// -32021 error carrying the required capabilities. Other answers are
// returned unchanged.
func applyMissingCapability(resp mcp.JSONRPCMessage, slot *capabilitySlot) mcp.JSONRPCMessage {
	required := slot.get()
	if required == nil {
		return resp
	}
	e, ok := resp.(mcp.JSONRPCError)
	if !ok {
		return resp
	}
	e.Error.Code = mcp.MISSING_REQUIRED_CLIENT_CAPABILITY
	e.Error.Data = missingCapabilityData{RequiredCapabilities: *required}
	return e
}
