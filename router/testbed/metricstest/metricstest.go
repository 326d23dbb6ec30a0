// Package metricstest reads Prometheus expositions in tests: parsed with Prometheus's own parser,
// one metric's value looked up by its labels.
package metricstest

import (
	"io"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse reads a text exposition with Prometheus's parser, failing the test on a malformed one.
func Parse(tb testing.TB, r io.Reader) map[string]*dto.MetricFamily {
	tb.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		tb.Fatalf("parsing the exposition: %v", err)
	}
	return fams
}

// Value is the value of family name's metric with exactly labels (name, value pairs): a counter's
// or gauge's value, a histogram's count; ok false when there is none.
func Value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		match := len(got) == len(labels)/2
		for i := 0; match && i+1 < len(labels); i += 2 {
			match = got[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}
