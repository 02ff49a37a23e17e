package streamable

import "go.opentelemetry.io/otel/attribute"

// scopeName is the instrumentation scope of every instrument the transport
// creates.
const scopeName = "github.com/lifeline-mcp/lifeline/streamable"

// Attribute keys of the OpenTelemetry semantic conventions for MCP
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/) and GenAI that
// go.opentelemetry.io/otel/semconv (v1.43.0, the newest in otel v1.47.0)
// does not define yet. The others (error.type, network.*,
// http.response.status_code) come from semconv.
const (
	keyMCPMethod          = attribute.Key("mcp.method.name")
	keyMCPProtocolVersion = attribute.Key("mcp.protocol.version")
	keyGenAIToolName      = attribute.Key("gen_ai.tool.name")
	keyGenAIPromptName    = attribute.Key("gen_ai.prompt.name")
)

// Names of the MCP conventions' server metrics.
const (
	metricOperationDuration = "mcp.server.operation.duration"
	metricSessionDuration   = "mcp.server.session.duration"
)

// lifeline's own attribute keys.
const (
	keyEndCause   = attribute.Key("lifeline.end_cause")
	keyStreamKind = attribute.Key("lifeline.stream.kind")
	keyCause      = attribute.Key("lifeline.cause")
	keyStoreOp    = attribute.Key("lifeline.store.operation")
)

// mcpMethods are the method names the operation metric names as they are;
// any other method is recorded as "_OTHER", so that a client cannot grow
// the metric's attribute sets by inventing methods.
var mcpMethods = [...]string{
	"initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
	"resources/unsubscribe", "logging/setLevel", "completion/complete",
	"tasks/get", "tasks/list", "tasks/result", "tasks/cancel",
	"subscriptions/listen", "server/discover",
}

// otherValue stands for a value outside a bounded set (the conventions'
// error.type "_OTHER").
const otherValue = "_OTHER"
