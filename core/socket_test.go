package core_test

import (
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crl-go/crl/core"
)

func TestIsSocketErrorIsWhatErrorNumberGivesANetworkFailure(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ECONNRESET, syscall.ECONNABORTED, syscall.ECONNREFUSED, syscall.ETIMEDOUT} {
		n, ok := core.ErrorNumber(&net.OpError{Op: "read", Net: "tcp", Err: errno})
		require.True(t, ok, "%v has a number", errno)
		assert.True(t, core.IsSocketError(n), "%v → %d", errno, n)
	}
	for _, n := range []int32{1205, 40613, 10928, 0} {
		assert.False(t, core.IsSocketError(n), "%d", n)
	}
}
