package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
)

// promtool returns the path of promtool, skipping the test without it
// unless CRL_PROMTOOL=required (as .ci/run sets), which fails it instead.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CRL_PROMTOOL") == "required" {
			require.NoError(t, err, "promtool is required (CRL_PROMTOOL=required) and not found")
		}
		t.Skip("promtool not installed (Debian package prometheus); .ci/run installs it")
	}
	return path
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
}

// dashboardExprs returns the PromQL of every target of dashboard.json,
// and the queries of its template variables, with Grafana's variables
// replaced as Grafana would: prefix by prefix, db by its All value.
func dashboardExprs(t *testing.T, prefix string) (targets, variables []string) {
	t.Helper()
	data, err := os.ReadFile("dashboard.json")
	require.NoError(t, err)
	var board struct {
		Panels     []dashPanel `json:"panels"`
		Templating struct {
			List []struct {
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(data, &board), "dashboard.json is JSON")
	subst := strings.NewReplacer("${prefix}", prefix, "$db", ".*")
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				require.NotContains(t, tg.Expr, "$__", "panel %q: a Grafana interval variable promtool cannot check", p.Title)
				targets = append(targets, subst.Replace(tg.Expr))
			}
			walk(p.Panels)
		}
	}
	walk(board.Panels)
	for _, v := range board.Templating.List {
		if v.Type == "query" {
			variables = append(variables, subst.Replace(v.Definition))
		}
	}
	require.NotEmpty(t, targets)
	return targets, variables
}

type dashPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}

// alertExprs returns the expressions of the alerting rules in the file.
func alertExprs(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &rules))
	var out []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// namespaced is what docs/operations.md tells a user with Options.Namespace
// set to do to the shipped rules: prefix every crl_ name (sed
// 's/\bcrl_/shop_crl_/g').
func namespaced(text, namespace string) string {
	if namespace == "" {
		return text
	}
	return crlName.ReplaceAllString(text, "${1}"+namespace+"_crl_")
}

var crlName = regexp.MustCompile(`(^|[^A-Za-z0-9_])crl_`)

// exported scrapes Metrics built with namespace over HTTP, watching a
// retry budget and a circuit breaker, after a few operations so that every
// histogram has samples, and returns the
// exported series names (a histogram's _bucket, _sum and _count) and the
// values of every label.
func exported(t *testing.T, namespace string) (names map[string]bool, labels map[string]map[string]bool) {
	t.Helper()
	reg := prom.NewPedanticRegistry()
	m, err := crlprom.New(reg, crlprom.Options{Namespace: namespace, ConstLabels: prom.Labels{"db": "orders"}})
	require.NoError(t, err)
	rules, err := core.ParseStatementRules("{1205:1,1}")
	require.NoError(t, err)
	clock := coretest.NewClock(time.Time{})
	budget, err := core.NewBudget(core.BudgetSettings{})
	require.NoError(t, err)
	breaker, err := core.NewBreaker(core.BreakerSettings{Failures: 5}, clock)
	require.NoError(t, err)
	r, err := core.NewRetrier(core.Policy{Statement: rules}, core.Options{Observer: m, Clock: clock, Budget: budget, Breaker: breaker})
	require.NoError(t, err)
	m.WatchBudget(budget)
	m.WatchBreaker(breaker)
	_ = r.Do(context.Background(), "update t", func(context.Context) error { return deadlock{} })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	names, labels = map[string]bool{}, map[string]map[string]bool{"le": {}}
	for name, f := range families {
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if labels[l.GetName()] == nil {
					labels[l.GetName()] = map[string]bool{}
				}
				labels[l.GetName()][l.GetValue()] = true
			}
		}
	}
	return names, labels
}

var (
	// identifiers holds every word of an expression; those with crl_ in
	// them or starting with database_ are metric names (no label or
	// function of these expressions has either).
	identifiers = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	// grouping and matchers give the label names an expression uses.
	grouping = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matchers = regexp.MustCompile(`\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"\s*$`)
)

