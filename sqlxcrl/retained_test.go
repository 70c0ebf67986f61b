package sqlxcrl_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
)

// With a queryTimeout, a successful read keeps nothing alive after its rows
// are closed: the live heap after many reads grows by the same bytes per
// read with and without a queryTimeout. Before, every read kept its attempt
// context and timer (about 1 KB) until the timeout passed: at 1,000 reads/s
// and a 1 h timeout, gigabytes.
func TestReadsRetainNothingUntilQueryTimeout(t *testing.T) {
	const query, reads = "SELECT n FROM t", 3000
	retained := func(params string) float64 {
		srv := mssqltest.NewServer(t)
		srv.Handle(query, mssqltest.Rows([]string{"n"}, []any{int64(1)}, []any{int64(2)}))
		db, _ := open(t, srv, params)
		read := func(i int) {
			if i%2 == 0 {
				var n []int64
				require.NoError(t, db.Select(&n, query))
				return
			}
			var n int64
			require.NoError(t, db.Get(&n, query)) // one row read, the rest closed unread
		}
		for i := 0; i < 100; i++ { // warm up the pool and the caches
			read(i)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < reads; i++ {
			read(i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / reads
	}
	without := retained("&retryExec={1205:1,0}")
	with := retained("&retryExec={1205:1,0}&queryTimeout=3600")
	t.Logf("retained per read: %.0f B without queryTimeout, %.0f B with", without, with)
	assert.InDelta(t, without, with, 150, "bytes retained per read")
}
