package testenv

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Meters is a MeterProvider whose measurements a test reads back, through
// the SDK's ManualReader: give it to a service's WithMeterProvider.
type Meters struct {
	*sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
	t      testing.TB
}

// NewMeters returns a provider that is shut down when the test ends.
func NewMeters(t testing.TB) *Meters {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &Meters{MeterProvider: mp, reader: r, t: t}
}

// MeterPoint is one series of an instrument: a counter's sum or a
// histogram's count of measurements.
type MeterPoint struct {
	Name  string
	Attrs attribute.Set
	// Value is a counter's or gauge's value, or a histogram's count.
	Value float64
}

// Points collects every series recorded so far.
func (m *Meters) Points() []MeterPoint {
	m.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		m.t.Fatalf("collect metrics: %v", err)
	}
	var out []MeterPoint
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = append(out, MeterPoint{mt.Name, p.Attributes, float64(p.Value)})
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					out = append(out, MeterPoint{mt.Name, p.Attributes, p.Value})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out = append(out, MeterPoint{mt.Name, p.Attributes, float64(p.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out = append(out, MeterPoint{mt.Name, p.Attributes, p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out = append(out, MeterPoint{mt.Name, p.Attributes, float64(p.Count)})
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out = append(out, MeterPoint{mt.Name, p.Attributes, float64(p.Count)})
				}
			}
		}
	}
	return out
}

// Value adds up the series of name whose attributes include every one of
// kv: a counter's sum, a gauge's value, or a histogram's count.
func (m *Meters) Value(name string, kv ...attribute.KeyValue) float64 {
	m.t.Helper()
	var v float64
	for _, p := range m.Points() {
		if p.Name == name && hasAll(p.Attrs, kv) {
			v += p.Value
		}
	}
	return v
}

func hasAll(set attribute.Set, kv []attribute.KeyValue) bool {
	for _, want := range kv {
		if got, ok := set.Value(want.Key); !ok || got != want.Value {
			return false
		}
	}
	return true
}

// CheckKeys fails the test when a series of an instrument whose name
// starts with prefix carries an attribute key that allowed does not name:
// labels must take a bounded set of values, so ids never become one.
func (m *Meters) CheckKeys(prefix string, allowed ...string) {
	m.t.Helper()
	for _, p := range m.Points() {
		if len(p.Name) < len(prefix) || p.Name[:len(prefix)] != prefix {
			continue
		}
		for _, kv := range p.Attrs.ToSlice() {
			if !slices.Contains(allowed, string(kv.Key)) {
				m.t.Errorf("%s has attribute %s=%s; allowed keys are %v", p.Name, kv.Key, kv.Value.String(), allowed)
			}
		}
	}
}
