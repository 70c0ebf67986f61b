package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An edit of a key read only at start is never a silent no-op: the reload
// applies the other keys and reports RulesReloaded with an error naming
// the key and saying "restart to apply" (ErrRestartRequired); the value
// read at start stays in effect.
func TestStartOnlyKeyEditIsReported(t *testing.T) {
	for _, tc := range []struct{ key, before, after string }{
		{"retryBudget", "retryBudget=max=5\n", "retryBudget=off\n"},
		{"retryBreaker", "retryBreaker=failures=5\n", "retryBreaker=failures=9,open=1m\n"},
		{"executionCutoff", "executionCutoff=5s\n", "executionCutoff=10s\n"},
		{"retryBudget", "", "retryBudget=max=50\n"}, // a line added
		{"retryBudget", "retryBudget=max=50\n", ""}, // a line removed
	} {
		t.Run(tc.key, func(t *testing.T) {
			f := newReloadFixture(t, tc.before+"retryExec={1205:1,1}\n")
			start := f.rt.Config()
			budget, cutoff := f.rt.Retrier().Budget(), f.rt.ExecutionCutoff()

			f.file.write(tc.after + "retryExec={1205:2,1}\n")
			f.due(t)
			require.Equal(t, 2, ruleCount(f.rt, 1205), "the other keys are applied")
			ev := f.reloads()
			require.Len(t, ev, 1, "one reload event")
			require.ErrorIs(t, ev[0].Err, ErrRestartRequired)
			assert.ErrorContains(t, ev[0].Err, tc.key)
			assert.ErrorContains(t, ev[0].Err, "restart to apply")
			assert.ErrorContains(t, ev[0].Err, f.file.path)
			assert.Equal(t, "config: "+f.file.path+": restart to apply: "+tc.key+" changed, but is read only at start; the other settings were applied",
				ev[0].Err.Error())
			assert.Equal(t, f.file.path, ev[0].Path)

			// What the handle runs with is still what it read at start.
			now := f.rt.Config()
			assert.Equal(t, start.Budget, now.Budget)
			assert.Equal(t, start.NoBudget, now.NoBudget)
			assert.Equal(t, start.Breaker, now.Breaker)
			assert.Equal(t, start.ExecutionCutoff, now.ExecutionCutoff)
			assert.Same(t, budget, f.rt.Retrier().Budget())
			assert.Equal(t, cutoff, f.rt.ExecutionCutoff())

			// Reload reports it too, and says so again while the edit stands.
			require.ErrorIs(t, f.rt.Reload(), ErrRestartRequired)

			// Back to the value read at start: nothing to report.
			f.file.write(tc.before + "retryExec={1205:3,1}\n")
			f.due(t)
			require.Equal(t, 3, ruleCount(f.rt, 1205))
			ev = f.reloads()
			require.NoError(t, ev[len(ev)-1].Err, "the key is back to the value in effect")
		})
	}
}

// An edit of reloadable keys only reports success, and a start-only key
// set in code or in the DSN, which the file never overrides, is no change
// either.
func TestStartOnlyKeyNotChanged(t *testing.T) {
	f := newReloadFixture(t, "retryBudget=max=5\nretryExec={1205:1,1}\n")
	f.file.write("retryBudget=max=5\nretryExec={1205:2,1}\nqueryTimeout=5\nretryRefresh=1s\n")
	f.due(t)
	require.Len(t, f.reloads(), 1)
	require.NoError(t, f.reloads()[0].Err)

	f = newReloadFixture(t, "retryBudget=max=5\n", WithoutRetryBudget())
	f.file.write("retryBudget=max=50\n")
	f.due(t)
	require.Len(t, f.reloads(), 1)
	require.NoError(t, f.reloads()[0].Err, "the option wins over the file, now as at start")
}
