// Package resetproxy is a loopback TCP proxy for tests of the connection
// loop against real servers: it resets the first logins it accepts (the
// client sees ECONNRESET, which crl reads as 10054) and forwards the later
// ones to the server, counting the logins, so a test can compare the
// logins a driver made with the JDBC algorithm's.
package resetproxy

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Classifier tells a login from another connection by the first bytes
// the client sends (8 of them), for protocols where the client speaks
// first; nil counts every connection as a login and resets it at once.
type Classifier func(first []byte) bool

// PostgresLogin is the Classifier of PostgreSQL's protocol: every
// connection is a login except a CancelRequest, which pgx sends on a
// connection of its own when a login that had started fails.
func PostgresLogin(first []byte) bool {
	const cancelRequestCode = 80877102 // after the length, which protocol 3.2's longer keys change
	return binary.BigEndian.Uint32(first[4:8]) != cancelRequestCode
}

// Proxy is a running proxy. Its methods are safe for concurrent use.
type Proxy struct {
	ln      net.Listener
	target  string
	isLogin Classifier
	toReset atomic.Int64 // connections still to reset
	logins  atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	open    map[net.Conn]struct{} // forwarded connections, closed by Close
	closed  bool
}

// Start listens on a loopback port and forwards to target (host:port);
// isLogin may be nil (see Classifier).
func Start(target string, isLogin Classifier) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("resetproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, isLogin: isLogin, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Reset makes the next n logins be reset: at once when the proxy has no
// Classifier, else after their first bytes.
func (p *Proxy) Reset(n int) { p.toReset.Store(int64(n)) }

// Logins returns how many logins the proxy accepted (reset ones
// included): the driver's login attempts.
func (p *Proxy) Logins() int { return int(p.logins.Load()) }

// Close stops the proxy and closes every forwarded connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.open {
		_ = c.Close() // the peer's error, if any, is the test's concern
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

// handle counts a login, resets it when it is one of the first ones, and
// forwards every other connection.
func (p *Proxy) handle(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	var first []byte
	if p.isLogin != nil {
		first = make([]byte, 8)
		if _, err := io.ReadFull(c, first); err != nil {
			_ = c.Close() // the client gave up before it said anything, or Close closed it
			return
		}
		if !p.isLogin(first) {
			p.forward(c, first)
			return
		}
	}
	p.logins.Add(1)
	if p.toReset.Add(-1) >= 0 {
		reset(c)
		return
	}
	p.forward(c, first)
}

// reset closes c with SO_LINGER 0, so the kernel sends RST, not FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // without it the client sees EOF instead: still a failed login
	}
	_ = c.Close()
}

// forward pipes c to a new connection to the target, sending first
// (what was read from c already) ahead.
func (p *Proxy) forward(c net.Conn, first []byte) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		reset(c)
		return
	}
	if !p.track(s) {
		return
	}
	defer p.untrack(s)
	if _, err := s.Write(first); err != nil {
		reset(c)
		return
	}
	var cw sync.WaitGroup
	cw.Add(2)
	pipe := func(dst, src net.Conn) {
		defer cw.Done()
		_, _ = io.Copy(dst, src) // either side's end or failure ends the pair
		_ = dst.Close()
		_ = src.Close()
	}
	go pipe(s, c)
	go pipe(c, s)
	cw.Wait()
}

// track records c for Close; it closes c and returns false when the
// proxy is closed already.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.open, c)
}
