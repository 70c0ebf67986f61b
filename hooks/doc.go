// Package hooks holds observers of the retry engine's events
// (core.Observer): Slog, structured logging with log/slog; Multi, which
// sends the events to several observers; and Reason, the names of the
// reasons a loop gives up, shared by every hook.
//
// An observer is given to a database handle with config.WithObserver, the
// one option both adapters take (sqlxcrl.Option and gormcrl.Option are
// config.Option):
//
//	db, err := sqlxcrl.Open("sqlserver", dsn,
//		config.WithObserver(hooks.Multi(hooks.Slog(logger), metrics)))
//
//	db, err := gorm.Open(gormcrl.Open(sqlserver.Open(dsn),
//		config.WithObserver(hooks.Slog(logger))), &gorm.Config{})
//
// Metrics and traces are in modules of their own, so that a program that
// does not import them does not link (or download) their libraries:
// github.com/crl-go/crl/hooks/prometheus (Prometheus, with the
// post-mortem's database_retry_requests_total and
// database_total_requests_total) and github.com/crl-go/crl/hooks/otel
// (OpenTelemetry spans and meters).
package hooks
