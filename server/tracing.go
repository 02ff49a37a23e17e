package server

import (
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// WithTracerProvider makes the transport's spans with tp (see
// streamable.Config.TracerProvider): a SERVER span per MCP request, under
// OpenTelemetry's MCP semantic conventions. Without it, the global
// provider (otel.GetTracerProvider()) is used: nothing is traced, at no
// cost to the request path, until the application installs one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(s *Server) { s.cfg.TracerProvider = tp }
}

// WithPropagator reads requests' parent trace context with p, from
// params._meta or else the HTTP headers (see streamable.Config.Propagator).
// Without it, the global one (otel.GetTextMapPropagator()) is used.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(s *Server) { s.cfg.Propagator = p }
}
