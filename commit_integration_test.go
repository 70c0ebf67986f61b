package crl_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/crl-go/crl/conformance"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/sqlxcrl"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// stallProxy forwards TCP connections to a server until it is stalled:
// from then on every byte either way is dropped, as on a link that went
// silent, and nothing is closed, so only the client's own deadline ends a
// wait. Close closes every connection.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

func (p *stallProxy) Addr() string { return p.ln.Addr().String() }

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

// pipe copies from src to dst, dropping what it reads while stalled; when
// src ends, it closes both.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.stalled.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) Stall() { p.stalled.Store(true) }

func (p *stallProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// viaProxy returns the DSN of db with its address replaced by addr.
func viaProxy(t *testing.T, db conformance.Database, addr string) (dsn, target string) {
	t.Helper()
	if db.Driver == "mysql" {
		cfg, err := mysqldriver.ParseDSN(db.DSN)
		require.NoError(t, err)
		target, cfg.Addr = cfg.Addr, addr
		return cfg.FormatDSN(), target
	}
	u, err := url.Parse(db.DSN)
	require.NoError(t, err)
	target, u.Host = u.Host, addr
	return u.String(), target
}

// A COMMIT stalled on the wire with a 1.2 s deadline returns by 1.7 s with
// core.ErrCommitUnknown, through sqlxcrl.RunInTx and gormcrl.Transaction,
// on MariaDB (whose driver's Commit takes no context: crl ends it under
// the transaction's context) and on PostgreSQL; the connection it stalled
// on is not left in use.
func TestStalledCommitEndsAtTheDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("stalls real connections")
	}
	conformance.EachDatabase(t, func(t *testing.T, db conformance.Database) {
		raw, err := sql.Open(db.Driver, db.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { raw.Close() })
		for _, via := range []string{"sqlxcrl", "gormcrl"} {
			t.Run(via, func(t *testing.T) {
				table := fmt.Sprintf("commitdl_%s_%s", db.Name, via)
				_, err := raw.Exec("DROP TABLE IF EXISTS " + table)
				require.NoError(t, err)
				_, err = raw.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY)")
				require.NoError(t, err)
				t.Cleanup(func() { _, _ = raw.Exec("DROP TABLE IF EXISTS " + table) })

				_, target := viaProxy(t, db, "")
				proxy := newStallProxy(t, target)
				dsn, _ := viaProxy(t, db, proxy.Addr())
				insert := "INSERT INTO " + table + " (id) VALUES (1)"

				var (
					run   func(ctx context.Context) error
					inUse func() int
				)
				switch via {
				case "sqlxcrl":
					h, err := sqlxcrl.Open(db.Driver, dsn)
					require.NoError(t, err)
					t.Cleanup(func() { h.Close() })
					run = func(ctx context.Context) error {
						return h.RunInTx(ctx, nil, func(tx *sqlxcrl.Tx) error {
							if _, err := tx.ExecContext(ctx, insert); err != nil {
								return err
							}
							proxy.Stall()
							return nil
						})
					}
					inUse = func() int { return h.Stats().InUse }
				case "gormcrl":
					var d gorm.Dialector = mysql.Open(dsn)
					if db.Driver == "pgx" {
						d = postgres.Open(dsn)
					}
					g, err := gorm.Open(gormcrl.Open(d), &gorm.Config{Logger: logger.Discard})
					require.NoError(t, err)
					sqlDB, err := g.DB()
					require.NoError(t, err)
					t.Cleanup(func() { sqlDB.Close() })
					run = func(ctx context.Context) error {
						return gormcrl.Transaction(g.WithContext(ctx), func(tx *gorm.DB) error {
							if err := tx.Exec(insert).Error; err != nil {
								return err
							}
							proxy.Stall()
							return nil
						})
					}
					inUse = func() int { return sqlDB.Stats().InUse }
				}

				ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
				defer cancel()
				start := time.Now()
				err = run(ctx)
				elapsed := time.Since(start)
				assert.Less(t, elapsed, 1700*time.Millisecond, "the COMMIT returned %v after it began, 1.2 s deadline", elapsed)
				require.Error(t, err, "a COMMIT whose answer never came is no success")
				assert.ErrorIs(t, err, core.ErrCommitUnknown, "%v", err)
				assert.Eventually(t, func() bool { return inUse() == 0 }, time.Second, 10*time.Millisecond, "the stalled connection is not left in use")
			})
		}
	})
}
