package testbed

import "testing"

// TestMetricSum: the samples of one metric only (not of a metric whose name it prefixes), those
// whose labels hold every one asked for, comments and unparsable values left out.
func TestMetricSum(t *testing.T) {
	body := `# HELP errors_total Errors.
# TYPE errors_total counter
errors_total{controller="a",reason="create"} 2
errors_total{controller="a",reason="update"} 3
errors_total{controller="b",reason="create"} 5
errors_total_extra{controller="a",reason="create"} 100
errors_total{controller="a",reason="create",x="y"} NaNish
up 1
`
	for _, c := range []struct {
		metric string
		labels []string
		want   float64
	}{
		{"errors_total", nil, 10},
		{"errors_total", []string{`controller="a"`}, 5},
		{"errors_total", []string{`controller="a"`, `reason="create"`}, 2},
		{"errors_total", []string{`controller="c"`}, 0},
		{"up", nil, 1},
		{"missing", nil, 0},
	} {
		if got := MetricSum(body, c.metric, c.labels...); got != c.want {
			t.Errorf("MetricSum(%s, %v) = %v, want %v", c.metric, c.labels, got, c.want)
		}
	}
}
