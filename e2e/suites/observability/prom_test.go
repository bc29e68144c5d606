package observability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// series is one result of an instant query: its labels and value ("NaN" included).
type series struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s series) value() string { v, _ := s.Value[1].(string); return v }

// query evaluates expr now through Prometheus' HTTP API (/api/v1/query).
func query(ctx context.Context, expr string) ([]series, error) {
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []series `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, promURL+"/api/v1/query?query="+url.QueryEscape(expr), &out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s: %s", expr, out.Error)
	}
	return out.Data.Result, nil
}

// alert is one alert of Prometheus' /api/v1/alerts.
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
	Value  string            `json:"value"`
}

// alerts are the pending and firing alerts of Prometheus (/api/v1/alerts).
func alerts(ctx context.Context) ([]alert, error) {
	var out struct {
		Data struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	if err := getJSON(ctx, promURL+"/api/v1/alerts", &out); err != nil {
		return nil, err
	}
	return out.Data.Alerts, nil
}

func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w: %s", u, err, body)
	}
	return nil
}

// chartFile is the path of a file of the chart, charts/jobset-addons/<name>.
func chartFile(name string) (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "jobset-addons", name), nil
}

// panelQuery is one query of the dashboard.
type panelQuery struct{ Panel, Expr string }

// dashboardQueries are the queries of every panel of the chart's dashboard.
func dashboardQueries() ([]panelQuery, error) {
	f, err := chartFile("files/dashboard.json")
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	var out []panelQuery
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			return nil, fmt.Errorf("panel %q has no query", p.Title)
		}
		for _, t := range p.Targets {
			out = append(out, panelQuery{p.Title, t.Expr})
		}
	}
	return out, nil
}

// rule is one alerting rule of the chart's rule file.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

func readRules() (ruleFile, error) {
	var rf ruleFile
	f, err := chartFile("files/alerts.yaml")
	if err != nil {
		return rf, err
	}
	raw, err := os.ReadFile(f)
	if err != nil {
		return rf, err
	}
	return rf, yaml.Unmarshal(raw, &rf)
}

// threshold splits an alert's expression into what it compares (its signal) and its final
// comparison with a number.
var threshold = regexp.MustCompile(`(?s)^(.*?)\s*(==|!=|>=|<=|>|<)\s*([0-9.]+)\s*$`)

// signal is the expression of an alert without its final comparison: what it watches, which
// returns series whether the alert fires or not.
func signal(expr string) (string, bool) {
	m := threshold.FindStringSubmatch(strings.TrimSpace(expr))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// suiteRules is the chart's rule file as the suite's Prometheus evaluates it: every "for" cut to
// 4 s, and the age thresholds (held PVCs, waiting JobSets) to 5 s, so that the alerts fire within
// the suite.
func suiteRules() ([]byte, error) {
	rf, err := readRules()
	if err != nil {
		return nil, err
	}
	for g := range rf.Groups {
		for i := range rf.Groups[g].Rules {
			r := &rf.Groups[g].Rules[i]
			if r.For != "" {
				r.For = "4s"
			}
			if r.Alert == "JobSetAddonPVCHeld" || r.Alert == "JobSetWaitingTooLong" {
				m := threshold.FindStringSubmatch(strings.TrimSpace(r.Expr))
				if m == nil {
					return nil, fmt.Errorf("%s: no threshold in %q", r.Alert, r.Expr)
				}
				r.Expr = m[1] + " " + m[2] + " 5"
			}
		}
	}
	return yaml.Marshal(rf)
}
