package mssqltest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
)

// Server is a SQL Server stand-in listening on a random local TCP port. It
// speaks enough TDS 7.4 for github.com/microsoft/go-mssqldb to log in, run
// batches and sp_executesql calls, and begin, commit and roll back
// transactions, and it answers each statement with the replies scripted by
// Handle. All methods are safe for concurrent use.
type Server struct {
	listener net.Listener
	dsn      string

	closing   chan struct{} // closed by Close; ends every wait
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // the accept loop and every connection

	mu              sync.Mutex
	conns           map[*conn]struct{}
	nextSPID        uint16
	nextTransaction uint64
	record          // scripts and everything observed, guarded by mu
}

// Start listens on 127.0.0.1 at a port the system picks and serves
// connections until Close. Use DSN to connect.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mssqltest: listen: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s := &Server{
		listener: ln,
		dsn:      fmt.Sprintf("sqlserver://sa:pass@127.0.0.1:%d?database=master&encrypt=disable", port),
		closing:  make(chan struct{}),
		conns:    map[*conn]struct{}{},
		nextSPID: 51, // SQL Server gives user sessions ids from 51 up
		record:   newRecord(),
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// NewServer starts a Server for a test or benchmark, fails it at once if
// the server cannot start, and closes the server when the test ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	return s
}

// DSN returns the URL that connects go-mssqldb to this server, such as
// sqlserver://sa:pass@127.0.0.1:PORT?database=master&encrypt=disable. It
// already has a query part, so more parameters are appended with "&".
// Any user name and password are accepted.
func (s *Server) DSN() string { return s.dsn }

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Close stops accepting connections, closes the open ones (ending any
// Hang or Delay), and waits until every connection goroutine has finished.
// Transactions still open are recorded as rolled back. Calling Close again
// does nothing and returns the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		if err := s.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.closeErr = fmt.Errorf("mssqltest: close listener: %w", err)
		}
		s.mu.Lock()
		for c := range s.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s.closeErr
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.listener.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		select {
		case <-s.closing:
			s.mu.Unlock()
			_ = nc.Close()
			return
		default:
		}
		c := &conn{srv: s, nc: nc, spid: s.nextSPID, packetSize: defaultPacketSize}
		s.nextSPID++
		if s.nextSPID == 0 {
			s.nextSPID = 51
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// newTransactionDescriptor returns the 8-byte id of a new transaction.
func (s *Server) newTransactionDescriptor() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextTransaction++
	return s.nextTransaction
}
