package gormcrl_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/crl-go/crl/mssqltest"
)

// chain returns the callback names of one of GORM's processors in the
// order they run. GORM exposes no order, so it is read from the
// processor's compiled functions and its registered callbacks (each name's
// handler is matched by its code pointer; a replaced callback's handler
// is the replacement's).
func chain(t *testing.T, db *gorm.DB, processor string) []string {
	t.Helper()
	p := reflect.ValueOf(db.Callback()).Elem().FieldByName("processors").MapIndex(reflect.ValueOf(processor)).Elem()
	fns, cbs := p.FieldByName("fns"), p.FieldByName("callbacks")
	names := map[uintptr]string{}
	for i := 0; i < cbs.Len(); i++ {
		cb := cbs.Index(i).Elem()
		if cb.FieldByName("remove").Bool() {
			continue
		}
		names[cb.FieldByName("handler").Pointer()] = cb.FieldByName("name").String()
	}
	out := make([]string, fns.Len())
	for i := range out {
		name, ok := names[fns.Index(i).Pointer()]
		require.True(t, ok, "%s: compiled function %d has no registered name", processor, i)
		out[i] = name
	}
	return out
}

// Where each of gormcrl's callbacks sits in GORM's chains (gorm v1.31's
// default callbacks, the sqlserver dialector): a GORM upgrade that moves
// a chain, or a change of the plugin that moves one of its callbacks,
// fails here instead of silently retrying less (a crl:unit_commit after
// the COMMIT would take its failure for a statement's; a crl:no_retry
// after the statement would not keep it from being retried). Statements
// outside a unit have no other callback of crl's: the driver layer
// retries them.
func TestCallbackPositions(t *testing.T) {
	db, _ := open(t, mssqltest.NewServer(t), nil)
	want := map[string][]string{
		"query": {"crl:no_retry", "gorm:query", "gorm:preload", "gorm:after_query"},
		"row":   {"crl:no_retry", "gorm:row"},
		"raw":   {"crl:no_retry", "gorm:raw"},
	}
	for processor, names := range want {
		got := chain(t, db, processor)
		assert.Equal(t, names, got, "%s chain", processor)
	}
	for _, processor := range []string{"create", "update", "delete"} {
		got := chain(t, db, processor)
		require.NotEmpty(t, got)
		assert.Equal(t, "crl:unit_start", got[0], "%s: the unit starts first: %v", processor, got)
		assert.Equal(t, "crl:unit_end", got[len(got)-1], "%s: the unit ends last: %v", processor, got)
		assert.Less(t, index(got, "gorm:"+processor), index(got, "crl:unit_commit"), "%s: %v", processor, got)
		assert.Equal(t, index(got, "crl:unit_commit")+1, index(got, "gorm:commit_or_rollback_transaction"), "%s: the COMMIT is watched: %v", processor, got)
	}
}

func index(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}
