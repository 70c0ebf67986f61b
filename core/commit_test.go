package core_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/core"
)

// CommitFailed: a COMMIT the server answered did not commit and is
// returned unchanged; any other failure may have committed and matches
// ErrCommitUnknown, still wrapping the driver's error.
func TestCommitFailed(t *testing.T) {
	assert.NoError(t, core.CommitFailed(nil))
	for _, err := range []error{
		serverError{1205},
		serverError{3902},
		pgState("40001"),
		fmt.Errorf("wrapped: %w", pgState("23505")),
		errors.New("commit unexpectedly resulted in rollback"),
		fmt.Errorf("tx: %w", errors.New("commit unexpectedly resulted in rollback")),
	} {
		got := core.CommitFailed(err)
		assert.Equal(t, err, got, "%v: the server answered, the error is the driver's", err)
		assert.NotErrorIs(t, got, core.ErrCommitUnknown)
	}
	for _, err := range []error{
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ETIMEDOUT},
		&net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNABORTED},
		io.ErrUnexpectedEOF,
		context.DeadlineExceeded,
		errors.New("driver: bad connection"),
	} {
		got := core.CommitFailed(err)
		assert.ErrorIs(t, got, core.ErrCommitUnknown, "%v", err)
		assert.ErrorIs(t, got, err, "%v: still wraps the driver's error", err)
	}
}
