// Package faults holds crl's fault-injection suite: Shopify's toxiproxy,
// in process, between crl (its adapters sqlxcrl and gormcrl, and a plain
// *sql.DB of crl.Open with crl.RunInTx: the driver layer alone; and
// pgxcrl's pool with pgxcrl.RunInTx, pgx's own interface) and real
// MariaDB and PostgreSQL servers, injecting connection resets, silent links,
// streams cut short, latency with jitter and a full outage right before
// COMMIT and in the middle of a transaction, and a 2 s outage under load,
// with a ledger workload whose every write is checked on the server
// afterwards.
//
// It is a module of its own so that toxiproxy's dependencies (a metrics
// client, a logger, an HTTP router) never reach crl's go.mod. It runs with
// CRL_MYSQL_DSN and CRL_POSTGRES_DSN set (.ci/run sets them) and skips a
// database whose variable is not.
package faults
