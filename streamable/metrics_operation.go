package streamable

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// maxOperationSets bounds the attribute sets the MCP conventions' metrics
// are recorded with (each combination of method, protocol version, tool or
// prompt name and error type is one). Past it, a new combination is
// recorded as method "_OTHER" alone, so no client can grow the metric
// without bound. Only a call that did not fail with a JSON-RPC error
// names its tool or prompt (one that exists on the server).
const maxOperationSets = 4096

// operationKey is one attribute set of mcp.server.operation.duration (or,
// with method empty, of mcp.server.session.duration).
type operationKey struct {
	method, version, target, errType string
}

// operationSets caches the measurement options of each attribute set.
type operationSets struct {
	mu       sync.RWMutex
	sets     map[operationKey][]metric.RecordOption
	overflow []metric.RecordOption
}

func (o *operationSets) init() {
	o.sets = make(map[operationKey][]metric.RecordOption)
	o.overflow = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(keyMCPMethod.String(otherValue),
		semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http")))}
}

// get returns k's options, built by build on first use.
func (o *operationSets) get(k operationKey, build func() attribute.Set) []metric.RecordOption {
	o.mu.RLock()
	opts, ok := o.sets[k]
	o.mu.RUnlock()
	if ok {
		return opts
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if opts, ok := o.sets[k]; ok {
		return opts
	}
	if len(o.sets) >= maxOperationSets {
		return o.overflow
	}
	opts = []metric.RecordOption{metric.WithAttributeSet(build())}
	o.sets[k] = opts
	return opts
}

// sessionSet is mcp.server.session.duration's set for a session of
// version that ended with c (error.type unless a DELETE ended it).
func (o *operationSets) sessionSet(version string, c endCause) []metric.RecordOption {
	k := operationKey{version: boundedVersion(version)}
	if c != endDelete {
		k.errType = endCauseTokens[c]
	}
	return o.get(k, func() attribute.Set {
		kvs := make([]attribute.KeyValue, 0, 2)
		if k.version != "" {
			kvs = append(kvs, keyMCPProtocolVersion.String(k.version))
		}
		if k.errType != "" {
			kvs = append(kvs, semconv.ErrorTypeKey.String(k.errType))
		}
		return attribute.NewSet(kvs...)
	})
}

// opStart is when a request began, or zero when its duration is not
// recorded (no SDK): the no-op path reads no clock and parses nothing.
func (m *meters) opStart() time.Time {
	if m.opTimed() {
		return time.Now()
	}
	return time.Time{}
}

// opTimed reports whether mcp.server.operation.duration is recorded (an
// SDK is installed that wants it).
func (m *meters) opTimed() bool { return m.opDuration.Enabled(bg) }

// operation records mcp.server.operation.duration for the request env,
// begun at start on a session of version, answered with resp.
func (m *meters) operation(start time.Time, env *envelope, version string, resp mcp.JSONRPCMessage) {
	d := time.Since(start).Seconds()
	k := operationKey{method: otherValue, version: boundedVersion(version)}
	if slices.Contains(mcpMethods[:], env.Method) {
		k.method = env.Method
	}
	switch r := resp.(type) {
	case mcp.JSONRPCError:
		k.errType = strconv.Itoa(r.Error.Code)
	case rpcError:
		k.errType = strconv.Itoa(r.Error.Code)
	case mcp.JSONRPCResponse:
		if isToolError(r.Result) {
			k.errType = "tool_error"
		}
		if k.method == "tools/call" || k.method == "prompts/get" {
			k.target = readTarget(env.Params).name
		}
	}
	m.opDuration.Record(bg, d, m.ops.get(k, func() attribute.Set {
		kvs := []attribute.KeyValue{keyMCPMethod.String(k.method), semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http")}
		if k.version != "" {
			kvs = append(kvs, keyMCPProtocolVersion.String(k.version))
		}
		switch {
		case k.target == "":
		case k.method == "tools/call":
			kvs = append(kvs, keyGenAIToolName.String(k.target))
		default:
			kvs = append(kvs, keyGenAIPromptName.String(k.target))
		}
		if k.errType != "" {
			kvs = append(kvs, semconv.ErrorTypeKey.String(k.errType))
		}
		return attribute.NewSet(kvs...)
	})...)
}

// isToolError reports whether result is a tool's result with isError set.
func isToolError(result any) bool {
	switch r := result.(type) {
	case *mcp.CallToolResult:
		return r != nil && r.IsError
	case mcp.CallToolResult:
		return r.IsError
	}
	return false
}

// boundedVersion is version if it is one mcp-go knows (the transport
// serves no other), else "_OTHER"; empty stays empty.
func boundedVersion(version string) string {
	if version == "" || slices.Contains(mcp.ValidProtocolVersions, version) {
		return version
	}
	return otherValue
}

// sessionVersion is the protocol version a request on cs runs under: its
// session's, or 2026-07-28 for a request of that version (which has no
// session to negotiate one).
func sessionVersion(cs server.ClientSession) string {
	var s *session
	switch v := cs.(type) {
	case *requestSession:
		s = v.session
	case *session:
		s = v
	default:
		return ""
	}
	if s.modern {
		return mcp.ProtocolVersion20260728
	}
	return s.ProtocolVersion()
}
