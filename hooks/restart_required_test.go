package hooks_test

import (
	"bytes"
	"context"
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

// An edit of a key read only at start is logged at WARN, end to end (the
// real reload, its event, the slog hook), naming the key and saying
// "restart to apply": never a silent "reloaded".
func TestSlogStartOnlyKeyEditIsAWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), config.DefaultPropertiesFile)
	require.NoError(t, os.WriteFile(path, []byte("retryBudget=max=5\nretryExec={1205:3,1}\n"), 0o644))
	var logged bytes.Buffer
	clock := coretest.NewClock(time.Time{})
	rt, _, err := config.NewRuntime("sqlserver", "server=h", config.WithPropertiesFile(path),
		config.WithRetryRefresh(time.Second), config.WithClock(clock),
		config.WithObserver(hooks.Slog(slog.New(slog.NewTextHandler(&logged, nil)))))
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(path, []byte("retryBudget=off\nretryExec={1205:3,1}\n"), 0o644))
	clock.Advance(2 * time.Second)
	require.NoError(t, rt.Retrier().Do(context.Background(), "select 1", func(context.Context) error { return nil }))

	out := logged.String()
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "retryBudget")
	assert.Contains(t, out, "restart to apply")
	assert.NotContains(t, out, "level=INFO", "not logged as a plain reload")
	assert.NotContains(t, out, "level=ERROR", "the file was applied: not logged as a failure")
}
