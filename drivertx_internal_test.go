package crl

import (
	"context"
	"database/sql/driver"
	"reflect"
	"testing"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnTxKeepsNothingOfTheTransactionBefore: the connection's own
// transaction, handed out by a new BeginTx, has every field as a new
// transaction would, whatever the transaction before left in it: BeginTx
// and startRecording set each field by name, and a field added to tx
// without being set there fails here.
func TestOwnTxKeepsNothingOfTheTransactionBefore(t *testing.T) {
	cn := textConn(t, family.MySQL, &beginConn{newScriptConn()})
	cn.c.replayLimit = 10 // replay on
	ctx := context.Background()
	opts := driver.TxOptions{} // the default (the driver has Begin only); fill sets rp.opts to another first
	for i := range 2 {
		fill(t, reflect.ValueOf(&cn.ownTx).Elem())
		got, err := cn.BeginTx(ctx, opts)
		require.NoError(t, err)
		want := tx{inner: nopTx{}, cn: cn, ctx: ctx, underCtx: cn.c.commitUnderContext, rp: txReplay{on: true, opts: opts, gen: uint64(i + 1)}}
		assert.Same(t, &cn.ownTx, got, "the connection's own transaction")
		assert.True(t, reflect.DeepEqual(want, cn.ownTx), "%+v, expected %+v", cn.ownTx, want)
		require.NoError(t, got.Commit())
	}
}