// checkNames fails for a metric, label or label value an expression names
// that the scrape does not show.
func checkNames(t *testing.T, expr string, names map[string]bool, labels map[string]map[string]bool) {
	t.Helper()
	found := false
	for _, id := range identifiers.FindAllString(expr, -1) {
		if strings.Contains(id, "crl_") || strings.HasPrefix(id, "database_") {
			found = true
			assert.True(t, names[id], "%s names %s, which the hook does not export", expr, id)
		}
	}
	assert.True(t, found, "%s names no crl metric", expr)
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				assert.NotNil(t, labels[l], "%s groups by %s, a label no series has", expr, l)
			}
		}
	}
	for _, g := range matchers.FindAllStringSubmatch(expr, -1) {
		for _, part := range strings.Split(g[1], ",") {
			mm := matcher.FindStringSubmatch(part)
			if !assert.NotNil(t, mm, "%s: matcher %q", expr, part) {
				continue
			}
			assert.NotNil(t, labels[mm[1]], "%s matches on %s, a label no series has", expr, mm[1])
			if mm[2] == "=" {
				assert.True(t, labels[mm[1]][mm[3]], "%s matches %s=%q, a value no series has", expr, mm[1], mm[3])
			}
		}
	}
}

// rulesFile writes exprs as recording rules, so that promtool check rules
// parses every one of them.
func rulesFile(t *testing.T, dir string, exprs []string) string {
	t.Helper()
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, e := range exprs {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:expr_%d", i+1), Expr: e})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	path := filepath.Join(dir, "dashboard_rules.yml")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// The dashboard's and the alerts' expressions name only what the hook
// exports, with and without a namespace, and promtool parses them all.
func TestDashboardAndAlertsNameExportedSeries(t *testing.T) {
	for _, ns := range []string{"", "shop"} {
		t.Run("namespace="+ns, func(t *testing.T) {
			prefix := ""
			if ns != "" {
				prefix = ns + "_"
			}
			names, labels := exported(t, ns)
			targets, variables := dashboardExprs(t, prefix)
			alerts := alertExprs(t, "alerts.yml")
			for i := range alerts {
				alerts[i] = namespaced(alerts[i], ns)
			}
			for _, e := range append(append(targets, alerts...), variables...) {
				checkNames(t, e, names, labels)
			}
			dir := t.TempDir()
			rulesFile(t, dir, targets)
			runPromtool(t, dir, "check", "rules", "dashboard_rules.yml")
		})
	}
}

// The shipped alerts, prefixed as docs/operations.md says for
// Namespace "shop", pass promtool's checks and the whole alerts_test.yml
// suite with its series prefixed the same way: the alerts work with
// the names Namespace "shop" exports (which
// TestDashboardAndAlertsNameExportedSeries checks against a scrape).
func TestAlertsWithANamespace(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"alerts.yml", "alerts_test.yml"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(namespaced(string(data), "shop")), 0o644))
	}
	text, err := os.ReadFile(filepath.Join(dir, "alerts_test.yml"))
	require.NoError(t, err)
	require.Contains(t, string(text), "shop_crl_give_ups_total{")
	require.Contains(t, string(text), "'database_retry_requests_total{", "the post-mortem's names are not prefixed")
	runPromtool(t, dir, "check", "rules", "alerts.yml")
	runPromtool(t, dir, "test", "rules", "alerts_test.yml")
}

func TestNamespacedIsTheDocumentedSed(t *testing.T) {
	in := "rate(crl_give_ups_total[5m]) / database_total_requests_total # crl_ CRLCircuitOpen"
	assert.Equal(t, "rate(shop_crl_give_ups_total[5m]) / database_total_requests_total # shop_crl_ CRLCircuitOpen",
		namespaced(in, "shop"))
	if sed, err := exec.LookPath("sed"); err == nil {
		cmd := exec.Command(sed, `s/\bcrl_/shop_crl_/g`)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		require.NoError(t, err)
		assert.Equal(t, namespaced(in, "shop"), strings.TrimSuffix(string(out), "\n"))
	}
}
