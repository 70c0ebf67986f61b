package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExampleRuns(t *testing.T) {
	require.NoError(t, run())
}
