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
	return reply.answer(&exchange{c: c, req: req, cmd: requestCommand(req)})
}

// requestCommand is the CurCmd of the statement a request runs: that of a
// batch's or sp_executesql's text. Transaction manager requests report
// none, and so do calls of other procedures (their text is a name, never a
// verb).
func requestCommand(req request) uint16 {
	if req.kind == requestTransaction {
		return cmdNone
	}
	return commandOf(req.text)
}

// write sends one server message, split into packets of the negotiated size.
func (c *conn) write(payload []byte) error {
	_, err := c.nc.Write(framePackets(packetReply, c.spid, c.packetSize, payload))
	return err
}

// writeAttentionAck confirms an ATTENTION in a message of its own: a DONE
// with DONE_ATTN and nothing else.
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
	cmd uint16 // CurCmd of the statement, for every DONE it gets
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
	status, cmd := doneFinal, x.cmd
	if counted {
		status |= doneCount
	}
	if rs != nil && len(rs.columns) > 0 {
		t.colMetadata(*rs)
		for _, row := range rs.rows {
			t.nbcRow(*rs, row)
		}
		// Rows come from a SELECT, or from the OUTPUT clause of a statement
		// that changes data and keeps its own command.
		if !dataChanging(cmd) {
			cmd = cmdSelect
		}
	}
	if x.req.kind == requestRPC {
		t.returnStatus(0)
	}
	t.done(x.endToken(), status, cmd, uint64(count))
	return x.c.write(t.buf)
}

// fail answers with an ERROR token and a DONE with the error bit. A
// deadlock victim's transaction is rolled back first, as SQL Server does.
func (x *exchange) fail(e serverError) error { return x.failAfter(nil, e) }

// failAfter is fail after the columns and rows of rs, when rs is not nil.
func (x *exchange) failAfter(rs *resultSet, e serverError) error {
	t := &tokenWriter{}
	if rs != nil && len(rs.columns) > 0 {
		t.colMetadata(*rs)
		for _, row := range rs.rows {
			t.nbcRow(*rs, row)
		}
	}
	t.error(e)
	if e.number == 1205 && x.c.tx != nil {
		t.envChangeTransaction(envRollbackTran, x.c.tx.descriptor)
		x.c.endTransaction(false)
	}
	t.done(x.endToken(), doneError, x.cmd, 0)
	return x.c.write(t.buf)
}

// wait holds the reply for d (for ever when d < 0) or until the client
// cancels with an ATTENTION, which it answers as SQL Server does (see
// cancelled); it reports the cancel.
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
		return true, x.cancelled()
	case <-x.c.srv.closing:
		return false, errServerClosed
	}
}

// cancelled answers an ATTENTION that interrupted the request: first the
// request's own response ends, with a DONE (DONEPROC for an RPC) whose
// DONE_ERROR bit says the statement was interrupted (MS-TDS 2.2.7.6), then
// a second message acknowledges the attention. Clients read both:
// mssql-jdbc reads one more message after an interrupted response ends,
// and go-mssqldb reads on to a second one when the first has no
// DONE_ATTN, which is why the first must not carry it.
func (x *exchange) cancelled() error {
	t := &tokenWriter{}
	t.done(x.endToken(), doneError, x.cmd, 0)
	if err := x.c.write(t.buf); err != nil {
		return err
	}
	return x.c.writeAttentionAck()
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
