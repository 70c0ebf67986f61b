package prometheus_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	crlprom "github.com/crl-go/crl/hooks/prometheus"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

var update = flag.Bool("update", false, "rewrite the generated input series in alerts_test.yml")

const (
	selectOne = "SELECT 1"
	debit     = "UPDATE accounts SET balance = balance - 10 WHERE id = @p1"
)

// minute is one minute of traffic against the stand-in: selects that
// succeed and updates, each scripted by script before it runs.
type minute struct {
	selects, updates int
	script           []mssqltest.Reply // the replies to each update, in order; the last repeats
}

// scrapeRun runs the minutes through the real go-mssqldb driver and
// sqlxcrl against mssqltest, with a virtual clock that moves one minute
// between scrapes, and scrapes the registry over HTTP in the text format
// once before the traffic and after every minute. It returns the values of
// every counter and gauge series, by series name as promtool writes it.
func scrapeRun(t *testing.T, minutes []minute, budget bool) map[string][]float64 {
	t.Helper()
	reg := prom.NewPedanticRegistry()
	metrics, err := crlprom.New(reg, crlprom.Options{ConstLabels: prom.Labels{"db": "orders"}})
	require.NoError(t, err)
	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer web.Close()

	srv := mssqltest.NewServer(t)
	srv.Handle(selectOne, mssqltest.Rows([]string{"one"}, []any{int64(1)}))
	clock := coretest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// Deadlock victims retried twice, after 100 ms and 2.1 s (the JDBC
	// default change, +2 s). Without the budget: the series of a storm
	// that every retry reaches the database with. With it: the series of
	// the storm the budget sheds (it retries only the deadlocks that the
	// reads' successes pay for).
	dsn := srv.DSN() + "&retryExec={1205:2,100ms}"
	if !budget {
		dsn += "&retryBudget=off"
	}
	db, err := sqlxcrl.Connect("sqlserver", dsn,
		config.WithClock(clock), config.WithObserver(metrics))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1) // one login, whatever the scheduler does
	metrics.WatchBudget(db.Runtime().Retrier().Budget())
	metrics.WatchBreaker(db.Runtime().Breaker())

	series := map[string][]float64{}
	scrape := func(n int) {
		for name, v := range scrapeText(t, web.URL) {
			if series[name] == nil {
				series[name] = make([]float64, n) // absent so far: promtool's "_"
				for i := range series[name] {
					series[name][i] = -1
				}
			}
			series[name] = append(series[name], v)
		}
	}
	scrape(0)
	ctx := context.Background()
	for i, m := range minutes {
		for range m.selects {
			var one int
			require.NoError(t, db.GetContext(ctx, &one, selectOne))
		}
		if m.updates > 0 {
			srv.Handle(debit, m.script...)
		}
		for range m.updates {
			_, _ = db.ExecContext(ctx, debit, 1) // a storm's errors are the point
		}
		clock.Advance(time.Minute)
		scrape(i + 1)
	}
	return series
}

// scrapeText reads the counters and gauges of one scrape in the text
// format.
func scrapeText(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	out := map[string]float64{}
	for name, f := range families {
		var value func(*dto.Metric) float64
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			value = func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }
		case dto.MetricType_GAUGE:
			value = func(m *dto.Metric) float64 { return m.GetGauge().GetValue() }
		default:
			continue // the histograms are not needed by the alerts
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			out[name+"{"+strings.Join(labels, ",")+"}"] = value(m)
		}
	}
	return out
}

// inputSeries writes every series as promtool input_series, those
// that stayed at 0 included: the alerts must work on what a scrape really
// shows.
func inputSeries(series map[string][]float64, indent string) string {
	names := make([]string, 0, len(series))
	for name := range series {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		vals := make([]string, len(series[name]))
		for i, v := range series[name] {
			vals[i] = fmt.Sprint(v)
			if v < 0 {
				vals[i] = "_"
			}
		}
		fmt.Fprintf(&b, "%s- series: '%s'\n%s  values: '%s'\n", indent, name, indent, strings.Join(vals, " "))
	}
	return b.String()
}

// The real runs the alerts are tested on: a storm (every debit a
// deadlock victim, retried until the rules say stop) for 25 minutes after
// five healthy ones, without the retry budget and with it (the budget
// sheds the storm's retries), and sporadic deadlocks (one debit a minute
// fails once and succeeds on its retry).
func stormMinutes() []minute {
	var ms []minute
	for range 5 {
		ms = append(ms, minute{selects: 50})
	}
	for range 25 {
		ms = append(ms, minute{selects: 30, updates: 100, script: []mssqltest.Reply{mssqltest.Error(1205)}})
	}
	return ms
}

func sporadicMinutes() []minute {
	var ms []minute
	for range 20 {
		ms = append(ms, minute{selects: 50, updates: 1, script: []mssqltest.Reply{mssqltest.Error(1205), mssqltest.Affected(1)}})
	}
	return ms
}

// TestAlertSeriesFromARealStorm regenerates the input series of the
// generated blocks of alerts_test.yml from real runs and checks that the
// committed file holds exactly them (-update rewrites them); with promtool
// on the PATH it also runs the suite (CI runs it in any case).
func TestAlertSeriesFromARealStorm(t *testing.T) {
	const file = "alerts_test.yml"
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	text := string(raw)
	for _, run := range []struct {
		name    string
		minutes []minute
		budget  bool
	}{{"storm", stormMinutes(), false}, {"budget storm", stormMinutes(), true}, {"sporadic", sporadicMinutes(), false}} {
		begin := "# BEGIN generated " + run.name + " series"
		end := "# END generated " + run.name + " series"
		i, j := strings.Index(text, begin), strings.Index(text, end)
		require.True(t, i >= 0 && j > i, "%s lacks the %q ... %q block", file, begin, end)
		lineStart := strings.LastIndex(text[:i], "\n") + 1
		indent := text[lineStart:i]
		head := i + len(begin) + 1 // past the marker's line end
		got := inputSeries(scrapeRun(t, run.minutes, run.budget), indent)
		if *update {
			text = text[:head] + got + text[j-len(indent):]
			continue
		}
		assert.Equal(t, got, text[head:j-len(indent)],
			"the %s series in %s are not those of a real run: go test -run TestAlertSeriesFromARealStorm -update", run.name, file)
	}
	if *update {
		require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not on the PATH; .ci/run runs the suite")
		return
	}
	out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput()
	assert.NoError(t, err, "promtool test rules %s:\n%s", file, out)
}
