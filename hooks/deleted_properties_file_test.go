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
	path := filepath.Join(t.TempDir(), config.DefaultPropertiesFile)
	require.NoError(t, os.WriteFile(path, []byte("retryExec={1205:3,1}\n"), 0o644))
	var logged bytes.Buffer
	obs := &coretest.Observer{}
	clock := coretest.NewClock(time.Time{})
	rt, _, err := config.NewRuntime("sqlserver", "server=h", config.WithPropertiesFile(path),
		config.WithRetryRefresh(time.Second), config.WithClock(clock),
		config.WithObserver(hooks.Multi(obs, hooks.Slog(slog.New(slog.NewTextHandler(&logged, nil))))))
	require.NoError(t, err)

	require.NoError(t, os.Remove(path))
	clock.Advance(2 * time.Second)
	require.NoError(t, rt.Retrier().Do(context.Background(), "select 1", func(context.Context) error { return nil }))

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
