package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
)

// Over a pool crl did not open, settings are refused with an error that
// names them and crl.OpenDB; an invalid one is reported as NewRuntime
// reports it; no option at all is accepted and tells nobody.
func TestForeignPoolRefusesSettings(t *testing.T) {
	obs := &coretest.Observer{}
	err := config.ForeignPool("sqlxcrl", "the mysql pool", config.WithObserver(obs),
		config.WithRetryExec("{1213:3,10ms}"), config.WithRetryBudget(core.BudgetSettings{}), config.WithoutRetryBudget())
	require.ErrorIs(t, err, config.ErrForeignPoolSettings)
	assert.ErrorContains(t, err, "crl.OpenDB")
	assert.ErrorContains(t, err, "sqlxcrl: retryExec, retryBudget given for the mysql pool")
	assert.Empty(t, obs.Snapshot().Reloads, "a refused handle tells nobody")

	err = config.ForeignPool("gormcrl", "the pool", config.WithDriverFamily("mysql"))
	assert.ErrorIs(t, err, config.ErrForeignPoolSettings, "the family is a setting of crl's layer too")

	err = config.ForeignPool("sqlxcrl", "the pool", config.WithRetryExec("{1205:3,2AND2}"))
	assert.ErrorIs(t, err, config.ErrInvalidValue)
	assert.ErrorContains(t, err, "2AND2")

	assert.NoError(t, config.ForeignPool("sqlxcrl", "the pool"))
	assert.NoError(t, config.ForeignPool("sqlxcrl", "the pool", nil))
}

// Options that only name an observer are accepted, and the observer is
// told once per call (once per handle an adapter builds) that nothing on
// the pool is retried: a RulesReloaded with no Path and an Err that
// matches ErrForeignPool and names the pool and crl.OpenDB.
func TestForeignPoolTellsTheObserverOnce(t *testing.T) {
	obs := &coretest.Observer{}
	require.NoError(t, config.ForeignPool("sqlxcrl", "the *sql.DB of driver \"mysql\"", config.WithObserver(obs)))
	reloads := obs.Snapshot().Reloads
	require.Len(t, reloads, 1)
	assert.Empty(t, reloads[0].Path, "no properties file is involved")
	assert.Zero(t, reloads[0].Line)
	assert.ErrorIs(t, reloads[0].Err, config.ErrForeignPool)
	assert.ErrorContains(t, reloads[0].Err, `sqlxcrl: the *sql.DB of driver "mysql"`)
	assert.ErrorContains(t, reloads[0].Err, "crl.OpenDB")

	require.NoError(t, config.ForeignPool("gormcrl", "the postgres pool", config.WithConfig(config.Config{Observer: obs})))
	assert.Len(t, obs.Snapshot().Reloads, 2, "a second handle, a second event")
}
