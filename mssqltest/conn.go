package mssqltest

import (
	"errors"
	"fmt"
	"net"
	"time"
)

var (
	// errDropped ends a connection on purpose (the Drop reply).
	errDropped = errors.New("mssqltest: connection dropped by script")
	// errLoginRejected ends a connection whose login FailLogin rejected.
	errLoginRejected = errors.New("mssqltest: login rejected by script")
	// errClientGone ends a connection whose client closed it.
	errClientGone = errors.New("mssqltest: client closed the connection")
	// errServerClosed ends every connection when the Server closes.
	errServerClosed = errors.New("mssqltest: server closed")
)

// conn serves one client connection. serve runs the handshake, then reads
// requests in a second goroutine so that an ATTENTION can reach a reply
// that is still waiting (Hang, Delay).
type conn struct {
	srv        *Server
	nc         net.Conn
	spid       uint16
	packetSize int
	session    session

	messages chan message  // requests and attentions, in arrival order
	done     chan struct{} // closed when serve returns; stops the reader

	tx *openTransaction // nil outside a transaction
}

// openTransaction is a transaction begun on a connection and not yet ended.
type openTransaction struct {
	descriptor uint64
	statements []string
}

func (c *conn) serve() {
	defer c.nc.Close()
	if err := c.handshake(); err != nil {
		return
	}
	c.messages = make(chan message)
	c.done = make(chan struct{})
	c.srv.wg.Add(1) // serve's own count keeps the group above zero here
	go c.readLoop()
	defer func() {
		close(c.done)
		c.endTransaction(false) // the server rolls back what a lost session left open
	}()
	for {
		var m message
		var ok bool
		select {
		case m, ok = <-c.messages:
			if !ok {
				return
			}
		case <-c.srv.closing:
			return
		}
		if err := c.dispatch(m); err != nil {
			return
		}
	}
}

// readLoop passes every message to serve until the connection fails.
func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer close(c.messages)
	for {
		m, err := readMessage(c.nc)
		if err != nil {
			return
		}
		select {
		case c.messages <- m:
		case <-c.done:
			return
		}
	}
}

// handshake answers PRELOGIN, then LOGIN7.
func (c *conn) handshake() error {
	m, err := readMessage(c.nc)
	if err != nil {
		return err
	}
	if m.typ != packetPrelogin {
		return fmt.Errorf("%w: expected PRELOGIN, got packet type %#x", errMalformed, m.typ)
	}
	if _, err := parsePrelogin(m.payload); err != nil {
		return err
	}
	if err := c.write(preloginResponse()); err != nil {
		return err
	}
	if m, err = readMessage(c.nc); err != nil {
		return err
	}
	if m.typ != packetLogin7 {
		return fmt.Errorf("%w: expected LOGIN7, got packet type %#x", errMalformed, m.typ)
	}
	l, err := parseLogin7(m.payload)
	if err != nil {
		return err
	}
	c.session = session{spid: c.spid, user: l.user, database: l.database}
	t := &tokenWriter{}
	number, fail, drop := c.srv.loginReceived()
	if drop {
		return errDropped
	}
	if fail {
		loginRejected(t, errorFor(number, c.session))
		if err := c.write(t.buf); err != nil {
			return err
		}
		return errLoginRejected
	}
	c.packetSize = l.packetSize
	loginAccepted(t, l)
	return c.write(t.buf)
}

// dispatch answers one message received after login.
func (c *conn) dispatch(m message) error {
	switch m.typ {
	case packetAttention:
		// The reply it cancels was already sent; confirm the cancel anyway,
		// the client waits for it.
		return c.writeAttentionAck()
	case packetSQLBatch, packetRPC, packetTransaction:
	default:
		return fmt.Errorf("%w: unexpected packet type %#x after login", errMalformed, m.typ)
	}
	if m.status&statusResetConn != 0 && m.status&statusResetConnTx == 0 {
		c.endTransaction(false) // sp_reset_connection rolls back
	}
	req, err := decodeRequest(m.typ, m.payload)
	if err != nil {
		return err
	}
	if c.tx != nil && req.kind != requestTransaction {
		c.tx.statements = append(c.tx.statements, req.text)
	}
	reply := c.srv.received(req)
	if reply == nil {
		reply = defaultReply(req)
	}
	return reply.answer(&exchange{c: c, req: req})
}

