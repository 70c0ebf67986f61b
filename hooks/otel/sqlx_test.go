package otel_test

import (
	"context"
	"testing"
	"time"

	_ "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core/coretest"
	crlotel "github.com/crl-go/crl/hooks/otel"
	"github.com/crl-go/crl/mssqltest"
	"github.com/crl-go/crl/sqlxcrl"
)

// Through the real driver and sqlxcrl: the events reach the span of the
// context the caller passed to ExecContext and to RunInTx.
func TestCallerSpanThroughSqlxcrl(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs, err := crlotel.New(crlotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	defer obs.Close()

	srv := mssqltest.NewServer(t)
	const debit = "UPDATE accounts SET balance = balance - 10 WHERE id = 1"
	srv.Handle(debit, mssqltest.Error(1205), mssqltest.Affected(1))
	db, err := sqlxcrl.Connect("sqlserver", srv.DSN()+"&retryExec={1205:3,1}",
		config.WithClock(coretest.NewClock(time.Time{})), config.WithObserver(obs))
	require.NoError(t, err)
	defer db.Close()

	ctx, span := tp.Tracer("app").Start(context.Background(), "debit")
	_, err = db.ExecContext(ctx, debit)
	require.NoError(t, err)
	srv.Handle(debit, mssqltest.Error(1205), mssqltest.Affected(1))
	require.NoError(t, db.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
		_, err := tx.ExecContext(ctx, debit)
		return err
	}))
	span.End()

	ended := spans.Ended()
	require.Len(t, ended, 1)
	var names, kinds []string
	for _, e := range ended[0].Events() {
		names = append(names, e.Name)
		kinds = append(kinds, attrs(e.Attributes)["crl.kind"].AsString())
	}
	// The transaction's deadlock is replayed by the driver layer (its
	// event crl.tx_replay), so RunInTx's closure runs once.
	assert.Equal(t, []string{"crl.retry", "crl.succeeded", "crl.retry", "crl.tx_replay", "crl.succeeded"}, names)
	assert.Equal(t, []string{"statement", "statement", "transaction", "", "transaction"}, kinds)
}
