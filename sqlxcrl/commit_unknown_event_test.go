package sqlxcrl_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/hooks"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// A COMMIT whose connection drops has an unknown outcome: RunInTx does not
// retry it, and it is not silent either. Through the real driver, the
// observer gets one GaveUp with reason core.ErrCommitUnknown (issue 9,
// item 5), and the slog hook logs it at ERROR with reason=commit_unknown
// (issue 13, item 5).
func TestRunInTxCommitUnknownIsObserved(t *testing.T) {
	srv := mssqltest.NewServer(t)
	var logged bytes.Buffer
	obs := &coretest.Observer{}
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	db, _ := open(t, srv, "&retryExec={1205:2,1;badconn:2,1}",
		config.WithObserver(hooks.Multi(obs, hooks.Slog(logger))))
	srv.Handle("COMMIT TRANSACTION", mssqltest.Drop())
	const insert = "INSERT INTO ledger (amount) VALUES (10)"

	err := db.RunInTx(context.Background(), nil, func(tx *sqlxcrl.Tx) error {
		_, err := tx.Exec(insert)
		return err
	})
	require.ErrorIs(t, err, core.ErrCommitUnknown)

	events := obs.Snapshot()
	assert.Empty(t, events.Retries, "a COMMIT of unknown outcome is never retried")
	require.Len(t, events.GiveUps, 1, "one GaveUp for the unknown COMMIT")
	gave := events.GiveUps[0]
	assert.ErrorIs(t, gave.Reason, core.ErrCommitUnknown)
	assert.Equal(t, core.KindTransaction, gave.Kind)
	assert.Equal(t, 1, gave.Attempts)
	assert.ErrorIs(t, gave.Err, core.ErrCommitUnknown)

	out := logged.String()
	assert.Contains(t, out, "level=ERROR")
	assert.Contains(t, out, "reason=commit_unknown")
	assert.Contains(t, out, "kind=transaction")
}
