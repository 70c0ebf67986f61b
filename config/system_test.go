package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/config"
)

func TestSystemName(t *testing.T) {
	for driver, want := range map[string]string{
		"sqlserver": "microsoft.sql_server", "MSSQL": "microsoft.sql_server", "azuresql": "microsoft.sql_server",
		"mysql": "mysql", "mariadb": "mysql",
		"pgx": "postgresql", "pgx/v5": "postgresql", "postgres": "postgresql", "PostgreSQL": "postgresql",
		"": "", "sqlite3": "", "sqlserver-otel": "",
	} {
		assert.Equal(t, want, config.SystemName(driver), "%q", driver)
	}
}
