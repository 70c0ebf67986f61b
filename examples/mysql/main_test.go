package main

import (
	"os"
	"testing"
)

func TestExampleAgainstMariaDB(t *testing.T) {
	dsn := os.Getenv("CRL_MYSQL_DSN")
	if dsn == "" {
		t.Skip("CRL_MYSQL_DSN is not set")
	}
	if err := run(dsn); err != nil {
		t.Fatal(err)
	}
}