// write sends one server message, split into packets of the negotiated size.
func (c *conn) write(payload []byte) error {
	_, err := c.nc.Write(framePackets(packetReply, c.spid, c.packetSize, payload))
	return err
}

func (c *conn) writeAttentionAck() error {
	t := &tokenWriter{}
	t.done(tokenDone, doneAttn, cmdNone, 0)
	return c.write(t.buf)
}

// endTransaction records the open transaction, if any, as ended.
func (c *conn) endTransaction(committed bool) {
	if c.tx == nil {
		return
	}
	c.srv.transactionEnded(c.tx.statements, committed)
	c.tx = nil
}

// exchange is one request being answered; replies write through it.
type exchange struct {
	c   *conn
	req request
}

// endToken is DONEPROC for an RPC and DONE otherwise.
func (x *exchange) endToken() byte {
	if x.req.kind == requestRPC {
		return tokenDoneProc
	}
	return tokenDone
}

// succeed answers with an optional result set and a DONE that carries a row
// count when counted. A transaction request succeeds by doing what it asks.
func (x *exchange) succeed(rs *resultSet, count int64, counted bool) error {
	if x.req.kind == requestTransaction {
		return x.transact()
	}
	t := &tokenWriter{}
	status, cmd := doneFinal, cmdNone
	if counted {
		status |= doneCount
	}
	if rs != nil && len(rs.columns) > 0 {
		t.colMetadata(*rs)
		for _, row := range rs.rows {
			t.nbcRow(*rs, row)
		}
		cmd = cmdSelect
	}
	if x.req.kind == requestRPC {
		t.returnStatus(0)
	}
	t.done(x.endToken(), status, cmd, uint64(count))
	return x.c.write(t.buf)
}

// fail answers with an ERROR token and a DONE with the error bit. A
// deadlock victim's transaction is rolled back first, as SQL Server does.
func (x *exchange) fail(e serverError) error {
	t := &tokenWriter{}
	t.error(e)
	if e.number == 1205 && x.c.tx != nil {
		t.envChangeTransaction(envRollbackTran, x.c.tx.descriptor)
		x.c.endTransaction(false)
	}
	t.done(x.endToken(), doneError, cmdNone, 0)
	return x.c.write(t.buf)
}

// wait holds the reply for d (for ever when d < 0) or until the client
// cancels with an ATTENTION, which it confirms; it reports the cancel.
func (x *exchange) wait(d time.Duration) (cancelled bool, err error) {
	var expired <-chan time.Time
	if d >= 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-expired:
		return false, nil
	case m, ok := <-x.c.messages:
		if !ok {
			return false, errClientGone
		}
		if m.typ != packetAttention {
			return false, fmt.Errorf("%w: packet type %#x while a reply is pending", errMalformed, m.typ)
		}
		return true, x.c.writeAttentionAck()
	case <-x.c.srv.closing:
		return false, errServerClosed
	}
}

// transact carries out a transaction manager request.
func (x *exchange) transact() error {
	c := x.c
	t := &tokenWriter{}
	switch x.req.tm {
	case tmBegin:
		if c.tx == nil {
			c.tx = &openTransaction{descriptor: c.srv.newTransactionDescriptor()}
		}
		t.envChangeTransaction(envBeginTran, c.tx.descriptor)
	case tmCommit, tmRollback:
		if c.tx == nil {
			number := int32(3902)
			if x.req.tm == tmRollback {
				number = 3903
			}
			return x.fail(errorFor(number, c.session))
		}
		typ := envCommitTran
		if x.req.tm == tmRollback {
			typ = envRollbackTran
		}
		t.envChangeTransaction(typ, c.tx.descriptor)
		c.endTransaction(x.req.tm == tmCommit)
	}
	t.done(tokenDone, doneFinal, cmdNone, 0)
	return c.write(t.buf)
}
