package crl

import (
	"context"
	"database/sql/driver"
	"reflect"
	"strings"

	"github.com/crl-go/crl/config"
)

// txText is what the layer knows of a transaction on the connection
// that BeginTx did not begin (txscan.go): the statement texts' account,
// and the driver's own word where it gives one.
type txText struct {
	state  txState
	unit   *config.Unit // the Unit of the statement that began it, nil when it had none
	driver txStatuser   // the driver's word (pgx), nil when it gives none
}

// txStatuser is pgconn.PgConn's TxStatus: the server's own word on the
// session's transaction, from its last ReadyForQuery ('I' idle, 'T' in
// one, 'E' in a failed one).
type txStatuser interface{ TxStatus() byte }

// inTextTx reports whether the session is in a transaction that BeginTx
// did not begin: where the driver tells, its word; else the texts'.
func (cn *conn) inTextTx() bool {
	if d := cn.text.driver; d != nil {
		return d.TxStatus() != 'I'
	}
	return cn.text.state != txState{}
}

// textControl reports whether query runs once and is noted for the
// session's text transaction (noteText): in one (in), or when query
// may begin one. Its callers ask knownText first.
func (cn *conn) textControl(query string) (control, in bool) {
	if cn.detour&(detourText|detourAsk) == 0 {
		return cn.mayBegin(query), false // in none
	}
	in = cn.inTextTx()
	return in || cn.mayBegin(query), in
}

// knownText is textControl's common case, with no call so that it
// inlines in textControl's callers, which ask it first: in no text
// transaction (no detourText or detourAsk bit: the driver gives no word
// of its own and the texts say none runs), and query one of the last two
// texts, known by its address, as seenPlain knows them (most statements
// of a transaction repeat). known is false otherwise.
func (cn *conn) knownText(query string) (control, known bool) {
	if s := &cn.seen; cn.detour&(detourText|detourAsk) == 0 {
		if sameText(s[0].text, query) {
			return s[0].begins, true
		}
		if sameText(s[1].text, query) {
			return s[1].begins, true
		}
	}
	return false, false
}

// noteText notes what query, run once, did to the session's text
// transaction; was: the session was in one before it. A transaction that
// query began keeps the Unit of ctx, as BeginTx's does.
func (cn *conn) noteText(ctx context.Context, query string, err error, was bool) {
	cn.setTextState(cn.dialect.walk(query, cn.text.state, err != nil))
	switch now := cn.inTextTx(); {
	case !now:
		cn.text.unit = nil
	case !was:
		cn.text.unit = config.UnitOf(ctx)
	}
}

// ranOnce records a statement run once (record) and, when text, notes
// what it did to the session's text transaction. A statement of a
// transaction BeginTx began that succeeded is in the transaction's record
// already (or needs none): that common case is inlined.
func (cn *conn) ranOnce(ctx context.Context, query string, err error, text, was bool) {
	if err == nil && !text && cn.tx != nil {
		return
	}
	cn.ranOnceRecord(ctx, query, err, text, was)
}

// ranOnceRecord is ranOnce past its common case.
func (cn *conn) ranOnceRecord(ctx context.Context, query string, err error, text, was bool) {
	cn.record(ctx, query, err)
	if text {
		cn.noteText(ctx, query, err, was)
	}
}

// newSession forgets what the layer knew of the session below: inner is
// a new one.
func (cn *conn) newSession(inner driver.Conn) {
	cn.text = txText{driver: driverTxStatus(inner)}
	cn.detour &^= detourText
	cn.setDetour(detourAsk, cn.text.driver != nil)
}

// driverTxStatus returns the driver's own word on the session's
// transaction where the driver gives it: pgx's database/sql connection,
// through its Conn().PgConn(). The layer links no driver, so it follows
// the two methods by name with reflect, once per connection, on pgx's
// stdlib connection type only (the names are constants, so the linker
// keeps only methods of those names).
func driverTxStatus(inner driver.Conn) txStatuser {
	t := reflect.TypeOf(inner)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil
	}
	if p := t.Elem().PkgPath(); !strings.HasPrefix(p, "github.com/jackc/pgx/") || !strings.HasSuffix(p, "/stdlib") {
		return nil
	}
	pc, ok := callGetter(reflect.ValueOf(inner).MethodByName("Conn"))
	if !ok {
		return nil
	}
	pg, ok := callGetter(pc.MethodByName("PgConn"))
	if !ok {
		return nil
	}
	s, _ := pg.Interface().(txStatuser)
	return s
}

// callGetter calls m when it takes nothing and returns one non-nil
// pointer, and returns that.
func callGetter(m reflect.Value) (reflect.Value, bool) {
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0).Kind() != reflect.Pointer {
		return reflect.Value{}, false
	}
	v := m.Call(nil)[0]
	return v, !v.IsNil()
}
