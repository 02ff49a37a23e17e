package server

import "go.opentelemetry.io/otel/metric"

// WithMeterProvider sends the transport's OpenTelemetry metrics to mp (see
// streamable.Config.MeterProvider). Without it, the global provider
// (otel.GetMeterProvider()) is used: nothing is recorded until the
// application installs an SDK provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(s *Server) { s.cfg.MeterProvider = mp }
}
