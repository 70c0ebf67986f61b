package hooks_test

import (
	"log/slog"
	"os"

	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
	"github.com/crl-go/crl/gormcrl"
	"github.com/crl-go/crl/hooks"
	"github.com/crl-go/crl/sqlxcrl"
)

// The package documentation's snippets, compiled: the options it names
// exist. (No Output: it would need a server.)
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var metrics core.Observer = core.NopObserver{} // hooks/prometheus's Metrics, say
	dsn := "sqlserver://sa:secret@localhost?database=orders"

	db, err := sqlxcrl.Open("sqlserver", dsn,
		config.WithObserver(hooks.Multi(hooks.Slog(logger), metrics)))
	if err == nil {
		defer db.Close()
	}

	gdb, err := gorm.Open(gormcrl.Open(sqlserver.Open(dsn),
		config.WithObserver(hooks.Slog(logger))), &gorm.Config{})
	_, _ = gdb, err
}
