package gormcrl_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/core/coretest"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/hooks"
	"github.com/crl-go/crl/mssqltest"
)

// A COMMIT whose connection drops has an unknown outcome, for a Create's
// unit as for gormcrl.Transaction (the conformance check "a COMMIT of
// unknown outcome is not retried, and is observed"): it is not retried,
// and it is not silent. Through GORM and the real driver, the observer
// gets one GaveUp with reason core.ErrCommitUnknown (issue 9, item 5), and
// the slog hook logs it at ERROR with reason=commit_unknown (issue 13,
// item 5).
func TestCommitUnknownIsObserved(t *testing.T) {
	for name, run := range map[string]func(db *gorm.DB) error{
		"Create": func(db *gorm.DB) error { return db.Create(&Order{Name: "pen"}).Error },
	} {
		t.Run(name, func(t *testing.T) {
			s := mssqltest.NewServer(t)
			var logged bytes.Buffer
			obs := &coretest.Observer{}
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			db, _ := open(t, s, nil, gormcrl.WithRetryExec("{1205,badconn:3,10ms}"),
				config.WithObserver(hooks.Multi(obs, hooks.Slog(logger))))
			s.Handle(insertOrder, idRow(7))
			s.Handle("COMMIT TRANSACTION", mssqltest.Drop())

			require.ErrorIs(t, run(db), core.ErrCommitUnknown)

			events := obs.Snapshot()
			assert.Empty(t, events.Retries, "a COMMIT of unknown outcome is never retried")
			require.Len(t, events.GiveUps, 1, "one GaveUp for the unknown COMMIT")
			gave := events.GiveUps[0]
			assert.ErrorIs(t, gave.Reason, core.ErrCommitUnknown)
			assert.Equal(t, core.KindTransaction, gave.Kind)
			assert.Equal(t, 1, gave.Attempts)

			out := logged.String()
			assert.Contains(t, out, "level=ERROR")
			assert.Contains(t, out, "reason=commit_unknown")
		})
	}
}
