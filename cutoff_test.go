package crl

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/testsupport/familyprobe"
)

type nopConnector struct{}

func (nopConnector) Connect(context.Context) (driver.Conn, error) { return nil, driver.ErrBadConn }
func (nopConnector) Driver() driver.Driver                        { return nil }

// The execution cut-off knows exactly the names of the one table of
// driver families, in any case (it did not know postgresql or POSTGRES).
func TestFamiliesOfTheCutoff(t *testing.T) {
	for name, want := range familyprobe.Names() {
		_, err := withCutoff(family.Of(name), nopConnector{}, time.Second)
		assert.Equal(t, want != family.Other, err == nil, "%q: %v", name, err)
	}
}
