package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExampleAgainstMariaDB(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	require.NoError(t, run(dsn))
}
