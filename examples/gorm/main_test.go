package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExampleRunsAgainstTheStandIn(t *testing.T) {
	require.NoError(t, run(""))
}
