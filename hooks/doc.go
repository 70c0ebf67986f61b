// Package hooks holds observers of the retry engine's events
// (core.Observer): structured logging with log/slog, and Multi to send the
// events to several observers. Prometheus metrics are in hooks/prometheus.
//
//	db, err := sqlxcrl.Open("sqlserver", dsn,
//		config.WithObserver(hooks.Multi(hooks.Slog(logger), metrics)))
package hooks
