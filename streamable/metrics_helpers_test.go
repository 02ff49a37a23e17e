package streamable_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// meterRig is an SDK MeterProvider with a manual reader, for reading what
// a transport recorded.
type meterRig struct {
	t      testing.TB
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newMeterRig(t testing.TB) *meterRig {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &meterRig{t: t, reader: reader, mp: mp}
}

// collect reads every metric recorded so far.
func (m *meterRig) collect() metrics {
	m.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		m.t.Fatal(err)
	}
	out := metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			out[mt.Name] = mt
		}
	}
	return out
}

// metrics are the collected metrics by name.
type metrics map[string]metricdata.Metrics

// point is one data point, whatever its type: its attributes and its
// value (a sum's value, a histogram's count).
type point struct {
	attrs attribute.Set
	value float64
	sum   float64 // a histogram's sum
}

func (ms metrics) points(name string) []point {
	var out []point
	switch d := ms[name].Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, point{attrs: p.Attributes, value: float64(p.Value)})
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			out = append(out, point{attrs: p.Attributes, value: p.Value})
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, point{attrs: p.Attributes, value: float64(p.Count), sum: p.Sum})
		}
	}
	return out
}

// value adds up the points of name whose attributes include all of want
// (a sum's value, a histogram's count).
func (ms metrics) value(name string, want ...attribute.KeyValue) float64 {
	total := 0.0
	for _, p := range ms.points(name) {
		if hasAll(p.attrs, want) {
			total += p.value
		}
	}
	return total
}

// exact returns the point of name whose attributes are exactly want.
func (ms metrics) exact(name string, want ...attribute.KeyValue) (point, bool) {
	set := attribute.NewSet(want...)
	for _, p := range ms.points(name) {
		if p.attrs.Equals(&set) {
			return p, true
		}
	}
	return point{}, false
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// dump describes name's points, for failure messages.
func (ms metrics) dump(name string) string {
	var lines []string
	for _, p := range ms.points(name) {
		lines = append(lines, fmt.Sprintf("%s=%v", p.attrs.Encoded(attribute.DefaultEncoder()), p.value))
	}
	sort.Strings(lines)
	return name + ": [" + strings.Join(lines, " ") + "]"
}

// check compares value(name, want...) with n.
func (ms metrics) check(t testing.TB, n float64, name string, want ...attribute.KeyValue) {
	t.Helper()
	if got := ms.value(name, want...); got != n {
		t.Errorf("%s %v = %v, want %v\n%s", name, want, got, n, ms.dump(name))
	}
}

// atLeast is check for a lower bound.
func (ms metrics) atLeast(t testing.TB, n float64, name string, want ...attribute.KeyValue) {
	t.Helper()
	if got := ms.value(name, want...); got < n {
		t.Errorf("%s %v = %v, want at least %v\n%s", name, want, got, n, ms.dump(name))
	}
}
