package pgxcrl_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/pgxcrl"
)

// postgresDSN returns $CRL_POSTGRES_DSN, and skips t without it.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("CRL_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CRL_POSTGRES_DSN is not set")
	}
	return dsn
}

// withParams adds the URL parameters params to dsn.
func withParams(dsn, params string) string {
	if params == "" {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// open opens a pgxcrl pool on the local PostgreSQL with the URL
// parameters params, closed when the test ends.
func open(t testing.TB, params string, opts ...config.Option) *pgxcrl.Pool {
	t.Helper()
	p, err := pgxcrl.Open(context.Background(), withParams(postgresDSN(t), params), opts...)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// admin opens a plain pgxpool on the local PostgreSQL, for the tests'
// set-up and server-side counts, which must not go through pgxcrl.
func admin(t testing.TB) *pgxpool.Pool {
	t.Helper()
	a, err := pgxpool.New(context.Background(), postgresDSN(t))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a
}

// name returns a name of this module's tests, unique to the test run.
func name(prefix string) string {
	return fmt.Sprintf("pgxcrl_%s_%08x", prefix, rand.Uint32())
}

// mustExec runs query on the admin pool.
func mustExec(t testing.TB, a *pgxpool.Pool, query string, args ...any) {
	t.Helper()
	_, err := a.Exec(context.Background(), query, args...)
	require.NoError(t, err, query)
}

// count returns the first column of query's row, read on the admin pool.
func count(t testing.TB, a *pgxpool.Pool, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, a.QueryRow(context.Background(), query, args...).Scan(&n), query)
	return n
}

// table creates a table (columns in SQL), dropped when the test ends.
func table(t testing.TB, a *pgxpool.Pool, prefix, columns string) string {
	t.Helper()
	tbl := name(prefix)
	mustExec(t, a, "CREATE TABLE "+tbl+" ("+columns+")")
	t.Cleanup(func() { mustExec(t, a, "DROP TABLE "+tbl) })
	return tbl
}

// fault is a server-side function that fails its first calls with a
// real server error: name(code, times) raises SQLSTATE code at each of
// its first times calls (57014: sleeps until the execution cut-off
// stops it), and returns 1 after. Its sequence counts every call, on the
// server, whatever the transaction that made it did.
type fault struct {
	name string
	a    *pgxpool.Pool
}

func newFault(t testing.TB, a *pgxpool.Pool) fault {
	t.Helper()
	f := fault{name: name("fault"), a: a}
	mustExec(t, a, "CREATE SEQUENCE "+f.name+"_calls")
	mustExec(t, a, `CREATE FUNCTION `+f.name+`(code text, times int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('`+f.name+`_calls') <= times THEN
		IF code = '57014' THEN
			PERFORM pg_sleep(30);
		ELSE
			RAISE EXCEPTION 'pgxcrl test: injected %', code USING ERRCODE = code;
		END IF;
	END IF;
	RETURN 1;
END $$`)
	t.Cleanup(func() {
		mustExec(t, a, "DROP FUNCTION "+f.name+"(text, int)")
		mustExec(t, a, "DROP SEQUENCE "+f.name+"_calls")
	})
	return f
}

// call returns the SQL of a call that fails times times with code.
func (f fault) call(code string, times int) string {
	return fmt.Sprintf("%s('%s', %d)", f.name, code, times)
}

// calls returns how many times the server ran the function.
func (f fault) calls(t testing.TB) int64 {
	t.Helper()
	return count(t, f.a, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM "+f.name+"_calls")
}

// Protocol codes of the first message of a PostgreSQL connection.
const (
	cancelRequestCode = 80877102
	sslRequestCode    = 80877103
)

// loginProxy is a TCP proxy in front of the local PostgreSQL that counts
// the logins (startup messages) it receives, and resets the connection
// of the next `resets` of them in the middle of the startup exchange,
// before the server sees them: the server sees only the logins the proxy
// passes on (passed).
type loginProxy struct {
	ln      net.Listener
	target  string
	resets  atomic.Int32
	logins  atomic.Int32 // startup messages received
	passed  atomic.Int32 // logins passed on to the server
	cancels atomic.Int32 // cancel requests received
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

// newLoginProxy starts a proxy and returns it with the DSN through it.
func newLoginProxy(t testing.TB) (*loginProxy, string) {
	t.Helper()
	u, err := url.Parse(postgresDSN(t))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &loginProxy{ln: ln, target: u.Host}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *loginProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *loginProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *loginProxy) handle(c net.Conn) {
	defer p.wg.Done()
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(c, hdr); err != nil {
		_ = c.Close()
		return
	}
	switch binary.BigEndian.Uint32(hdr[4:]) {
	case cancelRequestCode:
		p.cancels.Add(1)
	case sslRequestCode:
	default:
		p.logins.Add(1)
		if p.resets.Add(-1) >= 0 {
			// A reset in the middle of the startup exchange: the client
			// sent its startup message and reads the answer.
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
			return
		}
		p.passed.Add(1)
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.track(s)
	if _, err := s.Write(hdr); err != nil {
		_ = s.Close()
		_ = c.Close()
		return
	}
	go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
	_, _ = io.Copy(c, s)
	_ = c.Close()
}

func (p *loginProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// waitFor polls query on the admin pool until it returns true.
func waitFor(t testing.TB, a *pgxpool.Pool, query string, args ...any) {
	t.Helper()
	assert.Eventually(t, func() bool {
		var ok bool
		return a.QueryRow(context.Background(), query, args...).Scan(&ok) == nil && ok
	}, 10e9, 5e6, query)
}

// begin begins a transaction on p with opts, rolled back when the test
// ends (after a Commit or Rollback, pgx.ErrTxClosed, ignored), before
// open's cleanup closes the pool: a test that fails inside the
// transaction does not leave its connection held, which Pool.Close
// would wait for until the test binary's timeout.
func begin(t testing.TB, ctx context.Context, p *pgxcrl.Pool, opts pgx.TxOptions) pgx.Tx {
	t.Helper()
	tx, err := p.BeginTx(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// holdRow1 begins, on a session of its own that looks for a deadlock only
// after 10 s, a transaction that holds row 1 of tbl (its v moved by 10):
// the other side of a real deadlock, whose victim is the pool's session.
func holdRow1(t testing.TB, ctx context.Context, tbl string) pgx.Tx {
	t.Helper()
	holder, err := pgx.Connect(ctx, postgresDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close(context.Background()) })
	_, err = holder.Exec(ctx, "SET deadlock_timeout = '10s'")
	require.NoError(t, err)
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "UPDATE "+tbl+" SET v = v + 10 WHERE id = 1")
	require.NoError(t, err)
	return tx
}
