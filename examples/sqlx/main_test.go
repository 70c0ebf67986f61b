package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/mssqltest"
)

func TestExampleRunsAgainstTheStandIn(t *testing.T) {
	require.NoError(t, run(""))
}

// The SELECT of the balances is retried on its own after a deadlock.
func TestStatementRetry(t *testing.T) {
	srv := mssqltest.NewServer(t)
	script(srv)
	require.NoError(t, runOn(srv.DSN()))
	assert.Equal(t, 2, srv.Count(selectAll), "the SELECT ran twice: a deadlock, then the rows")
	assert.Equal(t, 2, srv.Count(credit), "the transfer ran twice")
}
