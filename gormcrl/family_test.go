package gormcrl

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crl-go/crl/internal/tables/family"
	"github.com/crl-go/crl/internal/testsupport/familyprobe"
)

// A dialector is detected by the one table of driver families: a
// dialector named as a family (sqlserver, mysql, postgres, in any case)
// has its DSN read in that family's form.
func TestFamiliesOfTheDialectorDetection(t *testing.T) {
	for name, want := range familyprobe.Names() {
		form := dsnForm(name, "")
		if want == family.Other {
			assert.Equal(t, name, form, "%q: a foreign dialector's DSN is its own", name)
			continue
		}
		assert.Equal(t, want.Driver(), form, "%q", name)
	}
}
