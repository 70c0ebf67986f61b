package hooks_test

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
)

// A properties file deleted while a handle runs is reported, end to end
// (the real reload, its event, the slog hook), with no line number: no
// "line=0" attribute and no ":0:" in the error (issue 14, item 7), and the
// last rules stay in effect.
func TestDeletedPropertiesFileReportedWithoutLine(t *testing.T) {
	w := watchedFile(t, "retryExec={1205:3,1}\n")
	path, rt, obs, logged := w.path, w.rt, w.obs, w.logged
	require.NoError(t, os.Remove(path))
	w.look(t)

	reloads := obs.Snapshot().Reloads
	require.Len(t, reloads, 1, "the deletion is reported")
	ev := reloads[0]
	require.ErrorIs(t, ev.Err, fs.ErrNotExist)
	assert.Zero(t, ev.Line, "a deleted file has no line")
	assert.NotContains(t, ev.Err.Error(), ":0:", "the error names no line 0")
	assert.Contains(t, ev.Err.Error(), path)

	out := logged.String()
	assert.Contains(t, out, "deleted")
	assert.Contains(t, out, "level=ERROR")
	assert.NotContains(t, out, "line=", "the log record names no line")

	rule, ok := rt.Retrier().Policy().Statement.Lookup(1205)
	require.True(t, ok, "the last rules stay in effect")
	assert.Equal(t, 3, rule.Count())
}

// An edit of a key read only at start is logged at WARN, end to end (the
// real reload, its event, the slog hook), naming the key and saying
// "restart to apply": never a silent "reloaded".
func TestSlogStartOnlyKeyEditIsAWarning(t *testing.T) {
	w := watchedFile(t, "retryBudget=max=5\nretryExec={1205:3,1}\n")
	require.NoError(t, os.WriteFile(w.path, []byte("retryBudget=off\nretryExec={1205:3,1}\n"), 0o644))
	w.look(t)

	out := w.logged.String()
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "retryBudget")
	assert.Contains(t, out, "restart to apply")
	assert.NotContains(t, out, "level=INFO", "not logged as a plain reload")
	assert.NotContains(t, out, "level=ERROR", "the file was applied: not logged as a failure")
}

// watched is a SQL Server handle's runtime on a properties file, looked
// at every second of a virtual clock, whose events go to a recording
// observer and to the slog hook's text log.
type watched struct {
	path   string
	rt     *config.Runtime
	obs    *coretest.Observer
	logged *bytes.Buffer
	clock  *coretest.Clock
}

// watchedFile writes the file with content and starts the runtime on it.
func watchedFile(t *testing.T, content string) *watched {
	t.Helper()
	w := &watched{path: filepath.Join(t.TempDir(), config.DefaultPropertiesFile), obs: &coretest.Observer{},
		logged: &bytes.Buffer{}, clock: coretest.NewClock(time.Time{})}
	require.NoError(t, os.WriteFile(w.path, []byte(content), 0o644))
	var err error
	w.rt, _, err = config.NewRuntime("sqlserver", "server=h", config.WithPropertiesFile(w.path),
		config.WithRetryRefresh(time.Second), config.WithClock(w.clock),
		config.WithObserver(hooks.Multi(w.obs, hooks.Slog(slog.New(slog.NewTextHandler(w.logged, nil))))))
	require.NoError(t, err)
	return w
}

// look lets the refresh interval pass and runs a statement, whose start
// looks at the file.
func (w *watched) look(t *testing.T) {
	t.Helper()
	w.clock.Advance(2 * time.Second)
	require.NoError(t, w.rt.Retrier().Do(context.Background(), "select 1", func(context.Context) error { return nil }))
}
